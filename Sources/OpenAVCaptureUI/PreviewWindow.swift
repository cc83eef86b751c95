import CSDL2
import Foundation
import OpenAVCapture
import Synchronization

/// A desktop window that shows what an `AVCaptureVideoPreviewLayer` describes: its session's live video, placed by
/// the layer's gravity, rotation and mirroring (``TexturePlacement``), redrawn when a frame arrives or the window
/// changes size, with the layer's `bounds` kept equal to the window's size so its point conversions are the
/// window's.
///
/// Frames come from a video data output of the window's own on the layer's session (``PreviewFeed``): NV12,
/// I420, YUYV, UYVY and RGB frames are uploaded to SDL textures in their own format (SDL's renderer converts
/// YUV on the GPU), and only the newest frame is kept: a frame not yet drawn when the next arrives is skipped, not
/// queued. Presents wait for vertical sync where the renderer supports it. Without a GPU (OpenGL on a software
/// rasterizer, as on Xvfb) SDL's software renderer draws, and libswscale converts and scales each frame to its
/// place on the screen first, the cheapest way on a CPU.
///
/// Picture in picture: `insets` are preview layers of a multi-camera session's other cameras, each connected by hand
/// to its camera (`AVCaptureConnection(inputPort:videoPreviewLayer:)`), as AVMultiCamPiP's second layer is; the
/// window gives each its `frame` by `insetLayout` and draws it over the main layer's picture, on a white border.
///
/// The session's controls (`AVCaptureSession.controls`: Apple's system zoom and exposure sliders, an app's own
/// sliders and pickers) are drawn as sliders over the bottom-left of the picture (``ControlOverlay``); a press or a
/// drag on one, or the arrow keys, set it through the control, and the window tells the session the controls are
/// engaged while it shows them (`userDidEngageControls()`, `userDidDisengageControls()`).
///
/// Other clicks and keys go to the handlers, in layer coordinates; the window draws nothing else but the markers and
/// the level bar it is given.
///
/// Threading: `run()` creates the window on the calling thread and uses SDL and the controls overlay only there
/// until it returns (SDL's rule for video). Everything else (`stop()`, `status`, `audioLevel`, markers,
/// statistics, handlers) is thread
/// safe. One window at a time per process (SDL's video subsystem is process-wide).
public final class PreviewWindow: @unchecked Sendable {
    /// What the user did in the window, in the layer's coordinates.
    public enum Event: Sendable, Equatable {
        /// A click; `count` is 2 for a double click.
        case click(CGPoint, count: Int)
        /// A key, by name: "r", "f", "t", "+", "-", "space", "return", "escape", or the letter or digit typed.
        case key(String)
    }

    /// Counts since `run()` began.
    public struct Statistics: Sendable, Equatable {
        /// Frames drawn on the screen.
        public var framesDrawn = 0
        /// Frames that arrived and were replaced by a newer one before they could be drawn.
        public var framesSkipped = 0
        /// Frames the session dropped before they reached the window.
        public var framesDroppedUpstream = 0
        /// How old each of the last (up to 256) drawn frames was when its present returned: the host clock then,
        /// minus the frame's presentation time (the session's clock is the host clock). Glass-to-glass latency
        /// but for the display's own scan-out.
        public var recentFrameAges: [Double] = []
    }

    private struct Shared {
        var status = ""
        var statusShown = ""
        var audioLevel: Float = 0
        var markers: [Marker] = []
        var stopRequested = false
        var handler: (@Sendable (Event) -> Void)?
        var rendererName = ""
        var drawsOnCPU = false
        var windowPosition: (x: Int, y: Int)?
    }

    /// A rectangle outlined over the video (a focus or exposure box), in layer coordinates, until `until`.
    public struct Marker: Sendable {
        public var rect: CGRect
        /// 0xRRGGBB.
        public var color: UInt32
        public var until: Date
        public init(rect: CGRect, color: UInt32, until: Date) {
            (self.rect, self.color, self.until) = (rect, color, until)
        }
    }

    /// Who converts and scales the frames.
    public enum Drawing: Sendable, Equatable {
        /// The GPU where there is one; the CPU (``cpu``) where OpenGL is a software rasterizer, as on Xvfb.
        case automatic
        /// Frames uploaded in their own format; SDL's accelerated renderer converts and scales them (on a software
        /// rasterizer, that is on the CPU too, pixel by pixel).
        case gpu
        /// libswscale converts and scales each frame to its place on the screen; SDL's software renderer copies it.
        case cpu
    }

