// AudioEncoder: AAC, Apple Lossless and linear PCM compression of PCM sample buffers with libavcodec.

import CFFmpeg
import OpenCoreMedia
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Compresses interleaved PCM sample buffers with FFmpeg's `aac` (AAC-LC), `alac` or a `pcm_*` encoder.
///
/// Input: `CMSampleBuffer`s of interleaved, native-endian Int16, Int32 or Float32 PCM (``AudioConverter/Format``)
/// at ``Configuration/sampleRate``, with any channel count (1–8; libswresample remixes to
/// ``Configuration/channelCount``) and any number of frames per buffer. Each buffer is converted with
/// libswresample to the encoder's sample format (planar float for AAC, planar Int16 for ALAC, the PCM codec's own)
/// into a FIFO owned by the encoder, and whole encoder frames (``frameSize``: 1024 for AAC, 4096 for ALAC, 1024 for
/// PCM, whose encoders take any size) are sent from it. ``finish()`` sends the remainder as a short last frame.
/// (The FIFO is ours rather than `av_audio_fifo`, whose header the CFFmpeg shim does not include.)
///
/// Timestamps: one continuous timeline in 1/``Configuration/sampleRate``. The first buffer's presentation time,
/// rounded to the nearest sample, is the anchor; every frame sent has the PTS anchor + samples sent before it.
/// A later buffer that starts more than ``discontinuityTolerance`` after where the timeline expects it (a dropped
/// period) is preceded by silence up to its own time, so audio stays in sync with video, up to
/// ``longestSilenceFill``: beyond that the timeline jumps to the buffer (the file's audio has a gap there). One
/// that starts early (an overlap, clock drift) is appended as it is.
///
/// Priming: AAC's encoder delay is ``primingFrameCount`` samples (1024, FFmpeg's `initial_padding`). Its first
/// packet's PTS is the anchor − 1024 samples; a muxer given these packets with the session starting at the anchor
/// writes an edit list (QuickTime/MP4 `elst` media time 1024) so the track starts at 0 with the first real sample,
/// as Apple's AAC files do. ALAC and PCM have no priming.
///
/// Bit rate: AAC defaults to 64 kb/s per channel (128 kb/s stereo), as Apple's capture does.
///
/// Wraps `avcodec_find_encoder_by_name`, `avcodec_alloc_context3`, `avcodec_open2`, `swr_alloc_set_opts2`,
/// `swr_init`, `swr_convert`, `av_frame_alloc`, `av_frame_get_buffer`, `av_frame_make_writable`,
/// `avcodec_send_frame`, `avcodec_receive_packet` and the matching frees. The encoder is the one owner of its
/// `AVCodecContext`, `SwrContext`, frame, packet and FIFO, and frees them in `deinit`.
///
/// Cost: AAC-LC stereo at 48 kHz ≈ 0.4 ms per 1024-sample frame, conversion from Float32 included (release
/// build, one core).
///
/// Threading: thread-bound; use it from one thread at a time (an output's serial queue). Not `Sendable`. Debug
/// builds trap when two threads use it at once.
package final class AudioEncoder {
    /// The compression formats this type writes.
    ///
    /// Threading: a value; `Sendable`.
    package enum Codec: Hashable, Sendable, CustomStringConvertible {
        /// AAC-LC (`kAudioFormatMPEG4AAC`) with FFmpeg's `aac`.
        case aac
        /// Apple Lossless, 16-bit (`kAudioFormatAppleLossless`) with `alac`.
        case alac
        /// Linear PCM: 16, 24 or 32-bit integers or 32-bit floats, either byte order (`pcm_s16le`, `pcm_s16be`
        /// for AIFF, `pcm_f32le`, …).
        case linearPCM(bitsPerSample: Int, isFloat: Bool, isBigEndian: Bool)

        /// libavcodec's encoder name, or `nil` for a PCM layout FFmpeg has no encoder for.
        package var encoderName: String? {
            switch self {
            case .aac: return "aac"
            case .alac: return "alac"
            case .linearPCM(let bits, let isFloat, let isBigEndian):
                let endian = isBigEndian ? "be" : "le"
                switch (bits, isFloat) {
                case (16, false), (24, false), (32, false): return "pcm_s\(bits)\(endian)"
                case (32, true), (64, true): return "pcm_f\(bits)\(endian)"
                default: return nil
                }
            }
        }

        package var description: String { encoderName ?? "unsupported PCM" }
    }

    /// Everything an encoder is made from.
    ///
    /// Threading: a value; `Sendable`.
    package struct Configuration: Hashable, Sendable {
        /// The compression format.
        package var codec: Codec
        /// Frames per second, of the input and the output (resample upstream with ``AudioConverter``).
        package var sampleRate: Int
        /// Channels encoded (1–8).
        package var channelCount: Int
        /// AAC's bit rate in bits per second; ignored by the lossless codecs.
        package var bitRate: Int

        /// The defaults described on ``AudioEncoder``.
        package init(codec: Codec, sampleRate: Int = 48000, channelCount: Int = 2) {
            self.codec = codec
            self.sampleRate = sampleRate
            self.channelCount = channelCount
            self.bitRate = 64000 * channelCount
        }
    }

    /// The configuration the encoder was made with.
    package let configuration: Configuration
    /// The encoder's time base, 1/sample rate.
    package let timeBase: AVRational
    /// Samples per channel in every frame sent but the last.
    package let frameSize: Int
    /// The encoder delay in samples (FFmpeg's `initial_padding`): 1024 for AAC, 0 otherwise.
    package let primingFrameCount: Int
    /// The codec's out-of-band header (the AAC AudioSpecificConfig, the ALAC magic cookie); empty for PCM.
    package let extradata: [UInt8]
    /// The longest gap filled with silence (10 s); a buffer further ahead moves the timeline to itself, so a
    /// source whose clock jumps costs neither memory nor encoding time in proportion to the jump.
    package static let longestSilenceFill = CMTime(value: 10, timescale: 1)

    /// How far a buffer may start after where the timeline expects it before the gap is filled with silence.
    package let discontinuityTolerance: CMTime

    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// Converts input to the encoder's sample format; rebuilt when the input format changes.
    private var resampler: OpaquePointer?
    private var resamplerInput: AudioConverter.Format?
    private let fifo: SampleFIFO
    private let sampleFormat: AVSampleFormat
    /// The timeline: the anchor and the samples appended to the FIFO since.
    private var anchor: Int64?
    private var samplesQueued: Int64 = 0
    private var samplesSent: Int64 = 0
    private var pending: [EncodedPacket] = []
    private var isFinished = false
    #if DEBUG
        private let isBusy = Atomic<Bool>(false)
    #endif

    /// An open encoder for `configuration`.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/unsupportedConfiguration`` when FFmpeg lacks
    ///   the encoder or refuses the rate or channel count, ``MediaCodecsError/Kind/allocationFailed``,
    ///   ``MediaCodecsError/Kind/ffmpeg``.
    package init(
        _ configuration: Configuration, discontinuityTolerance: CMTime = CMTime(value: 2, timescale: 1000)
    ) throws(MediaCodecsError) {
        FFmpegLogging.configured
        let operation = "creating a \(configuration.codec) encoder for \(configuration.sampleRate) Hz"
        guard (1...768_000).contains(configuration.sampleRate), (1...8).contains(configuration.channelCount),
            let name = configuration.codec.encoderName, let codec = avcodec_find_encoder_by_name(name)
        else {
            throw MediaCodecsError(
                .unsupportedConfiguration, while: operation,
                message: "needs 1…768000 Hz, 1…8 channels and an encoder this FFmpeg has")
        }
        self.configuration = configuration
        self.discontinuityTolerance = discontinuityTolerance
        self.timeBase = AVRational(num: 1, den: Int32(configuration.sampleRate))
        let format: AVSampleFormat
        switch configuration.codec {
        case .aac: format = AV_SAMPLE_FMT_FLTP
        case .alac: format = AV_SAMPLE_FMT_S16P
        case .linearPCM(let bits, let isFloat, _):
            format =
                isFloat
                ? (bits == 64 ? AV_SAMPLE_FMT_DBL : AV_SAMPLE_FMT_FLT)
                : (bits == 16 ? AV_SAMPLE_FMT_S16 : AV_SAMPLE_FMT_S32)
        }
        self.sampleFormat = format
        self.fifo = SampleFIFO(
            planeCount: av_sample_fmt_is_planar(format) != 0 ? configuration.channelCount : 1,
            bytesPerFrame: Int(av_get_bytes_per_sample(format))
                * (av_sample_fmt_is_planar(format) != 0 ? 1 : configuration.channelCount))
        self.context = avcodec_alloc_context3(codec)
        self.frame = av_frame_alloc()
        self.packet = av_packet_alloc()
        guard let context, let frame, packet != nil else {
            frameSize = 0
            primingFrameCount = 0
            extradata = []
            throw MediaCodecsError(.allocationFailed, while: operation, message: "an FFmpeg object could not be made")
        }
        context.pointee.sample_fmt = format
        context.pointee.sample_rate = Int32(configuration.sampleRate)
        context.pointee.time_base = timeBase
        av_channel_layout_default(&context.pointee.ch_layout, Int32(configuration.channelCount))
        context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
        if case .aac = configuration.codec { context.pointee.bit_rate = Int64(configuration.bitRate) }
        if case .linearPCM(let bits, _, _) = configuration.codec, bits == 24 {
            context.pointee.bits_per_raw_sample = 24
        }
        let status = avcodec_open2(context, codec, nil)
        guard status >= 0 else {
            frameSize = 0
            primingFrameCount = 0
            extradata = []
            throw .ffmpeg(status, while: "\(operation) (avcodec_open2)")
        }
        let codecFrameSize = Int(context.pointee.frame_size)
        frameSize = codecFrameSize > 0 ? codecFrameSize : 1024
        primingFrameCount = Int(max(context.pointee.initial_padding, 0))
        if let bytes = context.pointee.extradata, context.pointee.extradata_size > 0 {
            extradata = Array(UnsafeBufferPointer(start: bytes, count: Int(context.pointee.extradata_size)))
        } else {
            extradata = []
        }
        frame.pointee.format = format.rawValue
        frame.pointee.nb_samples = Int32(frameSize)
        frame.pointee.sample_rate = Int32(configuration.sampleRate)
        let copied = av_channel_layout_copy(&frame.pointee.ch_layout, &context.pointee.ch_layout)
        let allocated = copied >= 0 ? av_frame_get_buffer(frame, 0) : copied
        guard allocated >= 0 else { throw .ffmpeg(allocated, while: "\(operation) (av_frame_get_buffer)") }
    }

    deinit {
        avcodec_free_context(&context)
        av_frame_free(&frame)
        av_packet_free(&packet)
        swr_free(&resampler)
    }

    /// The priming as a duration.
    package var primingDuration: CMTime { CMTime(value: Int64(primingFrameCount), timescale: timeBase.den) }

    /// FFmpeg's codec parameters for a muxer stream (`avcodec_parameters_from_context`).
    func copyParameters(to parameters: UnsafeMutablePointer<AVCodecParameters>) -> Int32 {
        guard let context else { return CFFmpeg_AVERROR(EINVAL) }
        return avcodec_parameters_from_context(parameters, context)
    }

    // MARK: Encoding

    /// Appends a buffer of interleaved PCM and encodes every whole frame now available.
    ///
    /// Never refuses input: packets libavcodec wants taken first are kept for ``receivePacket()``.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/formatMismatch`` for a buffer that is not
    ///   interleaved Int16/Int32/Float32 PCM at the configured rate or has no data or numeric time,
    ///   ``MediaCodecsError/Kind/invalidState`` after ``finish()``, ``MediaCodecsError/Kind/ffmpeg``.
    package func send(_ sampleBuffer: CMSampleBuffer) throws(MediaCodecsError) {
        #if DEBUG
            precondition(
                !isBusy.exchange(true, ordering: .acquiring),
                "AudioEncoder is thread-bound: it was used from two threads at once")
            defer { isBusy.store(false, ordering: .releasing) }
        #endif
        let operation = "encoding \(configuration.codec) audio at \(sampleBuffer.presentationTimeStamp.seconds) s"
        guard !isFinished else {
            throw MediaCodecsError(.invalidState, while: operation, message: "the encoder was finished")
        }
        guard let description = sampleBuffer.formatDescription?.audioStreamBasicDescription,
            let input = AudioConverter.Format(description), input.sampleRate == configuration.sampleRate,
            let data = sampleBuffer.dataBuffer
        else {
            throw MediaCodecsError(
                .formatMismatch, while: operation,
                message: "the buffer is not interleaved Int16, Int32 or Float32 PCM at \(configuration.sampleRate) Hz "
                    + "with data")
        }
        guard let start = sampleBuffer.presentationTimeStamp.ffmpegTimestamp(in: timeBase) else {
            throw MediaCodecsError(.formatMismatch, while: operation, message: "the presentation time is not numeric")
        }
        let frameCount = data.dataLength / input.bytesPerFrame
        if resampler == nil || resamplerInput != input { try makeResampler(for: input, operation: operation) }
        if let anchor {
            let expected = anchor + samplesQueued
            let tolerance = discontinuityTolerance.ffmpegTimestamp(in: timeBase) ?? 0
            let longestFill = Self.longestSilenceFill.ffmpegTimestamp(in: timeBase) ?? 0
            if start - expected > longestFill {
                // Not a lost period but a jump of the source's clock (a free-running device, a stream resumed
                // much later): the timeline moves to the buffer instead of growing by hours of silence.
                self.anchor = start - samplesQueued
            } else if start - expected > tolerance {
                let gap = Int(start - expected)
                fifo.appendSilence(gap, isUnsigned: false)
                samplesQueued += Int64(gap)
            }
        } else {
            anchor = start
        }
        guard let resampler else { return }
        let converted = fifo.append(frameCount) { destinations in
            data.withUnsafeBytes { bytes in
                var source: UnsafePointer<UInt8>? = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
                return withUnsafeMutablePointer(to: &source) { sourcePointer in
                    swr_convert(resampler, destinations, Int32(frameCount), sourcePointer, Int32(frameCount))
                }
            }
        }
        guard converted >= 0 else { throw .ffmpeg(converted, while: "\(operation) (swr_convert)") }
        samplesQueued += Int64(converted)
        while fifo.count >= frameSize { try sendFrame(frameSize, operation: operation) }
    }

    /// Sends the remaining samples as a short last frame and flushes the encoder: after this, ``receivePacket()``
    /// gives the remaining packets, then `.endOfStream`. Calling it again does nothing.
    package func finish() throws(MediaCodecsError) {
        guard !isFinished else { return }
        let operation = "finishing the \(configuration.codec) encoder"
        if fifo.count > 0 { try sendFrame(fifo.count, operation: operation) }
        isFinished = true
        try sendToCodec(nil, operation: operation)
    }

    /// The next packet in decode order, or why there is none (see ``EncoderOutput``).
    package func receivePacket() throws(MediaCodecsError) -> EncoderOutput {
        if !pending.isEmpty { return .packet(pending.removeFirst()) }
        return try receiveFromCodec()
    }

    private func receiveFromCodec() throws(MediaCodecsError) -> EncoderOutput {
        try receiveEncodedPacket(from: context, into: packet, codecName: "\(configuration.codec)") { packet in
            EncodedPacket(referencing: packet, timeBase: timeBase)
        }
    }

    /// Moves `count` samples from the FIFO into the frame and sends it.
    private func sendFrame(_ count: Int, operation: String) throws(MediaCodecsError) {
        guard let frame, let anchor else { return }
        let writable = av_frame_make_writable(frame)
        guard writable >= 0 else { throw .ffmpeg(writable, while: "\(operation) (av_frame_make_writable)") }
        for plane in 0..<fifo.planeCount {
            guard let destination = CFFmpeg_frameData(frame, Int32(plane)) else { continue }
            fifo.copy(plane: plane, count: count, to: destination)
        }
        fifo.removeFirst(count)
        frame.pointee.nb_samples = Int32(count)
        frame.pointee.pts = anchor + samplesSent
        samplesSent += Int64(count)
        try sendToCodec(frame, operation: operation)
    }

    private func sendToCodec(_ frame: UnsafeMutablePointer<AVFrame>?, operation: String) throws(MediaCodecsError) {
        try sendEncoderFrame(frame, to: context, operation: operation, pending: &pending) {
            () throws(MediaCodecsError) in
            try receiveFromCodec()
        }
    }

    private func makeResampler(for input: AudioConverter.Format, operation: String) throws(MediaCodecsError) {
        swr_free(&resampler)
        resamplerInput = nil
        var inputLayout = AVChannelLayout()
        var outputLayout = AVChannelLayout()
        av_channel_layout_default(&inputLayout, Int32(input.channelCount))
        av_channel_layout_default(&outputLayout, Int32(configuration.channelCount))
        defer {
            av_channel_layout_uninit(&inputLayout)
            av_channel_layout_uninit(&outputLayout)
        }
        var created: OpaquePointer?
        var status = swr_alloc_set_opts2(
            &created, &outputLayout, sampleFormat, Int32(configuration.sampleRate), &inputLayout,
            input.ffmpegSampleFormat, Int32(input.sampleRate), 0, nil)
        if status >= 0, let created { status = swr_init(created) }
        guard status >= 0, created != nil else {
            swr_free(&created)
            throw .ffmpeg(status < 0 ? status : CFFmpeg_AVERROR(ENOMEM), while: "\(operation) (swr_init)")
        }
        resampler = created
        resamplerInput = input
    }
}

