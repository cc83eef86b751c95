import Foundation
import OpenAVCapture

/// Runs one recording on a file output from start to a finalized file: live status, signals, the summary line
/// and the exit status. Shared by `record` and `audio`.
final class Recorder: NSObject, AVCaptureFileOutputDisconnectionDelegate, @unchecked Sendable {
    private let output: AVCaptureFileOutput
    private let setup: CaptureSetup
    private let target: OutputTarget
    /// The series when recording segments, or nil for one file.
    private let segments: AVCaptureRecordingSegments?
    private let finished = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var finishError: (any Error)?
    private var stopSignal: Int32?
    private var lastStatus: (time: Date, frames: Int) = (Date(), 0)

    init(output: AVCaptureFileOutput, setup: CaptureSetup, target: OutputTarget, segments: AVCaptureRecordingSegments? = nil) {
        self.output = output
        self.setup = setup
        self.target = target
        self.segments = segments
    }

    /// Records until a limit, a signal or a failure ends it; prints the summary; returns the exit status.
    func run(startAs fileType: AVFileType? = nil) throws {
        // A movie file plays from its first frame when the session starts: ask for the recording first so that
        // frame is in it. A live camera has no first frame to keep; it starts recording once it streams.
        let startsWithInput = [setup.video, setup.audio].contains { $0?.uniqueID.hasPrefix("file:") == true }
        if startsWithInput { startRecording(as: fileType) }
        do {
            try setup.start()
        } catch {
            if startsWithInput { output.stopRecording() }
            throw error
        }
        defer { setup.session.stopRunning() }
        if !startsWithInput { startRecording(as: fileType) }
        let signals = SignalWatcher(
            stop: { [self] number in
                lock.withLock { stopSignal = number }
                output.stopRecording()
            },
            togglePause: { [output] in
                if output.isRecordingPaused { output.resumeRecording() } else { output.pauseRecording() }
            })
        if let summary = setup.videoSummary {
            Terminal.error("Recording \(summary) to \(target.url.path)" + (segments != nil ? " (segments)" : ""))
        }
        var advised = false
        // Said once, as soon as the file has started: an encoder that cannot keep up here, and what would.
        func advise() {
            guard !advised, let advice = output.recordingStatistics.realTimeAdvice else { return }
            Terminal.error("warning: " + advice)
            advised = true
        }
        while finished.wait(timeout: .now() + 0.5) == .timedOut {
            advise()
            Terminal.status(statusLine())
        }
        Terminal.endStatus()
        advise()
        withExtendedLifetime(signals) {}
        try conclude()
    }

    private func startRecording(as fileType: AVFileType?) {
        if let segments, let movieOutput = output as? AVCaptureMovieFileOutput {
            movieOutput.startRecording(segments: segments, recordingDelegate: self)
        } else if let audioOutput = output as? AVCaptureAudioFileOutput, let fileType {
            audioOutput.startRecording(to: target.captureURL, outputFileType: fileType, recordingDelegate: self)
        } else {
            output.startRecording(to: target.captureURL, recordingDelegate: self)
        }
    }

    // MARK: Status

    private func statusLine() -> String {
        let statistics = output.recordingStatistics
        let now = Date()
        let elapsed = now.timeIntervalSince(lastStatus.time)
        let fps = elapsed > 0 ? Double(statistics.videoFramesReceived - lastStatus.frames) / elapsed : 0
        lastStatus = (now, statistics.videoFramesReceived)
        var parts = [String(format: "%7.1f s", output.recordedDuration.seconds)]
        if setup.hasVideo { parts.append(String(format: "%5.1f fps", fps)) }
        let drops = statistics.droppedVideoFrames.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
        if setup.hasVideo { parts.append("dropped " + (drops.isEmpty ? "0" : drops.joined(separator: ", "))) }
        parts.append(Self.byteCount(output.recordedFileSize))
        if let channel = output.connection(with: .audio)?.audioChannels.first {
            parts.append(Self.meter(average: channel.averagePowerLevel, peak: channel.peakHoldLevel))
        }
        if output.isRecordingPaused { parts.append("PAUSED") }
        return parts.joined(separator: "  ")
    }

    /// "-23.1 dBFS [#########.......|....]": average as a bar, the peak hold as a mark, over −60…0 dBFS.
    static func meter(average: Float, peak: Float) -> String {
        let width = 20
        func position(_ level: Float) -> Int { Int(((max(-60, min(0, level)) + 60) / 60 * Float(width)).rounded()) }
        var bar = Array(repeating: Character("."), count: width)
        for index in 0..<position(average) { bar[index] = "#" }
        let peakIndex = min(width - 1, position(peak))
        if peak > -60 { bar[peakIndex] = "|" }
        return String(format: "%6.1f dBFS ", average) + "[" + String(bar) + "]"
    }

