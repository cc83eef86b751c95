// Demuxer: a media file's streams, metadata and packets with libavformat, for AVURLAsset.

import CFFmpeg
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Reads a media file with libavformat: its streams (``Stream``), format metadata, and packets in file order.
///
/// Opening probes the streams without decoding pictures where the container describes them (``StreamProbe``).
///
/// Times are exact `CMTime`s in each stream's time base. A stream's ``Stream/duration`` is libavformat's (the
/// track's edit list applied); when the file has none for it, the format's duration.
///
/// Wraps `avformat_open_input`, `avformat_find_stream_info`, `av_stream_get_side_data`, `av_dict_get`,
/// `av_read_frame` and `avformat_close_input`. The demuxer is the one owner of its `AVFormatContext` and closes it
/// in `deinit`; ``Stream`` values are copies, so nothing borrowed outlives it.
///
/// Threading: thread-bound; use it from one thread at a time. Not `Sendable`. Its ``Stream`` values are `Sendable`.
package final class Demuxer {
    /// What a stream carries.
    ///
    /// Threading: a value; `Sendable`.
    package enum MediaType: Hashable, Sendable {
        case video, audio, other
    }

    /// One stream of the file, copied out of libavformat.
    ///
    /// Threading: a value; `Sendable`.
    package struct Stream: Sendable {
        /// The stream's index, as in ``Output/packet(_:stream:)``.
        package var index: Int
        /// Video, audio or something else.
        package var mediaType: MediaType
        /// FFmpeg's codec name (`h264`, `hevc`, `aac`, `pcm_s16le`, …).
        package var codecName: String
        /// The container's four-character code for the codec (`avc1`, `mp4a`), 0 when none.
        package var codecTag: UInt32
        /// Video width and height in pixels (0 for audio).
        package var width: Int
        package var height: Int
        /// Audio sample rate and channel count (0 for video).
        package var sampleRate: Int
        package var channelCount: Int
        /// The stream's time base as a `CMTime` timescale (its denominator).
        package var timeBase: AVRational
        /// When the first sample is presented; `.invalid` when unknown.
        package var startTime: CMTime
        /// How long the stream lasts; `.invalid` when unknown.
        package var duration: CMTime
        /// The number of frames the container lists, 0 when unknown.
        package var frameCount: Int
        /// The average frame rate (frames per second), 0 when unknown.
        package var frameRate: Double
        /// The bit rate in bits per second, 0 when unknown.
        package var bitRate: Int

        /// The channel counts and sample rates an audio stream may claim and still be decoded (a decoder's output
        /// meets a converter of 1 to 8 channels). A file's claim is checked against them before anything is sized
        /// from it: fuzzed files claiming 42 and 8 323 072 channels trapped a reader and made a session allocate
        /// gigabytes.
        package static let decodableChannelCounts = 1...8
        package static let decodableSampleRates = 1...768_000
        /// The limits in words, for messages: "1 to 8 channels at 1 Hz to 768 kHz".
        package static let decodableAudioLimits = "1 to 8 channels at 1 Hz to 768 kHz"

        /// Whether the stream's claimed channel count and sample rate are within the decodable limits.
        package var claimsDecodableAudio: Bool {
            Self.decodableChannelCounts.contains(channelCount) && Self.decodableSampleRates.contains(sampleRate)
        }
        /// The display transform (the `tkhd` matrix), identity when the file has none.
        package var transform: Muxer.TrackTransform
        /// The stream's tags (`language`, `handler_name`, …).
        package var metadata: [String: String]
        /// The codec's out-of-band header (`avcC`, AudioSpecificConfig).
        package var extradata: [UInt8]
        /// FFmpeg's name of a video stream's pixel format (`yuv420p` for y4m and most H.264), "" when unknown.
        package var pixelFormatName: String
    }

    /// What ``readPacket()`` gives.
    ///
    /// Threading: a value; `Sendable`.
    package enum Output: Sendable {
        /// The next packet in file order, of stream `stream`.
        case packet(EncodedPacket, stream: Int)
        /// The file has no more packets (`AVERROR_EOF`).
        case endOfStream
    }

    /// Where the file is.
    package let path: String
    /// libavformat's name for the container (`mov,mp4,m4a,3gp,3g2,mj2`, `wav`, …).
    package let formatName: String
    /// The streams, by index.
    package let streams: [Stream]
    /// The whole file's duration; `.invalid` when unknown.
    package let duration: CMTime
    /// The overall bit rate in bits per second, 0 when unknown.
    package let bitRate: Int
    /// The format-level tags (`title`, `creation_time`, `com.apple.quicktime.location.ISO6709`, …).
    package let metadata: [String: String]

    /// The video streams whose parameters came from the container's header, none of their pictures decoded to
    /// learn them (``StreamProbe``); the others were probed by decoding their first packets.
    package let streamsProbedWithoutDecoding: Set<Int>

    private var context: UnsafeMutablePointer<AVFormatContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// The frames ``readY4MFrame(into:)`` has read; nil until it first reads (and rewinds to the first frame).
    private var rawFramesRead: Int64?

    /// Opens and probes the file at `path`.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/ffmpeg`` when it cannot be opened or read,
    ///   ``MediaCodecsError/Kind/allocationFailed``.
    package init(path: String) throws(MediaCodecsError) {
        FFmpegLogging.configured
        self.path = path
        let operation = "opening \(path)"
        var opened: UnsafeMutablePointer<AVFormatContext>? = nil
        let status = avformat_open_input(&opened, path, nil, nil)
        guard status >= 0, let context = opened else { throw .ffmpeg(status, while: operation) }
        let (probed, described) = StreamProbe.findStreamInfo(context)
        guard probed >= 0 else {
            avformat_close_input(&opened)
            throw .ffmpeg(probed, while: "\(operation) (avformat_find_stream_info)")
        }
        guard let packet = av_packet_alloc() else {
            avformat_close_input(&opened)
            throw MediaCodecsError(.allocationFailed, while: operation, message: "av_packet_alloc gave NULL")
        }
        self.context = context
        self.packet = packet
        streamsProbedWithoutDecoding = described
        formatName = String(cString: context.pointee.iformat.pointee.name)
        let formatDuration =
            context.pointee.duration > 0
            ? CMTime(ffmpegTimestamp: context.pointee.duration, timeBase: CFFmpeg_AV_TIME_BASE_Q()) : .invalid
        duration = formatDuration
        bitRate = Int(context.pointee.bit_rate)
        metadata = Dictionary(dictionaryEntries(context.pointee.metadata).map { ($0.key, $0.value) }) { $1 }
        var streams: [Stream] = []
        for index in 0..<Int(context.pointee.nb_streams) {
            guard let stream = context.pointee.streams[index] else { continue }
            streams.append(Self.describe(stream, index: index, formatDuration: formatDuration))
        }
        self.streams = streams
    }

    deinit {
        avformat_close_input(&context)
        av_packet_free(&packet)
    }

    private static func describe(
        _ stream: UnsafeMutablePointer<AVStream>, index: Int, formatDuration: CMTime
    )
        -> Stream
    {
        let parameters = stream.pointee.codecpar.pointee
        let mediaType: MediaType =
            switch parameters.codec_type {
            case AVMEDIA_TYPE_VIDEO: .video
            case AVMEDIA_TYPE_AUDIO: .audio
            default: .other
            }
        let timeBase = stream.pointee.time_base
        let duration =
            stream.pointee.duration > 0
            ? CMTime(ffmpegTimestamp: stream.pointee.duration, timeBase: timeBase) : formatDuration
        let rate = stream.pointee.avg_frame_rate
        var transform = Muxer.TrackTransform.identity
        var size: Int = 0
        if let bytes = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size), size >= 36 {
            UnsafeRawPointer(bytes).withMemoryRebound(to: Int32.self, capacity: 9) { matrix in
                transform = Muxer.TrackTransform(displayMatrix: UnsafeBufferPointer(start: matrix, count: 9))
            }
        }
        var extradata: [UInt8] = []
        if let bytes = parameters.extradata, parameters.extradata_size > 0 {
            extradata = Array(UnsafeBufferPointer(start: bytes, count: Int(parameters.extradata_size)))
        }
        return Stream(
            index: index, mediaType: mediaType, codecName: String(cString: avcodec_get_name(parameters.codec_id)),
            codecTag: parameters.codec_tag, width: Int(parameters.width), height: Int(parameters.height),
            sampleRate: Int(parameters.sample_rate), channelCount: Int(parameters.ch_layout.nb_channels),
            timeBase: timeBase, startTime: CMTime(ffmpegTimestamp: stream.pointee.start_time, timeBase: timeBase),
            duration: duration, frameCount: Int(stream.pointee.nb_frames),
            frameRate: rate.num > 0 && rate.den > 0 ? Double(rate.num) / Double(rate.den) : 0,
            bitRate: Int(parameters.bit_rate), transform: transform,
            metadata: Dictionary(dictionaryEntries(stream.pointee.metadata).map { ($0.key, $0.value) }) { $1 },
            extradata: extradata,
            pixelFormatName: mediaType == .video
                ? av_get_pix_fmt_name(AVPixelFormat(parameters.format)).map { String(cString: $0) } ?? "" : "")
    }

    /// Reads only the streams in `indices` from now on: libavformat skips the others' packets
    /// (`AVStream.discard = AVDISCARD_ALL`), so a reader of one track does not copy the rest.
    package func readOnly(streams indices: Set<Int>) {
        guard let context else { return }
        for index in 0..<Int(context.pointee.nb_streams) {
            context.pointee.streams[index]?.pointee.discard =
                indices.contains(index) ? AVDISCARD_DEFAULT : AVDISCARD_ALL
        }
    }

    /// Moves the read position to the last key frame of stream `stream` at or before `time` (`av_seek_frame` with
    /// `AVSEEK_FLAG_BACKWARD`), so decoding from there reaches `time` exactly. A time at or before the stream's
    /// start rewinds to the first packet.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/ffmpeg`` when libavformat cannot seek.
    package func seek(to time: CMTime, stream: Int) throws(MediaCodecsError) {
        guard let context, stream >= 0, stream < Int(context.pointee.nb_streams),
            let avStream = context.pointee.streams[stream]
        else { return }
        let timeBase = avStream.pointee.time_base
        let target = time.ffmpegTimestamp(in: timeBase) ?? 0
        let status = av_seek_frame(context, Int32(stream), target, AVSEEK_FLAG_BACKWARD)
        guard status >= 0 else { throw .ffmpeg(status, while: "seeking \(path) to \(time.seconds) s") }
    }

    /// The next packet in file order, or `.endOfStream`.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/ffmpeg`` for a read error or a damaged file.
    package func readPacket() throws(MediaCodecsError) -> Output {
        guard let context, let packet else { return .endOfStream }
        while true {
            let status = av_read_frame(context, packet)
            if status == CFFmpeg_AVERROR_EOF() { return .endOfStream }
            if status == CFFmpeg_AVERROR_EAGAIN() { continue }
            guard status >= 0 else { throw .ffmpeg(status, while: "reading a packet of \(path)") }
            defer { av_packet_unref(packet) }
            let index = Int(packet.pointee.stream_index)
            guard let stream = context.pointee.streams[index] else { continue }
            return .packet(EncodedPacket(referencing: packet, timeBase: stream.pointee.time_base), stream: index)
        }
    }

    // MARK: Raw frames straight into the caller's memory (y4m)

    /// Where one plane of a raw frame goes (OpenCoreVideo's ``RawPlaneDestination``).
    package typealias RawPlane = RawPlaneDestination

    /// What ``readY4MFrame(into:)`` gives.
    ///
    /// Threading: a value; `Sendable`.
    package enum RawFrameOutput: Sendable, Equatable {
        /// A frame was read; its presentation time and duration in the stream's time base.
        case frame(presentationTime: CMTime, duration: CMTime)
        /// The file has no more whole frames.
        case endOfStream
    }

    /// Whether ``readY4MFrame(into:)`` can read this file: a seekable YUV4MPEG2 file of one raw video stream.
    package var readsY4MFrames: Bool {
        guard formatName == "yuv4mpegpipe", streams.count == 1, streams[0].codecName == "rawvideo",
            let pb = context?.pointee.pb
        else { return false }
        return pb.pointee.seekable & AVIO_SEEKABLE_NORMAL != 0
    }

    /// The next frame of a y4m file read straight into `planes` (their bytes in the file's order, which must add up to
    /// the stream's frame size): the frame's `FRAME` line is parsed here and its planes are read from the file into
    /// the caller's memory, without a packet in between, so each frame's bytes are copied once (`avio_read` reads
    /// a plane larger than its buffer straight from the file). ``readPacket()`` and this must not be mixed.
    ///
    /// Wraps `av_seek_frame` (once, to the first frame: the probe may have queued frames), `avio_r8`, `avio_read`.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/formatMismatch`` when `planes` do not add up
    ///   to a frame, ``MediaCodecsError/Kind/ffmpeg`` for a read error or a damaged frame line.
    package func readY4MFrame(into planes: [RawPlane]) throws(MediaCodecsError) -> RawFrameOutput {
        guard let context, let pb = context.pointee.pb, let stream = context.pointee.streams[0] else {
            return .endOfStream
        }
        let parameters = stream.pointee.codecpar.pointee
        let frameBytes = av_image_get_buffer_size(
            AVPixelFormat(parameters.format), parameters.width, parameters.height, 1)
        guard planes.reduce(0, { $0 + $1.rowBytes * $1.rows }) == Int(frameBytes) else {
            throw MediaCodecsError(
                .formatMismatch, while: "reading a frame of \(path)",
                message: "the planes given do not hold the file's \(frameBytes)-byte frame")
        }
        if rawFramesRead == nil {
            // The probe may have read frames ahead into libavformat's queue: seeking to frame 0 drops them and puts
            // the file at its first frame.
            let status = av_seek_frame(context, 0, 0, AVSEEK_FLAG_BACKWARD)
            guard status >= 0 else { throw .ffmpeg(status, while: "rewinding \(path) to its first frame") }
            rawFramesRead = 0
        }
        let operation = "reading frame \(rawFramesRead ?? 0) of \(path)"
        guard try readY4MFrameLine(pb, while: operation) else { return .endOfStream }
        for plane in planes {
            let read: Bool =
                if plane.rowBytes == plane.bytesPerRow {
                    readFully(pb, into: plane.baseAddress, count: plane.rowBytes * plane.rows)
                } else {
                    (0..<plane.rows).allSatisfy { row in
                        readFully(pb, into: plane.baseAddress + row * plane.bytesPerRow, count: plane.rowBytes)
                    }
                }
            guard read else {
                // As libavformat does: a frame cut short at the end of the file is the end, else a read error.
                if pb.pointee.error < 0 { throw .ffmpeg(pb.pointee.error, while: operation) }
                return .endOfStream
            }
        }
        let index = rawFramesRead ?? 0
        rawFramesRead = index + 1
        let timeBase = stream.pointee.time_base
        return .frame(
            presentationTime: CMTime(ffmpegTimestamp: index, timeBase: timeBase),
            duration: CMTime(ffmpegTimestamp: 1, timeBase: timeBase))
    }

    /// Reads a frame's `FRAME…\n` line (parameters after `FRAME` are allowed and ignored, as libavformat does);
    /// false at the end of the file.
    private func readY4MFrameLine(
        _ pb: UnsafeMutablePointer<AVIOContext>, while operation: String
    ) throws(MediaCodecsError) -> Bool {
        var line: [UInt8] = []
        // libavformat's own limit on a frame line.
        let longest = 256
        while line.count < longest {
            let byte = UInt8(truncatingIfNeeded: avio_r8(pb))
            if byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        if pb.pointee.error < 0 { throw .ffmpeg(pb.pointee.error, while: operation) }
        if avio_feof(pb) != 0 { return false }
        guard line.count < longest, line.starts(with: Array("FRAME".utf8)) else {
            throw .ffmpeg(CFFmpeg_AVERROR(EINVAL), while: "\(operation): no FRAME line where a frame starts")
        }
        return true
    }

    /// Reads exactly `count` bytes; false when the file ended or failed first.
    private func readFully(
        _ pb: UnsafeMutablePointer<AVIOContext>, into destination: UnsafeMutableRawPointer, count: Int
    ) -> Bool {
        var done = 0
        while done < count {
            let chunk = Int32(min(count - done, Int(Int32.max)))
            let read = avio_read(pb, destination.advanced(by: done).assumingMemoryBound(to: UInt8.self), chunk)
            guard read > 0 else { return false }
            done += Int(read)
        }
        return true
    }
}
