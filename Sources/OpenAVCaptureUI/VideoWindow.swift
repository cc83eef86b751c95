import CSDL2
import OpenAVCapture

/// SDL's video subsystem, a resizable window and its renderer, made together and released together: what the
/// preview and player windows share. `drawing` picks the renderer (``PreviewWindow/Drawing``); ``drawsOnCPU`` says
/// whether frames are to be scaled by libswscale for it (``FrameTexture``).
///
/// Threading: made, used and closed on the window's thread (SDL's rule for video).
struct VideoWindow {
    let window: OpaquePointer
    let renderer: OpaquePointer
    let drawsOnCPU: Bool

    /// SDL's name of the renderer ("opengl", "software", …).
    var rendererName: String {
        var info = SDL_RendererInfo()
        SDL_GetRendererInfo(renderer, &info)
        return info.name.map { String(cString: $0) } ?? "unknown"
    }

    /// Opens the window, `size` points, its top-left corner at `position` (centred when nil). Call ``close()``.
    init(title: String, size: CGSize, position: CGPoint?, drawing: PreviewWindow.Drawing) throws(PreviewError) {
        SDL_SetHint(SDL_HINT_NO_SIGNAL_HANDLERS, "1")
        // The window's closing must not end the process: the app decides.
        SDL_SetHint(SDL_HINT_QUIT_ON_LAST_WINDOW_CLOSE, "0")
        guard SDL_InitSubSystem(SDL_INIT_VIDEO) == 0 else {
            throw PreviewError("cannot open a window: \(Self.sdlError()) (is DISPLAY set to a running X server?)")
        }
        let x = position.map { Int32($0.x) } ?? CSDL2_windowPositionCentered
        let y = position.map { Int32($0.y) } ?? CSDL2_windowPositionCentered
        guard
            let window = SDL_CreateWindow(
                title, x, y, Int32(size.width), Int32(size.height),
                SDL_WINDOW_SHOWN.rawValue | SDL_WINDOW_RESIZABLE.rawValue)
        else {
            let error = PreviewError("cannot create the window: \(Self.sdlError())")
            SDL_QuitSubSystem(SDL_INIT_VIDEO)
            throw error
        }
        do {
            (renderer, drawsOnCPU) = try Self.makeRenderer(for: window, drawing: drawing)
        } catch {
            SDL_DestroyWindow(window)
            SDL_QuitSubSystem(SDL_INIT_VIDEO)
            throw error
        }
        self.window = window
    }

    func close() {
        SDL_DestroyRenderer(renderer)
        SDL_DestroyWindow(window)
        SDL_QuitSubSystem(SDL_INIT_VIDEO)
    }

    /// The window's size in points (what mouse events report).
    var size: CGSize {
        var width: Int32 = 0
        var height: Int32 = 0
        SDL_GetWindowSize(window, &width, &height)
        return CGSize(width: Int(width), height: Int(height))
    }

    /// The renderer `drawing` asks for, and whether frames are scaled on the CPU (``ScaledTexture``) for it.
    /// Automatic: accelerated and vsync'd where there is a GPU; where OpenGL is a software rasterizer (an X server
    /// without a GPU, such as Xvfb), SDL's software renderer with libswscale's frames, as the rasterizer's YUV
    /// shader and scaling cost several times as much CPU (docs/time-and-memory.md). SDL's `SDL_RENDER_DRIVER` hint
    /// still picks the accelerated renderer by name.
    private static func makeRenderer(
        for window: OpaquePointer, drawing: PreviewWindow.Drawing
    ) throws(PreviewError) -> (OpaquePointer, Bool) {
        if drawing != .cpu,
            let renderer = SDL_CreateRenderer(
                window, -1, SDL_RENDERER_ACCELERATED.rawValue | SDL_RENDERER_PRESENTVSYNC.rawValue)
        {
            if drawing == .gpu || !SoftwareRasterizer.draws(renderer) { return (renderer, false) }
            SDL_DestroyRenderer(renderer)
        }
        // SDL would present the software renderer's picture through an OpenGL texture (its "framebuffer
        // acceleration"): on a software rasterizer, a second pass over every pixel. X11's shared-memory image
        // instead hands the pixels to the server as they are.
        SDL_SetHint(SDL_HINT_FRAMEBUFFER_ACCELERATION, "0")
        guard let renderer = SDL_CreateRenderer(window, -1, SDL_RENDERER_SOFTWARE.rawValue) else {
            throw PreviewError("cannot create a renderer: \(Self.sdlError())")
        }
        return (renderer, true)
    }

    static func sdlError() -> String { String(cString: SDL_GetError()) }
}