    public let layer: AVCaptureVideoPreviewLayer
    /// The layers drawn as insets over `layer`'s picture, in order.
    public let insets: [AVCaptureVideoPreviewLayer]
    /// Where the insets go.
    public let insetLayout: PictureInPictureLayout
    private let drawing: Drawing
    private let title: String
    private let initialSize: CGSize
    private let position: CGPoint?
    private let shared = Mutex(Shared())
    /// Which control is chosen and dragged: used on the window's thread only.
    private let overlay = ControlOverlay()
    private let firstFrame = DispatchSemaphore(value: 0)

    /// A window of `size` points showing `layer`, and `insets` over it placed by `insetLayout`; `position` places
    /// its top-left corner on the screen (the window manager's choice when nil). Nothing happens until `run()`.
    public init(
        layer: AVCaptureVideoPreviewLayer, insets: [AVCaptureVideoPreviewLayer] = [],
        insetLayout: PictureInPictureLayout = PictureInPictureLayout(), title: String, size: CGSize,
        position: CGPoint? = nil, drawing: Drawing = .automatic
    ) {
        self.layer = layer
        self.insets = insets
        self.insetLayout = insetLayout
        self.drawing = drawing
        self.title = title
        self.initialSize = size
        self.position = position
    }

    /// Called (on the window's thread) for each click and key. Set before `run()` or any time after.
    public func setEventHandler(_ handler: (@Sendable (Event) -> Void)?) { shared.withLock { $0.handler = handler } }

    /// The window's title line (SDL has no text drawing of its own): fps, drops, level, what the app says.
    public var status: String {
        get { shared.withLock { $0.status } }
        set { shared.withLock { $0.status = newValue } }
    }

    /// The audio level, 0 ... 1, drawn as a bar along the bottom edge.
    public var audioLevel: Float {
        get { shared.withLock { $0.audioLevel } }
        set { shared.withLock { $0.audioLevel = max(0, min(1, newValue)) } }
    }

    /// Adds a box to outline over the video for a while (a tap's focus or exposure marker).
    public func addMarker(_ marker: Marker) { shared.withLock { $0.markers.append(marker) } }

    /// The SDL renderer drawing the window ("opengl", "software", …), once `run()` has made it.
    public var rendererName: String { shared.withLock { $0.rendererName } }

    /// Whether libswscale converts and scales the frames on the CPU (``Drawing/cpu``, or what ``Drawing/automatic``
    /// chose), once `run()` has made the renderer.
    public var drawsOnCPU: Bool { shared.withLock { $0.drawsOnCPU } }

    /// Where the window is on the screen, once shown.
    public var screenPosition: CGPoint? {
        shared.withLock { $0.windowPosition.map { CGPoint(x: $0.x, y: $0.y) } }
    }

    /// Waits until the first frame is on the screen; false if `timeout` passes first.
    public func waitForFirstFrame(timeout: TimeInterval) -> Bool {
        guard firstFrame.wait(timeout: .now() + timeout) == .success else { return false }
        firstFrame.signal()
        return true
    }

    private let statisticsStorage = Mutex(Statistics())

    /// Frames drawn, skipped and dropped so far.
    public var statistics: Statistics { statisticsStorage.withLock { $0 } }

    /// Asks `run()` to close the window and return. Any thread.
    public func stop() {
        shared.withLock { $0.stopRequested = true }
        wake(SDL_USEREVENT.rawValue)
    }

    private func wake(_ type: UInt32) {
        var event = SDL_Event()
        event.type = type
        SDL_PushEvent(&event)
    }

    // MARK: The window's thread