    /// "512 bytes", "38 kB", "6.1 MB", "1.25 GB": decimal units, as file managers count. Not `ByteCountFormatter`:
    /// on Linux its number formatter loads ICU's locale tables, about 5 MB more resident memory for a status line.
    static func byteCount(_ bytes: Int64) -> String {
        let value = Double(bytes)
        switch abs(value) {
        case ..<1_000: return "\(bytes) bytes"
        case ..<999_500: return String(format: "%.0f kB", value / 1e3)
        case ..<999_950_000: return String(format: "%.1f MB", value / 1e6)
        default: return String(format: "%.2f GB", value / 1e9)
        }
    }

    // MARK: The end

    private func conclude() throws {
        let (error, signal) = lock.withLock { (finishError, stopSignal) }
        let nsError = error as NSError?
        let finishedFile = error == nil || nsError?.userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool == true
        guard finishedFile else {
            target.discard()
            let code = (error as? AVError)?.code
            throw ToolFailure(
                code == .fileAlreadyExists ? .cannotCreate : code == .noDataCaptured ? .unavailable : .ioError,
                "recording failed: \(CaptureSetup.describe(error!))")
        }
        try target.commit()
        let why: String
        var status: ExitStatus?
        switch (error as? AVError)?.code {
        case nil: why = signal.map { $0 == SIGINT ? "interrupted (Ctrl-C)" : "terminated (SIGTERM)" } ?? "stopped"
        case .maximumDurationReached?: why = "reached --duration"
        case .maximumFileSizeReached?: why = "reached --max-size"
        case .diskFull?:
            why = "the disk is nearly full (--min-free)"
            status = .ioError
        case .deviceWasDisconnected? where setup.movieFileReachedEnd:
            // A movie file reports its end as a disconnect (see AVCaptureDevice.movieFileDevices(url:loop:)).
            why = "end of input"
        case .deviceWasDisconnected?:
            why = "the device was disconnected"
            status = .unavailable
        default:
            why = CaptureSetup.describe(error!)
            status = .ioError
        }
        if let segments {
            let removed = segments.removedFiles.count
            print(
                "\(segments.finishedFiles.count) segments, \(segments.keptFiles.count) kept"
                    + (removed > 0 ? ", \(removed) removed (--keep)" : "") + "; stopped: " + why)
        } else {
            print(FileSummary(url: target.url).line + "; stopped: " + why)
        }
        let drops = output.recordingStatistics.droppedVideoFrames
        if !drops.isEmpty {
            print("dropped frames: " + drops.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", "))
        }
        let audioDrops = output.recordingStatistics.droppedAudioBuffers
        if audioDrops > 0 { print("dropped audio buffers: \(audioDrops) (the encoder was behind)") }
        if let status { throw ToolFailure(status, "the recording ended early: \(why); the file is finalized") }
    }

    // MARK: AVCaptureFileOutputRecordingDelegate

    /// With --reconnect: a device of the recording was unplugged; the recording waits for it.
    func fileOutput(
        _ output: AVCaptureFileOutput, recordingTo fileURL: URL, didLoseDevice device: AVCaptureDevice,
        at gapStart: CMTime
    ) {
        Terminal.endStatus()
        Terminal.error(
            String(
                format: "%@ was disconnected at %.2f s; recording on, waiting for it to come back",
                device.localizedName, gapStart.seconds))
    }

    /// With --reconnect: the device is back and records into the same file after the gap.
    func fileOutput(
        _ output: AVCaptureFileOutput, recordingTo fileURL: URL, didRegainDevice device: AVCaptureDevice,
        gap: CMTimeRange
    ) {
        Terminal.endStatus()
        Terminal.error(
            String(
                format: "%@ is back at %.2f s: a gap of %.2f s in the file", device.localizedName,
                gap.end.seconds, gap.duration.seconds))
    }

    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?
    ) {
        guard let segments else {
            lock.withLock { finishError = error }
            finished.signal()
            return
        }
        // A series: each segment's line as it is finished; the first error says why the series ended.
        if FileManager.default.fileExists(atPath: outputFileURL.path) {
            Terminal.endStatus()
            print(FileSummary(url: outputFileURL).line)
        }
        lock.withLock { if finishError == nil { finishError = error } }
        if segments.isComplete { finished.signal() }
    }
}

/// One line about a written file, from what AVURLAsset reads back: "Wrote x.mov: 5.00 s, H.264 1920x1080 30 fps
/// + AAC 48000 Hz 1 ch, 6.1 MB".
struct FileSummary {
    let url: URL

    var line: String {
        let asset = AVURLAsset(url: url)
        let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int64) ?? nil
        let tracks = asset.tracks.map(ProbeCommand.trackSummary).joined(separator: " + ")
        return String(format: "Wrote %@: %.2f s, ", url.path, asset.duration.seconds) + tracks + ", "
            + Recorder.byteCount(size ?? 0)
    }
}
