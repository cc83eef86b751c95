import ArgumentParser
import Foundation
import OpenAVCapture
import Synchronization

/// `avcapture publish URL`: a camera and a microphone published live (HLS, RTMP, SRT, RTSP), optionally recorded from
/// the same encoder.
struct PublishCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Publish live: an HLS playlist (.m3u8), rtmp://host/app/key, srt://host:port (caller), or rtsp://….",
        discussion: """
            HLS writes fragmented MP4 (CMAF) segments beside the playlist (--segment-duration, --playlist-size; \
            older segments are deleted). RTSP pushes with ANNOUNCE and RECORD, RTP interleaved over TCP. RTMP, SRT \
            and RTSP reconnect with backoff when the server goes away; packets that cannot be sent are dropped and \
            counted by reason, never the --record file, which is written from the same encoded packets. Ctrl-C or \
            SIGTERM end the stream cleanly. --metrics serves Prometheus metrics at http://HOST:PORT/metrics.
            """)

    @Argument(help: "rtmp://host/app/key, srt://host:port?streamid=…, rtsp://host:port/path, or a path ending in .m3u8.")
    var url: String
    @OptionGroup var camera: CameraOptions
    @OptionGroup var microphone: MicrophoneOptions
    @OptionGroup var formatOptions: FormatOptions
    @Option(help: "Video bit rate in bits per second, e.g. 6M.") var bitrate: Quantity?
    @Option(help: "Stop after this many seconds.") var duration: Double?
    @Option(help: "Also record the stream into this movie (.mov, .mp4), from the same encoder.") var record: String?
    @OptionGroup var stream: HLSOptions
    @Flag(help: "Play file: sources again and again instead of stopping at their end.") var loop = false
    @OptionGroup var logging: LoggingOptions
    @OptionGroup var metrics: MetricsOptions

    func validate() throws {
        let lowered = url.lowercased()
        guard
            ["rtmp://", "rtmps://", "srt://", "udp://", "tcp://", "rtsp://"].contains(where: lowered.hasPrefix)
                || lowered.hasSuffix(".m3u8")
        else {
            throw ValidationError("'\(url)' is not rtmp://, srt://, udp://, tcp://, rtsp:// or a path ending in .m3u8")
        }
        if camera.isNone { throw ValidationError("publish needs a camera") }
        if let duration, !(duration > 0) { throw ValidationError("--duration must be positive") }
    }

    func run() throws {
        try reportingFailures {
            if lowered(url).hasSuffix(".m3u8") {
                _ = try OutputTarget(path: url, allowedExtensions: ["m3u8"], overwrite: true)
            }
            let target = try record.map {
                try OutputTarget(path: $0, allowedExtensions: ["mov", "mp4"], overwrite: false)
            }
            DeviceSelector.loopsMovieFiles = loop
            let (video, audio) = (camera.video, microphone.audio)
            let cameraDevice = try DeviceSelector.device(video, for: .video)
            let companion = audio == nil ? try DeviceSelector.companionMicrophone(of: cameraDevice, named: video) : nil
            let microphoneDevice = try companion ?? DeviceSelector.device(audio, for: .audio)
            let output = AVCapturePublishingOutput(url: url)
            stream.apply(to: output)
            output.videoBitRate = bitrate.map { Int($0.value) }
            output.recordingURL = target?.url
            let setup = try CaptureSetup(
                video: cameraDevice, audio: microphoneDevice, format: formatOptions.choice, outputs: [output])
            let exporter = try metrics.start(watching: setup.session)
            defer { exporter?.stop() }
            try setup.start()
            let stopped = DispatchSemaphore(value: 0)
            let signal = Mutex<Int32?>(nil)
            let signals = SignalWatcher(stop: { number in
                signal.withLock { $0 = number }
                stopped.signal()
            })
            Terminal.error("Publishing \(setup.videoSummary ?? "video") to \(url)")
            let started = Date()
            var why = "stopped"
            while true {
                if stopped.wait(timeout: .now() + 0.5) == .success {
                    why = signal.withLock { $0 } == SIGINT ? "interrupted (Ctrl-C)" : "terminated (SIGTERM)"
                    break
                }
                if let duration, Date().timeIntervalSince(started) >= duration {
                    why = "reached --duration"
                    break
                }
                if setup.movieFileReachedEnd {
                    why = "end of input"
                    break
                }
                Terminal.status(Self.statusLine(output.statistics, since: started))
            }
            Terminal.endStatus()
            // Read before stopping, which closes the connection.
            let failure = Self.connectionFailure(output.statistics)
            output.stopPublishing()
            setup.session.stopRunning()
            withExtendedLifetime(signals) {}
            let statistics = output.statistics
            let drops = statistics.droppedPackets.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
            print(
                "Published to \(url): \(statistics.packetsSent) packets sent, dropped "
                    + (drops.isEmpty ? "0" : drops.joined(separator: ", "))
                    + ", \(statistics.reconnections) reconnection\(statistics.reconnections == 1 ? "" : "s"); stopped: \(why)"
            )
            if let failure { Terminal.error("avcapture: \(failure)") }
            if let target {
                if let error = output.recordingError {
                    throw ToolFailure(.ioError, "the recording failed: \(CaptureSetup.describe(error))")
                }
                print(FileSummary(url: target.url).line)
            }
        }
    }

    private func lowered(_ text: String) -> String { text.lowercased() }

    /// Why the stream is not getting through, when it ended disconnected: the server's last answer, and what to do
    /// about a refusal of the credentials.
    static func connectionFailure(_ statistics: AVCapturePublishingStatistics) -> String? {
        guard !statistics.isConnected, let error = statistics.lastError else { return nil }
        var line = "the last connection to the server failed: \(error)"
        if error.contains("401") || error.lowercased().contains("unauthorized") {
            line += "; check the user and password in the URL (rtsp://user:password@host:port/path, rtmp://…)"
        }
        return line
    }

    static func statusLine(_ statistics: AVCapturePublishingStatistics, since start: Date) -> String {
        String(
            format: "%7.1f s  %@  sent %d  dropped %d  reconnections %d", Date().timeIntervalSince(start),
            statistics.isConnected ? "connected" : "reconnecting", statistics.packetsSent,
            statistics.totalDroppedPackets, statistics.reconnections)
    }
}