/// A first-in, first-out queue of samples in an encoder's sample format, one region per plane.
///
/// Stands in for `av_audio_fifo` (whose header the CFFmpeg shim lacks). Owns its memory and frees it in `deinit`;
/// pointers into it are only lent to the closures and copies below.
///
/// Threading: thread-bound, like the encoder that owns it.
private final class SampleFIFO {
    let planeCount: Int
    /// Bytes of one sample frame within one plane.
    let bytesPerFrame: Int
    private var planes: [UnsafeMutableRawPointer]
    private var capacity = 0
    private var head = 0
    private(set) var count = 0

    init(planeCount: Int, bytesPerFrame: Int) {
        self.planeCount = planeCount
        self.bytesPerFrame = bytesPerFrame
        planes = []
    }

    deinit { for plane in planes { plane.deallocate() } }

    /// Makes room for `extra` more samples after the queued ones, moving the queue to the start.
    private func reserve(_ extra: Int) {
        if head + count + extra <= capacity { return }
        let newCapacity = max(capacity, (count + extra) * 2, 4096)
        var newPlanes: [UnsafeMutableRawPointer] = []
        for index in 0..<planeCount {
            let plane = UnsafeMutableRawPointer.allocate(byteCount: newCapacity * bytesPerFrame, alignment: 64)
            if index < planes.count {
                plane.copyMemory(from: planes[index] + head * bytesPerFrame, byteCount: count * bytesPerFrame)
                planes[index].deallocate()
            }
            newPlanes.append(plane)
        }
        planes = newPlanes
        capacity = newCapacity
        head = 0
    }

