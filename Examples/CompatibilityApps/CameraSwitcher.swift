// The flip-camera button of a recording app: while a video data output feeds an AVAssetWriter, the back camera's
// input is swapped for the front one inside beginConfiguration()/commitConfiguration(), without stopping the
// session or the recording.
import OpenAVCaptureShim

final class CameraSwitcher: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    private let session = AVCaptureSession()
    private let sessionQueue = DispatchQueue(label: "session queue")
    private let dataOutputQueue = DispatchQueue(label: "video data queue")
    private let videoDataOutput = AVCaptureVideoDataOutput()
    private let framesPerCamera: Int
    private var currentInput: AVCaptureDeviceInput?
    private var interruptionObservers: [NSObjectProtocol] = []
    // Touched only on `dataOutputQueue`.
    private var writer: AVAssetWriter?
    private var writerInput: AVAssetWriterInput?
    private var framesFromThisCamera = 0
    private var switched = false
    private var framesByCamera: [String: Int] = [:]
    private var finished: CheckedContinuation<[String: Int], Error>?

    init(framesPerCamera: Int) {
        self.framesPerCamera = framesPerCamera
    }

    func configure(recordingTo url: URL) throws {
        try sessionQueue.sync {
            session.beginConfiguration()
            defer { session.commitConfiguration() }
            session.sessionPreset = .vga640x480
            guard let back = AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back) else {
                throw AppFailure("no back camera")
            }
            let input = try AVCaptureDeviceInput(device: back)
            guard session.canAddInput(input), session.canAddOutput(videoDataOutput) else {
                throw AppFailure("could not set up the session")
            }
            session.addInput(input)
            currentInput = input
            videoDataOutput.videoSettings = [
                kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
            ]
            videoDataOutput.setSampleBufferDelegate(self, queue: dataOutputQueue)
            session.addOutput(videoDataOutput)
        }
        let writer = try AVAssetWriter(outputURL: url, fileType: .mov)
        let input = AVAssetWriterInput(
            mediaType: .video,
            outputSettings: [AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: 640, AVVideoHeightKey: 480])
        input.expectsMediaDataInRealTime = true
        guard writer.canAdd(input) else { throw AppFailure("the writer refused the video input") }
        writer.add(input)
        dataOutputQueue.sync {
            self.writer = writer
            writerInput = input
        }
        for name in [AVCaptureSession.wasInterruptedNotification, AVCaptureSession.interruptionEndedNotification] {
            interruptionObservers.append(
                NotificationCenter.default.addObserver(forName: name, object: session, queue: .main) { notification in
                    print("\(notification.name.rawValue)")
                })
        }
    }

    /// The flip button: the other camera replaces the current one while the session runs.
    func changeCamera() {
        sessionQueue.async { [self] in
            guard let current = currentInput else { return }
            let position: AVCaptureDevice.Position = current.device.position == .back ? .front : .back
            let discovery = AVCaptureDevice.DiscoverySession(
                deviceTypes: [.builtInWideAngleCamera], mediaType: .video, position: position)
            guard let device = discovery.devices.first, let input = try? AVCaptureDeviceInput(device: device) else {
                print("no camera at the other position")
                return
            }
            session.beginConfiguration()
            session.removeInput(current)
            if session.canAddInput(input) {
                session.addInput(input)
                currentInput = input
            } else {
                session.addInput(current)
            }
            session.commitConfiguration()
        }
    }

    func record() async throws -> [String: Int] {
        let counts: [String: Int] = try await withCheckedThrowingContinuation { continuation in
            dataOutputQueue.async { [self] in
                finished = continuation
                sessionQueue.async { self.session.startRunning() }
            }
        }
        sessionQueue.sync { session.stopRunning() }
        for observer in interruptionObservers { NotificationCenter.default.removeObserver(observer) }
        return counts
    }

    func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        guard let writer, let writerInput, finished != nil else { return }
        let time = CMSampleBufferGetPresentationTimeStamp(sampleBuffer)
        if writer.status == .unknown {
            writer.startWriting()
            writer.startSession(atSourceTime: time)
        }
        let camera = (connection.inputPorts.first?.input as? AVCaptureDeviceInput)?.device.localizedName ?? "unknown"
        if writerInput.isReadyForMoreMediaData, writerInput.append(sampleBuffer) {
            framesByCamera[camera, default: 0] += 1
            framesFromThisCamera += 1
        }
        guard framesFromThisCamera >= framesPerCamera else { return }
        framesFromThisCamera = 0
        if !switched {
            switched = true
            // Frames of the old camera still in flight are counted toward it; the new one starts its own count
            // with its first frame.
            changeCamera()
            return
        }
        let counts = framesByCamera
        let continuation = finished
        finished = nil
        writerInput.markAsFinished()
        writer.finishWriting {
            if writer.status == .completed {
                continuation?.resume(returning: counts)
            } else {
                continuation?.resume(throwing: writer.error ?? AppFailure("finishing failed"))
            }
        }
    }

    /// `compat-apps camera-switcher OUT.mov FRAMES-PER-CAMERA`: prints how many frames each camera gave as JSON.
    static func main(_ arguments: [String]) async throws {
        let arguments = Arguments(arguments)
        let switcher = CameraSwitcher(framesPerCamera: try arguments.integer(1, "FRAMES-PER-CAMERA"))
        try switcher.configure(recordingTo: try arguments.url(0, "the movie's path"))
        let counts = try await switcher.record()
        print(
            String(decoding: try JSONSerialization.data(withJSONObject: counts, options: [.sortedKeys]), as: UTF8.self))
    }
}
