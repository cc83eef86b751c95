import CoreMetrics
import Foundation
import OpenAVCapture
import Prometheus
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A capture session's numbers as Prometheus metrics, through the swift-metrics API (swift-prometheus behind it).
///
/// Read when scraped, never polled: ``exposition()`` reads every watched session's outputs (the counts each keeps
/// anyway: frames, drops by reason, bytes, the encoder's backlog, the microphone's clock drift, reconnections),
/// free disk space where files are written, and the levels given with ``watchLevel(_:help:_:)`` (viewers, clients),
/// then renders the registry in Prometheus' text format. Counters follow the outputs' cumulative counts: when the
/// counts start again (a new recording after an idle output, seen by the output's epoch), the counter adds the new
/// count whole, so it never goes back and loses nothing. Every series is labelled with its output's type
/// (`output="AVCaptureMovieFileOutput"`).
///
/// | metric | type | labels |
/// |---|---|---|
/// | `avcapture_frames_captured_total` | counter | output |
/// | `avcapture_frames_written_total` | counter | output |
/// | `avcapture_frames_dropped_total` | counter | output, reason (`FrameWasLate`, `OutOfBuffers`, `Discontinuity`) |
/// | `avcapture_packets_dropped_total` | counter | output, reason (`disconnected`, `waitingForKeyFrame`, …) |
/// | `avcapture_bytes_written_total` | counter | output |
/// | `avcapture_encoder_queue_depth` | gauge | output |
/// | `avcapture_audio_clock_drift_ppm` | gauge | output |
/// | `avcapture_reconnects_total` | counter | output |
/// | `avcapture_connected` | gauge | output |
/// | `avcapture_disk_free_bytes` | gauge | path |
///
/// Threading: thread safe; scrapes may come from any thread, each reads under one lock.
public final class CaptureMetrics: Sendable {
    /// The registry the metrics live in (add your own to it if you like).
    public let registry: PrometheusCollectorRegistry
    private let factory: DescribedPrometheusFactory
    private let state = Mutex(State())

    private struct Level: @unchecked Sendable {
        let gauge: CoreMetrics.Gauge
        let read: @Sendable () -> Double
    }

    private struct State: @unchecked Sendable {
        var sessions: [AVCaptureSession] = []
        var directories: [URL] = []
        var levels: [Level] = []
        var counters: [String: (counter: CoreMetrics.Counter, last: Int64, epoch: Int)] = [:]
        var gauges: [String: CoreMetrics.Gauge] = [:]
    }

    static let help: [String: String] = [
        "avcapture_frames_captured_total": "Video frames the capture device handed to the output.",
        "avcapture_frames_written_total": "Video frames the output's encoder took into its file or stream.",
        "avcapture_frames_dropped_total": "Video frames lost before the encoder, by reason.",
        "avcapture_packets_dropped_total": "Encoded packets the network side left out, by reason.",
        "avcapture_bytes_written_total": "Bytes written to files and sent to servers.",
        "avcapture_encoder_queue_depth": "Video frames waiting for the encoder.",
        "avcapture_audio_clock_drift_ppm": "The microphone's sample clock error against the session clock, in ppm.",
        "avcapture_reconnects_total": "Connections to the server made after the first.",
        "avcapture_connected": "1 while the output's connection to its server is open.",
        "avcapture_disk_free_bytes": "Bytes free for an unprivileged writer where files are written.",
    ]
    static let frameDropReasons = ["FrameWasLate", "OutOfBuffers", "Discontinuity"]
    static let packetDropReasons = ["disconnected", "waitingForKeyFrame", "networkBehind"]

