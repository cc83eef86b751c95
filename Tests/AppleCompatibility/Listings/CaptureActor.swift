// The 2024 AVCam style: an actor owns the session; capture work runs off the main actor.
import OpenAVCaptureShim

actor CaptureService {
    private let session = AVCaptureSession()
    private let photoOutput = AVCapturePhotoOutput()
    private var isConfigured = false

    func setUp() async throws {
        guard !isConfigured else { return }
        guard await AVCaptureDevice.requestAccess(for: .video) else { return }
        guard let camera = AVCaptureDevice.default(for: .video) else { return }
        let input = try AVCaptureDeviceInput(device: camera)
        session.beginConfiguration()
        defer { session.commitConfiguration() }
        session.sessionPreset = .photo
        if session.canAddInput(input) { session.addInput(input) }
        if session.canAddOutput(photoOutput) { session.addOutput(photoOutput) }
        isConfigured = true
    }

    func start() {
        guard isConfigured, !session.isRunning else { return }
        session.startRunning()
    }

    func stop() {
        if session.isRunning { session.stopRunning() }
    }

    var isRunning: Bool { session.isRunning }
}