    /// Opens the window and shows the layer's video until `stop()` or the user closes the window. Blocks.
    public func run() throws(PreviewError) {
        guard let session = layer.session else { throw PreviewError("the preview layer has no session; set one first") }
        let video = try VideoWindow(title: title, size: initialSize, position: position, drawing: drawing)
        defer { video.close() }
        let (window, renderer) = (video.window, video.renderer)
        shared.withLock { ($0.rendererName, $0.drawsOnCPU) = (video.rendererName, video.drawsOnCPU) }

        let frameEvent = SDL_RegisterEvents(1)
        let feed = try PreviewFeed(session: session, drawablePixelFormats: Set(TextureFormat.all.keys)) { [weak self] in
            self?.wake(frameEvent)
        }
        defer { feed.detach() }
        var texture = FrameTexture(drawsOnCPU: video.drawsOnCPU)
        defer { texture.destroy() }
        var pictures: [InsetPicture] = []
        defer { for index in pictures.indices { pictures[index].destroy() } }
        for inset in insets {
            pictures.append(
                try InsetPicture(layer: inset, drawsOnCPU: video.drawsOnCPU) { [weak self] in self?.wake(frameEvent) })
        }
        var current: CMSampleBuffer?
        updateBounds(window)
        var controlsEngaged = false
        defer { if controlsEngaged { session.userDidDisengageControls() } }

        var event = SDL_Event()
        var needsDraw = true
        while !shared.withLock({ $0.stopRequested }) {
            // Sleep until something happens: a frame, input, or a marker's end (at most 100 ms).
            if SDL_WaitEventTimeout(&event, 100) != 0 {
                repeat {
                    switch handle(event, window: window, frameEvent: frameEvent) {
                    case .quit: shared.withLock { $0.stopRequested = true }
                    case .redraw: needsDraw = true
                    case .nothing: break
                    }
                } while SDL_PollEvent(&event) != 0
            }
            if let newest = feed.takeNewest() {
                current = newest
                needsDraw = true
            }
            for index in pictures.indices where pictures[index].takeNewest() { needsDraw = true }
            let (status, markers) = shared.withLock { shared in
                shared.markers.removeAll { $0.until < Date() }
                return (shared.status, shared.markers)
            }
            if !markers.isEmpty { needsDraw = true }
            if shared.withLock({ $0.statusShown != status }) {
                SDL_SetWindowTitle(window, status.isEmpty ? title : "\(title) — \(status)")
                shared.withLock { $0.statusShown = status }
            }
            if !controlsEngaged, !session.controls.isEmpty {
                // A person sees the controls from now on: Apple's session tells its controls delegate so.
                session.userDidEngageControls()
                controlsEngaged = true
            }
            if needsDraw {
                placeInsets(pictures)
                draw(current, renderer: renderer, texture: &texture, insets: &pictures, markers: markers)
                needsDraw = false
            }
            let feedStatistics = feed.statistics
            statisticsStorage.withLock {
                $0.framesSkipped = feedStatistics.skipped
                $0.framesDroppedUpstream = feedStatistics.droppedUpstream
            }
        }
    }

    private enum Outcome { case nothing, redraw, quit }

    private func handle(_ event: SDL_Event, window: OpaquePointer, frameEvent: UInt32) -> Outcome {
        let handler = shared.withLock { $0.handler }
        switch event.type {
        case SDL_QUIT.rawValue:
            return .quit
        case SDL_WINDOWEVENT.rawValue:
            let kind = UInt32(event.window.event)
            if kind == SDL_WINDOWEVENT_CLOSE.rawValue { return .quit }
            if kind == SDL_WINDOWEVENT_SIZE_CHANGED.rawValue || kind == SDL_WINDOWEVENT_MOVED.rawValue
                || kind == SDL_WINDOWEVENT_EXPOSED.rawValue || kind == SDL_WINDOWEVENT_SHOWN.rawValue
            {
                updateBounds(window)
            }
            return .redraw
        case SDL_MOUSEBUTTONDOWN.rawValue where event.button.button == UInt8(SDL_BUTTON_LEFT):
            let point = CGPoint(x: Int(event.button.x), y: Int(event.button.y))
            if !overlay.press(at: point, rows: controlRows()) {
                handler?(.click(point, count: Int(event.button.clicks)))
            }
            return .redraw
        case SDL_MOUSEMOTION.rawValue where event.motion.state & CSDL2_leftButtonMask != 0:
            let moved = overlay.drag(to: CGPoint(x: Int(event.motion.x), y: Int(event.motion.y)), rows: controlRows())
            return moved ? .redraw : .nothing
        case SDL_MOUSEBUTTONUP.rawValue where event.button.button == UInt8(SDL_BUTTON_LEFT):
            return overlay.release() ? .redraw : .nothing
        case SDL_KEYDOWN.rawValue:
            if let arrow = Self.arrow(event.key.keysym), overlay.key(arrow, rows: controlRows()) { return .redraw }
            if let name = Self.keyName(event.key.keysym) { handler?(.key(name)) }
            return .redraw
        default:
            return event.type == frameEvent ? .redraw : .nothing
        }
    }

    /// The layer's bounds are the window's size in points (what mouse events report), so a click converts exactly.
    private func updateBounds(_ window: OpaquePointer) {
        var width: Int32 = 0
        var height: Int32 = 0
        SDL_GetWindowSize(window, &width, &height)
        layer.bounds = CGRect(x: 0, y: 0, width: Int(width), height: Int(height))
        var x: Int32 = 0
        var y: Int32 = 0
        SDL_GetWindowPosition(window, &x, &y)
        shared.withLock { $0.windowPosition = (Int(x), Int(y)) }
    }

