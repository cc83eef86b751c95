// NetworkMuxer: encoded packets pushed to a media server (RTMP as FLV, SRT as MPEG-TS, RTSP as RTP with ANNOUNCE and
// RECORD) or written as a rolling HLS playlist of CMAF segments, with libavformat.

import CFFmpeg
import Foundation
import OpenCoreMedia

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One connection (or one HLS playlist) taking the packets of a live encoder: `avformat_alloc_output_context2`,
/// `avformat_new_stream` with the encoders' parameters (`avcodec_parameters_from_context`), `avio_open2` with
/// `rw_timeout` (so a stalled server fails a write instead of blocking it forever), `avformat_write_header`,
/// `av_interleaved_write_frame`, `av_write_trailer`.
///
/// Timestamps are written relative to `origin`, the same for every connection of a publication, so a player
/// that reconnects sees the stream's time go on.
///
/// Threading: thread-bound; used from one queue (the publisher's network queue). Not `Sendable`.
package final class NetworkMuxer {
    package enum Format: Sendable, Equatable {
        /// RTMP: FLV over libavformat's `rtmp` protocol.
        case flv
        /// SRT (or UDP, TCP): MPEG transport stream, 1316-byte packets (seven TS packets per datagram).
        case mpegts
        /// RTSP: libavformat's `rtsp` muxer pushes the streams with ANNOUNCE (their SDP) and RECORD, then sends RTP
        /// interleaved in the RTSP connection (TCP).
        case rtsp
        /// A playlist at the URL (a path) and fragmented MP4 (CMAF) segments beside it: each about
        /// `segmentDuration` seconds (cut at key frames), the playlist listing the last `playlistSize`, older
        /// segments deleted.
        case hls(segmentDuration: Double, playlistSize: Int)

        /// libavformat's muxer name.
        var formatName: String {
            switch self {
            case .flv: "flv"
            case .mpegts: "mpegts"
            case .rtsp: "rtsp"
            case .hls: "hls"
            }
        }

        /// The format a URL calls for: `rtmp://` FLV, `srt://`/`udp://`/`tcp://` MPEG-TS, `rtsp://` RTSP, a
        /// `.m3u8` path HLS.
        package static func forURL(_ url: String, segmentDuration: Double = 2, playlistSize: Int = 6) -> Format? {
            let lowered = url.lowercased()
            if lowered.hasPrefix("rtsp://") { return .rtsp }
            if lowered.hasPrefix("rtmp://") || lowered.hasPrefix("rtmps://") { return .flv }
            if lowered.hasPrefix("srt://") || lowered.hasPrefix("udp://") || lowered.hasPrefix("tcp://") { return .mpegts }
            if lowered.hasSuffix(".m3u8") { return .hls(segmentDuration: segmentDuration, playlistSize: playlistSize) }
            return nil
        }
    }

    package let url: String
    package let format: Format
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private let origin: CMTime
    private var videoStream: Int32 = -1
    private var audioStream: Int32 = -1
    private var lastDecodeTimestamp: [Int32: Int64] = [:]
    private var isOpen = false

    /// A copy of an encoder's codec parameters, taken on the encoder's queue so a muxer on another queue can
    /// describe its stream (`avcodec_parameters_alloc`, `avcodec_parameters_from_context`; freed on release).
    ///
    /// Threading: immutable after creation; `@unchecked Sendable`.
    package final class StreamParameters: @unchecked Sendable {
        let parameters: UnsafeMutablePointer<AVCodecParameters>?
        let timeBase: AVRational

        package init(video: VideoEncoder) {
            parameters = avcodec_parameters_alloc()
            timeBase = video.timeBase
            if let parameters { _ = video.copyParameters(to: parameters) }
        }

        package init(audio: AudioEncoder) {
            parameters = avcodec_parameters_alloc()
            timeBase = audio.timeBase
            if let parameters { _ = audio.copyParameters(to: parameters) }
        }

        deinit {
            var pointer = parameters
            avcodec_parameters_free(&pointer)
        }
    }

    /// Connects (or creates the playlist) and writes the header.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/ffmpeg`` when the server cannot be reached or
    ///   refuses the stream, ``MediaCodecsError/Kind/unsupportedConfiguration`` when the format cannot hold a codec.
    package init(
        url: String, format: Format, video: StreamParameters?, audio: StreamParameters?, origin: CMTime,
        timeout: Double = 3
    ) throws(MediaCodecsError) {
        FFmpegLogging.configured
        self.url = url
        self.format = format
        self.origin = origin
        let operation = "publishing to \(url) as \(format.formatName)"
        var created: UnsafeMutablePointer<AVFormatContext>?
        let status = avformat_alloc_output_context2(&created, nil, format.formatName, url)
        guard status >= 0, let created else { throw .ffmpeg(status < 0 ? status : CFFmpeg_AVERROR(ENOMEM), while: operation) }
        context = created
        packet = av_packet_alloc()
        for (parameters, isVideo) in [(video, true), (audio, false)] {
            guard let parameters, let source = parameters.parameters else { continue }
            let index = try addStream(timeBase: parameters.timeBase, operation: operation) {
                avcodec_parameters_copy($0, source)
            }
            if isVideo { videoStream = index } else { audioStream = index }
        }
        var muxerOptions: OpaquePointer?
        defer { av_dict_free(&muxerOptions) }
        switch format {
        case .flv:
            av_dict_set(&muxerOptions, "flvflags", "no_duration_filesize", 0)
        case .mpegts:
            break
        case .rtsp:
            // TCP: interleaved RTP crosses NATs and firewalls and loses nothing, and a server that goes away fails a
            // write (UDP would not notice). `timeout` bounds every socket operation, as `rw_timeout` does for the
            // other protocols.
            av_dict_set(&muxerOptions, "rtsp_transport", "tcp", 0)
            av_dict_set(&muxerOptions, "timeout", String(Int64(timeout * 1_000_000)), 0)
        case .hls(let segmentDuration, let playlistSize):
            let directory = (url as NSString).deletingLastPathComponent
            let base = ((url as NSString).lastPathComponent as NSString).deletingPathExtension
            av_dict_set(&muxerOptions, "hls_time", String(segmentDuration), 0)
            av_dict_set(&muxerOptions, "hls_list_size", String(playlistSize), 0)
            av_dict_set(&muxerOptions, "hls_segment_type", "fmp4", 0)
            av_dict_set(&muxerOptions, "hls_fmp4_init_filename", base + "-init.mp4", 0)
            av_dict_set(
                &muxerOptions, "hls_segment_filename",
                (directory.isEmpty ? "" : directory + "/") + base + "-%d.m4s", 0)
            av_dict_set(&muxerOptions, "hls_flags", "delete_segments+independent_segments+temp_file", 0)
        }
        if created.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 {
            var ioOptions: OpaquePointer?
            defer { av_dict_free(&ioOptions) }
            av_dict_set(&ioOptions, "rw_timeout", String(Int64(timeout * 1_000_000)), 0)
            if format == .mpegts { av_dict_set(&ioOptions, "pkt_size", "1316", 0) }
            let opened = avio_open2(&created.pointee.pb, url, AVIO_FLAG_WRITE, nil, &ioOptions)
            guard opened >= 0 else { throw .ffmpeg(opened, while: "\(operation) (connecting)") }
        }
        let header = avformat_write_header(created, &muxerOptions)
        guard header >= 0 else { throw .ffmpeg(header, while: "\(operation) (the header)") }
        isOpen = true
    }

    deinit {
        if let context {
            if context.pointee.pb != nil, context.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 {
                avio_closep(&context.pointee.pb)
            }
            avformat_free_context(context)
        }
        av_packet_free(&packet)
    }

    private func addStream(
        timeBase: AVRational, operation: String, copy: (UnsafeMutablePointer<AVCodecParameters>) -> Int32
    ) throws(MediaCodecsError) -> Int32 {
        guard let context, let stream = avformat_new_stream(context, nil) else {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "avformat_new_stream failed")
        }
        let status = copy(stream.pointee.codecpar)
        guard status >= 0 else { throw .ffmpeg(status, while: "\(operation) (the codec parameters)") }
        stream.pointee.codecpar.pointee.codec_tag = 0
        stream.pointee.time_base = timeBase
        return stream.pointee.index
    }

    /// Writes one packet (video or audio); packets before the origin, or not after the stream's last, are left out.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/ffmpeg`` when the connection failed (the
    ///   server went away, `rw_timeout` passed): the muxer is done; make a new one to reconnect.
    package func write(_ encoded: EncodedPacket, isVideo: Bool) throws(MediaCodecsError) {
        let index = isVideo ? videoStream : audioStream
        guard isOpen, index >= 0, let context, let packet, let stream = context.pointee.streams[Int(index)] else { return }
        let timeBase = stream.pointee.time_base
        let decodeTime = encoded.decodeTime.isNumeric ? encoded.decodeTime : encoded.presentationTime
        guard let pts = (encoded.presentationTime - origin).ffmpegTimestamp(in: timeBase),
            let dts = (decodeTime - origin).ffmpegTimestamp(in: timeBase), dts >= 0
        else { return }
        if let last = lastDecodeTimestamp[index], dts <= last { return }
        lastDecodeTimestamp[index] = dts
        try loadPacket(packet, from: encoded.data, while: "publishing a packet to \(url)")
        packet.pointee.pts = pts
        packet.pointee.dts = dts
        packet.pointee.duration = encoded.duration.ffmpegTimestamp(in: timeBase) ?? 0
        packet.pointee.flags = encoded.isKeyFrame ? AV_PKT_FLAG_KEY : 0
        packet.pointee.stream_index = index
        let status = av_interleaved_write_frame(context, packet)
        av_packet_unref(packet)
        guard status >= 0 else {
            isOpen = false
            throw .ffmpeg(status, while: "publishing to \(url)")
        }
    }

    /// Writes the trailer (the HLS playlist's end) and closes the connection.
    package func finish() {
        guard isOpen, let context else { return }
        isOpen = false
        av_write_trailer(context)
        if context.pointee.pb != nil, context.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 {
            avio_closep(&context.pointee.pb)
        }
    }
}
