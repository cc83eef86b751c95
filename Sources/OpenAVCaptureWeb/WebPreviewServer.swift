import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import OpenAVCapture
import ServiceLifecycle
import Synchronization

/// The camera app in a browser: an HTTP server that serves the page at `/`, streams the preview layer's video as
/// MJPEG (`/stream`), turns the page's taps into device points with the layer's own conversion, runs the app's
/// actions, shows the session's controls (`GET /controls`, `POST /controls/N`: ``addControlRoutes(to:)``), and
/// serves the photos and movies from its media directory.
///
/// Safe by default: it listens on loopback; any other address needs a token, and then every request must carry it
/// (`Authorization: Bearer`, the cookie the page sets on its first visit, or `?token=`), and TLS (``TLSFiles``)
/// unless the configuration says ``Configuration/allowsCleartextNetwork``. Files are served only by plain names
/// from the media directory, viewers are bounded, bodies are capped, and every bad request gets a 4xx and a line in
/// the log.
///
/// Threading: thread safe; `run()` blocks its task until the task is cancelled or `stop()` is called.
public final class WebPreviewServer: Sendable {
    public struct Configuration: Sendable {
        /// Address to listen on; loopback unless a token is set.
        public var host: String
        /// Port; 0 picks a free one (reported to `onListening`).
        public var port: Int
        /// The secret every request must carry; required for a non-loopback host.
        public var token: String?
        /// Streams served at once; more get 503.
        public var maximumViewers: Int
        /// The largest request body accepted (bytes); larger get 413.
        public var maximumBodyBytes: Int
        /// Where the app's photos and movies are, served by name under `/media/`.
        public var mediaDirectory: URL
        /// A live HLS stream's directory (an `AVCapturePublishingOutput`'s playlist and its segments), served by
        /// name under `/live/`; nil serves none.
        public var liveDirectory: URL?
        /// The certificate and key to serve HTTPS with; nil serves plain HTTP.
        public var tls: TLSFiles?
        /// Whether a non-loopback host may be served without TLS (the token and the pictures then cross the network
        /// in clear).
        public var allowsCleartextNetwork = false
        /// Metrics served at `/metrics` (with this server's viewers and clients added); nil serves none.
        public var metrics: CaptureMetrics?

        public init(
            host: String = "127.0.0.1", port: Int = 8080, token: String? = nil, maximumViewers: Int = 4,
            maximumBodyBytes: Int = 4096, mediaDirectory: URL, liveDirectory: URL? = nil
        ) {
            (self.host, self.port, self.token) = (host, port, token)
            (self.maximumViewers, self.maximumBodyBytes, self.mediaDirectory) =
                (maximumViewers, maximumBodyBytes, mediaDirectory)
            self.liveDirectory = liveDirectory
        }

        /// Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost).
        public var isLoopback: Bool { host == "localhost" || host == "::1" || host.hasPrefix("127.") }
    }

    public let configuration: Configuration
    let layer: AVCaptureVideoPreviewLayer
    private let actions: any WebCameraActions
    private let log: @Sendable (String) -> Void
    private let broadcaster: MJPEGBroadcaster
    private let stopRequested = Mutex<ServiceGroup?>(nil)
    private let inFlight = RequestsInFlight()
    private let server: HTTPServerBuilder

    /// A server for `layer`'s video and `actions`; `log` gets a line per refused request. `insets` are preview
    /// layers of a multi-camera session's other cameras, each connected by hand to its camera: the stream shows
    /// them over `layer`'s picture where `insetLayout` puts them. Throws when the configuration is unsafe (a
    /// non-loopback host without a token) or the session cannot feed a stream.
    public init(
        layer: AVCaptureVideoPreviewLayer, insets: [AVCaptureVideoPreviewLayer] = [],
        insetLayout: PictureInPictureLayout = PictureInPictureLayout(), actions: any WebCameraActions,
        configuration: Configuration,
        log: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
    ) throws(PreviewError) {
        guard configuration.isLoopback || !(configuration.token ?? "").isEmpty else {
            throw PreviewError(
                "listening on \(configuration.host) would show the camera to the network; give a --token (every"
                    + " request must then carry it) or listen on 127.0.0.1")
        }
        guard configuration.isLoopback || configuration.tls != nil || configuration.allowsCleartextNetwork else {
            throw PreviewError(
                "listening on \(configuration.host) without TLS would send the token and the pictures in clear; give"
                    + " --tls-cert and --tls-key, or --insecure to accept that")
        }
        server = try configuration.tls?.serverBuilder() ?? .http1()
        guard configuration.maximumViewers > 0 else { throw PreviewError("the viewer limit must be at least 1") }
        self.configuration = configuration
        self.layer = layer
        self.actions = actions
        self.log = log
        broadcaster = try MJPEGBroadcaster(
            layer: layer, insets: insets, insetLayout: insetLayout, maximumViewers: configuration.maximumViewers)
        if let metrics = configuration.metrics {
            metrics.watchLevel("avcapture_viewers", help: "Browsers streaming the camera's preview now.") {
                [broadcaster] in Double(broadcaster.viewerCount)
            }
            metrics.watchLevel(
                "avcapture_clients", help: "HTTP requests being answered now, open preview streams included."
            ) { [broadcaster, inFlight] in Double(broadcaster.viewerCount + inFlight.count.load(ordering: .relaxed)) }
        }
    }

