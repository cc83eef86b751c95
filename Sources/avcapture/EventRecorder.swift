import Foundation
import OpenAVCapture

/// `avcapture record PATTERN --pre-roll N`: keeps the last N seconds in memory and writes a movie on each trigger
/// (SIGUSR2, a line on standard input, the sound passing a level), named by PATTERN's strftime escapes. Runs until
/// Ctrl-C or SIGTERM, `--duration` seconds, or the end of a file source; a file being written is finished first.
final class EventRecorder: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
    enum Trigger: Equatable {
        case signal
        case stdin
        case level(Float)

        /// "signal", "stdin", "level:-20", or several separated by commas.
        static func parse(_ text: String) -> [Trigger]? {
            var triggers: [Trigger] = []
            for part in text.split(separator: ",").map(String.init) {
                if part == "signal" {
                    triggers.append(.signal)
                } else if part == "stdin" {
                    triggers.append(.stdin)
                } else if part.hasPrefix("level:"), let level = Float(part.dropFirst(6)), level <= 0 {
                    triggers.append(.level(level))
                } else {
                    return nil
                }
            }
            return triggers.isEmpty ? nil : triggers
        }
    }

    private let output: AVCapturePreEventFileOutput
    private let setup: CaptureSetup
    private let pattern: String
    private let triggers: [Trigger]
    private let duration: Double?
    private let lock = NSLock()
    private var openFiles = 0
    private var written: [URL] = []
    private var failures: [String] = []
    private var stopSignal: Int32?
    private let changed = DispatchSemaphore(value: 0)

    init(output: AVCapturePreEventFileOutput, setup: CaptureSetup, pattern: String, triggers: [Trigger], duration: Double?) {
        self.output = output
        self.setup = setup
        self.pattern = pattern
        self.triggers = triggers
        self.duration = duration
    }

    func run() throws {
        for case .level(let level) in triggers {
            output.setAudioLevelTrigger(threshold: level, fileURL: { [self] in nextURL(counting: true) }, recordingDelegate: self)
        }
        try setup.start()
        defer { setup.session.stopRunning() }
        let stop: @Sendable (Int32) -> Void = { [self] number in
            lock.withLock { stopSignal = number }
            output.stopRecording()
            changed.signal()
        }
        let fire: @Sendable () -> Void = { [self] in self.fire() }
        let fireOnSignal = triggers.contains(.signal) ? fire : nil
        let signals = SignalWatcher(stop: stop, trigger: fireOnSignal)
        if triggers.contains(.stdin) { readTriggerLines() }
        let names = triggers.map { trigger in
            switch trigger {
            case .signal: "SIGUSR2 (kill -USR2 \(getpid()))"
            case .stdin: "a line on standard input"
            case .level(let level): "sound above \(FormatsCommand.number(Double(level))) dBFS"
            }
        }
        Terminal.error(
            "Recording \(setup.videoSummary ?? "audio") into a \(FormatsCommand.number(output.preRollDuration.seconds)) s"
                + " memory ring; a file on " + names.joined(separator: " or "))
        let started = Date()
        var why: String?
        while why == nil {
            _ = changed.wait(timeout: .now() + 0.5)
            Terminal.status(statusLine())
            let (signal, open) = lock.withLock { (stopSignal, openFiles) }
            guard open == 0 else {
                if let duration, Date().timeIntervalSince(started) >= duration { output.stopRecording() }
                continue
            }
            if let signal {
                why = signal == SIGINT ? "interrupted (Ctrl-C)" : "terminated (SIGTERM)"
            } else if setup.movieFileReachedEnd {
                why = "end of input"
            } else if let duration, Date().timeIntervalSince(started) >= duration {
                why = "reached --duration"
            }
        }
        Terminal.endStatus()
        withExtendedLifetime(signals) {}
        let (files, problems) = lock.withLock { (written, failures) }
        print("\(files.count) event file\(files.count == 1 ? "" : "s") written; stopped: \(why!)")
        if !problems.isEmpty {
            throw ToolFailure(.ioError, "some event files failed: " + problems.joined(separator: "; "))
        }
    }

    /// A trigger from the user: a file from the ring, or, while one records without a post-roll, its end.
    private func fire() {
        if output.isRecording {
            if !output.postRollDuration.isNumeric { output.stopRecording() }
            return
        }
        output.startRecording(to: nextURL(counting: true), recordingDelegate: self)
    }

    private func nextURL(counting: Bool) -> URL {
        if counting { lock.withLock { openFiles += 1 } }
        return AVCaptureRecordingSegments.fileURL(forPattern: pattern)
    }

    /// Each line on standard input is a trigger; the end of the input ends nothing.
    private func readTriggerLines() {
        let thread = Thread { [self] in
            while readLine() != nil { fire() }
        }
        thread.start()
    }

    private func statusLine() -> String {
        var parts = [
            String(format: "ring %5.1f s", output.bufferedDuration.seconds),
            Recorder.byteCount(Int64(output.bufferedBytes)),
        ]
        if output.isRecording, let url = output.outputFileURL {
            parts.append(String(format: "RECORDING %@ %.1f s", url.lastPathComponent, output.recordedDuration.seconds))
        }
        return parts.joined(separator: "  ")
    }

    // MARK: AVCaptureFileOutputRecordingDelegate

    func fileOutput(
        _ output: AVCaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [AVCaptureConnection]
    ) {
        Terminal.endStatus()
        Terminal.error("Event: writing \(fileURL.path)")
    }

    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?
    ) {
        let finished = error == nil || (error as NSError?)?.userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool == true
        Terminal.endStatus()
        if finished {
            print(FileSummary(url: outputFileURL).line)
            Terminal.error("Event: finished \(outputFileURL.path)")
        } else {
            Terminal.error("\(outputFileURL.path): \(CaptureSetup.describe(error!))")
        }
        lock.withLock {
            openFiles -= 1
            if finished { written.append(outputFileURL) } else { failures.append(CaptureSetup.describe(error!)) }
        }
        changed.signal()
    }
}
