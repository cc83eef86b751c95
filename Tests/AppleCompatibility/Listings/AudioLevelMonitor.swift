// Audio levels from the audio channels of a connection (macOS meters) and raw PCM from the audio data output.
import OpenAVCaptureShim

final class AudioLevelMonitor: NSObject, AVCaptureAudioDataOutputSampleBufferDelegate, @unchecked Sendable {
    let audioOutput = AVCaptureAudioDataOutput()
    private let queue = DispatchQueue(label: "audio.level.monitor")
    private(set) var sampleCount = 0

    func install(in session: AVCaptureSession) throws {
        guard let microphone = AVCaptureDevice.default(for: .audio) else { return }
        let input = try AVCaptureDeviceInput(device: microphone)
        if session.canAddInput(input) { session.addInput(input) }
        audioOutput.setSampleBufferDelegate(self, queue: queue)
        if session.canAddOutput(audioOutput) { session.addOutput(audioOutput) }
    }

    var averagePower: Float {
        guard let connection = audioOutput.connection(with: .audio) else { return -160 }
        let channels = connection.audioChannels
        guard !channels.isEmpty else { return -160 }
        return channels.map(\.averagePowerLevel).reduce(0, +) / Float(channels.count)
    }

    func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        sampleCount += CMSampleBufferGetNumSamples(sampleBuffer)
        guard let description = CMSampleBufferGetFormatDescription(sampleBuffer),
            let asbd = CMAudioFormatDescriptionGetStreamBasicDescription(description)
        else { return }
        _ = asbd.pointee.mSampleRate
        _ = asbd.pointee.mChannelsPerFrame
    }
}