    /// Metrics in `registry` (a new one by default).
    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        factory = DescribedPrometheusFactory(registry: registry, help: Self.help)
    }

    /// Reports `session`'s outputs at every scrape (outputs added later included).
    public func watch(_ session: AVCaptureSession) { state.withLock { $0.sessions.append(session) } }

    /// Reports the free space of the file system holding `directory` (besides the directories of files being
    /// written, which are reported by themselves).
    public func watchFreeDisk(at directory: URL) {
        state.withLock { $0.directories.append(directory.standardizedFileURL) }
    }

    /// A gauge `name` (e.g. `avcapture_viewers`) read from `read` at every scrape.
    public func watchLevel(_ name: String, help: String, _ read: @escaping @Sendable () -> Double) {
        let factory = DescribedPrometheusFactory(registry: registry, help: [name: help])
        let gauge = CoreMetrics.Gauge(label: name, dimensions: [], factory: factory)
        state.withLock { $0.levels.append(Level(gauge: gauge, read: read)) }
    }

    /// Reads everything watched and renders the registry in Prometheus' text exposition format (version 0.0.4).
    public func exposition() -> String {
        update()
        return registry.emitToString()
    }

    /// The exposition's content type.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Moves every metric to what the watched outputs report now.
    public func update() {
        state.withLock { state in
            var directories = Set(state.directories.map(\.path))
            for (label, measured) in Self.labelledMeasurements(state.sessions) {
                let output = [("output", label)]
                count(&state, measured.epoch, "avcapture_frames_captured_total", output, measured.framesCaptured)
                count(&state, measured.epoch, "avcapture_frames_written_total", output, measured.framesWritten)
                for reason in Set(Self.frameDropReasons).union(measured.framesDropped.keys) {
                    count(&state, measured.epoch, "avcapture_frames_dropped_total", output + [("reason", reason)],
                        measured.framesDropped[reason] ?? 0)
                }
                count(&state, measured.epoch, "avcapture_bytes_written_total", output, Int(measured.bytesWritten))
                level(&state, "avcapture_encoder_queue_depth", output, Double(measured.encoderQueueDepth))
                if let drift = measured.audioClockDriftPPM {
                    level(&state, "avcapture_audio_clock_drift_ppm", output, drift)
                }
                if let connected = measured.isConnected {
                    for reason in Set(Self.packetDropReasons).union(measured.packetsDropped.keys) {
                        count(&state, measured.epoch, "avcapture_packets_dropped_total", output + [("reason", reason)],
                            measured.packetsDropped[reason] ?? 0)
                    }
                    count(&state, measured.epoch, "avcapture_reconnects_total", output, measured.reconnections)
                    level(&state, "avcapture_connected", output, connected ? 1 : 0)
                }
                if let file = measured.fileURL { directories.insert(file.deletingLastPathComponent().path) }
            }
            for directory in directories.sorted() {
                if let free = Self.freeBytes(at: directory) {
                    level(&state, "avcapture_disk_free_bytes", [("path", directory)], Double(free))
                }
            }
            for level in state.levels { level.gauge.record(level.read()) }
        }
    }

    /// Each output's measurements, labelled by its type; a second output of one type gets "-2", and so on.
    private static func labelledMeasurements(_ sessions: [AVCaptureSession]) -> [(String, OutputMeasurements)] {
        var seen: [String: Int] = [:]
        var labelled: [(String, OutputMeasurements)] = []
        for output in sessions.flatMap(\.outputs) {
            guard let measured = output.measurements else { continue }
            let name = String(describing: type(of: output))
            seen[name, default: 0] += 1
            labelled.append((seen[name]! == 1 ? name : "\(name)-\(seen[name]!)", measured))
        }
        return labelled
    }

    /// Adds to counter `name` what `total` grew by since the last scrape (all of it when it started again).
    private func count(
        _ state: inout State, _ epoch: Int, _ name: String, _ dimensions: [(String, String)], _ total: Int
    ) {
        let key = Self.key(name, dimensions)
        let made = { CoreMetrics.Counter(label: name, dimensions: dimensions, factory: self.factory) }
        let entry = state.counters[key] ?? (made(), 0, epoch)
        let now = Int64(total)
        let increase = entry.epoch == epoch && now >= entry.last ? now - entry.last : now
        if increase > 0 { entry.counter.increment(by: increase) }
        state.counters[key] = (entry.counter, now, epoch)
    }

    private func level(_ state: inout State, _ name: String, _ dimensions: [(String, String)], _ value: Double) {
        let key = Self.key(name, dimensions)
        let gauge = state.gauges[key] ?? CoreMetrics.Gauge(label: name, dimensions: dimensions, factory: factory)
        state.gauges[key] = gauge
        gauge.record(value)
    }

    private static func key(_ name: String, _ dimensions: [(String, String)]) -> String {
        ([name] + dimensions.map { "\($0.0)=\($0.1)" }).joined(separator: "\u{1}")
    }

    /// `statvfs`: the blocks an unprivileged writer may still use, times the fragment size.
    static func freeBytes(at path: String) -> Int64? {
        var information = statvfs()
        guard statvfs(path, &information) == 0 else { return nil }
        return Int64(information.f_bavail) * Int64(information.f_frsize)
    }
}
