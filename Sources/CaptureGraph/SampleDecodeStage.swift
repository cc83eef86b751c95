import CaptureDrivers
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo

/// The graph's decoder for one device stream: turns the compressed buffers a driver delivers (a camera's MJPEG or
/// H.264, a movie file's packets) into the pixel buffers and PCM that outputs take.
///
/// A buffer needs decoding when it has no image buffer and its format description names a codec: a video codec type
/// with a decoder (`'jpeg'`, `'avc1'`, `'hvc1'`, … see `VideoDecoder.decoderName(for:)`) or an audio format other
/// than linear PCM. Everything else passes through untouched. The session runs one stage per device subscription,
/// on the device's capture thread, before the buffers fan out to connections, so a device's stream is decoded once
/// whatever the number of outputs, and inter-frame codecs see every packet (an output's late-frame drops happen
/// after decoding, as they must for H.264).
///
/// Decoders: MJPEG through TurboJPEG (`MJPEGDecoder`, faster than FFmpeg's in the `MJPEGDecode` benchmark), falling
/// back to FFmpeg's for the subsamplings TurboJPEG's path does not take; other video through `VideoDecoder`; audio
/// through `AudioDecoder`. Video comes out as NV12 in the stream's range (`'420f'` for JPEG, `'420v'` otherwise);
/// outputs convert from there as they would from a camera's NV12. A new format description (another format, new
/// parameter sets) makes new decoders.
///
/// When every consumer of a frame only reads it (`forReadersOnly`: the session's outputs are encoders, such as a
/// movie file output recording), FFmpeg-decoded video comes out as the decoder's own 4:2:0 planar pictures
/// (`'y420'`/`'f420'`), lent with no copy, which the H.264 and HEVC encoders take as they are. A decoder predicts
/// later pictures from the ones it lent, so they must never be drawn on: as soon as a consumer that may write joins,
/// frames are copied into NV12 again, from the next frame on (no key frame is needed for the switch).
///
/// Threading: thread-bound to the capture thread of the device whose sink owns it (`@unchecked Sendable` because the
/// sink closure that holds it is `Sendable`; only that thread calls it).
package final class SampleDecodeStage: @unchecked Sendable {
    /// What became of one buffer.
    package enum Outcome {
        /// Not compressed: deliver the buffer itself.
        case passThrough
        /// Decoded: deliver these (none while a decoder fills its delay, several when it drains).
        case decoded([CMSampleBuffer])
        /// Lost: report a drop with this reason (`OutOfBuffers` when every decoded buffer is held downstream,
        /// `Discontinuity` for a damaged frame).
        case dropped(DropReason)
    }

    /// Which decoder takes MJPEG.
    package enum MJPEGPath: Sendable {
        /// TurboJPEG (`MJPEGDecoder`), FFmpeg's for what it does not take: the session's choice.
        case turboJPEG
        /// FFmpeg's `mjpeg` (`VideoDecoder`) always: the benchmark's comparison.
        case ffmpeg
    }

    private let mjpegPath: MJPEGPath
    private var videoFormat: CMFormatDescription?
    private var jpeg: MJPEGDecoder?
    private var video: VideoDecoder?
    private var audioFormat: CMFormatDescription?
    private var audio: AudioDecoder?
    private var wrapper = ImageSampleWrapper()
    /// The last compressed video buffer decoded: what frames drained at the end are wrapped like.
    private var lastVideoSample: CMSampleBuffer?
    /// Set when an inter-frame codec's frame went by undecoded (every output took it as it came): the frames up to
    /// the next key frame cannot be decoded, so none is tried.
    private var awaitsKeyFrame = false

    package init(mjpeg: MJPEGPath = .turboJPEG) {
        mjpegPath = mjpeg
    }

    /// Whether `sample` is compressed media this stage decodes.
    package static func needsDecoding(_ sample: CMSampleBuffer) -> Bool {
        guard sample.imageBuffer == nil, let format = sample.formatDescription else { return false }
        switch format.mediaType {
        case .video: return VideoDecoder.decoderName(for: format.mediaSubType.rawValue) != nil
        case .audio: return AudioDecoder.decoderName(for: format.mediaSubType.rawValue) != nil
        default: return false
        }
    }

    /// The pixel format frames of a compressed video format come out in (`'420f'` for JPEG, `'420v'` otherwise), or
    /// nil when `codecType` is a pixel format (or a codec without a decoder).
    package static func decodedPixelFormat(forCodec codecType: FourCharCode) -> OSType? {
        switch VideoDecoder.decoderName(for: codecType) {
        case nil: nil
        case "mjpeg": kCVPixelFormatType_420YpCbCr8BiPlanarFullRange
        default: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
        }
    }

    /// The frames the video decoder still holds back (an inter-frame codec's delay, B-frame reordering), for the
    /// end of a stream: a movie file that ended, a device that faulted. The decoder is told no more packets come;
    /// a later compressed buffer starts a new one.
    package func drain() -> [CMSampleBuffer] {
        guard let video, let like = lastVideoSample else { return [] }
        self.video = nil
        videoFormat = nil
        lastVideoSample = nil
        var drained: [CMSampleBuffer] = []
        do {
            try video.finish()
            while case .frame(let frame) = try video.receiveFrame() {
                let duration = frame.duration.isValid ? frame.duration : like.duration
                if let wrapped = wrapper.wrap(
                    frame.pixelBuffer, like: like, time: frame.presentationTime, duration: duration)
                {
                    drained.append(wrapped)
                }
            }
        } catch {
            // A frame that fails to decode at the very end is lost, as it would be mid-stream.
        }
        return drained
    }

    /// Notes that `sample` went by undecoded: every output took it as it came (a recording of a camera's H.264).
    /// For an inter-frame codec the decoder starts again at the next key frame.
    package func skip(_ sample: CMSampleBuffer) {
        guard let format = sample.formatDescription, format.mediaType == .video, format.mediaSubType != .jpeg,
            Self.needsDecoding(sample)
        else { return }
        awaitsKeyFrame = true
        video = nil
        videoFormat = nil
        lastVideoSample = nil
    }

    /// Decodes `sample` if it is compressed. `forReadersOnly` says every consumer of the frames only reads them
    /// (see the type's notes).
    package func process(_ sample: CMSampleBuffer, forReadersOnly: Bool = false) -> Outcome {
        guard Self.needsDecoding(sample), let format = sample.formatDescription, let data = sample.dataBuffer else {
            return .passThrough
        }
        do {
            return .decoded(
                format.mediaType == .video
                    ? try decodeVideo(sample, data: data, format: format, forReadersOnly: forReadersOnly)
                    : try decodeAudio(sample, data: data, format: format))
        } catch {
            return .dropped(error.kind == .outOfBuffers ? .outOfBuffers : .discontinuity)
        }
    }

    private func decodeVideo(
        _ sample: CMSampleBuffer, data: CMBlockBuffer, format: CMFormatDescription, forReadersOnly: Bool
    ) throws(MediaCodecsError) -> [CMSampleBuffer] {
        if videoFormat != format {
            videoFormat = format
            jpeg = nil
            video = nil
            if mjpegPath == .turboJPEG && VideoDecoder.decoderName(for: format.mediaSubType.rawValue) == "mjpeg" {
                jpeg = try MJPEGDecoder(bufferLimit: FrameConversionStage.downstreamBufferLimit)
            }
        }
        if awaitsKeyFrame, jpeg == nil {
            // Nothing was lost that an output wanted: the frames went into a file as they came.
            guard CompressedFrameSync.isKeyFrame(sample) else { return [] }
            awaitsKeyFrame = false
        }
        if let jpeg {
            do {
                let image = try jpeg.decode(data)
                return wrapper.wrap(image, like: sample, time: sample.presentationTimeStamp, duration: sample.duration)
                    .map { [$0] } ?? []
            } catch where error.kind == .unsupportedConversion {
                // A subsampling TurboJPEG's path does not take: FFmpeg's decoder from now on.
                self.jpeg = nil
            }
        }
        if video == nil {
            guard var configuration = VideoDecoder.Configuration(formatDescription: format) else { return [] }
            configuration.bufferLimit = FrameConversionStage.downstreamBufferLimit
            video = try VideoDecoder(configuration)
        }
        guard let video else { return [] }
        video.lendsPlanarFrames = forReadersOnly
        lastVideoSample = sample
        try video.send(
            data, presentationTime: sample.presentationTimeStamp, decodeTime: sample.decodeTimeStamp,
            duration: sample.duration)
        var decoded: [CMSampleBuffer] = []
        while case .frame(let frame) = try video.receiveFrame() {
            let duration = frame.duration.isValid ? frame.duration : sample.duration
            if let wrapped = wrapper.wrap(
                frame.pixelBuffer, like: sample, time: frame.presentationTime, duration: duration)
            {
                decoded.append(wrapped)
            }
        }
        return decoded
    }

    private func decodeAudio(
        _ sample: CMSampleBuffer, data: CMBlockBuffer, format: CMFormatDescription
    )
        throws(MediaCodecsError) -> [CMSampleBuffer]
    {
        if audioFormat != format || audio == nil {
            audioFormat = format
            guard let configuration = AudioDecoder.Configuration(formatDescription: format) else { return [] }
            audio = try AudioDecoder(configuration)
        }
        guard let audio else { return [] }
        try audio.send(data, presentationTime: sample.presentationTimeStamp, duration: sample.duration)
        var decoded: [CMSampleBuffer] = []
        while case .samples(let buffer) = try audio.receive() {
            CMPropagateAttachments(sample, destination: buffer)
            decoded.append(buffer)
        }
        return decoded
    }
}

