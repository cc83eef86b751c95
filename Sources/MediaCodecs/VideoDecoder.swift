// VideoDecoder: compressed video (MJPEG, H.264, HEVC, anything libavcodec decodes) to CVPixelBuffers.

import CFFmpeg
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A decoded video frame: a pixel buffer from the decoder's pool and its timing.
///
/// Threading: a value; the pixel buffer is not written after the decoder hands it over.
package struct DecodedFrame {
    package var pixelBuffer: CVPixelBuffer
    /// When the frame is shown, in the time scale of the packets sent.
    package var presentationTime: CMTime
    /// How long it lasts; `.invalid` when the packet said nothing.
    package var duration: CMTime
}

/// What a decoder's `receiveFrame()` gives: a frame, or why there is none (`AVERROR(EAGAIN)` and `AVERROR_EOF` as
/// values, as ``EncoderOutput`` does for encoders).
package enum DecoderOutput {
    /// The next frame in presentation order.
    case frame(DecodedFrame)
    /// Nothing until more input is sent (`AVERROR(EAGAIN)`).
    case needsInput
    /// The decoder was finished and has given its last frame (`AVERROR_EOF`).
    case endOfStream
}

/// Decodes one video stream with libavcodec into pixel buffers of one format, NV12 by default.
///
/// Input: one access unit per ``send(_:presentationTime:decodeTime:duration:)``, as a camera or a movie file
/// delivers it: a JPEG image, an H.264/HEVC access unit in Annex B (start codes; cameras) or length-prefixed with
/// the `avcC`/`hvcC` record as ``Configuration/extradata`` (QuickTime and MP4 files). Output: ``receiveFrame()``
/// gives frames converted with libswscale into buffers of a `CVPixelBufferPool` of ``Configuration/pixelFormat``
/// (by default NV12 in the stream's own range: `'420f'` for full-range JPEG, `'420v'` otherwise, so no range
/// conversion costs time or precision), BT.709 for HD and BT.601 below unless the stream says otherwise. The pool
/// allows ``Configuration/bufferLimit`` buffers held downstream; beyond that a frame is
/// ``MediaCodecsError/Kind/outOfBuffers`` (the graph's `OutOfBuffers` drop). With ``Configuration/lendsFrames``, a
/// frame the decoder made in the configured format and range already (4:2:0 planar or NV12, 8-bit) is lent
/// instead, with no copy: the pixel buffer holds a reference to libavcodec's frame and drops it when it dies
/// (`av_frame_clone`, `av_frame_free`); at most ``Configuration/bufferLimit`` are lent at once, later frames are
/// copied into the pool. ``lendsPlanarFrames`` does the same for a caller whose consumers change while it decodes
/// (the session's decode stage), switched between frames.
///
/// Timestamps pass through libavcodec in the time scale of the first packet sent, so a frame comes back with its
/// packet's exact time; the duration is the packet's.
///
/// Wraps `avcodec_find_decoder_by_name`, `avcodec_alloc_context3`, `avcodec_open2`, `av_new_packet`,
/// `avcodec_send_packet`, `avcodec_receive_frame`, `sws_getCachedContext`, `sws_setColorspaceDetails`,
/// `sws_scale` and their frees. The decoder is the one owner of its `AVCodecContext`, packet, frame and
/// `SwsContext`, freed in `deinit`.
///
/// Threading: thread-bound; use it from one thread at a time (a capture thread). Not `Sendable`. Debug builds trap
/// when two threads use it at once.
package final class VideoDecoder {
    /// Everything a decoder is made from.
    ///
    /// Threading: a value; `Sendable`.
    package struct Configuration: Hashable, Sendable {
        /// libavcodec's decoder name (`mjpeg`, `h264`, `hevc`, `mpeg4`, …).
        package var codecName: String
        /// The codec's out-of-band header: `avcC`/`hvcC` for length-prefixed H.264/HEVC, empty otherwise.
        package var extradata: [UInt8]
        /// The pixel format of the frames given; nil picks NV12 in the stream's range.
        package var pixelFormat: OSType?
        /// The most buffers held downstream before a frame is refused.
        package var bufferLimit: Int
        /// Decoder threads (`thread_count`); 1 by default (frame threading adds a frame of delay per thread).
        package var threadCount: Int
        /// Whether frames already in ``pixelFormat`` may be lent with no copy (see ``VideoDecoder``). Only for a
        /// consumer that never writes into them (an encoder): a lent buffer's planes are libavcodec's, and an
        /// H.264 decoder predicts later pictures from them. Off by default: pixel buffers handed to a user are
        /// theirs to draw on.
        package var lendsFrames = false
        /// The picture's size as the container says it, for decoders whose bitstream does not carry it (FFV1); 0
        /// when unknown. Decoders that read it from the stream (H.264, MPEG-2, …) ignore it.
        package var width: Int32 = 0
        package var height: Int32 = 0

        package init(codecName: String, extradata: [UInt8] = [], pixelFormat: OSType? = nil, bufferLimit: Int = 6) {
            self.codecName = codecName
            self.extradata = extradata
            self.pixelFormat = pixelFormat
            self.bufferLimit = bufferLimit
            self.threadCount = 1
        }

        /// The configuration for a compressed format description: the codec from its subtype
        /// (``decoderName(for:)``), the `avcC`/`hvcC` atom from its extensions. Nil for pixel formats and codecs
        /// we have no decoder for.
        package init?(formatDescription: CMFormatDescription, pixelFormat: OSType? = nil) {
            guard formatDescription.mediaType == .video,
                let name = VideoDecoder.decoderName(for: formatDescription.mediaSubType.rawValue)
            else { return nil }
            self.init(
                codecName: name, extradata: compressedFormatExtradata(formatDescription), pixelFormat: pixelFormat)
            width = formatDescription.dimensions.width
            height = formatDescription.dimensions.height
        }
    }

    /// Whether this FFmpeg build has the decoder `codecName` (`avcodec_find_decoder_by_name`): a build may leave
    /// codecs out.
    package static func hasDecoder(named codecName: String) -> Bool {
        avcodec_find_decoder_by_name(codecName) != nil
    }

    /// libavcodec's decoder for a QuickTime video codec type, or nil when the type is a pixel format or unknown.
    package static func decoderName(for codecType: FourCharCode) -> String? {
        switch fourCharCodeString(codecType) {
        case "jpeg", "mjpa", "dmb1", "AVDJ", "MJPG": "mjpeg"
        case "avc1", "avc3", "H264": "h264"
        case "hvc1", "hev1", "HEVC": "hevc"
        case "mp4v": "mpeg4"
        case "apcn", "apch", "apcs", "apco", "ap4h": "prores"
        case "vp08": "vp8"
        case "vp09": "vp9"
        case "av01": "av1"
        // What DVB sticks, DVD rips and camcorders write (MPEG-1/2 in MPEG-TS or PS), and older AVI and FLV codecs:
        // Apple's codes where it has them (`kCMVideoCodecType_MPEG2Video`), else the FourCC AVI files carry.
        case "mp1v": "mpeg1video"
        case "mp2v", "hdv2", "hdv3", "xdv7", "xdvc", "mx5p", "mpg2": "mpeg2video"
        case "h263", "s263": "h263"
        case "dvc ", "dvcp", "dvpp", "dv5n", "dv5p": "dvvideo"
        case "XiTh": "theora"
        case "WMV3": "wmv3"
        case "WVC1": "vc1"
        case "FLV1": "flv"
        case "DIV3": "msmpeg4"
        case "cvid": "cinepak"
        default: ffmpegCodecName(codecType)
        }
    }

    /// The codec type of a video codec QuickTime has no code for but this FFmpeg decodes (FFV1, HuffYUV, Dirac, …):
    /// `'#'` and libavcodec's `AVCodecID` in the low 24 bits (FFV1 is `0x23000021`). It names the codec only
    /// inside this process, between a movie file's demuxer and the decoder; nil when FFmpeg has no decoder.
    package static func ffmpegCodecType(forCodecNamed name: String) -> FourCharCode? {
        guard let descriptor = avcodec_descriptor_get_by_name(name), descriptor.pointee.type == AVMEDIA_TYPE_VIDEO,
            avcodec_find_decoder(descriptor.pointee.id) != nil, descriptor.pointee.id.rawValue < 1 << 24
        else { return nil }
        return ffmpegCodecTypeTag << 24 | FourCharCode(descriptor.pointee.id.rawValue)
    }

    /// `'#'`, the first byte of ``ffmpegCodecType(forCodecNamed:)``'s codes.
    private static let ffmpegCodecTypeTag: FourCharCode = 0x23

    /// The decoder of an ``ffmpegCodecType(forCodecNamed:)`` code.
    private static func ffmpegCodecName(_ codecType: FourCharCode) -> String? {
        guard codecType >> 24 == ffmpegCodecTypeTag,
            let decoder = avcodec_find_decoder(AVCodecID(rawValue: codecType & 0xFF_FFFF))
        else { return nil }
        return String(cString: decoder.pointee.name)
    }

    package let configuration: Configuration

    /// Whether frames come out as 4:2:0 planar in the stream's own range (`'y420'`, or `'f420'` for full range),
    /// lent with no copy when the decoder made them so (8-bit 4:2:0 H.264 and HEVC do), instead of copied into
    /// NV12 buffers. Only with no ``Configuration/pixelFormat`` configured, and only for a caller whose every
    /// consumer just reads the pictures (an encoder), as for ``Configuration/lendsFrames``. It may change between
    /// any two frames, key frame or not: only what is done with a picture after decoding changes, and frames lent
    /// already stay valid until their buffers die.
    package var lendsPlanarFrames = false

    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var scaler: OpaquePointer?
    private var pool: CVPixelBufferPool?
    /// Frames lent out as pixel buffers and not yet released (see ``lend(_:)``).
    private let lent = LentFrames()
    /// How many of this decoder's frames are lent out now (their pixel buffers alive). Any thread.
    package var lentFrameCount: Int { lent.value }
    private var poolKey: (width: Int, height: Int, format: OSType)?
    /// The time scale packets are counted in (the first packet's).
    private var timescale: Int32?
    /// Packet durations by presentation timestamp, for the frames they become.
    private var durations: [Int64: Int64] = [:]
    private var pending: [DecodedFrame] = []
    private var isFinished = false
    #if DEBUG
        private let isBusy = Atomic<Bool>(false)
    #endif

    /// An open decoder.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/unsupportedConfiguration`` when FFmpeg has no
    ///   such decoder or the pixel format is not one we convert to; ``MediaCodecsError/Kind/allocationFailed``;
    ///   ``MediaCodecsError/Kind/ffmpeg`` when `avcodec_open2` refuses.
    package init(_ configuration: Configuration) throws(MediaCodecsError) {
        self.configuration = configuration
        let operation = "creating a \(configuration.codecName) decoder"
        guard let codec = avcodec_find_decoder_by_name(configuration.codecName) else {
            throw MediaCodecsError(
                .unsupportedConfiguration, while: operation,
                message: "this FFmpeg has no \(configuration.codecName) decoder")
        }
        if let format = configuration.pixelFormat, FFmpegPixelFormat(format) == nil {
            throw MediaCodecsError(
                .unsupportedConfiguration, while: operation,
                message: "frames cannot be converted to \(pixelFormatName(format))")
        }
        guard let context = avcodec_alloc_context3(codec), let packet = av_packet_alloc(), let frame = av_frame_alloc()
        else {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "libavcodec gave NULL")
        }
        self.context = context
        self.packet = packet
        self.frame = frame
        context.pointee.thread_count = Int32(max(configuration.threadCount, 0))
        context.pointee.width = configuration.width
        context.pointee.height = configuration.height
        try attachExtradata(configuration.extradata, to: context, while: operation)
        let status = avcodec_open2(context, codec, nil)
        guard status >= 0 else { throw .ffmpeg(status, while: operation) }
    }

    deinit {
        sws_freeContext(scaler)
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&context)
    }

    /// Sends one compressed access unit. Frames it completes are given by ``receiveFrame()``; call that until
    /// `.needsInput` before sending more (frames are kept if you do not).
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/invalidState`` after ``finish()``,
    ///   ``MediaCodecsError/Kind/ffmpeg`` when the decoder rejects the data (a damaged frame: later ones still
    ///   decode).
    package func send(
        _ data: CMBlockBuffer, presentationTime: CMTime, decodeTime: CMTime = .invalid, duration: CMTime
    )
        throws(MediaCodecsError)
    {
        #if DEBUG
            precondition(!isBusy.exchange(true, ordering: .acquiring), "VideoDecoder is thread-bound")
            defer { isBusy.store(false, ordering: .releasing) }
        #endif
        let operation = "decoding a \(configuration.codecName) frame"
        guard !isFinished else {
            throw MediaCodecsError(.invalidState, while: operation, message: "the decoder was finished")
        }
        guard let context, let packet else { return }
        try loadPacket(packet, from: data, while: operation)
        defer { av_packet_unref(packet) }
        let scale = timescale ?? (presentationTime.isNumeric ? presentationTime.timescale : 90_000)
        timescale = scale
        let timeBase = AVRational(num: 1, den: scale)
        packet.pointee.pts = presentationTime.ffmpegTimestamp(in: timeBase) ?? CFFmpeg_AV_NOPTS_VALUE()
        packet.pointee.dts = decodeTime.ffmpegTimestamp(in: timeBase) ?? CFFmpeg_AV_NOPTS_VALUE()
        let ticks = duration.ffmpegTimestamp(in: timeBase) ?? 0
        packet.pointee.duration = ticks
        if packet.pointee.pts != CFFmpeg_AV_NOPTS_VALUE() {
            if durations.count > 64 { durations.removeAll(keepingCapacity: true) }
            durations[packet.pointee.pts] = ticks
        }
        context.pointee.pkt_timebase = timeBase
        while true {
            let sent = avcodec_send_packet(context, packet)
            if sent >= 0 { return }
            guard sent == CFFmpeg_AVERROR_EAGAIN() else { throw .ffmpeg(sent, while: operation) }
            // The decoder holds frames we have not taken: keep them, then send again.
            var drained = false
            while case .frame(let decoded) = try receive() {
                pending.append(decoded)
                drained = true
            }
            guard drained else { throw .ffmpeg(sent, while: "\(operation) (the decoder neither takes nor gives)") }
        }
    }

    /// Tells the decoder no more packets come; ``receiveFrame()`` then gives the frames it held back, then
    /// `.endOfStream`.
    package func finish() throws(MediaCodecsError) {
        guard !isFinished, let context else { return }
        isFinished = true
        let status = avcodec_send_packet(context, nil)
        guard status >= 0 || status == CFFmpeg_AVERROR_EOF() else {
            throw .ffmpeg(status, while: "finishing a \(configuration.codecName) decoder")
        }
    }

    /// The next decoded frame, or why there is none.
    ///
    /// - Throws: ``MediaCodecsError``: ``MediaCodecsError/Kind/outOfBuffers`` when every pool buffer is held
    ///   downstream (the frame is lost), ``MediaCodecsError/Kind/ffmpeg`` for a decoding or conversion failure.
    package func receiveFrame() throws(MediaCodecsError) -> DecoderOutput {
        #if DEBUG
            precondition(!isBusy.exchange(true, ordering: .acquiring), "VideoDecoder is thread-bound")
            defer { isBusy.store(false, ordering: .releasing) }
        #endif
        if !pending.isEmpty { return .frame(pending.removeFirst()) }
        return try receive()
    }

    private func receive() throws(MediaCodecsError) -> DecoderOutput {
        guard let context, let frame else { return .endOfStream }
        let status = avcodec_receive_frame(context, frame)
        if status == CFFmpeg_AVERROR_EAGAIN() { return .needsInput }
        if status == CFFmpeg_AVERROR_EOF() { return .endOfStream }
        guard status >= 0 else { throw .ffmpeg(status, while: "receiving a \(configuration.codecName) frame") }
        defer { av_frame_unref(frame) }
        let (target, lends) = output(for: frame)
        let buffer: CVPixelBuffer
        if lends, let lentBuffer = lend(frame, as: target) {
            buffer = lentBuffer
        } else {
            buffer = try convert(frame, to: target)
        }
        let scale = timescale ?? 90_000
        let timeBase = AVRational(num: 1, den: scale)
        let pts = frame.pointee.best_effort_timestamp
        let ticks = durations.removeValue(forKey: pts) ?? 0
        return .frame(
            DecodedFrame(
                pixelBuffer: buffer, presentationTime: CMTime(ffmpegTimestamp: pts, timeBase: timeBase),
                duration: ticks > 0 ? CMTime(value: ticks, timescale: scale) : .invalid))
    }

    /// The pixel format `frame` is given in (the configured one, else NV12 or, with ``lendsPlanarFrames``, 4:2:0
    /// planar, in the frame's range), and whether it may be lent rather than copied.
    private func output(for frame: UnsafeMutablePointer<AVFrame>) -> (format: OSType, lends: Bool) {
        if let format = configuration.pixelFormat { return (format, configuration.lendsFrames) }
        let fullRange = Self.isFullRange(frame)
        return lendsPlanarFrames
            ? (fullRange ? kCVPixelFormatType_420YpCbCr8PlanarFullRange : kCVPixelFormatType_420YpCbCr8Planar, true)
            : (
                fullRange
                    ? kCVPixelFormatType_420YpCbCr8BiPlanarFullRange : kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
                false
            )
    }

    /// Whether the frame's samples are full range (a `yuvj…` format or `AVCOL_RANGE_JPEG`).
    private static func isFullRange(_ frame: UnsafeMutablePointer<AVFrame>) -> Bool {
        unJPEG(AVPixelFormat(frame.pointee.format)).fullRange || frame.pointee.color_range == AVCOL_RANGE_JPEG
    }

    /// The frame in pixel format `target`, through libswscale, in a buffer of the pool.
    private func convert(
        _ frame: UnsafeMutablePointer<AVFrame>, to target: OSType
    ) throws(MediaCodecsError)
        -> CVPixelBuffer
    {
        let operation = "converting a decoded \(configuration.codecName) frame"
        let width = Int(frame.pointee.width)
        let height = Int(frame.pointee.height)
        let sourceFormat = Self.unJPEG(AVPixelFormat(frame.pointee.format)).0
        let fullRange = Self.isFullRange(frame)
        guard let mapping = FFmpegPixelFormat(target) else {
            throw MediaCodecsError(.unsupportedConversion, while: operation, message: pixelFormatName(target))
        }
        if poolKey == nil || poolKey! != (width, height, target) {
            do {
                pool = try CVPixelBufferPool(
                    width: width, height: height, pixelFormatType: target, minimumBufferCount: 2,
                    bytesPerRowAlignment: CVPixelBuffer.planeAlignment)
            } catch {
                throw MediaCodecsError(.allocationFailed, while: operation, message: "CVReturn \(error.status)")
            }
            poolKey = (width, height, target)
        }
        let output: CVPixelBuffer
        switch pool!.pixelBuffer(allocationThreshold: configuration.bufferLimit) {
        case .success(let buffer): output = buffer
        case .failure(let error):
            if error.status == kCVReturnWouldExceedAllocationThreshold {
                throw MediaCodecsError(
                    .outOfBuffers, while: operation, message: "\(configuration.bufferLimit) buffers are held downstream"
                )
            }
            throw MediaCodecsError(.allocationFailed, while: operation, message: "CVReturn \(error.status)")
        }
        scaler = sws_getCachedContext(
            scaler, Int32(width), Int32(height), sourceFormat, Int32(width), Int32(height), mapping.format,
            SWS_BILINEAR | SWS_ACCURATE_RND, nil, nil, nil)
        guard let scaler else {
            throw MediaCodecsError(
                .unsupportedConversion, while: operation, message: "libswscale cannot convert this frame's format")
        }
        let space = Self.colourSpace(of: frame)
        if mapping.isYCbCr { Self.matrix(space).attach(to: output) }
        let coefficients = sws_getCoefficients(space)
        sws_setColorspaceDetails(
            scaler, coefficients, fullRange ? 1 : 0, coefficients, mapping.isFullRange ? 1 : 0, 0, 1 << 16, 1 << 16)
        let planeCount = mapping.planeCount
        let status = output.withLockedPlanes { planes in
            withUnsafeTemporaryAllocation(of: UnsafeMutablePointer<UInt8>?.self, capacity: 4) { destination in
                withUnsafeTemporaryAllocation(of: Int32.self, capacity: 4) { strides in
                    for index in 0..<4 {
                        destination[index] =
                            index < planeCount ? planes[index].baseAddress.assumingMemoryBound(to: UInt8.self) : nil
                        strides[index] = index < planeCount ? Int32(planes[index].bytesPerRow) : 0
                    }
                    return withUnsafeTemporaryAllocation(of: UnsafePointer<UInt8>?.self, capacity: 4) { source in
                        withUnsafeTemporaryAllocation(of: Int32.self, capacity: 4) { sourceStrides in
                            for index in 0..<4 {
                                source[index] = UnsafePointer(CFFmpeg_frameData(frame, Int32(index)))
                                sourceStrides[index] = CFFmpeg_frameLinesize(frame, Int32(index))
                            }
                            return sws_scale(
                                scaler, source.baseAddress, sourceStrides.baseAddress, 0, Int32(height),
                                destination.baseAddress, strides.baseAddress)
                        }
                    }
                }
            }
        }
        guard status >= 0 else { throw .ffmpeg(status, while: "\(operation) (sws_scale)") }
        return output
    }

    /// The frame's YCbCr matrix as libswscale names it: the stream's, or BT.709 for HD and BT.601 below.
    private static func colourSpace(of frame: UnsafeMutablePointer<AVFrame>) -> Int32 {
        switch frame.pointee.colorspace {
        case AVCOL_SPC_BT709: SWS_CS_ITU709
        case AVCOL_SPC_BT470BG, AVCOL_SPC_SMPTE170M: SWS_CS_ITU601
        default: frame.pointee.width >= 1280 || frame.pointee.height >= 720 ? SWS_CS_ITU709 : SWS_CS_ITU601
        }
    }

    /// The matrix a pixel buffer is tagged with for libswscale's colour space `space`.
    private static func matrix(_ space: Int32) -> YCbCrMatrix { space == SWS_CS_ITU709 ? .itu709 : .itu601 }

    /// The decoded frame itself as a pixel buffer of format `target`, no copy, when it is in that format and range
    /// already (8-bit 4:2:0, planar or NV12) and fewer than ``Configuration/bufferLimit`` frames are lent; nil
    /// otherwise.
    private func lend(_ frame: UnsafeMutablePointer<AVFrame>, as target: OSType) -> CVPixelBuffer? {
        guard let mapping = FFmpegPixelFormat(target),
            mapping.format == AV_PIX_FMT_YUV420P || mapping.format == AV_PIX_FMT_NV12,
            Self.unJPEG(AVPixelFormat(frame.pointee.format)).0 == mapping.format,
            Self.isFullRange(frame) == mapping.isFullRange,
            frame.pointee.buf.0 != nil, lent.take(upTo: configuration.bufferLimit)
        else { return nil }
        guard let reference = av_frame_clone(frame) else {
            lent.giveBack()
            return nil
        }
        let holder = Unmanaged.passRetained(LentFrame(reference, count: lent))
        let (width, height) = (Int(frame.pointee.width), Int(frame.pointee.height))
        let planeCount = mapping.planeCount
        var bases = (0..<planeCount).map { UnsafeMutableRawPointer(CFFmpeg_frameData(reference, Int32($0))) }
        var widths = (0..<planeCount).map { $0 == 0 ? width : (width + 1) / 2 }
        var heights = (0..<planeCount).map { $0 == 0 ? height : (height + 1) / 2 }
        var rows = (0..<planeCount).map { Int(CFFmpeg_frameLinesize(reference, Int32($0))) }
        var buffer: CVPixelBuffer?
        let status = CVPixelBufferCreateWithPlanarBytes(
            nil, width, height, target, nil, 0, planeCount, &bases, &widths, &heights, &rows,
            { holder, _, _, _, _ in holder.map { Unmanaged<LentFrame>.fromOpaque($0).release() } },
            holder.toOpaque(), nil, &buffer)
        guard status == kCVReturnSuccess, let buffer else {
            holder.release()
            return nil
        }
        Self.matrix(Self.colourSpace(of: frame)).attach(to: buffer)
        return buffer
    }

    /// libavcodec's deprecated full-range `yuvj…` formats as the plain format and a full-range flag (libswscale
    /// warns about the former and takes range from `sws_setColorspaceDetails` anyway).
    private static func unJPEG(_ format: AVPixelFormat) -> (AVPixelFormat, fullRange: Bool) {
        switch format {
        case AV_PIX_FMT_YUVJ420P: (AV_PIX_FMT_YUV420P, true)
        case AV_PIX_FMT_YUVJ422P: (AV_PIX_FMT_YUV422P, true)
        case AV_PIX_FMT_YUVJ444P: (AV_PIX_FMT_YUV444P, true)
        case AV_PIX_FMT_YUVJ440P: (AV_PIX_FMT_YUV440P, true)
        case AV_PIX_FMT_YUVJ411P: (AV_PIX_FMT_YUV411P, true)
        default: (format, false)
        }
    }
}

