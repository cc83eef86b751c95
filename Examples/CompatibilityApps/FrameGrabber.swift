// A frame grabber, as computer-vision apps write one: a video data output in 32BGRA on a serial queue, late frames
// discarded, each of the first frames saved as a picture (binary PPM: no image library needed to read it back).
import OpenAVCaptureShim

final class FrameGrabber: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    private let session = AVCaptureSession()
    private let videoDataOutputQueue = DispatchQueue(label: "video data output queue", qos: .userInitiated)
    private let directory: URL
    private let frameLimit: Int
    /// Touched only on `videoDataOutputQueue`.
    private var savedFrames = 0
    private var done: CheckedContinuation<Void, Error>?

    init(directory: URL, frameLimit: Int) {
        self.directory = directory
        self.frameLimit = frameLimit
    }

    func configure() throws {
        session.beginConfiguration()
        defer { session.commitConfiguration() }
        session.sessionPreset = .medium
        guard let camera = AVCaptureDevice.default(for: .video) else { throw AppFailure("no camera") }
        let input = try AVCaptureDeviceInput(device: camera)
        guard session.canAddInput(input) else { throw AppFailure("could not add the camera") }
        session.addInput(input)
        let videoDataOutput = AVCaptureVideoDataOutput()
        videoDataOutput.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA]
        videoDataOutput.alwaysDiscardsLateVideoFrames = true
        videoDataOutput.setSampleBufferDelegate(self, queue: videoDataOutputQueue)
        guard session.canAddOutput(videoDataOutput) else { throw AppFailure("could not add the video data output") }
        session.addOutput(videoDataOutput)
        // Frames upright for a phone held in portrait: turned a quarter clockwise from the sensor's landscape.
        if let connection = videoDataOutput.connection(with: .video), connection.isVideoOrientationSupported {
            connection.videoOrientation = .portrait
        }
    }

    func grab() async throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            videoDataOutputQueue.async { [self] in
                done = continuation
                DispatchQueue.global(qos: .userInitiated).async { self.session.startRunning() }
            }
        }
        session.stopRunning()
    }

    func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        guard savedFrames < frameLimit, let pixelBuffer = CMSampleBufferGetImageBuffer(sampleBuffer) else { return }
        let name = String(format: "frame-%03d.ppm", savedFrames)
        do {
            try ppm(of: pixelBuffer).write(to: directory.appendingPathComponent(name))
        } catch {
            finish(throwing: error)
            return
        }
        savedFrames += 1
        if savedFrames == frameLimit { finish(throwing: nil) }
    }

    func captureOutput(
        _ output: AVCaptureOutput, didDrop sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        let reason = CMGetAttachment(
            sampleBuffer, key: kCMSampleBufferAttachmentKey_DroppedFrameReason, attachmentModeOut: nil)
        print("dropped a frame: \(reason.map { "\($0)" } ?? "no reason given")")
    }

    private func finish(throwing error: Error?) {
        let continuation = done
        done = nil
        if let error { continuation?.resume(throwing: error) } else { continuation?.resume() }
    }

    /// The frame as an RGB PPM, read straight from the locked BGRA pixels row by row (rows may be padded).
    private func ppm(of pixelBuffer: CVPixelBuffer) throws -> Data {
        CVPixelBufferLockBaseAddress(pixelBuffer, .readOnly)
        defer { CVPixelBufferUnlockBaseAddress(pixelBuffer, .readOnly) }
        guard CVPixelBufferGetPixelFormatType(pixelBuffer) == kCVPixelFormatType_32BGRA,
            let base = CVPixelBufferGetBaseAddress(pixelBuffer)
        else { throw AppFailure("the frame is not 32BGRA") }
        let width = CVPixelBufferGetWidth(pixelBuffer)
        let height = CVPixelBufferGetHeight(pixelBuffer)
        let bytesPerRow = CVPixelBufferGetBytesPerRow(pixelBuffer)
        var data = Data("P6\n\(width) \(height)\n255\n".utf8)
        data.reserveCapacity(data.count + width * height * 3)
        let pixels = base.assumingMemoryBound(to: UInt8.self)
        var row = [UInt8](repeating: 0, count: width * 3)
        for y in 0..<height {
            let line = pixels + y * bytesPerRow
            for x in 0..<width {
                row[x * 3] = line[x * 4 + 2]
                row[x * 3 + 1] = line[x * 4 + 1]
                row[x * 3 + 2] = line[x * 4]
            }
            data.append(contentsOf: row)
        }
        return data
    }

    /// `compat-apps frame-grabber OUT-DIRECTORY COUNT`.
    static func main(_ arguments: [String]) async throws {
        let arguments = Arguments(arguments)
        let grabber = FrameGrabber(
            directory: try arguments.url(0, "the directory for the frames"),
            frameLimit: try arguments.integer(1, "COUNT"))
        try grabber.configure()
        try await grabber.grab()
    }
}
