// A picture-in-picture recorder in the shape of Apple's AVMultiCamPiP sample: a multi-camera session whose back and
// front cameras each feed their own video data output through connections made by hand from the inputs' ports, the
// microphone's back port into an audio data output, and a movie recorder that draws the newest front picture into a
// corner of each back picture and writes it, with the sound, through AVAssetWriter.
import OpenAVCaptureShim

final class MultiCamPiPRecorder: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate,
    AVCaptureAudioDataOutputSampleBufferDelegate, @unchecked Sendable
{
    private let session = AVCaptureMultiCamSession()
    private let sessionQueue = DispatchQueue(label: "session queue")
    private let dataOutputQueue = DispatchQueue(label: "data output queue")
    private let backCameraVideoDataOutput = AVCaptureVideoDataOutput()
    private let frontCameraVideoDataOutput = AVCaptureVideoDataOutput()
    private let backMicrophoneAudioDataOutput = AVCaptureAudioDataOutput()
    private let outputURL: URL
    private let length: CMTime
    // Touched only on `dataOutputQueue`, as the sample keeps its recorder.
    private var currentFrontPixelBuffer: CVPixelBuffer?
    private var recorder: PiPMovieRecorder?
    private var composedFrames = 0
    private var finished: CheckedContinuation<Void, Error>?

    init(outputURL: URL, seconds: Int) {
        self.outputURL = outputURL
        length = CMTime(value: CMTimeValue(seconds), timescale: 1)
    }

    // MARK: Session configuration, as the sample does it

    func configureSession() throws {
        guard AVCaptureMultiCamSession.isMultiCamSupported else { throw AppFailure("MultiCam not supported") }
        session.beginConfiguration()
        defer { session.commitConfiguration() }
        try configureCamera(.back, output: backCameraVideoDataOutput)
        try configureCamera(.front, output: frontCameraVideoDataOutput)
        try configureBackMicrophone()
        guard session.hardwareCost <= 1.0 else {
            throw AppFailure("the cameras' formats cost \(session.hardwareCost) of the hardware")
        }
    }

    private func configureCamera(_ position: AVCaptureDevice.Position, output: AVCaptureVideoDataOutput) throws {
        guard let camera = AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: position) else {
            throw AppFailure("no \(position == .back ? "back" : "front") camera")
        }
        try chooseMultiCamFormat(of: camera)
        let input = try AVCaptureDeviceInput(device: camera)
        guard session.canAddInput(input) else { throw AppFailure("could not add \(camera.localizedName)") }
        session.addInputWithNoConnections(input)
        guard
            let port = input.ports(for: .video, sourceDeviceType: camera.deviceType, sourceDevicePosition: position)
                .first
        else { throw AppFailure("no video port on \(camera.localizedName)") }
        guard session.canAddOutput(output) else { throw AppFailure("could not add a video data output") }
        session.addOutputWithNoConnections(output)
        output.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: Int(kCVPixelFormatType_32BGRA)]
        output.setSampleBufferDelegate(self, queue: dataOutputQueue)
        let connection = AVCaptureConnection(inputPorts: [port], output: output)
        guard session.canAddConnection(connection) else {
            throw AppFailure("could not connect \(camera.localizedName)")
        }
        session.addConnection(connection)
    }

    /// A 640x480 format that runs beside another camera, as the sample keeps the cost within the hardware's.
    private func chooseMultiCamFormat(of camera: AVCaptureDevice) throws {
        guard
            let format = camera.formats.first(where: { format in
                let size = CMVideoFormatDescriptionGetDimensions(format.formatDescription)
                return format.isMultiCamSupported && size.width == 640 && size.height == 480
            })
        else { throw AppFailure("\(camera.localizedName) has no 640x480 multi-camera format") }
        try camera.lockForConfiguration()
        camera.activeFormat = format
        camera.unlockForConfiguration()
    }

    private func configureBackMicrophone() throws {
        guard let microphone = AVCaptureDevice.default(for: .audio) else { throw AppFailure("no microphone") }
        let input = try AVCaptureDeviceInput(device: microphone)
        guard session.canAddInput(input) else { throw AppFailure("could not add the microphone") }
        session.addInputWithNoConnections(input)
        guard
            let port = input.ports(for: .audio, sourceDeviceType: microphone.deviceType, sourceDevicePosition: .back)
                .first
        else { throw AppFailure("no back microphone port") }
        guard session.canAddOutput(backMicrophoneAudioDataOutput) else { throw AppFailure("could not add audio") }
        session.addOutputWithNoConnections(backMicrophoneAudioDataOutput)
        backMicrophoneAudioDataOutput.setSampleBufferDelegate(self, queue: dataOutputQueue)
        let connection = AVCaptureConnection(inputPorts: [port], output: backMicrophoneAudioDataOutput)
        guard session.canAddConnection(connection) else { throw AppFailure("could not connect the microphone") }
        session.addConnection(connection)
    }

    // MARK: Recording

    /// Starts the session and records until `length` of the back camera's time is written.
    func record() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            dataOutputQueue.async { [self] in
                do {
                    recorder = try PiPMovieRecorder(
                        url: outputURL,
                        videoSettings: backCameraVideoDataOutput.recommendedVideoSettingsForAssetWriter(
                            writingTo: .mov),
                        audioSettings: backMicrophoneAudioDataOutput.recommendedAudioSettingsForAssetWriter(
                            writingTo: .mov) as? [String: Any])
                    finished = continuation
                    sessionQueue.async { self.session.startRunning() }
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
        sessionQueue.sync { session.stopRunning() }
        let composed = dataOutputQueue.sync { composedFrames }
        print("{\"hardwareCost\": \(session.hardwareCost), \"composed\": \(composed)}")
    }

    func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        if output == frontCameraVideoDataOutput {
            currentFrontPixelBuffer = CMSampleBufferGetImageBuffer(sampleBuffer)
        } else if output == backCameraVideoDataOutput {
            processFullScreenSampleBuffer(sampleBuffer)
        } else if output == backMicrophoneAudioDataOutput {
            recorder?.recordAudio(sampleBuffer)
        }
    }

    private func processFullScreenSampleBuffer(_ sampleBuffer: CMSampleBuffer) {
        guard let recorder, let back = CMSampleBufferGetImageBuffer(sampleBuffer),
            let front = currentFrontPixelBuffer
        else { return }
        let time = CMSampleBufferGetPresentationTimeStamp(sampleBuffer)
        if let start = recorder.startTime, CMTimeSubtract(time, start) >= length {
            self.recorder = nil
            composedFrames = recorder.composedFrames
            recorder.finish { [self] error in
                dataOutputQueue.async { [self] in
                    if let error { finished?.resume(throwing: error) } else { finished?.resume() }
                    finished = nil
                }
            }
            return
        }
        recorder.recordVideo(back: back, front: front, at: time)
    }

    /// `compat-apps multicam-pip OUT.mov SECONDS`.
    static func main(_ arguments: [String]) async throws {
        let arguments = Arguments(arguments)
        let app = MultiCamPiPRecorder(
            outputURL: try arguments.url(0, "the movie's path"), seconds: try arguments.integer(1, "SECONDS"))
        try app.configureSession()
        try await app.record()
    }
}