    private static func arrow(_ keysym: SDL_Keysym) -> ControlOverlay.Arrow? {
        switch keysym.sym {
        case Int32(SDLK_UP.rawValue): .up
        case Int32(SDLK_DOWN.rawValue): .down
        case Int32(SDLK_LEFT.rawValue): .left
        case Int32(SDLK_RIGHT.rawValue): .right
        default: nil
        }
    }

    /// The session's controls laid out over the picture as it is on the screen now (the whole window while the
    /// picture's place is unknown).
    private func controlRows() -> [ControlOverlay.Row] {
        guard let controls = layer.session?.controls, !controls.isEmpty else { return [] }
        let picture = layer.geometry.videoRect.intersection(layer.bounds)
        return ControlOverlay.rows(for: controls, in: picture.isEmpty ? layer.bounds : picture)
    }

    private static func keyName(_ keysym: SDL_Keysym) -> String? {
        let code = keysym.sym
        switch code {
        case Int32(SDLK_SPACE.rawValue): return "space"
        case Int32(SDLK_RETURN.rawValue), Int32(SDLK_KP_ENTER.rawValue): return "return"
        case Int32(SDLK_ESCAPE.rawValue): return "escape"
        case Int32(SDLK_PLUS.rawValue), Int32(SDLK_EQUALS.rawValue), Int32(SDLK_KP_PLUS.rawValue): return "+"
        case Int32(SDLK_MINUS.rawValue), Int32(SDLK_KP_MINUS.rawValue): return "-"
        case 0x21...0x7E: return String(UnicodeScalar(UInt8(code)))
        default: return nil
        }
    }

    /// Gives each inset layer its frame in the window (its camera's aspect ratio may arrive with its first frame).
    private func placeInsets(_ pictures: [InsetPicture]) {
        guard !pictures.isEmpty else { return }
        let frames = insetLayout.insetFrames(in: layer.bounds, aspectRatios: pictures.map(\.aspectRatio))
        for (picture, frame) in zip(pictures, frames) where picture.layer.frame != frame { picture.layer.frame = frame }
    }

    private func draw(
        _ sample: CMSampleBuffer?, renderer: OpaquePointer, texture: inout FrameTexture, insets: inout [InsetPicture],
        markers: [Marker]
    ) {
        SDL_SetRenderDrawColor(renderer, 0, 0, 0, 255)
        SDL_RenderClear(renderer)
        let placement = TexturePlacement(layer.geometry)
        var drewFrame = false
        if let sample, let image = sample.imageBuffer, texture.upload(image, for: placement, renderer: renderer),
            let handle = texture.handle
        {
            placement.render(handle, renderer: renderer)
            drewFrame = true
        }
        for index in insets.indices { insets[index].draw(renderer: renderer) }
        for marker in markers {
            SDL_SetRenderDrawColor(
                renderer, UInt8(marker.color >> 16 & 0xFF), UInt8(marker.color >> 8 & 0xFF), UInt8(marker.color & 0xFF),
                255)
            var box = SDL_FRect(
                x: Float(marker.rect.minX), y: Float(marker.rect.minY), w: Float(marker.rect.width),
                h: Float(marker.rect.height))
            SDL_RenderDrawRectF(renderer, &box)
        }
        ControlOverlayDrawing.draw(controlRows(), selected: overlay.selected, renderer: renderer)
        let level = shared.withLock { $0.audioLevel }
        if level > 0 {
            let bounds = layer.bounds
            SDL_SetRenderDrawColor(renderer, 60, 220, 90, 255)
            var bar = SDL_FRect(
                x: 0, y: Float(bounds.height) - 4, w: Float(bounds.width) * level, h: 4)
            SDL_RenderFillRectF(renderer, &bar)
        }
        SDL_RenderPresent(renderer)
        if drewFrame, let sample {
            let age = CMTimeGetSeconds(CMClockGetTime(.hostTimeClock) - sample.presentationTimeStamp)
            let drawn = statisticsStorage.withLock { statistics in
                statistics.framesDrawn += 1
                statistics.recentFrameAges.append(age)
                if statistics.recentFrameAges.count > 256 { statistics.recentFrameAges.removeFirst() }
                return statistics.framesDrawn
            }
            if drawn == 1 { firstFrame.signal() }
        }
    }

}