    /// Serves until cancelled or `stop()`; `onListening` gets the address once the socket is bound (with the
    /// port chosen when the configuration's is 0).
    public func run(onListening: @escaping @Sendable (URL) -> Void = { _ in }) async throws {
        let host = configuration.host
        let scheme = configuration.tls == nil ? "http" : "https"
        let application = Application(
            router: makeRouter(),
            server: server,
            configuration: .init(address: .hostname(host, port: configuration.port), serverName: "OpenAVCapture"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                let shownHost = host.contains(":") ? "[\(host)]" : host
                if let url = URL(string: "\(scheme)://\(shownHost):\(port)/") { onListening(url) }
            },
            logger: {
                var logger = Logger(label: "OpenAVCaptureWeb")
                logger.logLevel = .warning
                return logger
            }())
        // A service group of its own, so stop() can shut the server down gracefully (open streams end, the socket
        // closes) instead of cancelling it mid-flight.
        let group = ServiceGroup(
            configuration: .init(services: [application], gracefulShutdownSignals: [], logger: application.logger))
        stopRequested.withLock { $0 = group }
        defer { broadcaster.detach() }
        let disengageControls = engageControls()
        defer { disengageControls() }
        try await withTaskCancellationHandler {
            try await group.run()
        } onCancel: {
            Task { await group.triggerGracefulShutdown() }
        }
    }

    /// Stops a running server gracefully. Any thread.
    public func stop() {
        guard let group = stopRequested.withLock({ $0 }) else { return }
        // Open streams would hold a graceful shutdown open; they end first.
        broadcaster.endViewers()
        Task { await group.triggerGracefulShutdown() }
    }

    /// Viewers streaming now.
    public var viewerCount: Int { broadcaster.viewerCount }

    // MARK: Routes