/// The sample's movie recorder: an AVAssetWriter with a video input fed through a pixel buffer adaptor and an audio
/// input, started at the first composed picture. Used only on the data output queue.
final class PiPMovieRecorder {
    private let writer: AVAssetWriter
    private let videoInput: AVAssetWriterInput
    private let audioInput: AVAssetWriterInput
    private let adaptor: AVAssetWriterInputPixelBufferAdaptor
    private(set) var startTime: CMTime?
    private(set) var composedFrames = 0

    init(url: URL, videoSettings: [String: Any]?, audioSettings: [String: Any]?) throws {
        try? FileManager.default.removeItem(at: url)
        writer = try AVAssetWriter(outputURL: url, fileType: .mov)
        videoInput = AVAssetWriterInput(mediaType: .video, outputSettings: videoSettings)
        videoInput.expectsMediaDataInRealTime = true
        audioInput = AVAssetWriterInput(mediaType: .audio, outputSettings: audioSettings)
        audioInput.expectsMediaDataInRealTime = true
        adaptor = AVAssetWriterInputPixelBufferAdaptor(
            assetWriterInput: videoInput,
            sourcePixelBufferAttributes: [
                kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA,
                kCVPixelBufferWidthKey as String: 640, kCVPixelBufferHeightKey as String: 480,
            ])
        guard writer.canAdd(videoInput), writer.canAdd(audioInput) else { throw AppFailure("the writer refused") }
        writer.add(videoInput)
        writer.add(audioInput)
        guard writer.startWriting() else { throw writer.error ?? AppFailure("the writer did not start") }
    }

