// EncodedPacket: one compressed access unit with exact CMTime timestamps, and the value an encoder's receive returns.

import CFFmpeg
import OpenCoreMedia

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One compressed access unit (a video frame, an audio frame) as an encoder produced it or a demuxer read it.
///
/// The bytes are the `AVPacket`'s payload: its reference-counted buffer, which the ``CMBlockBuffer`` holds, where
/// that buffer is the packet's own (see ``init(referencing:timeBase:fallbackDuration:)``), else a copy. Times are
/// exact: FFmpeg's integer timestamps in the codec's or stream's time base, as `CMTime`s whose timescale is that time
/// base's denominator.
///
/// Threading: a value; `Sendable` (the block buffer is never written after creation).
package struct EncodedPacket: Sendable {
    /// The compressed bytes.
    package var data: CMBlockBuffer
    /// When the frame is shown; `.invalid` when FFmpeg gave none.
    package var presentationTime: CMTime
    /// When the frame is decoded; equal to ``presentationTime`` for intra-only and B-frame-free streams.
    package var decodeTime: CMTime
    /// How long the frame lasts; `.invalid` when unknown.
    package var duration: CMTime
    /// Whether a decoder can start here (`AV_PKT_FLAG_KEY`).
    package var isKeyFrame: Bool

    /// A packet from its parts.
    package init(data: CMBlockBuffer, presentationTime: CMTime, decodeTime: CMTime, duration: CMTime, isKeyFrame: Bool)
    {
        self.data = data
        self.presentationTime = presentationTime
        self.decodeTime = decodeTime
        self.duration = duration
        self.isKeyFrame = isKeyFrame
    }

    /// A copy of `packet`'s payload and timing; `timeBase` is the time base its timestamps count in.
    init(copying packet: UnsafePointer<AVPacket>, timeBase: AVRational, fallbackDuration: Int64 = 0) {
        let size = Int(packet.pointee.size)
        let block = CMBlockBuffer(length: size)
        if size > 0, let source = packet.pointee.data {
            block.withUnsafeMutableBytes { $0.baseAddress?.copyMemory(from: source, byteCount: size) }
        }
        self.init(block, timingOf: packet, timeBase: timeBase, fallbackDuration: fallbackDuration)
    }

    /// `packet`'s payload and timing, without a copy where FFmpeg's buffer fits the payload: the block buffer then
    /// holds a reference to the packet's `AVBufferRef` (`av_buffer_ref`) and drops it when it dies. A demuxer's and
    /// an encoder's packets each have a buffer of their own, the payload's size plus FFmpeg's zero padding, so a
    /// frame read from a file or made by an encoder reaches the muxer, a decoder or a pixel buffer without being
    /// copied on the way (the muxer and the decoders reference padded block buffers in turn: `loadPacket`). A
    /// payload that is a small part of a larger buffer (more than twice its size) is copied instead, so a small
    /// packet never keeps a large buffer alive; so is one in no reference-counted buffer.
    init(referencing packet: UnsafePointer<AVPacket>, timeBase: AVRational, fallbackDuration: Int64 = 0) {
        let size = Int(packet.pointee.size)
        let padding = Int(AV_INPUT_BUFFER_PADDING_SIZE)
        guard size > 0, let data = packet.pointee.data, let buffer = packet.pointee.buf,
            let bufferStart = buffer.pointee.data, Int(buffer.pointee.size) <= 2 * size + padding,
            data >= bufferStart, data + size <= bufferStart + Int(buffer.pointee.size),
            let reference = av_buffer_ref(buffer)
        else {
            self.init(copying: packet, timeBase: timeBase, fallbackDuration: fallbackDuration)
            return
        }
        // FFmpeg zeroes a packet's padding when it allocates it (av_new_packet, av_grow_packet, the encoders'
        // buffers); the block buffer says it has it when the buffer reaches that far.
        let isZeroPadded = data + size + padding <= bufferStart + Int(buffer.pointee.size)
        // The closure must be Sendable; the reference is owned by the block buffer alone, released once.
        let address = Int(bitPattern: reference)
        let block = CMBlockBuffer(
            wrapping: UnsafeMutableRawPointer(data), length: size, isOnLoan: false, isZeroPadded: isZeroPadded
        ) { _ in
            var owned = UnsafeMutablePointer<AVBufferRef>(bitPattern: address)
            av_buffer_unref(&owned)
        }
        self.init(block, timingOf: packet, timeBase: timeBase, fallbackDuration: fallbackDuration)
    }

    /// `block` with `packet`'s timing.
    private init(
        _ block: CMBlockBuffer, timingOf packet: UnsafePointer<AVPacket>, timeBase: AVRational, fallbackDuration: Int64
    ) {
        let duration = packet.pointee.duration > 0 ? packet.pointee.duration : fallbackDuration
        self.init(
            data: block, presentationTime: CMTime(ffmpegTimestamp: packet.pointee.pts, timeBase: timeBase),
            decodeTime: CMTime(ffmpegTimestamp: packet.pointee.dts, timeBase: timeBase),
            duration: duration > 0 ? CMTime(ffmpegTimestamp: duration, timeBase: timeBase) : .invalid,
            isKeyFrame: packet.pointee.flags & AV_PKT_FLAG_KEY != 0)
    }
}