    private func makeRouter() -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: GuardMiddleware(token: configuration.token, inFlight: inFlight, log: log))
        router.get("/") { [configuration] request, _ -> Response in
            // The first visit carries the token in its address: it becomes a cookie and the address loses it, so
            // the page and everything it asks for go without a token in any URL.
            let cookie = configuration.token.flatMap { $0.isEmpty ? nil : $0 }.map {
                GuardMiddleware<BasicRequestContext>.cookie($0, secure: configuration.tls != nil)
            }
            var response: Response
            if cookie != nil, request.uri.queryParameters.get("token") != nil {
                response = Response(status: .seeOther, headers: [.location: "/", .cacheControl: "no-store"])
            } else {
                response = Response(
                    status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
                    body: .init(byteBuffer: ByteBuffer(string: CameraAppPage.html(token: ""))))
            }
            if let cookie { response.setCookie(cookie) }
            return response
        }
        if let metrics = configuration.metrics {
            router.get("metrics") { _, _ -> Response in MetricsEndpoint.response(metrics) }
        }
        // Browsers ask for an icon; an empty answer keeps the log for real mistakes.
        router.get("favicon.ico") { _, _ -> Response in Response(status: .noContent) }
        router.get("stream") { [broadcaster] _, _ -> Response in
            guard let viewer = broadcaster.addViewer() else {
                throw HTTPError(
                    .serviceUnavailable,
                    message: "\(broadcaster.maximumViewers) viewers are already watching; close one and retry")
            }
            return Response(
                status: .ok,
                headers: [
                    .contentType: "multipart/x-mixed-replace; boundary=\(MJPEGBroadcaster.boundary)",
                    .cacheControl: "no-store",
                ],
                body: ResponseBody { writer in
                    defer { broadcaster.removeViewer(viewer.id) }
                    for await part in viewer.parts { try await writer.write(part) }
                    try await writer.finish(nil)
                })
        }
        router.get("status") { [self] _, _ -> Response in try json(statusDocument()) }
        addControlRoutes(to: router)
        router.post("focus") { [self] request, _ -> Response in
            let point = try await devicePoint(request)
            actions.focus(atDevicePoint: point)
            return try json(["x": Double(point.x), "y": Double(point.y)])
        }
        router.post("expose") { [self] request, _ -> Response in
            let point = try await devicePoint(request)
            actions.expose(atDevicePoint: point)
            return try json(["x": Double(point.x), "y": Double(point.y)])
        }
        router.post("reset") { [self] request, _ -> Response in
            _ = try await body(request)
            actions.resetFocusAndExposure()
            return try json(["ok": true])
        }
        router.post("switch") { [self] request, _ -> Response in
            _ = try await body(request)
            return try json(["ok": actions.switchCamera()])
        }
        router.post("flash") { [self] request, _ -> Response in
            let mode = try await choice(request, from: ["off", "on", "auto"])
            guard actions.setFlashMode(mode) else { throw HTTPError(.conflict, message: "the camera has no flash") }
            return try json(["ok": true])
        }
        router.post("torch") { [self] request, _ -> Response in
            let mode = try await choice(request, from: ["off", "on", "auto"])
            guard actions.setTorchMode(mode) else { throw HTTPError(.conflict, message: "the camera has no torch") }
            return try json(["ok": true])
        }
        router.post("zoom") { [self] request, _ -> Response in
            let fields = try await object(request)
            guard let value = fields["value"] as? Double, (0...1).contains(value) else {
                throw HTTPError(.badRequest, message: "send {\"value\": 0...1}")
            }
            actions.zoom(toValue: value)
            return try json(["ok": true])
        }
        router.post("photo") { [self] request, _ -> Response in
            _ = try await body(request)
            actions.takePhoto()
            return try json(["ok": true])
        }
        router.post("record") { [self] request, _ -> Response in
            _ = try await body(request)
            actions.toggleRecording()
            return try json(["ok": true])
        }
        router.get("media/:name") { [self] _, context -> Response in
            let name = try context.parameters.require("name")
            return try mediaFile(named: name)
        }
        if let liveDirectory = configuration.liveDirectory {
            router.get("live/:name") { [self] _, context -> Response in
                let name = try context.parameters.require("name")
                return try liveFile(named: name, in: liveDirectory)
            }
        }
        return router
    }

    private func statusDocument() throws -> [String: Any] {
        let status = actions.status()
        let data = try JSONEncoder().encode(status)
        var document = (try JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
        document["fps"] = broadcaster.framesPerSecond
        document["dropped"] = broadcaster.framesDropped
        document["viewers"] = broadcaster.viewerCount
        document["objectFit"] = Self.objectFit(layer.videoGravity)
        document["files"] = mediaNames()
        if configuration.liveDirectory != nil { document["hls"] = "live/" + Self.livePlaylistName }
        return document
    }

    /// CSS's object-fit does what the layer's gravity does: contain fits, cover fills, fill stretches.
    static func objectFit(_ gravity: AVLayerVideoGravity) -> String {
        switch gravity {
        case .resizeAspectFill: "cover"
        case .resize: "fill"
        default: "contain"
        }
    }

    /// The page sends where it was tapped in the picture element and the element's size; the layer's geometry
    /// with those bounds converts it, exactly as for a window of that size.
    private func devicePoint(_ request: Request) async throws -> CGPoint {
        let fields = try await object(request)
        guard let x = fields["x"] as? Double, let y = fields["y"] as? Double, let width = fields["width"] as? Double,
            let height = fields["height"] as? Double, width > 0, height > 0, width < 100_000, height < 100_000,
            (0...width).contains(x), (0...height).contains(y)
        else {
            throw HTTPError(.badRequest, message: "send {\"x\", \"y\", \"width\", \"height\"} in the picture's pixels")
        }
        var geometry = layer.geometry
        geometry.layerBounds = CGRect(x: 0, y: 0, width: width, height: height)
        let point = geometry.captureDevicePointConverted(fromLayerPoint: CGPoint(x: x, y: y))
        guard (0...1).contains(point.x), (0...1).contains(point.y) else {
            throw HTTPError(.unprocessableContent, message: "the tap is outside the picture")
        }
        return point
    }

    private func choice(_ request: Request, from choices: Set<String>) async throws -> String {
        let fields = try await object(request)
        guard let mode = fields["mode"] as? String, choices.contains(mode) else {
            throw HTTPError(.badRequest, message: "send {\"mode\": \(choices.sorted())}")
        }
        return mode
    }

    private func body(_ request: Request) async throws -> ByteBuffer {
        do {
            return try await request.body.collect(upTo: configuration.maximumBodyBytes)
        } catch is NIOTooManyBytesError {
            throw HTTPError(.contentTooLarge, message: "bodies are at most \(configuration.maximumBodyBytes) bytes")
        } catch {
            // A body that ended early or whose chunks do not parse: the client's fault, not its size.
            throw HTTPError(.badRequest, message: "the body could not be read")
        }
    }

    func object(_ request: Request) async throws -> [String: Any] {
        let buffer = try await body(request)
        guard let object = try? JSONSerialization.jsonObject(with: Data(buffer.readableBytesView)) as? [String: Any]
        else { throw HTTPError(.badRequest, message: "the body is not a JSON object") }
        return object
    }

    func json(_ object: [String: Any]) throws -> Response {
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
