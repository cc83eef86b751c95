import CSDL2
import Foundation
import OpenAVCapture
import Synchronization

/// A desktop window that shows what an `AVPlayerLayer` describes: its player's video, placed by the layer's gravity
/// (``TexturePlacement``, as the preview window), redrawn when the player shows a frame or the window changes, with
/// the layer's `bounds` kept equal to the window's size.
///
/// Frames are uploaded to SDL textures in the format the player decodes to (NV12 unless an item output asks
/// otherwise); only the newest is drawn, so a window slower than the video skips frames and never falls behind.
/// Keys go to the handler ("space", "escape", "left", "right", letters).
///
/// Threading: `run()` creates the window on the calling thread and uses SDL only there until it returns (SDL's rule
/// for video). `stop()`, `statistics` and the handler are thread safe. One SDL window at a time per process.
public final class PlayerWindow: @unchecked Sendable {
    /// Counts since `run()` began.
    ///
    /// Threading: a value; `Sendable`.
    public struct Statistics: Sendable, Equatable {
        /// Frames drawn on the screen.
        public var framesDrawn = 0
        /// The item time of the last frame drawn.
        public var lastFrameTime: CMTime = .invalid
    }

    /// The layer the window draws.
    public let layer: AVPlayerLayer
    private let title: String
    private let size: CGSize
    private let position: CGPoint?
    private let stopRequested = Mutex(false)
    private let handler = Mutex<(@Sendable (String) -> Void)?>(nil)
    private let statisticsStorage = Mutex(Statistics())

    /// A window of `size` points showing `layer`; `position` places its top-left corner (the window manager's
    /// choice when nil). Nothing happens until `run()`.
    public init(layer: AVPlayerLayer, title: String, size: CGSize, position: CGPoint? = nil) {
        self.layer = layer
        self.title = title
        self.size = size
        self.position = position
    }

    /// Frames drawn so far, and the time of the last.
    public var statistics: Statistics { statisticsStorage.withLock { $0 } }

    /// Called on the window's thread with each key's name.
    public func setKeyHandler(_ handler: (@Sendable (String) -> Void)?) { self.handler.withLock { $0 = handler } }

    /// Asks `run()` to close the window and return. Any thread.
    public func stop() {
        stopRequested.withLock { $0 = true }
        var event = SDL_Event()
        event.type = SDL_USEREVENT.rawValue
        SDL_PushEvent(&event)
    }

    /// Opens the window and shows the player's video until `stop()` or the user closes the window. Blocks.
    public func run() throws(PreviewError) {
        let video = try VideoWindow(title: title, size: size, position: position, drawing: .automatic)
        defer { video.close() }
        let (window, renderer) = (video.window, video.renderer)
        let frameEvent = SDL_RegisterEvents(1)
        layer.setFrameHandler {
            var event = SDL_Event()
            event.type = frameEvent
            SDL_PushEvent(&event)
        }
        defer { layer.setFrameHandler(nil) }
        var texture = FrameTexture(drawsOnCPU: video.drawsOnCPU)
        defer { texture.destroy() }
        var current: CMSampleBuffer?
        updateBounds(window)
        var event = SDL_Event()
        var needsDraw = true
        while !stopRequested.withLock({ $0 }) {
            if SDL_WaitEventTimeout(&event, 100) != 0 {
                repeat {
                    switch event.type {
                    case SDL_QUIT.rawValue:
                        stopRequested.withLock { $0 = true }
                    case SDL_WINDOWEVENT.rawValue:
                        if UInt32(event.window.event) == SDL_WINDOWEVENT_CLOSE.rawValue {
                            stopRequested.withLock { $0 = true }
                        }
                        updateBounds(window)
                        needsDraw = true
                    case SDL_KEYDOWN.rawValue:
                        if let name = Self.keyName(event.key.keysym.sym) { handler.withLock { $0 }?(name) }
                    default:
                        break
                    }
                } while SDL_PollEvent(&event) != 0
            }
            if let newest = layer.takeNewest() {
                current = newest
                needsDraw = true
            }
            if needsDraw {
                draw(current, renderer: renderer, texture: &texture)
                needsDraw = false
            }
        }
    }

    private func updateBounds(_ window: OpaquePointer) {
        var width: Int32 = 0
        var height: Int32 = 0
        SDL_GetWindowSize(window, &width, &height)
        layer.bounds = CGRect(x: 0, y: 0, width: Int(width), height: Int(height))
    }

    private static func keyName(_ code: SDL_Keycode) -> String? {
        switch code {
        case Int32(SDLK_SPACE.rawValue): "space"
        case Int32(SDLK_ESCAPE.rawValue): "escape"
        case Int32(SDLK_LEFT.rawValue): "left"
        case Int32(SDLK_RIGHT.rawValue): "right"
        case 0x21...0x7E: String(UnicodeScalar(UInt8(code)))
        default: nil
        }
    }

    private func draw(_ sample: CMSampleBuffer?, renderer: OpaquePointer, texture: inout FrameTexture) {
        SDL_SetRenderDrawColor(renderer, 0, 0, 0, 255)
        SDL_RenderClear(renderer)
        var drew = false
        if let sample, let image = sample.imageBuffer,
            case let placement = TexturePlacement(layer.geometry(of: sample)),
            texture.upload(image, for: placement, renderer: renderer)
        {
            var destination = SDL_FRect(
                x: Float(placement.destination.minX), y: Float(placement.destination.minY),
                w: Float(placement.destination.width), h: Float(placement.destination.height))
            SDL_RenderCopyExF(renderer, texture.handle, nil, &destination, placement.angle, nil, SDL_FLIP_NONE)
            drew = true
        }
        SDL_RenderPresent(renderer)
        if drew, let sample {
            statisticsStorage.withLock { statistics in
                statistics.framesDrawn += 1
                statistics.lastFrameTime = sample.presentationTimeStamp
            }
        }
    }
}
