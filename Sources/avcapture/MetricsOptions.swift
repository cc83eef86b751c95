import ArgumentParser
import Foundation
import OpenAVCapture
import OpenAVCaptureWeb

/// `--metrics HOST:PORT`: Prometheus metrics of a long-running command (`record`, `publish`, `serve`) at
/// `http://HOST:PORT/metrics`.
struct MetricsOptions: ParsableArguments {
    @Option(
        name: .customLong("metrics"),
        help: "Serve Prometheus metrics at http://HOST:PORT/metrics, e.g. 127.0.0.1:9464 (port 0 picks a free one).")
    var address: String?

    func validate() throws {
        guard let address else { return }
        guard let (host, _) = ServeCommand.parseListen(address) else {
            throw ValidationError("--metrics '\(address)' is not HOST:PORT, e.g. 127.0.0.1:9464")
        }
        // The metrics say what the camera does and how much disk is left: nothing to hand to the network unasked.
        if !WebPreviewServer.Configuration(host: host, mediaDirectory: URL(fileURLWithPath: "/")).isLoopback {
            Terminal.error("warning: --metrics \(address) serves the metrics beyond this machine, unauthenticated")
        }
    }

    /// Starts the endpoint for `session` (and whatever `configure` adds); nil without `--metrics`. Returns once it
    /// listens; throws when it cannot (a port in use).
    func start(
        watching session: AVCaptureSession, configure: (CaptureMetrics) -> Void = { _ in }
    ) throws -> RunningMetrics? {
        guard address != nil else { return nil }
        let metrics = CaptureMetrics()
        metrics.watch(session)
        metrics.watchFreeDisk(at: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
        configure(metrics)
        return try start(serving: metrics)
    }

    /// Serves `metrics` at `--metrics`; nil without it. Returns once it listens; throws when it cannot.
    func start(serving metrics: CaptureMetrics) throws -> RunningMetrics? {
        guard let address, let (host, port) = ServeCommand.parseListen(address) else { return nil }
        let endpoint = MetricsEndpoint(metrics: metrics, host: host, port: port)
        let started = DispatchSemaphore(value: 0)
        let failure = LockedBox<String?>(nil)
        Task {
            do {
                try await endpoint.run { url in
                    Terminal.error("Metrics at \(url.absoluteString)")
                    started.signal()
                }
            } catch {
                failure.value = "\(error)"
                started.signal()
            }
        }
        _ = started.wait(timeout: .now() + 10)
        if let message = failure.value {
            throw ToolFailure(.unavailable, "cannot serve metrics on \(address): \(message)")
        }
        return RunningMetrics(endpoint: endpoint, metrics: metrics)
    }
}

/// A metrics endpoint serving while a command runs.
struct RunningMetrics {
    let endpoint: MetricsEndpoint
    let metrics: CaptureMetrics
    func stop() { endpoint.stop() }
}
