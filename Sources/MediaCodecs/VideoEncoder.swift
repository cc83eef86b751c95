// VideoEncoder: H.264, HEVC, JPEG and ProRes 422 compression of CVPixelBuffers with libavcodec.

import CFFmpeg
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Compresses pixel buffers with one of libavcodec's video encoders: libx264 (H.264), libx265 (HEVC), mjpeg
/// (`.jpeg`) or prores_ks (ProRes 422).
///
/// Input: buffers of ``Configuration/pixelFormat`` and the configured size. A format the codec takes natively
/// (``nativePixelFormats(for:)``: NV12 or I420 for H.264, I420 for HEVC, none for JPEG and ProRes) is wrapped
/// in an `AVFrame` without a copy: the frame's one `AVBufferRef` (`av_buffer_create`) holds a retain and a
/// read-only base-address lock of the pixel buffer, released by the buffer's free callback when libavcodec lets
/// go of the frame (libx264 copies the picture into its own lookahead during `avcodec_send_frame`, so a device
/// buffer goes back to its pool at once). Every other format is converted inside the encoder with libswscale
/// into an FFmpeg-owned frame of the codec's format (``codecPixelFormatName``: `yuv420p` for HEVC, full-range
/// `yuvj420p` for JPEG, `yuv422p10le` for ProRes); the caller needs no converter of its own.
/// ``convertsInternally`` says which path a configuration takes.
///
/// Output: ``receivePacket()`` gives ``EncoderOutput`` values: `.packet`, `.needsInput` (`AVERROR(EAGAIN)`) or
/// `.endOfStream` after ``finish()`` (`AVERROR_EOF`). Packets carry exact `CMTime`s in the encoder's time base
/// (1/``Configuration/timescale``); the input presentation time is rounded once into it.
///
/// Defaults (``Configuration/init(codec:width:height:frameRate:pixelFormat:)``), chosen so that 1920x1080 at
/// 30 fps encodes in real time on one of two cores with headroom, at bit rates like Apple's:
/// - H.264: libx264 `preset=superfast`, `tune=zerolatency`, High profile, threads by ``EncoderThreadPlan``. Measured on the project's
///   build machine (one core, 1080p30 NV12 at 10 Mb/s), against a 33 ms budget: `superfast` 12.7 ms a frame on
///   ffmpeg's `testsrc2`, 16.1 ms on a full-frame moving texture (our worst case); `veryfast` took 16.2 ms
///   and 26.6 ms, too little headroom beside capture and muxing on two cores. `zerolatency` turns off
///   B-frames, the lookahead and frame threading: every frame sent gives its packet at once (no encoder delay,
///   decode order = presentation order, `dts == pts`), so fragments cut exactly at key frames and no edit list is
///   needed for video. Average bit rate ≈ 0.16 bit per pixel per frame
///   (``defaultBitRate(codec:width:height:frameRate:)``): about 10 Mb/s for 1080p30 and 1.5 Mb/s for 640x480 at 30 fps, as Apple's H.264 camera recordings; peak
///   (`maxrate`) 1.5× the average over a one-second VBV buffer.
/// - HEVC: libx265 `preset=ultrafast`, `tune=zerolatency`, 0.6× H.264's bit rate (about 6 Mb/s for 1080p30, as
///   Apple's HEVC recordings). HEVC at 1080p30 is not real time on two cores; it is the codec to pick at 720p or for
///   offline writing.
/// - JPEG: quality 0…1 (default 0.75) mapped to the qscale 31…2 (`AV_CODEC_FLAG_QSCALE`, `global_quality`).
/// - ProRes 422: prores_ks profile `standard`, vendor `apl0`; its bit rate follows from the profile.
/// - A key frame every second (``Configuration/maxKeyFrameInterval``), and for H.264 none elsewhere (x264
///   `scenecut=0`): a fixed GOP, so a movie fragment (cut at the first key frame after `movieFragmentInterval`
///   or after the muxer's byte cap) runs over its interval or cap by at most a second. (With scene-cut key
///   frames a few frames apart, FFmpeg 5.1's mov demuxer read every sample of our fragments back as a key frame.)
/// - `AV_CODEC_FLAG_GLOBAL_HEADER`: parameter sets go to ``extradata``, out of band, as QuickTime and MP4 need.
///
/// Colour: BT.709 for HD (1280 wide or 720 high and up), BT.601 (SMPTE 170M) below, tagged on the stream; range
/// from the pixel format (`'420v'` video, `'420f'` full).
///
/// Wraps `avcodec_find_encoder_by_name`, `avcodec_alloc_context3`, `av_opt_set`, `avcodec_open2`,
/// `av_frame_alloc`, `av_buffer_create`, `av_frame_get_buffer`, `av_frame_make_writable`, `sws_getContext`,
/// `sws_setColorspaceDetails`, `sws_scale`, `avcodec_send_frame`, `avcodec_receive_packet`, `av_packet_alloc`
/// and the matching frees. The encoder is the one owner of its `AVCodecContext`, frames, packet and `SwsContext`
/// and frees them in `deinit`; none of them leaves it.
///
/// Threading: thread-bound; use it from one thread at a time (an output's serial queue). Not `Sendable`. Debug
/// builds trap when two threads use it at once. The packets it gives are values and may go anywhere.
package final class VideoEncoder {
    /// The compression formats this type writes.
    ///
    /// Threading: a value; `Sendable`.
    package enum Codec: Hashable, Sendable, CustomStringConvertible {
        /// H.264 with libx264 (`AVVideoCodecType.h264`).
        case h264
        /// HEVC with libx265 (`AVVideoCodecType.hevc`).
        case hevc
        /// Motion JPEG with FFmpeg's mjpeg (`AVVideoCodecType.jpeg`).
        case jpeg
        /// ProRes 422 with prores_ks (`AVVideoCodecType.proRes422`).
        case proRes422

        /// The codec of a Core Media codec type, or `nil`.
        package init?(_ codecType: CMFormatDescription.MediaSubType) {
            switch codecType {
            case .h264: self = .h264
            case .hevc: self = .hevc
            case .jpeg: self = .jpeg
            case .proRes422: self = .proRes422
            default: return nil
            }
        }

        /// The Core Media codec type.
        package var codecType: CMFormatDescription.MediaSubType {
            switch self {
            case .h264: .h264
            case .hevc: .hevc
            case .jpeg: .jpeg
            case .proRes422: .proRes422
            }
        }

        /// libavcodec's encoder name.
        package var encoderName: String {
            switch self {
            case .h264: "libx264"
            case .hevc: "libx265"
            case .jpeg: "mjpeg"
            case .proRes422: "prores_ks"
            }
        }

        /// Whether every frame is a key frame.
        package var isIntraOnly: Bool { self == .jpeg || self == .proRes422 }

        package var description: String { encoderName }
    }

    /// Everything an encoder is made from.
    ///
    /// Threading: a value; `Sendable`.
    package struct Configuration: Hashable, Sendable {
        /// The compression format.
        package var codec: Codec
        /// The picture's width in pixels (even for the 4:2:0 codecs).
        package var width: Int
        /// The picture's height in pixels.
        package var height: Int
        /// The nominal frame rate in frames per second; rate control and the last frame's duration use it.
        package var frameRate: Int
        /// The encoder's time base is 1/`timescale` seconds: presentation times are rounded to it once.
        /// 90000 by default (every common frame rate is a whole number of ticks).
        package var timescale: Int32
        /// The average bit rate in bits per second for H.264 and HEVC; ignored by JPEG and ProRes.
        package var averageBitRate: Int
        /// At most this many frames from one key frame to the next.
        package var maxKeyFrameInterval: Int
        /// JPEG quality, 0 (smallest) … 1 (best).
        package var quality: Double
        /// The pixel format of the buffers the caller sends.
        package var pixelFormat: OSType
        /// Encoder threads (`thread_count`): by default ``EncoderThreadPlan``'s for the size and rate (one for
        /// 1920x1080 at 30 fps, leaving the other cores to capture and muxing; more as the pixel rate grows).
        package var threadCount: Int
        /// The libx264/libx265 preset; `nil` picks the default above.
        package var preset: String?
        /// Whether H.264/HEVC rate control starts with its buffer nearly empty, so the first second keeps to the
        /// average bit rate (a recording with a small size limit is mostly its first frames).
        package var startsRateControlNearlyEmpty: Bool
        /// The Y'CbCr matrix of the buffers' numbers (Y'CbCr input) or of the encoded numbers (RGB input): the
        /// stream is tagged with it. `nil`: BT.709 from 1280x720 up, BT.601 below.
        package var matrix: YCbCrMatrix?
        /// Profile, level, entropy coding, pixel aspect ratio and colour tags asked for (nil fields: defaults).
        package var tags = StreamTags()
        /// A hardware encoder to use instead of libx264/libx265 (H.264 and HEVC only); nil: software. The
        /// preset, tune and x264/x265 parameters above do not apply to it; the bit rate and GOP do.
        package var hardware: HardwareVideoEncoder?
        /// Whether the writer may or must pick a hardware encoder (it sets ``hardware`` when one works).
        package var hardwarePolicy = HardwareEncoderPolicy.software

        /// The defaults described on ``VideoEncoder``.
        package init(
            codec: Codec, width: Int, height: Int, frameRate: Int = 30,
            pixelFormat: OSType = kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
        ) {
            self.codec = codec
            self.width = width
            self.height = height
            self.frameRate = frameRate
            self.timescale = 90000
            self.averageBitRate = VideoEncoder.defaultBitRate(
                codec: codec, width: width, height: height, frameRate: frameRate)
            self.maxKeyFrameInterval = max(frameRate, 1)
            self.quality = 0.75
            self.pixelFormat = pixelFormat
            self.threadCount =
                EncoderThreadPlan(codec: codec, width: width, height: height, frameRate: frameRate).threads
            self.preset = nil
            self.matrix = nil
            self.startsRateControlNearlyEmpty = false
        }

        /// The matrix the stream is tagged with and RGB input is converted with: ``matrix``, else by size.
        package var streamMatrix: YCbCrMatrix { matrix ?? .conventional(width: width, height: height) }
    }

    /// The configuration the encoder was made with.
    package let configuration: Configuration
    /// The encoder's time base, 1/``Configuration/timescale``.
    package let timeBase: AVRational
    /// Whether sent buffers are converted with libswscale before encoding (false: wrapped without a copy).
    package let convertsInternally: Bool
    /// FFmpeg's name of the pixel format the codec encodes (`nv12`, `yuv420p`, `yuvj420p`, `yuv422p10le`).
    package let codecPixelFormatName: String
    /// The codec's out-of-band header (FFmpeg's extradata with `AV_CODEC_FLAG_GLOBAL_HEADER`): libx264's and
    /// libx265's parameter sets (SPS/PPS, VPS/SPS/PPS) in Annex B form, from which the QuickTime/MP4 muxer writes
    /// `avcC`/`hvcC`; empty for JPEG and ProRes.
    package let extradata: [UInt8]

    /// The codec context; this object is its only owner.
    private var context: UnsafeMutablePointer<AVCodecContext>?
    /// The frame that wraps or receives each picture; reused.
    private var frame: UnsafeMutablePointer<AVFrame>?
    /// The packet each receive fills; reused.
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// The VA-API surfaces pictures are uploaded into, for ``Configuration/hardware`` `.vaapi`.
    private var surfaces: VAAPISurfaces?
    /// The format of the pictures in system memory (the wrapped or converted frame), which is the codec's own
    /// except for VA-API, whose codec takes surfaces.
    private let pictureFormat: AVPixelFormat
    /// The libswscale context of the converting path, or `nil`.
    private var scaler: OpaquePointer?
    /// Packets taken out while `avcodec_send_frame` said `EAGAIN`, given before new ones.
    private var pending: [EncodedPacket] = []
    private var lastTimestamp: Int64?
    private var isFinished = false
    /// One frame's duration in the time base, for packets FFmpeg gives no duration.
    private let nominalFrameDuration: Int64
    #if DEBUG
        private let isBusy = Atomic<Bool>(false)
    #endif

    /// Whether this FFmpeg has `codec`'s encoder (libx265 is optional in some builds).
    package static func isAvailable(_ codec: Codec) -> Bool {
        avcodec_find_encoder_by_name(codec.encoderName) != nil
    }

    /// The pixel formats a codec takes without conversion (wrapped in place).
    package static func nativePixelFormats(for codec: Codec) -> [OSType] {
        switch codec {
        case .h264:
            [
                kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr8BiPlanarFullRange,
                kCVPixelFormatType_420YpCbCr8Planar, kCVPixelFormatType_420YpCbCr8PlanarFullRange,
            ]
        case .hevc: [kCVPixelFormatType_420YpCbCr8Planar, kCVPixelFormatType_420YpCbCr8PlanarFullRange]
        case .jpeg, .proRes422: []
        }
    }

    /// Apple-like average bit rates: 0.16 bit per pixel per frame for H.264 (1920x1080 at 30 fps ≈ 10 Mb/s),
    /// 0.6× that for HEVC; JPEG and ProRes are quality- or profile-driven and report 0.
    package static func defaultBitRate(codec: Codec, width: Int, height: Int, frameRate: Int) -> Int {
        let h264 = Double(width * height * max(frameRate, 1)) * 0.16
        switch codec {
        case .h264: return Int(h264.rounded())
        case .hevc: return Int((h264 * 0.6).rounded())
        case .jpeg, .proRes422: return 0
        }
    }

    /// An open encoder for `configuration`.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/unsupportedConfiguration`` when FFmpeg lacks
    ///   the encoder, the size or rates are out of range or the pixel format cannot be converted;
    ///   ``MediaCodecsError/Kind/allocationFailed``; ``MediaCodecsError/Kind/ffmpeg`` when `avcodec_open2` refuses.
    package init(_ configuration: Configuration) throws(MediaCodecsError) {
        FFmpegLogging.configured
        let operation = "creating a \(configuration.codec) encoder for \(configuration.width)x\(configuration.height)"
        let config = configuration
        guard (16...8192).contains(config.width), (16...8192).contains(config.height),
            config.width % 2 == 0, config.height % 2 == 0, (1...1000).contains(config.frameRate),
            config.timescale >= Int32(config.frameRate), config.maxKeyFrameInterval >= 1,
            (0...1).contains(config.quality), config.threadCount >= 0
        else {
            throw MediaCodecsError(
                .unsupportedConfiguration, while: operation,
                message: "sizes must be even and 16…8192, the frame rate 1…1000, the timescale at least the frame "
                    + "rate, the key frame interval ≥ 1 and the quality 0…1")
        }
        guard let source = FFmpegPixelFormat(config.pixelFormat) else {
            throw MediaCodecsError(
                .unsupportedConfiguration, while: operation,
                message: "the pixel format \(pixelFormatName(config.pixelFormat)) is not supported")
        }
        let encoderName =
            config.hardware.map { $0.encoderName(for: config.codec) ?? "none" } ?? config.codec.encoderName
        guard let codec = avcodec_find_encoder_by_name(encoderName) else {
            throw MediaCodecsError(
                .unsupportedConfiguration, while: operation, message: "this FFmpeg has no \(encoderName) encoder")
        }
        let nativeFormats =
            config.hardware == nil
            ? Self.nativePixelFormats(for: config.codec)
            : [kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr8BiPlanarFullRange]
        let native = nativeFormats.contains(config.pixelFormat)
        let codecFormat: AVPixelFormat
        let fullRange: Bool
        switch config.codec {
        case .h264, .hevc:
            // Hardware encoders take NV12 (VA-API's surfaces and NVENC both); libx264/libx265 take I420 too.
            codecFormat = native ? source.format : config.hardware == nil ? AV_PIX_FMT_YUV420P : AV_PIX_FMT_NV12
            fullRange = native && source.isFullRange
        case .jpeg:
            codecFormat = AV_PIX_FMT_YUVJ420P
            fullRange = true
        case .proRes422:
            codecFormat = AV_PIX_FMT_YUV422P10LE
            fullRange = false
        }
        self.configuration = config
        self.timeBase = AVRational(num: 1, den: config.timescale)
        self.convertsInternally = !native
        self.codecPixelFormatName = av_get_pix_fmt_name(codecFormat).map { String(cString: $0) } ?? "?"
        self.pictureFormat = codecFormat
        self.nominalFrameDuration = Int64(config.timescale) / Int64(config.frameRate)

        self.context = avcodec_alloc_context3(codec)
        self.frame = av_frame_alloc()
        self.packet = av_packet_alloc()
        guard let context, let frame, packet != nil else {
            // Every stored property is set, so deinit runs and frees whichever were made.
            self.extradata = []
            throw MediaCodecsError(.allocationFailed, while: operation, message: "an FFmpeg object could not be made")
        }
        context.pointee.width = Int32(config.width)
        context.pointee.height = Int32(config.height)
        context.pointee.pix_fmt = codecFormat
        if case .vaapi(let device) = config.hardware {
            do throws(MediaCodecsError) {
                surfaces = try VAAPISurfaces(
                    path: device, width: config.width, height: config.height, operation: operation)
            } catch {
                self.extradata = []  // Every stored property set: deinit frees what was made.
                throw error
            }
            context.pointee.hw_frames_ctx = av_buffer_ref(surfaces?.frames)
            context.pointee.pix_fmt = AV_PIX_FMT_VAAPI
        }
        context.pointee.time_base = timeBase
        context.pointee.framerate = AVRational(num: Int32(config.frameRate), den: 1)
        context.pointee.gop_size = Int32(config.codec.isIntraOnly ? 1 : config.maxKeyFrameInterval)
        context.pointee.max_b_frames = 0
        context.pointee.thread_count = Int32(config.threadCount)
        context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
        context.pointee.color_range = fullRange ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG
        let description = config.streamDescription
        context.pointee.sample_aspect_ratio = description.pixelAspectRatio
        context.pointee.colorspace = description.matrix
        context.pointee.color_primaries = description.primaries
        context.pointee.color_trc = description.transfer
        var options: OpaquePointer? = nil
        defer { av_dict_free(&options) }
        switch config.codec {
        case .h264, .hevc:
            context.pointee.bit_rate = Int64(config.averageBitRate)
            context.pointee.rc_max_rate = Int64(config.averageBitRate) * 3 / 2
            // The hardware encoders keep their own defaults for everything but the rate and the GOP set above.
            guard config.hardware == nil else { break }
            context.pointee.bit_rate = Int64(config.averageBitRate)
            context.pointee.rc_max_rate = Int64(config.averageBitRate) * 3 / 2
            context.pointee.rc_buffer_size = Int32(clamping: config.averageBitRate * 3 / 2)
            if config.startsRateControlNearlyEmpty {
                // A tenth full, not x264's nine tenths: then the frames after the first key frame stay near the
                // average instead of taking up to twice it (10 Mb/s 640x480: key frame 123 kB then 47, 34, 34 kB,
                // instead of 109 kB then 201, 159, 116 kB), at the cost of a plainer first key frame at low rates.
                context.pointee.rc_initial_buffer_occupancy = Int32(clamping: config.averageBitRate * 3 / 20)
            }
            setOption(&options, "preset", config.preset ?? (config.codec == .h264 ? "superfast" : "ultrafast"))
            setOption(&options, "tune", "zerolatency")
            // A key frame asked for (a recording starting on a shared stream) is an IDR, where decoding can start.
            setOption(&options, "forced-idr", "1")
            if config.codec == .h264 {
                setOption(&options, "profile", "high")
                // A fixed GOP: key frames exactly every maxKeyFrameInterval frames, none at scene cuts, so
                // fragments cut predictably and each holds whole GOPs.
                setOption(&options, "x264-params", "scenecut=0")
            } else {
                // x265 writes its banner and statistics to stderr on its own unless told not to.
                setOption(&options, "x265-params", "log-level=error:keyint=\(config.maxKeyFrameInterval)")
            }
        case .jpeg:
            let qscale = 2 + (1 - config.quality) * 29
            context.pointee.flags |= AV_CODEC_FLAG_QSCALE
            context.pointee.global_quality = Int32((qscale * Double(FF_QP2LAMBDA)).rounded())
        case .proRes422:
            setOption(&options, "profile", "standard")
            setOption(&options, "vendor", "apl0")
        }
        config.tags.apply(toX264Options: &options, codec: config.codec)
        let status = avcodec_open2(context, codec, &options)
        guard status >= 0 else {
            self.extradata = []
            throw .ffmpeg(status, while: "\(operation) (avcodec_open2)")
        }
        if let bytes = context.pointee.extradata, context.pointee.extradata_size > 0 {
            extradata = Array(UnsafeBufferPointer(start: bytes, count: Int(context.pointee.extradata_size)))
        } else {
            extradata = []
        }
        if !native {
            let sourceFormat = source.format
            scaler = sws_getContext(
                Int32(config.width), Int32(config.height), sourceFormat, Int32(config.width), Int32(config.height),
                codecFormat, SWS_BILINEAR | SWS_ACCURATE_RND, nil, nil, nil)
            guard let scaler else {
                throw MediaCodecsError(
                    .unsupportedConfiguration, while: operation,
                    message: "libswscale cannot convert \(pixelFormatName(config.pixelFormat)) to "
                        + codecPixelFormatName)
            }
            let coefficients = sws_getCoefficients(config.streamMatrix.swscaleColorspace)
            _ = sws_setColorspaceDetails(
                scaler, coefficients, source.isFullRange ? 1 : 0, coefficients, fullRange ? 1 : 0, 0, 1 << 16,
                1 << 16)
            frame.pointee.format = codecFormat.rawValue
            frame.pointee.width = Int32(config.width)
            frame.pointee.height = Int32(config.height)
            let allocated = av_frame_get_buffer(frame, 64)
            guard allocated >= 0 else { throw .ffmpeg(allocated, while: "\(operation) (av_frame_get_buffer)") }
        }
    }

    deinit {
        avcodec_free_context(&context)
        av_frame_free(&frame)
        av_packet_free(&packet)
        sws_freeContext(scaler)
    }

    /// FFmpeg's codec parameters for a muxer stream (`avcodec_parameters_from_context`).
    func copyParameters(to parameters: UnsafeMutablePointer<AVCodecParameters>) -> Int32 {
        guard let context else { return CFFmpeg_AVERROR(EINVAL) }
        return avcodec_parameters_from_context(parameters, context)
    }

    // MARK: Encoding

    /// Sends one picture shown at `presentationTime` (any timescale; rounded once to the encoder's), encoded as a key
    /// frame (an IDR for H.264 and HEVC) when `forcingKeyFrame`, else where the GOP puts one.
    ///
    /// Never refuses input: if libavcodec asks for its packets to be taken first (`EAGAIN`), they are taken and
    /// kept for ``receivePacket()``. Call ``receivePacket()`` until `.needsInput` after each send.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/formatMismatch`` for a buffer of another
    ///   format or size or a presentation time that is not numeric or not after the previous one,
    ///   ``MediaCodecsError/Kind/invalidState`` after ``finish()``, ``MediaCodecsError/Kind/ffmpeg`` when the
    ///   encoder fails, ``MediaCodecsError/Kind/allocationFailed``.
    package func send(
        _ pixelBuffer: CVPixelBuffer, presentationTime: CMTime, forcingKeyFrame: Bool = false
    ) throws(MediaCodecsError) {
        #if DEBUG
            precondition(
                !isBusy.exchange(true, ordering: .acquiring),
                "VideoEncoder is thread-bound: it was used from two threads at once")
            defer { isBusy.store(false, ordering: .releasing) }
        #endif
        let operation = "encoding a \(configuration.codec) frame at \(presentationTime.seconds) s"
        guard !isFinished, let context, let frame else {
            throw MediaCodecsError(.invalidState, while: operation, message: "the encoder was finished")
        }
        try configuration.checkPicture(pixelBuffer, while: operation)
        guard let pts = presentationTime.ffmpegTimestamp(in: timeBase) else {
            throw MediaCodecsError(.formatMismatch, while: operation, message: "the presentation time is not numeric")
        }
        if let lastTimestamp, pts <= lastTimestamp {
            throw MediaCodecsError(
                .formatMismatch, while: operation,
                message: "presentation times must increase: \(pts) follows \(lastTimestamp) (1/\(timeBase.den) s)")
        }
        if convertsInternally {
            try convert(pixelBuffer, into: frame, operation: operation)
        } else {
            try wrap(pixelBuffer, in: frame, operation: operation)
        }
        frame.pointee.pts = pts
        frame.pointee.pict_type = forcingKeyFrame ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        frame.pointee.quality = context.pointee.global_quality
        defer {
            // The wrapping path gives its buffer reference away here (libavcodec holds its own); the converting
            // path keeps its buffer, made writable again before the next picture.
            if !convertsInternally { av_frame_unref(frame) }
        }
        if let surfaces {
            try sendToCodec(try surfaces.uploaded(frame, operation: operation), operation: operation)
        } else {
            try sendToCodec(frame, operation: operation)
        }
        lastTimestamp = pts
    }

    /// Flushes the encoder: after this, ``receivePacket()`` gives the remaining packets, then `.endOfStream`.
    /// Calling it again does nothing.
    package func finish() throws(MediaCodecsError) {
        guard !isFinished else { return }
        isFinished = true
        try sendToCodec(nil, operation: "finishing the \(configuration.codec) encoder")
    }

    /// The next packet in decode order, or why there is none (see ``EncoderOutput``).
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/ffmpeg`` when the encoder fails.
    package func receivePacket() throws(MediaCodecsError) -> EncoderOutput {
        if !pending.isEmpty { return .packet(pending.removeFirst()) }
        return try receiveFromCodec()
    }

    private func receiveFromCodec() throws(MediaCodecsError) -> EncoderOutput {
        try receiveEncodedPacket(from: context, into: packet, codecName: "\(configuration.codec)") { packet in
            if configuration.codec.isIntraOnly { packet.pointee.flags |= AV_PKT_FLAG_KEY }
            // A hardware encoder's packet may lie in its device's memory or pool:
            // copied, so a recording's queue never starves the device. A software encoder's is referenced.
            return configuration.hardware != nil
                ? EncodedPacket(copying: packet, timeBase: timeBase, fallbackDuration: nominalFrameDuration)
                : EncodedPacket(referencing: packet, timeBase: timeBase, fallbackDuration: nominalFrameDuration)
        }
    }

    /// `avcodec_send_frame`, taking packets out first while it says `EAGAIN`.
    private func sendToCodec(_ frame: UnsafeMutablePointer<AVFrame>?, operation: String) throws(MediaCodecsError) {
        try sendEncoderFrame(frame, to: context, operation: operation, pending: &pending) {
            () throws(MediaCodecsError) in
            try receiveFromCodec()
        }
    }

    /// Points `frame` at `pixelBuffer`'s planes without a copy. The frame's buffer reference keeps the pixel buffer
    /// alive and locked read-only until libavcodec releases it.
    private func wrap(
        _ pixelBuffer: CVPixelBuffer, in frame: UnsafeMutablePointer<AVFrame>, operation: String
    )
        throws(MediaCodecsError)
    {
        CVPixelBufferLockBaseAddress(pixelBuffer, .readOnly)
        let planeCount = max(CVPixelBufferGetPlaneCount(pixelBuffer), 1)
        let opaque = Unmanaged.passRetained(pixelBuffer).toOpaque()
        let first = CVPixelBufferGetBaseAddressOfPlane(pixelBuffer, 0)?.assumingMemoryBound(to: UInt8.self)
        let reference = av_buffer_create(
            first, CVPixelBufferGetDataSize(pixelBuffer),
            { opaque, _ in
                // libavcodec let go of the last reference: unlock and release the pixel buffer.
                guard let opaque else { return }
                let buffer = Unmanaged<CVPixelBuffer>.fromOpaque(opaque).takeRetainedValue()
                CVPixelBufferUnlockBaseAddress(buffer, .readOnly)
            }, opaque, AV_BUFFER_FLAG_READONLY)
        guard let reference else {
            Unmanaged<CVPixelBuffer>.fromOpaque(opaque).release()
            CVPixelBufferUnlockBaseAddress(pixelBuffer, .readOnly)
            throw MediaCodecsError(.allocationFailed, while: operation, message: "av_buffer_create gave NULL")
        }
        frame.pointee.buf.0 = reference
        frame.pointee.format = pictureFormat.rawValue
        frame.pointee.width = Int32(configuration.width)
        frame.pointee.height = Int32(configuration.height)
        frame.pointee.color_range = context?.pointee.color_range ?? AVCOL_RANGE_MPEG
        for plane in 0..<planeCount {
            let base = CVPixelBufferGetBaseAddressOfPlane(pixelBuffer, plane)?.assumingMemoryBound(to: UInt8.self)
            CFFmpeg_frameSetPlane(
                frame, Int32(plane), base, Int32(CVPixelBufferGetBytesPerRowOfPlane(pixelBuffer, plane)))
        }
    }

    /// Converts `pixelBuffer` into the frame's own (writable) buffer with libswscale.
    private func convert(
        _ pixelBuffer: CVPixelBuffer, into frame: UnsafeMutablePointer<AVFrame>, operation: String
    )
        throws(MediaCodecsError)
    {
        let writable = av_frame_make_writable(frame)
        guard writable >= 0 else { throw .ffmpeg(writable, while: "\(operation) (av_frame_make_writable)") }
        guard let scaler else { throw MediaCodecsError(.invalidState, while: operation, message: "no scaler") }
        let height = Int32(configuration.height)
        let status = pixelBuffer.withLockedPlanes(.readOnly) { planes in
            withUnsafeTemporaryAllocation(of: UnsafePointer<UInt8>?.self, capacity: 4) { sourceData in
                withUnsafeTemporaryAllocation(of: UnsafeMutablePointer<UInt8>?.self, capacity: 4) { destinationData in
                    withUnsafeTemporaryAllocation(of: Int32.self, capacity: 8) { strides in
                        for index in 0..<4 {
                            if index < planes.count {
                                sourceData[index] = UnsafePointer(
                                    planes[index].baseAddress.assumingMemoryBound(to: UInt8.self))
                                strides[index] = Int32(planes[index].bytesPerRow)
                            } else {
                                sourceData[index] = nil
                                strides[index] = 0
                            }
                            destinationData[index] = CFFmpeg_frameData(frame, Int32(index))
                            strides[4 + index] = CFFmpeg_frameLinesize(frame, Int32(index))
                        }
                        return sws_scale(
                            scaler, sourceData.baseAddress, strides.baseAddress, 0, height,
                            destinationData.baseAddress, strides.baseAddress! + 4)
                    }
                }
            }
        }
        guard status >= 0 else { throw .ffmpeg(status, while: "\(operation) (sws_scale)") }
    }
}

extension VideoEncoder.Configuration {
    /// Throws unless `pixelBuffer` is a picture of this configuration's format and size (what every encoder of a
    /// writer's track checks before it takes one).
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/formatMismatch``, naming both.
    package func checkPicture(_ pixelBuffer: CVPixelBuffer, while operation: String) throws(MediaCodecsError) {
        guard pixelBuffer.pixelFormatType == pixelFormat, pixelBuffer.width == width, pixelBuffer.height == height
        else {
            throw MediaCodecsError(
                .formatMismatch, while: operation,
                message: "the buffer is \(PixelBufferConverter.Format(of: pixelBuffer)), the encoder takes "
                    + "\(width)x\(height) \(pixelFormatName(pixelFormat))")
        }
    }
}
