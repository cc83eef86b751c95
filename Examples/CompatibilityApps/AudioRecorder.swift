// A voice memo recorder for the Mac: the default microphone into an audio file output (AAC in an M4A file) that
// stops by itself at its maximum duration.
import OpenAVCaptureShim

final class AudioRecorder: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
    private let session = AVCaptureSession()
    private let audioFileOutput = AVCaptureAudioFileOutput()
    private var finished: CheckedContinuation<Void, Error>?
    private let lock = NSLock()

    func configure() throws {
        guard let microphone = AVCaptureDevice.default(for: .audio) else { throw AppFailure("no microphone") }
        let input = try AVCaptureDeviceInput(device: microphone)
        session.beginConfiguration()
        defer { session.commitConfiguration() }
        guard session.canAddInput(input), session.canAddOutput(audioFileOutput) else {
            throw AppFailure("could not set up the audio session")
        }
        session.addInput(input)
        session.addOutput(audioFileOutput)
        audioFileOutput.audioSettings = [
            AVFormatIDKey: kAudioFormatMPEG4AAC, AVSampleRateKey: 44_100, AVNumberOfChannelsKey: 1,
            AVEncoderBitRateKey: 96_000,
        ]
    }

    func record(to url: URL, seconds: Int) async throws {
        session.startRunning()
        defer { session.stopRunning() }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            lock.withLock { finished = continuation }
            audioFileOutput.maxRecordedDuration = CMTime(value: CMTimeValue(seconds), timescale: 1)
            audioFileOutput.startRecording(to: url, outputFileType: .m4a, recordingDelegate: self)
        }
    }

    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: Error?
    ) {
        let continuation = lock.withLock {
            defer { finished = nil }
            return finished
        }
        if let error, (error as NSError).userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool != true {
            continuation?.resume(throwing: error)
        } else {
            continuation?.resume()
        }
    }

    /// `compat-apps audio-recorder OUT.m4a SECONDS`.
    static func main(_ arguments: [String]) async throws {
        let arguments = Arguments(arguments)
        let recorder = AudioRecorder()
        try recorder.configure()
        try await recorder.record(
            to: try arguments.url(0, "the file's path"), seconds: try arguments.integer(1, "SECONDS"))
    }
}
