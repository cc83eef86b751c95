// The recorder of camera apps that filter or time their own recordings: video and audio data outputs feed an
// AVAssetWriter on one recording queue, its session starting at the first video frame and ending after a set
// length of media time.
import OpenAVCaptureShim

final class WriterRecorder: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate,
    AVCaptureAudioDataOutputSampleBufferDelegate, @unchecked Sendable
{
    private let session = AVCaptureSession()
    private let recordingQueue = DispatchQueue(label: "recording queue")
    private let videoDataOutput = AVCaptureVideoDataOutput()
    private let audioDataOutput = AVCaptureAudioDataOutput()
    private let outputURL: URL
    private let length: CMTime
    // Touched only on `recordingQueue`.
    private var assetWriter: AVAssetWriter?
    private var videoInput: AVAssetWriterInput?
    private var audioInput: AVAssetWriterInput?
    private var startTime = CMTime.invalid
    private var isFinishing = false
    /// Video frames the writer took; frames it was not ready for are skipped, as apps skip them.
    private(set) var appendedVideoFrames = 0
    private var finished: CheckedContinuation<Void, Error>?

    init(outputURL: URL, seconds: Int) {
        self.outputURL = outputURL
        length = CMTime(value: CMTimeValue(seconds), timescale: 1)
    }

    func configureSession() throws {
        session.beginConfiguration()
        defer { session.commitConfiguration() }
        session.sessionPreset = .hd1280x720
        guard let camera = AVCaptureDevice.default(for: .video), let microphone = AVCaptureDevice.default(for: .audio)
        else { throw AppFailure("no camera or microphone") }
        for device in [camera, microphone] {
            let input = try AVCaptureDeviceInput(device: device)
            guard session.canAddInput(input) else { throw AppFailure("could not add \(device.localizedName)") }
            session.addInput(input)
        }
        videoDataOutput.alwaysDiscardsLateVideoFrames = false
        videoDataOutput.setSampleBufferDelegate(self, queue: recordingQueue)
        audioDataOutput.setSampleBufferDelegate(self, queue: recordingQueue)
        for output in [videoDataOutput, audioDataOutput] as [AVCaptureOutput] {
            guard session.canAddOutput(output) else { throw AppFailure("could not add an output") }
            session.addOutput(output)
        }
    }

    /// Makes the writer from the outputs' recommended settings, as apps do since iOS 7.
    private func makeWriter() throws {
        try? FileManager.default.removeItem(at: outputURL)
        let writer = try AVAssetWriter(outputURL: outputURL, fileType: .mp4)
        let videoSettings = videoDataOutput.recommendedVideoSettingsForAssetWriter(writingTo: .mp4)
        let video = AVAssetWriterInput(mediaType: .video, outputSettings: videoSettings)
        video.expectsMediaDataInRealTime = true
        let audioSettings = audioDataOutput.recommendedAudioSettingsForAssetWriter(writingTo: .mp4)
        let audio = AVAssetWriterInput(mediaType: .audio, outputSettings: audioSettings as? [String: Any])
        audio.expectsMediaDataInRealTime = true
        guard writer.canAdd(video), writer.canAdd(audio) else { throw AppFailure("the writer refused an input") }
        writer.add(video)
        writer.add(audio)
        assetWriter = writer
        videoInput = video
        audioInput = audio
    }

    func record() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            recordingQueue.async { [self] in
                do {
                    try makeWriter()
                    finished = continuation
                    DispatchQueue.global().async { self.session.startRunning() }
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
        session.stopRunning()
    }

    func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        guard let writer = assetWriter, !isFinishing else { return }
        let time = CMSampleBufferGetPresentationTimeStamp(sampleBuffer)
        let isVideo = output == videoDataOutput
        if writer.status == .unknown {
            // The file starts with a picture: sound before the first frame is left out.
            guard isVideo else { return }
            guard writer.startWriting() else {
                fail(writer.error ?? AppFailure("the writer did not start"))
                return
            }
            writer.startSession(atSourceTime: time)
            startTime = time
        }
        guard writer.status == .writing else {
            fail(writer.error ?? AppFailure("the writer stopped"))
            return
        }
        if isVideo, CMTimeSubtract(time, startTime) >= length {
            finishWriting(at: time)
            return
        }
        guard let input = isVideo ? videoInput : audioInput, input.isReadyForMoreMediaData else { return }
        if !input.append(sampleBuffer) {
            fail(writer.error ?? AppFailure("append failed"))
        } else if isVideo {
            appendedVideoFrames += 1
        }
    }

    private func finishWriting(at time: CMTime) {
        guard let writer = assetWriter else { return }
        isFinishing = true
        videoInput?.markAsFinished()
        audioInput?.markAsFinished()
        writer.endSession(atSourceTime: time)
        writer.finishWriting { [self] in
            recordingQueue.async { [self] in
                if writer.status == .completed {
                    finished?.resume()
                } else {
                    finished?.resume(throwing: writer.error ?? AppFailure("finishing failed"))
                }
                finished = nil
            }
        }
    }

    private func fail(_ error: Error) {
        isFinishing = true
        finished?.resume(throwing: error)
        finished = nil
    }

    /// `compat-apps writer-recorder OUT.mp4 SECONDS`.
    static func main(_ arguments: [String]) async throws {
        let arguments = Arguments(arguments)
        let recorder = WriterRecorder(
            outputURL: try arguments.url(0, "the movie's path"), seconds: try arguments.integer(1, "SECONDS"))
        try recorder.configureSession()
        try await recorder.record()
        print("appended \(recorder.appendedVideoFrames) video frames")
    }
}