/// What an encoder's `receivePacket()` gives: a packet, or why there is none.
///
/// FFmpeg's `AVERROR(EAGAIN)` and `AVERROR_EOF` from `avcodec_receive_packet` are these values, never errors, so
/// a caller's drain loop is a `switch` that cannot swallow a real failure.
///
/// Threading: a value; `Sendable`.
package enum EncoderOutput: Sendable {
    /// The next packet in decode order.
    case packet(EncodedPacket)
    /// Nothing until more input is sent (`AVERROR(EAGAIN)`).
    case needsInput
    /// The encoder was finished and has given its last packet (`AVERROR_EOF`).
    case endOfStream
}

extension CMTime {
    /// An FFmpeg timestamp counted in `timeBase`, or `.invalid` for `AV_NOPTS_VALUE`.
    init(ffmpegTimestamp value: Int64, timeBase: AVRational) {
        guard value != CFFmpeg_AV_NOPTS_VALUE(), timeBase.num > 0, timeBase.den > 0 else {
            self = .invalid
            return
        }
        let (scaled, overflow) = value.multipliedReportingOverflow(by: Int64(timeBase.num))
        self = overflow ? .invalid : CMTime(value: scaled, timescale: timeBase.den)
    }

    /// This time counted in `timeBase`, rounded to the nearest tick (`av_rescale_q_rnd`, halves away from zero);
    /// `nil` when the time is not numeric.
    func ffmpegTimestamp(in timeBase: AVRational) -> Int64? {
        guard isNumeric, timescale > 0 else { return nil }
        let rounding = AVRounding(rawValue: AV_ROUND_NEAR_INF.rawValue | AV_ROUND_PASS_MINMAX.rawValue)
        return av_rescale_q_rnd(value, AVRational(num: 1, den: timescale), timeBase, rounding)
    }
}

extension MediaCodecsError {
    /// FFmpeg's error `code` from writing a file: ``Kind/diskFull`` for `ENOSPC` and `EDQUOT`, else ``Kind/ffmpeg``;
    /// the code is kept either way.
    static func ffmpegIO(_ code: Int32, while operation: String) -> MediaCodecsError {
        if code == CFFmpeg_AVERROR(ENOSPC) || code == CFFmpeg_AVERROR(EDQUOT) {
            return MediaCodecsError(.diskFull, while: operation, message: ffmpegErrorMessage(code), ffmpegCode: code)
        }
        return .ffmpeg(code, while: operation)
    }
}

/// Sets `key` to `value` in an FFmpeg dictionary (`av_dict_set`).
func setOption(_ dictionary: inout OpaquePointer?, _ key: String, _ value: String) {
    av_dict_set(&dictionary, key, value, 0)
}

/// The entries of an FFmpeg dictionary (`av_dict_get` with `AV_DICT_IGNORE_SUFFIX`), in order.
func dictionaryEntries(_ dictionary: OpaquePointer?) -> [(key: String, value: String)] {
    var entries: [(key: String, value: String)] = []
    var entry: UnsafeMutablePointer<AVDictionaryEntry>? = nil
    while let next = av_dict_get(dictionary, "", entry, AV_DICT_IGNORE_SUFFIX) {
        entries.append((String(cString: next.pointee.key), String(cString: next.pointee.value)))
        entry = next
    }
    return entries
}

/// `avcodec_receive_packet` as a value, shared by the encoders: the next packet (made by `copy` while FFmpeg's
/// packet is still referenced, unreferenced afterwards), `.needsInput` for EAGAIN, `.endOfStream` for EOF or a
/// closed encoder.
///
/// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/ffmpeg`` when the encoder fails.
func receiveEncodedPacket(
    from context: UnsafeMutablePointer<AVCodecContext>?, into packet: UnsafeMutablePointer<AVPacket>?,
    codecName: String, copy: (UnsafeMutablePointer<AVPacket>) -> EncodedPacket
) throws(MediaCodecsError) -> EncoderOutput {
    guard let context, let packet else { return .endOfStream }
    let status = avcodec_receive_packet(context, packet)
    if status == CFFmpeg_AVERROR_EAGAIN() { return .needsInput }
    if status == CFFmpeg_AVERROR_EOF() { return .endOfStream }
    guard status >= 0 else { throw .ffmpeg(status, while: "receiving a \(codecName) packet") }
    defer { av_packet_unref(packet) }
    return .packet(copy(packet))
}

/// `avcodec_send_frame` (nil flushes), shared by the encoders: while the encoder answers EAGAIN, its ready
/// packets are taken out with `receive` into `pending` and the frame is sent again.
///
/// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/ffmpeg`` when the encoder fails, or when it
///   neither takes the frame nor gives a packet.
func sendEncoderFrame(
    _ frame: UnsafeMutablePointer<AVFrame>?, to context: UnsafeMutablePointer<AVCodecContext>?, operation: String,
    pending: inout [EncodedPacket], receive: () throws(MediaCodecsError) -> EncoderOutput
) throws(MediaCodecsError) {
    guard let context else { return }
    while true {
        let status = avcodec_send_frame(context, frame)
        if status >= 0 { return }
        guard status == CFFmpeg_AVERROR_EAGAIN() else { throw .ffmpeg(status, while: operation) }
        var drained = false
        while case .packet(let packet) = try receive() {
            pending.append(packet)
            drained = true
        }
        guard drained else { throw .ffmpeg(status, while: "\(operation) (the encoder neither takes nor gives)") }
    }
}
