// A camera session subclass that overrides Apple's members to log and guard the topology, as camera libraries do
// (`class CameraSession: AVCaptureSession { override func startRunning() { … } }`). Each override calls super.
import OpenAVCaptureShim

final class LoggingCameraSession: AVCaptureSession, @unchecked Sendable {
    private(set) var log: [String] = []
    var allowsAudio = true

    override func startRunning() {
        log.append("start")
        super.startRunning()
    }

    override func stopRunning() {
        log.append("stop")
        super.stopRunning()
    }

    override func beginConfiguration() {
        log.append("begin")
        super.beginConfiguration()
    }

    override func commitConfiguration() {
        super.commitConfiguration()
        log.append("commit")
    }

    override func canAddInput(_ input: AVCaptureInput) -> Bool {
        if !allowsAudio, let deviceInput = input as? AVCaptureDeviceInput, deviceInput.device.hasMediaType(.audio) {
            return false
        }
        return super.canAddInput(input)
    }

    override func addInput(_ input: AVCaptureInput) {
        log.append("input")
        super.addInput(input)
    }

    override func removeInput(_ input: AVCaptureInput) {
        log.append("remove input")
        super.removeInput(input)
    }

    override func canAddOutput(_ output: AVCaptureOutput) -> Bool {
        outputs.count < 4 && super.canAddOutput(output)
    }

    override func addOutput(_ output: AVCaptureOutput) {
        log.append("output")
        super.addOutput(output)
    }

    override func removeOutput(_ output: AVCaptureOutput) {
        log.append("remove output")
        super.removeOutput(output)
    }

    override var sessionPreset: AVCaptureSession.Preset {
        get { super.sessionPreset }
        set {
            log.append("preset \(newValue.rawValue)")
            super.sessionPreset = newValue
        }
    }

    override var isRunning: Bool {
        super.isRunning
    }
}

func configureLoggingSession(with device: AVCaptureDevice) throws -> LoggingCameraSession {
    let session = LoggingCameraSession()
    session.beginConfiguration()
    defer { session.commitConfiguration() }
    let input = try AVCaptureDeviceInput(device: device)
    if session.canAddInput(input) {
        session.addInput(input)
    }
    let output = AVCaptureVideoDataOutput()
    if session.canAddOutput(output) {
        session.addOutput(output)
    }
    if session.canSetSessionPreset(.high) {
        session.sessionPreset = .high
    }
    return session
}
