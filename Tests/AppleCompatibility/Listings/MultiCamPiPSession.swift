// A picture-in-picture camera in the shape of Apple's AVMultiCamPiP sample: a multi-camera session, the back and
// front cameras each into a video data output, the microphone's back and front ports into audio data outputs,
// everything connected by hand, and the hardware cost checked.
import OpenAVCaptureShim

final class MultiCamPiPSession: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate,
    AVCaptureAudioDataOutputSampleBufferDelegate
{
    let session = AVCaptureMultiCamSession()
    private let backVideo = AVCaptureVideoDataOutput()
    private let frontVideo = AVCaptureVideoDataOutput()
    private let backAudio = AVCaptureAudioDataOutput()
    private let frontAudio = AVCaptureAudioDataOutput()
    private let dataQueue = DispatchQueue(label: "data output queue")

    func configure() -> Bool {
        guard AVCaptureMultiCamSession.isMultiCamSupported else { return false }
        session.beginConfiguration()
        defer { session.commitConfiguration() }
        guard configureCamera(.back, into: backVideo), configureCamera(.front, into: frontVideo),
            configureMicrophone()
        else { return false }
        return session.hardwareCost <= 1.0 && session.systemPressureCost >= 0
    }

    private func configureCamera(_ position: AVCaptureDevice.Position, into output: AVCaptureVideoDataOutput) -> Bool {
        guard let camera = AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: position),
            let input = try? AVCaptureDeviceInput(device: camera), session.canAddInput(input)
        else { return false }
        session.addInputWithNoConnections(input)
        guard
            let port = input.ports(
                for: .video, sourceDeviceType: camera.deviceType, sourceDevicePosition: camera.position
            ).first, session.canAddOutput(output)
        else { return false }
        session.addOutputWithNoConnections(output)
        output.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: Int(kCVPixelFormatType_32BGRA)]
        output.setSampleBufferDelegate(self, queue: dataQueue)
        let connection = AVCaptureConnection(inputPorts: [port], output: output)
        guard session.canAddConnection(connection) else { return false }
        session.addConnection(connection)
        connection.videoOrientation = .portrait
        return true
    }

    private func configureMicrophone() -> Bool {
        guard let microphone = AVCaptureDevice.default(for: .audio),
            let input = try? AVCaptureDeviceInput(device: microphone), session.canAddInput(input)
        else { return false }
        session.addInputWithNoConnections(input)
        for (position, output) in [(AVCaptureDevice.Position.back, backAudio), (.front, frontAudio)] {
            guard
                let port = input.ports(
                    for: .audio, sourceDeviceType: microphone.deviceType, sourceDevicePosition: position
                ).first, session.canAddOutput(output)
            else { return false }
            session.addOutputWithNoConnections(output)
            output.setSampleBufferDelegate(self, queue: dataQueue)
            let connection = AVCaptureConnection(inputPorts: [port], output: output)
            guard session.canAddConnection(connection) else { return false }
            session.addConnection(connection)
        }
        return true
    }

    func captureOutput(_ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        guard output === backVideo || output === frontVideo else { return }
        _ = CMSampleBufferGetImageBuffer(sampleBuffer)
    }
}