/// The codec configuration a compressed format description carries: the `avcC`/`hvcC` (or other) atom under
/// `kCMFormatDescriptionExtension_SampleDescriptionExtensionAtoms`, as Apple's descriptions carry it, else the
/// magic cookie (`kCMFormatDescriptionExtension_OpenAVMagicCookie`, an AAC AudioSpecificConfig); empty when none.
package func compressedFormatExtradata(_ description: CMFormatDescription) -> [UInt8] {
    if let atoms = description.extensions[kCMFormatDescriptionExtension_SampleDescriptionExtensionAtoms]
        as? [String: Any]
    {
        for key in ["avcC", "hvcC"] {
            if let data = atoms[key] as? [UInt8] { return data }
        }
        if let data = atoms.values.first as? [UInt8] { return data }
    }
    if let cookie = description.extensions[kCMFormatDescriptionExtension_OpenAVMagicCookie] as? [UInt8] {
        return cookie
    }
    return []
}

/// A four-character code as its four characters ("avc1").
func fourCharCodeString(_ code: FourCharCode) -> String {
    String(decoding: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: code >> $0) }, as: UTF8.self)
}

/// How many decoded frames a decoder has lent out as pixel buffers. Thread safe: buffers die on any thread.
final class LentFrames: Sendable {
    private let count = Atomic<Int>(0)

    /// Counts one more lent frame unless `limit` are out already.
    func take(upTo limit: Int) -> Bool {
        if count.wrappingAdd(1, ordering: .acquiring).newValue <= limit { return true }
        count.wrappingSubtract(1, ordering: .releasing)
        return false
    }

    func giveBack() { count.wrappingSubtract(1, ordering: .releasing) }

    var value: Int { count.load(ordering: .acquiring) }
}

/// A reference to a decoded frame that a pixel buffer borrows its planes from; freed when the buffer dies.
private final class LentFrame {
    private var frame: UnsafeMutablePointer<AVFrame>?
    private let count: LentFrames

    init(_ frame: UnsafeMutablePointer<AVFrame>, count: LentFrames) {
        self.frame = frame
        self.count = count
    }

    deinit {
        av_frame_free(&frame)
        count.giveBack()
    }
}
