// A recorder with a pause button, as Mac screen and camera recorders offer: a movie file output paused and resumed
// while the session runs, its recorded duration shown by a timer as a recording screen's clock does.
import OpenAVCaptureShim

final class PauseResumeRecorder: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
    private let session = AVCaptureSession()
    private let movieOutput = AVCaptureMovieFileOutput()
    private let controlQueue = DispatchQueue(label: "recording controls")
    private var clockTimer: DispatchSourceTimer?
    /// When the user pressed pause; touched only on `controlQueue`.
    private var pausedAt: DispatchTime?
    private var events: [String] = []
    private var finished: CheckedContinuation<[String], Error>?

    func configure() throws {
        session.beginConfiguration()
        defer { session.commitConfiguration() }
        session.sessionPreset = .vga640x480
        guard let camera = AVCaptureDevice.default(for: .video) else { throw AppFailure("no camera") }
        let input = try AVCaptureDeviceInput(device: camera)
        guard session.canAddInput(input), session.canAddOutput(movieOutput) else {
            throw AppFailure("could not set up the session")
        }
        session.addInput(input)
        session.addOutput(movieOutput)
    }

    /// Records one second, pauses for one second of the session's running, resumes, and stops at two seconds
    /// recorded: what a user pressing pause, then resume, then stop does. Returns the delegate's events in order.
    func record(to url: URL) async throws -> [String] {
        session.startRunning()
        defer { session.stopRunning() }
        return try await withCheckedThrowingContinuation { continuation in
            controlQueue.async { [self] in
                finished = continuation
                movieOutput.startRecording(to: url, recordingDelegate: self)
                startClock()
            }
        }
    }

    /// The recording screen's clock: ten times a second it reads `recordedDuration` and plays the user's part.
    private func startClock() {
        let timer = DispatchSource.makeTimerSource(queue: controlQueue)
        timer.schedule(deadline: .now(), repeating: .milliseconds(100))
        timer.setEventHandler { [self] in
            let recorded = movieOutput.recordedDuration.seconds
            if movieOutput.isRecordingPaused {
                // Paused: the clock stands still; resume once a second has passed.
                if let pausedAt, DispatchTime.now().uptimeNanoseconds - pausedAt.uptimeNanoseconds >= 1_000_000_000 {
                    movieOutput.resumeRecording()
                }
            } else if movieOutput.isRecording, recorded >= 2 {
                clockTimer?.cancel()
                movieOutput.stopRecording()
            } else if movieOutput.isRecording, recorded >= 1, pausedAt == nil {
                pausedAt = .now()
                movieOutput.pauseRecording()
            }
        }
        clockTimer = timer
        timer.resume()
    }

    func fileOutput(
        _ output: AVCaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [AVCaptureConnection]
    ) {
        controlQueue.async { self.events.append("started") }
    }

    func fileOutput(
        _ output: AVCaptureFileOutput, didPauseRecordingTo fileURL: URL, from connections: [AVCaptureConnection]
    ) {
        controlQueue.async { self.events.append("paused") }
    }

    func fileOutput(
        _ output: AVCaptureFileOutput, didResumeRecordingTo fileURL: URL, from connections: [AVCaptureConnection]
    ) {
        controlQueue.async { self.events.append("resumed") }
    }

    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: Error?
    ) {
        let failure = error.map { AppFailure("recording failed: \($0.localizedDescription)") }
        controlQueue.async { [self] in
            clockTimer?.cancel()
            events.append("finished")
            if let failure {
                finished?.resume(throwing: failure)
            } else {
                finished?.resume(returning: events)
            }
            finished = nil
        }
    }

    /// `compat-apps pause-resume-recorder OUT.mov`: the delegate's events and the recorded duration on standard output.
    static func main(_ arguments: [String]) async throws {
        let url = try Arguments(arguments).url(0, "the movie's path")
        let recorder = PauseResumeRecorder()
        try recorder.configure()
        let events = try await recorder.record(to: url)
        print(events.joined(separator: " "))
    }
}
