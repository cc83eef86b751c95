// Sample arithmetic of the engine: durations, retiming, and the errors it reports.

import Foundation
import MediaCodecs
import Synchronization

extension MovieRecordingEngine {
    static func finishedError(_ code: AVError.Code, _ description: String) -> AVError {
        AVError(code, description, extra: [AVErrorRecordingSuccessfullyFinishedKey: true])
    }

    /// The disk filled up under the writer (a write failed with `ENOSPC`, faster than the free-space floor could
    /// see coming) and the file was cut back to the fragments complete on disk: a movie that plays to its end, so
    /// the recording counts as finished, as Apple's does on `.diskFull`. Nil for any other failure.
    static func filledDisk(_ writer: AVAssetWriter) -> AVError? {
        guard writer.fileAfterFailure == .partial, let error = writer.error as? AVError, error.code == .diskFull
        else { return nil }
        return finishedError(
            .diskFull, "The disk filled up; the movie holds what reached the disk in complete fragments before it "
                + "did. \(error.localizedDescription)")
    }

    static func unfinished(_ error: (any Error)?, url: URL) -> AVError {
        var info = (error as? AVError)?.userInfo ?? [NSLocalizedDescriptionKey: "Writing \(url.path) failed."]
        info[AVErrorRecordingSuccessfullyFinishedKey] = false
        return AVError((error as? AVError)?.code ?? .unknown, userInfo: info)
    }

    /// What the encoder of a recording whose first frame is `buffer` is made for: the picture's own description
    /// (its pixel format, size and Y'CbCr matrix), or for a compressed frame written as it comes (a camera's JPEG)
    /// full-range NV12 of its size with JPEG's BT.601 matrix, what its decoded pictures would be.
    static func pictureDescription(of buffer: CMSampleBuffer) -> CMFormatDescription? {
        if let image = buffer.imageBuffer { return (try? CMFormatDescription(imageBuffer: image)) ?? buffer.formatDescription }
        guard let format = buffer.formatDescription, format.mediaType == .video else { return nil }
        return try? CMFormatDescription(
            videoCodecType: .init(rawValue: kCVPixelFormatType_420YpCbCr8BiPlanarFullRange),
            width: Int(format.dimensions.width), height: Int(format.dimensions.height),
            extensions: [kCMFormatDescriptionExtension_YCbCrMatrix: kCVImageBufferYCbCrMatrix_ITU_R_601_4])
    }

    /// What ``AVCaptureRecordingStatistics/realTimeAdvice`` says of encoding `codec` at this size and rate here.
    static func realTimeAdvice(codec type: AVVideoCodecType, dimensions: CMVideoDimensions, frameRate: Int) -> String? {
        let codec: VideoEncoder.Codec
        switch type {
        case .h264: codec = .h264
        case .hevc: codec = .hevc
        default: return nil
        }
        let (width, height) = (Int(dimensions.width), Int(dimensions.height))
        return EncoderThreadPlan(codec: codec, width: width, height: height, frameRate: frameRate)
            .advice(codec: codec, width: width, height: height, frameRate: frameRate)
    }

    /// Whether `buffer` is a compressed frame of an inter-frame codec (a camera's H.264, in AVCC by now).
    static func isInterFrameCompressed(_ buffer: CMSampleBuffer) -> Bool {
        buffer.imageBuffer == nil && buffer.formatDescription?.mediaSubType == .h264
    }

    /// Whether `buffer` is an inter-frame codec's frame that is no key frame, or one still in Annex B (seen before
    /// any parameter sets, so it has no description a track could take): decoding cannot start there.
    static func cannotStartDecoding(_ buffer: CMSampleBuffer) -> Bool {
        guard isInterFrameCompressed(buffer), let format = buffer.formatDescription else { return false }
        return !CompressedFrameSync.isKeyFrame(buffer) || !H264Bitstream.isAVCC(format)
    }

    static func frameDuration(_ buffer: CMSampleBuffer) -> CMTime {
        let duration = buffer.duration
        return duration.isNumeric && duration > .zero ? duration : CMTime(value: 1, timescale: 30)
    }

    static func audioDuration(_ buffer: CMSampleBuffer) -> CMTime {
        let rate = buffer.formatDescription?.audioStreamBasicDescription?.mSampleRate ?? 48_000
        return CMTime(value: Int64(buffer.numSamples), timescale: Int32(rate.rounded()))
    }

    /// `buffer` moved to written time `time`; a compressed frame's decode time moves with it (a movie file's
    /// B-frames are decoded before they are shown).
    static func retimed(_ buffer: CMSampleBuffer, to time: CMTime, sampleDuration: CMTime) -> CMSampleBuffer? {
        if time == buffer.presentationTimeStamp { return buffer }
        let decodeTime = buffer.decodeTimeStamp
        return try? buffer.withNewTiming([
            CMSampleTimingInfo(
                duration: sampleDuration, presentationTimeStamp: time,
                decodeTimeStamp: decodeTime.isNumeric ? decodeTime + (time - buffer.presentationTimeStamp) : .invalid)
        ])
    }

    /// The recording's size so far (0 before the file exists), through the writers' storage funnel.
    static func fileSize(_ url: URL) -> Int64 {
        WriterStorage.fileSize(atPath: url.path) ?? 0
    }

    /// What is free beside the recording, through the writers' storage funnel.
    static func freeSpace(at url: URL) -> Int64? {
        WriterStorage.freeBytes(besides: url.path)
    }
}