    func recordVideo(back: CVPixelBuffer, front: CVPixelBuffer, at time: CMTime) {
        if startTime == nil {
            writer.startSession(atSourceTime: time)
            startTime = time
        }
        // As the sample: a picture the writer is not ready for is dropped.
        guard videoInput.isReadyForMoreMediaData, let pool = adaptor.pixelBufferPool else { return }
        var made: CVPixelBuffer?
        CVPixelBufferPoolCreatePixelBuffer(kCFAllocatorDefault, pool, &made)
        guard let picture = made else { return }
        Self.drawPictureInPicture(back: back, front: front, into: picture)
        if adaptor.append(picture, withPresentationTime: time) { composedFrames += 1 }
    }

    func recordAudio(_ sampleBuffer: CMSampleBuffer) {
        guard let startTime, CMSampleBufferGetPresentationTimeStamp(sampleBuffer) >= startTime,
            audioInput.isReadyForMoreMediaData
        else { return }
        _ = audioInput.append(sampleBuffer)
    }

    func finish(_ completion: @escaping @Sendable (Error?) -> Void) {
        videoInput.markAsFinished()
        audioInput.markAsFinished()
        writer.finishWriting { [writer] in
            completion(writer.status == .completed ? nil : writer.error ?? AppFailure("the writer failed"))
        }
    }

    /// The back picture, with the front one at half size in its bottom-right quarter (nearest pixel), as the
    /// sample's Metal mixer places the picture-in-picture.
    static func drawPictureInPicture(back: CVPixelBuffer, front: CVPixelBuffer, into picture: CVPixelBuffer) {
        CVPixelBufferLockBaseAddress(back, .readOnly)
        CVPixelBufferLockBaseAddress(front, .readOnly)
        CVPixelBufferLockBaseAddress(picture, [])
        defer {
            CVPixelBufferUnlockBaseAddress(picture, [])
            CVPixelBufferUnlockBaseAddress(front, .readOnly)
            CVPixelBufferUnlockBaseAddress(back, .readOnly)
        }
        guard let target = CVPixelBufferGetBaseAddress(picture), let backBase = CVPixelBufferGetBaseAddress(back),
            let frontBase = CVPixelBufferGetBaseAddress(front)
        else { return }
        let width = min(CVPixelBufferGetWidth(picture), CVPixelBufferGetWidth(back))
        let height = min(CVPixelBufferGetHeight(picture), CVPixelBufferGetHeight(back))
        let (frontWidth, frontHeight) = (CVPixelBufferGetWidth(front), CVPixelBufferGetHeight(front))
        let targetRow = CVPixelBufferGetBytesPerRow(picture)
        let backRow = CVPixelBufferGetBytesPerRow(back)
        let frontRow = CVPixelBufferGetBytesPerRow(front)
        for y in 0..<height {
            let row = target.advanced(by: y * targetRow).assumingMemoryBound(to: UInt32.self)
            let backPixels = backBase.advanced(by: y * backRow).assumingMemoryBound(to: UInt32.self)
            let frontY = min(frontHeight - 1, (y - height / 2) * 2)
            let frontPixels = frontBase.advanced(by: max(0, frontY) * frontRow).assumingMemoryBound(to: UInt32.self)
            for x in 0..<width {
                row[x] =
                    x >= width / 2 && y >= height / 2
                    ? frontPixels[min(frontWidth - 1, (x - width / 2) * 2)] : backPixels[x]
            }
        }
    }
}
