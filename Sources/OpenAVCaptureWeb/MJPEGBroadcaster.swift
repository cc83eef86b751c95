import CaptureGraph
import Foundation
import Hummingbird
import OpenAVCapture
import Synchronization

/// The preview as an MJPEG stream for a bounded number of viewers: each frame of the layer's session is encoded
/// once (only while someone watches) and handed to every viewer, each of which keeps only the newest part, so a
/// slow browser skips frames instead of falling behind. With insets (other cameras of a multi-camera session, each
/// a preview layer connected by hand), each frame of the main camera carries their newest frames picture in
/// picture (``PictureInPictureCompositor``, placed by a ``PictureInPictureLayout`` in the main picture's pixels).
///
/// Threading: thread safe. Frames are encoded on the feed's queue; viewers read on the server's tasks.
final class MJPEGBroadcaster: @unchecked Sendable {
    static let boundary = "openavframe"

    struct Viewer: Sendable {
        let id: Int
        let parts: AsyncStream<ByteBuffer>
    }

    private struct State {
        var viewers: [Int: AsyncStream<ByteBuffer>.Continuation] = [:]
        var nextID = 0
        var framesEncoded = 0
        var recentFrameTimes: [Date] = []
        var closed = false
        var detached = false
    }

    let maximumViewers: Int
    private let state = Mutex(State())
    private var feed: PreviewFeed?
    private var insets: [InsetSource] = []
    private let insetLayout: PictureInPictureLayout
    private let insetAspectRatios: [Double]
    private let compositor = PictureInPictureCompositor()
    private let encoder: PreviewJPEGEncoder

    init(
        layer: AVCaptureVideoPreviewLayer, insets: [AVCaptureVideoPreviewLayer] = [],
        insetLayout: PictureInPictureLayout = PictureInPictureLayout(), maximumViewers: Int
    ) throws(PreviewError) {
        guard let session = layer.session else { throw PreviewError("the preview layer has no session; set one first") }
        self.maximumViewers = maximumViewers
        guard let encoder = PreviewJPEGEncoder() else { throw PreviewError("TurboJPEG could not start (tjInitCompress)") }
        self.encoder = encoder
        self.insetLayout = insetLayout
        insetAspectRatios = insets.map { inset in
            let size = inset.connection?.inputPorts.first?.formatDescription?.dimensions ?? CMVideoDimensions()
            return size.height > 0 ? Double(size.width) / Double(size.height) : 0
        }
        let feed = try PreviewFeed(
            session: session, drawablePixelFormats: [PreviewJPEGEncoder.pixelFormat],
            preferredPixelFormat: PreviewJPEGEncoder.pixelFormat
        ) { [weak self] in self?.frameArrived() }
        // The browser shows the frames as they come, scaled by CSS's object-fit (the layer's gravity); the session
        // turns and mirrors them as the layer's connection says, so the picture is the layer's.
        Self.turnAndMirror(feed, as: layer)
        self.feed = feed
        for inset in insets {
            do {
                self.insets.append(try InsetSource(layer: inset, session: session))
            } catch {
                feed.detach()
                self.insets.forEach { $0.detach() }
                throw error
            }
        }
    }

    /// Sets the feed output's connection to turn and mirror frames as `layer`'s connection does.
    fileprivate static func turnAndMirror(_ feed: PreviewFeed, as layer: AVCaptureVideoPreviewLayer) {
        guard let source = layer.connection, let connection = feed.output.connection(with: .video) else { return }
        if connection.isVideoRotationAngleSupported(source.videoRotationAngle) {
            connection.videoRotationAngle = source.videoRotationAngle
        }
        if connection.isVideoMirroringSupported {
            connection.automaticallyAdjustsVideoMirroring = false
            connection.isVideoMirrored = source.isVideoMirrored
        }
    }

    /// Ends every stream (their responses finish) and refuses new viewers.
    func endViewers() {
        let continuations = state.withLock { state in
            defer {
                state.viewers = [:]
                state.closed = true
            }
            return Array(state.viewers.values)
        }
        for continuation in continuations { continuation.finish() }
    }

    /// Ends the streams and takes the feed's output off the session, once.
    func detach() {
        endViewers()
        let detaching = state.withLock { state in
            defer { state.detached = true }
            return !state.detached
        }
        if detaching {
            feed?.detach()
            insets.forEach { $0.detach() }
        }
    }

