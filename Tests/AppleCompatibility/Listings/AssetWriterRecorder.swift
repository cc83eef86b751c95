// An AVAssetWriter recorder fed from data outputs, the pattern of filters-and-record camera apps.
import OpenAVCaptureShim

final class AssetWriterRecorder: @unchecked Sendable {
    private var assetWriter: AVAssetWriter?
    private var videoInput: AVAssetWriterInput?
    private var audioInput: AVAssetWriterInput?
    private var sessionStarted = false

    func start(url: URL, videoSettings: [String: Any]?, audioSettings: [String: Any]?) throws {
        let writer = try AVAssetWriter(outputURL: url, fileType: .mov)
        let video = AVAssetWriterInput(mediaType: .video, outputSettings: videoSettings)
        video.expectsMediaDataInRealTime = true
        video.transform = CGAffineTransform(rotationAngle: .pi / 2)
        if writer.canAdd(video) { writer.add(video) }
        if let audioSettings {
            let audio = AVAssetWriterInput(mediaType: .audio, outputSettings: audioSettings)
            audio.expectsMediaDataInRealTime = true
            if writer.canAdd(audio) { writer.add(audio) }
            audioInput = audio
        }
        videoInput = video
        assetWriter = writer
        sessionStarted = false
    }

    func append(_ sampleBuffer: CMSampleBuffer, isVideo: Bool) {
        guard let writer = assetWriter else { return }
        if writer.status == .unknown {
            guard isVideo else { return }
            writer.startWriting()
            writer.startSession(atSourceTime: CMSampleBufferGetPresentationTimeStamp(sampleBuffer))
            sessionStarted = true
        }
        guard writer.status == .writing, sessionStarted else { return }
        let input = isVideo ? videoInput : audioInput
        if let input, input.isReadyForMoreMediaData {
            if !input.append(sampleBuffer) {
                print("append failed: \(String(describing: writer.error))")
            }
        }
    }

    func finish(completion: @escaping @Sendable () -> Void) {
        guard let writer = assetWriter, writer.status == .writing else {
            completion()
            return
        }
        videoInput?.markAsFinished()
        audioInput?.markAsFinished()
        writer.finishWriting {
            completion()
        }
    }
}
