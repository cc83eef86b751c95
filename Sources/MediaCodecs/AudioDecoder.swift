// AudioDecoder: compressed audio (AAC, ALAC, MP3, Opus, PCM in any layout, …) to interleaved Float32 sample buffers.

import CFFmpeg
import OpenCoreMedia
import Synchronization

/// Decodes one audio stream with libavcodec into `CMSampleBuffer`s of interleaved, native-endian Float32 PCM at the
/// stream's own rate and channel count: the format the graph's `AudioConverter` takes, so a movie file's sound meets
/// the same converters as a microphone's.
///
/// Input: one packet per ``send(_:presentationTime:duration:)``; ``Configuration/extradata`` is the codec's
/// out-of-band configuration (AAC's AudioSpecificConfig). Output: ``receive()`` gives one buffer per decoded frame,
/// stamped with its packet's time (libavcodec carries it through in the time scale of the first packet), the
/// samples of a frame 1/rate apart. Planar and integer formats are converted sample by sample (exact for Int16,
/// Int32 scaled by 2⁻³¹).
///
/// Wraps `avcodec_find_decoder_by_name`, `avcodec_alloc_context3`, `avcodec_open2`, `av_new_packet`,
/// `avcodec_send_packet`, `avcodec_receive_frame` and their frees; the decoder is the one owner of its context,
/// packet and frame.
///
/// Threading: thread-bound; use it from one thread at a time. Not `Sendable`. Debug builds trap when two threads use
/// it at once.
package final class AudioDecoder {
    /// Everything a decoder is made from.
    ///
    /// Threading: a value; `Sendable`.
    package struct Configuration: Hashable, Sendable {
        /// libavcodec's decoder name (`aac`, `alac`, `mp3`, `pcm_s16le`, …).
        package var codecName: String
        /// The sample rate and channel count the container states (the decoder may correct them).
        package var sampleRate: Int
        package var channelCount: Int
        /// The codec's out-of-band configuration.
        package var extradata: [UInt8]

        package init(codecName: String, sampleRate: Int, channelCount: Int, extradata: [UInt8] = []) {
            self.codecName = codecName
            self.sampleRate = sampleRate
            self.channelCount = channelCount
            self.extradata = extradata
        }

        /// The configuration for a compressed audio description: the codec from its format ID
        /// (``decoderName(for:)``), the rate and channels from its stream description, the magic cookie from its
        /// extensions. Nil for linear PCM (nothing to decode) and codecs we have no decoder for.
        package init?(formatDescription: CMFormatDescription) {
            guard formatDescription.mediaType == .audio, let asbd = formatDescription.audioStreamBasicDescription,
                let name = AudioDecoder.decoderName(for: formatDescription.mediaSubType.rawValue)
            else { return nil }
            self.init(
                codecName: name, sampleRate: Int(asbd.mSampleRate), channelCount: Int(asbd.mChannelsPerFrame),
                extradata: compressedFormatExtradata(formatDescription))
        }
    }

    /// libavcodec's decoder for a Core Audio format ID, or nil for linear PCM and unknown formats.
    package static func decoderName(for formatID: FourCharCode) -> String? {
        switch fourCharCodeString(formatID) {
        case "aac ": "aac"
        case "alac": "alac"
        case ".mp3": "mp3"
        // MPEG-1 Layer 2 is the sound of DVB broadcasts and of MPEG-1/2 program streams (`kAudioFormatMPEGLayer2`).
        case ".mp2": "mp2"
        case ".mp1": "mp1"
        case "ec-3": "eac3"
        case "opus": "opus"
        case "flac": "flac"
        case "ac-3": "ac3"
        case "ulaw": "pcm_mulaw"
        case "alaw": "pcm_alaw"
        default: nil
        }
    }

    package let configuration: Configuration

    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var timescale: Int32?
    private var formatDescription: CMFormatDescription?
    private var isFinished = false
    #if DEBUG
        private let isBusy = Atomic<Bool>(false)
    #endif

    /// An open decoder.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/unsupportedConfiguration`` when FFmpeg has no
    ///   such decoder; ``MediaCodecsError/Kind/allocationFailed``; ``MediaCodecsError/Kind/ffmpeg`` when
    ///   `avcodec_open2` refuses.
    package init(_ configuration: Configuration) throws(MediaCodecsError) {
        self.configuration = configuration
        let operation = "creating a \(configuration.codecName) decoder"
        guard let codec = avcodec_find_decoder_by_name(configuration.codecName) else {
            throw MediaCodecsError(
                .unsupportedConfiguration, while: operation, message: "this FFmpeg has no \(configuration.codecName) decoder")
        }
        guard let context = avcodec_alloc_context3(codec), let packet = av_packet_alloc(), let frame = av_frame_alloc()
        else {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "libavcodec gave NULL")
        }
        self.context = context
        self.packet = packet
        self.frame = frame
        context.pointee.sample_rate = Int32(configuration.sampleRate)
        av_channel_layout_default(&context.pointee.ch_layout, Int32(max(configuration.channelCount, 1)))
        try attachExtradata(configuration.extradata, to: context, while: operation)
        let status = avcodec_open2(context, codec, nil)
        guard status >= 0 else { throw .ffmpeg(status, while: operation) }
    }

    deinit {
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&context)
    }

    /// Sends one packet; take the buffers it completes with ``receive()`` until `.needsInput` before sending more.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/invalidState`` after ``finish()``,
    ///   ``MediaCodecsError/Kind/ffmpeg`` when the decoder rejects the packet (`EAGAIN`: frames not taken).
    package func send(_ data: CMBlockBuffer, presentationTime: CMTime, duration: CMTime) throws(MediaCodecsError) {
        #if DEBUG
            precondition(!isBusy.exchange(true, ordering: .acquiring), "AudioDecoder is thread-bound")
            defer { isBusy.store(false, ordering: .releasing) }
        #endif
        let operation = "decoding a \(configuration.codecName) packet"
        guard !isFinished else {
            throw MediaCodecsError(.invalidState, while: operation, message: "the decoder was finished")
        }
        guard let context, let packet else { return }
        try loadPacket(packet, from: data, while: operation)
        defer { av_packet_unref(packet) }
        let scale = timescale ?? (presentationTime.isNumeric ? presentationTime.timescale : Int32(configuration.sampleRate))
        timescale = scale
        let timeBase = AVRational(num: 1, den: scale)
        packet.pointee.pts = presentationTime.ffmpegTimestamp(in: timeBase) ?? CFFmpeg_AV_NOPTS_VALUE()
        packet.pointee.dts = packet.pointee.pts
        packet.pointee.duration = duration.ffmpegTimestamp(in: timeBase) ?? 0
        context.pointee.pkt_timebase = timeBase
        let sent = avcodec_send_packet(context, packet)
        guard sent >= 0 else { throw .ffmpeg(sent, while: operation) }
    }

    /// Tells the decoder no more packets come.
    package func finish() throws(MediaCodecsError) {
        guard !isFinished, let context else { return }
        isFinished = true
        let status = avcodec_send_packet(context, nil)
        guard status >= 0 || status == CFFmpeg_AVERROR_EOF() else {
            throw .ffmpeg(status, while: "finishing a \(configuration.codecName) decoder")
        }
    }

    /// What ``receive()`` gives.
    package enum Output {
        /// Interleaved Float32 samples of one decoded frame.
        case samples(CMSampleBuffer)
        case needsInput
        case endOfStream
    }

    /// The next decoded frame as a sample buffer, or why there is none.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/ffmpeg`` for a decoding failure,
    ///   ``MediaCodecsError/Kind/unsupportedConversion`` for a sample format we do not convert.
    package func receive() throws(MediaCodecsError) -> Output {
        #if DEBUG
            precondition(!isBusy.exchange(true, ordering: .acquiring), "AudioDecoder is thread-bound")
            defer { isBusy.store(false, ordering: .releasing) }
        #endif
        guard let context, let frame else { return .endOfStream }
        let status = avcodec_receive_frame(context, frame)
        if status == CFFmpeg_AVERROR_EAGAIN() { return .needsInput }
        if status == CFFmpeg_AVERROR_EOF() { return .endOfStream }
        let operation = "receiving a \(configuration.codecName) frame"
        guard status >= 0 else { throw .ffmpeg(status, while: operation) }
        defer { av_frame_unref(frame) }
        let frames = Int(frame.pointee.nb_samples)
        let channels = Int(frame.pointee.ch_layout.nb_channels)
        let rate = Int(frame.pointee.sample_rate)
        guard frames > 0, channels > 0, rate > 0 else { return .needsInput }
        let block = CMBlockBuffer(length: frames * channels * 4)
        let converted = block.withUnsafeMutableBytes { bytes in
            Self.interleave(frame, frames: frames, channels: channels, into: bytes.bindMemory(to: Float.self))
        }
        guard converted else {
            throw MediaCodecsError(
                .unsupportedConversion, while: operation,
                message: "sample format \(String(cString: av_get_sample_fmt_name(AVSampleFormat(frame.pointee.format))))")
        }
        let asbd = AudioStreamBasicDescription.linearPCM(
            sampleRate: Float64(rate), channels: UInt32(channels), bitsPerChannel: 32, isFloat: true)
        if formatDescription?.audioStreamBasicDescription != asbd {
            formatDescription = try? CMFormatDescription(audioStreamBasicDescription: asbd)
        }
        let scale = timescale ?? Int32(rate)
        let time = CMTime(ffmpegTimestamp: frame.pointee.best_effort_timestamp, timeBase: AVRational(num: 1, den: scale))
        let timing = CMSampleTimingInfo(
            duration: CMTime(value: 1, timescale: Int32(rate)), presentationTimeStamp: time, decodeTimeStamp: .invalid)
        do {
            return .samples(
                try CMSampleBuffer(
                    dataBuffer: block, formatDescription: formatDescription, numSamples: frames,
                    sampleTimings: [timing], sampleSizes: [channels * 4]))
        } catch {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "\(error)")
        }
    }

    /// Copies a frame's samples, packed or planar, Int16/Int32/Float/Double, into interleaved floats. False for
    /// other sample formats.
    private static func interleave(
        _ frame: UnsafeMutablePointer<AVFrame>, frames: Int, channels: Int, into output: UnsafeMutableBufferPointer<Float>
    ) -> Bool {
        let format = AVSampleFormat(frame.pointee.format)
        let planar = av_sample_fmt_is_planar(format) != 0
        func plane(_ channel: Int) -> UnsafeMutableRawPointer {
            // Planar audio with more channels than AVFrame.data holds lives in extended_data.
            UnsafeMutableRawPointer(frame.pointee.extended_data[planar ? channel : 0]!)
        }
        func copy<T>(_ type: T.Type, _ convert: (T) -> Float) {
            for channel in 0..<channels {
                let source = plane(channel).assumingMemoryBound(to: T.self)
                for index in 0..<frames {
                    output[index * channels + channel] = convert(planar ? source[index] : source[index * channels + channel])
                }
            }
        }
        switch av_get_packed_sample_fmt(format) {
        case AV_SAMPLE_FMT_FLT: copy(Float.self) { $0 }
        case AV_SAMPLE_FMT_DBL: copy(Double.self) { Float($0) }
        case AV_SAMPLE_FMT_S16: copy(Int16.self) { Float($0) / 32768 }
        case AV_SAMPLE_FMT_S32: copy(Int32.self) { Float(Double($0) / 2_147_483_648) }
        case AV_SAMPLE_FMT_U8: copy(UInt8.self) { (Float($0) - 128) / 128 }
        default: return false
        }
        return true
    }
}
