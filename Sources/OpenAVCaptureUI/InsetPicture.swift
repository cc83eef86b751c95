import CSDL2
import OpenAVCapture

/// One inset of a picture-in-picture window: another camera's preview layer (connected by hand to that camera of
/// a multi-camera session), a feed of its own on that camera's port, and the texture its newest frame is drawn
/// from. The window gives the layer its `frame` (``PictureInPictureLayout``); the picture is drawn there over the
/// main one, on a white border, placed by the layer's own gravity, rotation and mirroring.
///
/// Threading: the window's thread only (SDL's rule); the feed calls `onFrame` on its own queue.
struct InsetPicture {
    let layer: AVCaptureVideoPreviewLayer
    private let feed: PreviewFeed
    private var texture: FrameTexture
    private var current: CMSampleBuffer?

    /// Border width in points: the inset stands out from the picture under it.
    static let border: CGFloat = 2

    init(
        layer: AVCaptureVideoPreviewLayer, drawsOnCPU: Bool, onFrame: @escaping @Sendable () -> Void
    )
        throws(PreviewError)
    {
        guard let session = layer.session, let port = layer.connection?.inputPorts.first else {
            throw PreviewError(
                "an inset's preview layer has no camera; connect it with AVCaptureConnection(inputPort:"
                    + "videoPreviewLayer:) and addConnection(_:) first")
        }
        self.layer = layer
        feed = try PreviewFeed(
            session: session, port: port, drawablePixelFormats: Set(TextureFormat.all.keys), onFrame: onFrame)
        texture = FrameTexture(drawsOnCPU: drawsOnCPU)
    }

    /// The camera's width over its height (0 while its format is unknown).
    var aspectRatio: Double {
        guard let size = layer.connection?.inputPorts.first?.formatDescription?.dimensions, size.height > 0 else {
            return 0
        }
        return Double(size.width) / Double(size.height)
    }

    /// Takes the feed's newest frame; true when there was one (the window redraws).
    mutating func takeNewest() -> Bool {
        guard let newest = feed.takeNewest() else { return false }
        current = newest
        return true
    }

    /// Draws the border and the newest frame in the layer's frame.
    mutating func draw(renderer: OpaquePointer) {
        guard let image = current?.imageBuffer else { return }
        let frame = layer.frame
        let outline = frame.insetBy(dx: -Self.border, dy: -Self.border)
        var box = SDL_FRect(
            x: Float(outline.minX), y: Float(outline.minY), w: Float(outline.width), h: Float(outline.height))
        SDL_SetRenderDrawColor(renderer, 255, 255, 255, 255)
        SDL_RenderFillRectF(renderer, &box)
        let placement = TexturePlacement(layer.geometry)
        guard texture.upload(image, for: placement, renderer: renderer), let handle = texture.handle else { return }
        placement.render(handle, renderer: renderer, offset: frame.origin)
    }

    /// Lets go of the texture and takes the feed's output off the session.
    mutating func destroy() {
        texture.destroy()
        feed.detach()
    }

    var statistics: PreviewFeed.Statistics { feed.statistics }
}

extension TexturePlacement {
    /// Copies `texture` to where this placement says, moved by `offset` (a layer's origin in the window).
    func render(_ texture: OpaquePointer, renderer: OpaquePointer, offset: CGPoint = .zero) {
        var destination = SDL_FRect(
            x: Float(self.destination.minX + offset.x), y: Float(self.destination.minY + offset.y),
            w: Float(self.destination.width), h: Float(self.destination.height))
        var flip = SDL_FLIP_NONE.rawValue
        if flipsHorizontally { flip |= SDL_FLIP_HORIZONTAL.rawValue }
        if flipsVertically { flip |= SDL_FLIP_VERTICAL.rawValue }
        SDL_RenderCopyExF(renderer, texture, nil, &destination, angle, nil, SDL_RendererFlip(flip))
    }
}
