// AVCam's way of recording a movie: one private queue owns the session, the camera and microphone are added after
// asking for access, and a movie file output records until its maximum duration, reporting to its delegate.
import OpenAVCaptureShim

final class MovieRecorderController: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
    private let session = AVCaptureSession()
    private let sessionQueue = DispatchQueue(label: "session queue")
    private let movieFileOutput = AVCaptureMovieFileOutput()
    private var runtimeErrorObserver: NSObjectProtocol?
    private var runningObservation: NSKeyValueObservation?
    private var finished: CheckedContinuation<Void, Error>?

    /// Adds the default camera and microphone and the movie output, as AVCam's `configureSession` does.
    func configureSession() async throws {
        guard await AVCaptureDevice.requestAccess(for: .video), await AVCaptureDevice.requestAccess(for: .audio) else {
            throw AppFailure("camera or microphone access denied")
        }
        try sessionQueue.sync {
            session.beginConfiguration()
            defer { session.commitConfiguration() }
            session.sessionPreset = .vga640x480
            guard let camera = AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back),
                let microphone = AVCaptureDevice.default(for: .audio)
            else { throw AppFailure("no camera or microphone") }
            for input in [try AVCaptureDeviceInput(device: camera), try AVCaptureDeviceInput(device: microphone)] {
                guard session.canAddInput(input) else {
                    throw AppFailure("could not add \(input.device.localizedName)")
                }
                session.addInput(input)
            }
            guard session.canAddOutput(movieFileOutput) else { throw AppFailure("could not add the movie output") }
            session.addOutput(movieFileOutput)
            if let connection = movieFileOutput.connection(with: .video), connection.isVideoStabilizationSupported {
                connection.preferredVideoStabilizationMode = .auto
            }
        }
        runtimeErrorObserver = NotificationCenter.default.addObserver(
            forName: .AVCaptureSessionRuntimeError, object: session, queue: nil
        ) { notification in
            let error = notification.userInfo?[AVCaptureSessionErrorKey] as? AVError
            print("session runtime error: \(error?.localizedDescription ?? "unknown")")
        }
        runningObservation = session.observe(\.isRunning, options: .new) { _, change in
            print("session running: \(change.newValue ?? false)")
        }
    }

    /// Records `url` until `seconds` of media are in it.
    func record(to url: URL, seconds: Double) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            sessionQueue.async { [self] in
                finished = continuation
                session.startRunning()
                movieFileOutput.maxRecordedDuration = CMTime(seconds: seconds, preferredTimescale: 600)
                movieFileOutput.startRecording(to: url, recordingDelegate: self)
            }
        }
        sessionQueue.sync { session.stopRunning() }
        if let runtimeErrorObserver { NotificationCenter.default.removeObserver(runtimeErrorObserver) }
        runningObservation?.invalidate()
    }

    func fileOutput(
        _ output: AVCaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [AVCaptureConnection]
    ) {
        print("recording \(fileURL.lastPathComponent)")
    }

    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: Error?
    ) {
        // Reaching maxRecordedDuration ends the recording with an error whose user info says the file is complete.
        let failure = error.flatMap { error -> AppFailure? in
            (error as NSError).userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool == true
                ? nil : AppFailure("recording failed: \(error.localizedDescription)")
        }
        let recorded = output.recordedDuration.seconds
        sessionQueue.async { [self] in
            let continuation = finished
            finished = nil
            if let failure {
                continuation?.resume(throwing: failure)
            } else {
                print("recorded \(recorded) s")
                continuation?.resume()
            }
        }
    }

    /// `compat-apps movie-recorder OUT.mov SECONDS`.
    static func main(_ arguments: [String]) async throws {
        let arguments = Arguments(arguments)
        let url = try arguments.url(0, "the movie's path")
        let seconds = try arguments.integer(1, "SECONDS")
        let recorder = MovieRecorderController()
        try await recorder.configureSession()
        try await recorder.record(to: url, seconds: Double(seconds))
    }
}