    /// A new viewer, or nil when `maximumViewers` are already watching.
    func addViewer() -> Viewer? {
        let (stream, continuation) = AsyncStream.makeStream(of: ByteBuffer.self, bufferingPolicy: .bufferingNewest(1))
        let id: Int? = state.withLock { state in
            guard !state.closed, state.viewers.count < maximumViewers else { return nil }
            state.nextID += 1
            state.viewers[state.nextID] = continuation
            return state.nextID
        }
        guard let id else { return nil }
        continuation.onTermination = { [weak self] _ in self?.removeViewer(id) }
        return Viewer(id: id, parts: stream)
    }

    func removeViewer(_ id: Int) {
        let continuation = state.withLock { $0.viewers.removeValue(forKey: id) }
        continuation?.finish()
    }

    var viewerCount: Int { state.withLock { $0.viewers.count } }

    /// Frames encoded in the last second.
    var framesPerSecond: Int {
        state.withLock { state in
            let cutoff = Date().addingTimeInterval(-1)
            return state.recentFrameTimes.filter { $0 > cutoff }.count
        }
    }

    /// Frames the feed skipped or the session dropped before they reached the stream.
    var framesDropped: Int {
        guard let statistics = feed?.statistics else { return 0 }
        return statistics.skipped + statistics.droppedUpstream
    }

    /// The main camera's frame, with the insets' newest frames drawn over it when there are insets.
    private func picture(_ image: CVPixelBuffer) -> CVPixelBuffer? {
        guard !insetAspectRatios.isEmpty else { return image }
        let frames = insetLayout.insetFrames(
            in: CGRect(x: 0, y: 0, width: CVPixelBufferGetWidth(image), height: CVPixelBufferGetHeight(image)),
            aspectRatios: insetAspectRatios)
        let pictures = zip(insets, frames).compactMap { inset, frame in inset.newest.map { (image: $0, frame: frame) } }
        return compositor.compose(image, insets: pictures)
    }

    private func frameArrived() {
        guard let sample = feed?.takeNewest() else { return }
        guard viewerCount > 0, let image = sample.imageBuffer.flatMap(picture), let jpeg = encoder.encode(image)
        else { return }
        // A timestamp of the frame on the host's clock, so a viewer can measure glass-to-glass latency.
        let captured = CMTimeGetSeconds(sample.presentationTimeStamp)
        var part = ByteBuffer()
        part.writeString(
            "--\(Self.boundary)\r\nContent-Type: image/jpeg\r\nContent-Length: \(jpeg.count)\r\n"
                + "X-Presentation-Time: \(captured)\r\n\r\n")
        part.writeBytes(jpeg)
        part.writeString("\r\n")
        let continuations = state.withLock { state in
            let now = Date()
            state.framesEncoded += 1
            state.recentFrameTimes.append(now)
            state.recentFrameTimes.removeAll { $0 < now.addingTimeInterval(-1) }
            return Array(state.viewers.values)
        }
        for continuation in continuations { continuation.yield(part) }
    }
}

/// One inset camera of the stream: a feed of its own on the camera's port, turned and mirrored as the inset's layer
/// says, and its newest frame, kept until the next replaces it (the cameras' rates differ, and each frame of the
/// main camera takes whatever is newest).
///
/// Threading: thread safe; frames arrive on the feed's queue, `newest` is read on the main feed's.
private final class InsetSource: @unchecked Sendable {
    private let feed = Mutex<PreviewFeed?>(nil)
    private let latest = Mutex<CVPixelBuffer?>(nil)

    init(layer: AVCaptureVideoPreviewLayer, session: AVCaptureSession) throws(PreviewError) {
        guard let port = layer.connection?.inputPorts.first else {
            throw PreviewError(
                "an inset's preview layer has no camera; connect it with AVCaptureConnection(inputPort:"
                    + "videoPreviewLayer:) first")
        }
        let made = try PreviewFeed(
            session: session, port: port, drawablePixelFormats: [PreviewJPEGEncoder.pixelFormat],
            preferredPixelFormat: PreviewJPEGEncoder.pixelFormat
        ) { [weak self] in self?.frameArrived() }
        // An inset shows what its layer shows, as a window's does: a front camera mirrored.
        MJPEGBroadcaster.turnAndMirror(made, as: layer)
        feed.withLock { $0 = made }
    }

    /// The camera's newest frame, if one has come.
    var newest: CVPixelBuffer? { latest.withLock { $0 } }

    /// Takes the feed's output off the session.
    func detach() { feed.withLock { $0 }?.detach() }

    private func frameArrived() {
        guard let image = feed.withLock({ $0 })?.takeNewest()?.imageBuffer else { return }
        latest.withLock { $0 = image }
    }
}