    /// Lets `write` fill up to `maximum` samples after the queued ones (it gets one pointer per plane and returns
    /// the samples written, or a negative error), and queues what it wrote.
    func append(
        _ maximum: Int, _ write: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>) -> Int32
    ) -> Int32 {
        reserve(maximum)
        let written = withUnsafeTemporaryAllocation(of: UnsafeMutablePointer<UInt8>?.self, capacity: planeCount) {
            pointers in
            for index in 0..<planeCount {
                pointers[index] = (planes[index] + (head + count) * bytesPerFrame).assumingMemoryBound(to: UInt8.self)
            }
            return write(pointers.baseAddress!)
        }
        if written > 0 { count += Int(written) }
        return written
    }

    /// Queues `frames` samples of digital silence (all-zero bytes: signed and float formats).
    func appendSilence(_ frames: Int, isUnsigned: Bool) {
        reserve(frames)
        for plane in planes {
            (plane + (head + count) * bytesPerFrame).initializeMemory(
                as: UInt8.self, repeating: isUnsigned ? 0x80 : 0, count: frames * bytesPerFrame)
        }
        count += frames
    }

    /// Copies the first `count` samples of `plane` to `destination`.
    func copy(plane: Int, count: Int, to destination: UnsafeMutablePointer<UInt8>) {
        UnsafeMutableRawPointer(destination).copyMemory(
            from: planes[plane] + head * bytesPerFrame, byteCount: count * bytesPerFrame)
    }

    /// Drops the first `count` samples.
    func removeFirst(_ frames: Int) {
        head += frames
        count -= frames
        if count == 0 { head = 0 }
    }
}
