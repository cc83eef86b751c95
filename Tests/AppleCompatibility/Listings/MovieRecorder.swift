// Recording a movie with AVCaptureMovieFileOutput and its delegate.
import OpenAVCaptureShim

final class MovieRecorder: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
    let movieOutput = AVCaptureMovieFileOutput()
    var onFinish: ((URL, Error?) -> Void)?

    func configure(_ session: AVCaptureSession) {
        guard session.canAddOutput(movieOutput) else { return }
        session.addOutput(movieOutput)
        movieOutput.maxRecordedDuration = CMTime(seconds: 60, preferredTimescale: 600)
        if let connection = movieOutput.connection(with: .video),
            movieOutput.availableVideoCodecTypes.contains(.hevc)
        {
            movieOutput.setOutputSettings([AVVideoCodecKey: AVVideoCodecType.hevc], for: connection)
        }
    }

    func startRecording() {
        guard !movieOutput.isRecording else { return }
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent(UUID().uuidString)
            .appendingPathExtension("mov")
        movieOutput.startRecording(to: url, recordingDelegate: self)
    }

    func stopRecording() {
        if movieOutput.isRecording {
            movieOutput.stopRecording()
        }
    }

    func fileOutput(
        _ output: AVCaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [AVCaptureConnection]
    ) {
        print("Started recording to \(fileURL.lastPathComponent)")
    }

    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: Error?
    ) {
        var success = true
        if let error = error as NSError? {
            success = (error.userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool) ?? false
        }
        onFinish?(outputFileURL, success ? nil : error)
    }
}
