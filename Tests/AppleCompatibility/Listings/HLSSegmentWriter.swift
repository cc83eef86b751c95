// An HLS segmenter in the shape of Apple's "Writing Fragmented MPEG-4 Files for HTTP Live Streaming": a writer made
// with a content type, CMAF or HLS profile, a delegate that stores each segment and its report.
import OpenAVCaptureShim

final class HLSSegmentWriter: NSObject, AVAssetWriterDelegate, @unchecked Sendable {
    private let assetWriter: AVAssetWriter
    private let videoInput: AVAssetWriterInput
    private var segmentIndex = 0
    private(set) var playlistLines: [String] = []
    let outputDirectory: URL

    init(outputDirectory: URL, segmentDuration: Int, cmaf: Bool) {
        self.outputDirectory = outputDirectory
        assetWriter = AVAssetWriter(contentType: UTType(AVFileType.mp4.rawValue)!)
        videoInput = AVAssetWriterInput(
            mediaType: .video,
            outputSettings: [
                AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: 1280, AVVideoHeightKey: 720,
                AVVideoCompressionPropertiesKey: [AVVideoMaxKeyFrameIntervalKey: 30],
            ])
        super.init()
        videoInput.expectsMediaDataInRealTime = true
        assetWriter.add(videoInput)
        assetWriter.outputFileTypeProfile = cmaf ? .mpeg4CMAFCompliant : .mpeg4AppleHLS
        assetWriter.preferredOutputSegmentInterval = CMTime(seconds: Double(segmentDuration), preferredTimescale: 1)
        assetWriter.initialSegmentStartTime = .zero
        assetWriter.delegate = self
    }

    func start(at time: CMTime) -> Bool {
        guard assetWriter.startWriting() else { return false }
        assetWriter.startSession(atSourceTime: time)
        return true
    }

    func append(_ sampleBuffer: CMSampleBuffer) {
        if videoInput.isReadyForMoreMediaData { videoInput.append(sampleBuffer) }
    }

    func finish(_ done: @escaping @Sendable () -> Void) {
        videoInput.markAsFinished()
        assetWriter.finishWriting(completionHandler: done)
    }

    func assetWriter(
        _ writer: AVAssetWriter, didOutputSegmentData segmentData: Data, segmentType: AVAssetSegmentType,
        segmentReport: AVAssetSegmentReport?
    ) {
        let name: String
        switch segmentType {
        case .initialization:
            name = "header.mp4"
        case .separable:
            name = "segment\(segmentIndex).m4s"
            segmentIndex += 1
            if let video = segmentReport?.trackReports.first(where: { $0.mediaType == .video }) {
                let start = video.earliestPresentationTimeStamp.seconds
                let keyFrame = video.firstVideoSampleInformation?.isSyncSample ?? false
                playlistLines.append("#EXTINF:\(video.duration.seconds),\(start) \(keyFrame)")
            }
        @unknown default:
            return
        }
        try? segmentData.write(to: outputDirectory.appendingPathComponent(name))
    }
}