extension SampleDecodeStage {
    /// `image` as a compressed MJPEG sample buffer, as a camera delivers it (FFmpeg's `mjpeg` encoder, 4:2:0, quality
    /// 0.75): input for tests and benchmarks of the decode stage.
    package static func jpegSample(of image: CVPixelBuffer, at time: CMTime) throws -> CMSampleBuffer {
        let width = CVPixelBufferGetWidth(image)
        let height = CVPixelBufferGetHeight(image)
        let encoder = try VideoEncoder(
            VideoEncoder.Configuration(
                codec: .jpeg, width: width, height: height, pixelFormat: CVPixelBufferGetPixelFormatType(image)))
        try encoder.send(image, presentationTime: time)
        try encoder.finish()
        guard case .packet(let packet) = try encoder.receivePacket() else {
            throw MediaCodecsError(.invalidState, while: "encoding a JPEG sample", message: "no packet")
        }
        let description = try CMFormatDescription(videoCodecType: .jpeg, width: width, height: height)
        let timing = CMSampleTimingInfo(duration: .invalid, presentationTimeStamp: time, decodeTimeStamp: .invalid)
        return try CMSampleBuffer(
            dataBuffer: packet.data, formatDescription: description, numSamples: 1, sampleTimings: [timing],
            sampleSizes: [packet.data.dataLength])
    }
}
