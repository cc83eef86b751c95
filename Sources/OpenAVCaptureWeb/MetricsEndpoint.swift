import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// An HTTP server with one route, `GET /metrics`: ``CaptureMetrics``' exposition for Prometheus to scrape, for
/// commands that serve nothing else (`avcapture record --metrics 127.0.0.1:9464`). ``WebPreviewServer`` serves the
/// same route on its own port.
///
/// Threading: thread safe; `run()` blocks its task until the task is cancelled or `stop()` is called.
public final class MetricsEndpoint: Sendable {
    public let host: String
    public let port: Int
    private let metrics: CaptureMetrics
    private let group = Mutex<ServiceGroup?>(nil)

    /// An endpoint at `host`:`port` (0 picks a free port, reported to `run`'s `onListening`).
    public init(metrics: CaptureMetrics, host: String, port: Int) {
        (self.metrics, self.host, self.port) = (metrics, host, port)
    }

    /// Serves until cancelled or ``stop()``; `onListening` gets the metrics URL once the socket is bound.
    /// Throws when the address cannot be bound (a port in use, an address not of this machine).
    public func run(onListening: @escaping @Sendable (URL) -> Void = { _ in }) async throws {
        let router = Router<BasicRequestContext>()
        router.get("metrics") { [metrics] _, _ -> Response in Self.response(metrics) }
        let host = self.host
        let application = Application(
            router: router,
            configuration: .init(address: .hostname(host, port: port), serverName: "OpenAVCapture"),
            onServerRunning: { channel in
                let shownHost = host.contains(":") ? "[\(host)]" : host
                let bound = channel.localAddress?.port ?? 0
                if let url = URL(string: "http://\(shownHost):\(bound)/metrics") { onListening(url) }
            },
            logger: {
                var logger = Logger(label: "OpenAVCaptureWeb.metrics")
                logger.logLevel = .warning
                return logger
            }())
        let services = ServiceGroup(
            configuration: .init(services: [application], gracefulShutdownSignals: [], logger: application.logger))
        group.withLock { $0 = services }
        try await withTaskCancellationHandler {
            try await services.run()
        } onCancel: {
            Task { await services.triggerGracefulShutdown() }
        }
    }

    /// Stops a running endpoint. Any thread.
    public func stop() {
        guard let services = group.withLock({ $0 }) else { return }
        Task { await services.triggerGracefulShutdown() }
    }

    /// The exposition as an HTTP response, never cached.
    static func response(_ metrics: CaptureMetrics) -> Response {
        Response(
            status: .ok, headers: [.contentType: CaptureMetrics.contentType, .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: metrics.exposition())))
    }
}
