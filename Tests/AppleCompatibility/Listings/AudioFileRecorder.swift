// Recording microphone audio straight to an m4a file (macOS voice recorders).
import OpenAVCaptureShim

final class AudioFileRecorder: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
    let session = AVCaptureSession()
    let fileOutput = AVCaptureAudioFileOutput()

    func prepare() throws {
        guard let microphone = AVCaptureDevice.default(for: .audio) else { return }
        let input = try AVCaptureDeviceInput(device: microphone)
        session.beginConfiguration()
        if session.canAddInput(input) { session.addInput(input) }
        if session.canAddOutput(fileOutput) { session.addOutput(fileOutput) }
        fileOutput.audioSettings = [
            AVFormatIDKey: kAudioFormatMPEG4AAC,
            AVSampleRateKey: 44_100,
            AVNumberOfChannelsKey: 1,
            AVEncoderBitRateKey: 96_000,
        ]
        session.commitConfiguration()
    }

    func record(to url: URL) {
        fileOutput.startRecording(to: url, outputFileType: .m4a, recordingDelegate: self)
    }

    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: Error?
    ) {
        print("audio saved to \(outputFileURL.path), error: \(String(describing: error))")
    }
}
