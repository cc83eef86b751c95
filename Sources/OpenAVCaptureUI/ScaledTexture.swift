import CSDL2
import CaptureGraph
import OpenAVCapture

/// The frame converted to BGRA and scaled to the size it is shown at by libswscale (one SIMD pass), then uploaded
/// for a 1:1 copy: how the window draws where no GPU does. There SDL's renderer would convert YUV and scale on the
/// CPU itself, pixel by pixel (its software renderer, or OpenGL on a software rasterizer such as Mesa's llvmpipe),
/// which costs several times as much (figures in docs/time-and-memory.md).
///
/// Threading: the window's thread only (SDL's rule; the scaler is thread-bound too).
struct ScaledTexture {
    private var scaler = PreviewPictureScaler()
    private var texture = Texture()

    /// The SDL texture holding the last frame uploaded, `size` pixels large.
    var handle: OpaquePointer? { texture.handle }

    /// Converts and scales `image` to `width` x `height` BGRA and uploads it; false when it cannot (a pixel format
    /// libswscale does not take, a size of zero).
    mutating func upload(_ image: CVPixelBuffer, width: Int, height: Int, renderer: OpaquePointer) -> Bool {
        guard let scaled = scaler.bgra(image, width: width, height: height) else { return false }
        return texture.upload(scaled, renderer: renderer, as: Self.windowFormat(renderer))
    }

    /// The window's own format when its bytes are 32BGRA's (B, G, R, then alpha or padding), so SDL copies the
    /// texture to the window instead of converting every pixel; nil otherwise.
    private static func windowFormat(_ renderer: OpaquePointer) -> SDL_PixelFormatEnum? {
        guard let window = SDL_RenderGetWindow(renderer) else { return nil }
        let format = SDL_GetWindowPixelFormat(window)
        let sameBytes = [SDL_PIXELFORMAT_RGB888.rawValue, SDL_PIXELFORMAT_ARGB8888.rawValue]
        return sameBytes.contains(format) ? SDL_PixelFormatEnum(format) : nil
    }

    mutating func destroy() {
        texture.destroy()
        scaler.reset()
    }
}

/// Whether SDL's renderer draws on the CPU: its software renderer, or OpenGL on a software rasterizer (Mesa's
/// llvmpipe, softpipe or swrast, what an X server without a GPU such as Xvfb offers). Asks OpenGL's
/// `GL_RENDERER` string while the renderer's context is current (right after `SDL_CreateRenderer`).
enum SoftwareRasterizer {
    static func draws(_ renderer: OpaquePointer) -> Bool {
        var info = SDL_RendererInfo()
        SDL_GetRendererInfo(renderer, &info)
        let name = info.name.map { String(cString: $0) } ?? ""
        if name == "software" || info.flags & SDL_RENDERER_SOFTWARE.rawValue != 0 { return true }
        guard name.hasPrefix("opengl"), let address = SDL_GL_GetProcAddress("glGetString") else { return false }
        typealias GetString = @convention(c) (UInt32) -> UnsafePointer<UInt8>?
        let glRenderer: UInt32 = 0x1F01
        guard let text = unsafeBitCast(address, to: GetString.self)(glRenderer) else { return false }
        let description = String(cString: text).lowercased()
        return ["llvmpipe", "softpipe", "swrast", "software rasterizer"].contains { description.contains($0) }
    }
}
