// RTPPacketizer: encoded packets cut into RTP packets (RFC 6184 for H.264, RFC 3640 for AAC) by libavformat's `rtp`
// muxer writing into memory, and the SDP that describes them (`av_sdp_create`).

import CFFmpeg
import OpenCoreMedia

/// One stream's RTP packetisation: libavformat's `rtp` muxer (`avformat_alloc_output_context2(…, "rtp", …)`) with a
/// custom write-only `AVIOContext` (`avio_alloc_context`) whose `max_packet_size` makes every flush one RTP packet.
/// The muxer chooses the payload type (96 for video, 97 for audio), the SSRC and the first sequence number, cuts H.264
/// into single NAL units, STAP-A and FU-A (packetization-mode 1), and puts AAC in mpeg4-generic AU headers.
///
/// Its own RTCP is off (`rtpflags=skip_rtcp`): it sends a sender report only every 5 s, too late for a client that
/// joins between; the caller writes sender reports with ``senderReport(ntpTime:rtpTimestamp:packets:octets:ssrc:)``.
///
/// Threading: thread-bound; one queue uses it. Not `Sendable`.
package final class RTPPacketizer {
    /// The packets the muxer flushed while one `av_write_frame` ran; the AVIO callback's opaque pointer.
    private final class Collector {
        var packets: [[UInt8]] = []
    }

    package let isVideo: Bool
    /// The RTP clock: 90 kHz for video, the sample rate for audio.
    package let clockRate: Int32
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private var io: UnsafeMutablePointer<AVIOContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private let collector = Collector()
    private var lastDecodeTimestamp: Int64?
    /// The presentation timestamp (in the RTP clock, from the origin) of the first packet fed.
    private var firstTimestamp: Int64?
    /// The RTP timestamp of the origin, learnt from the first packet out (the muxer picks it at random).
    private var baseTimestamp: UInt32?

    /// A packetiser for one encoder's stream. `maximumPacketSize` bounds an RTP packet with its 12-byte header
    /// (1,400 leaves room for IP, UDP and a VPN on a 1,500-byte link).
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/ffmpeg`` when the muxer refuses the codec.
    package init(
        parameters: NetworkMuxer.StreamParameters, isVideo: Bool, maximumPacketSize: Int = 1400
    ) throws(MediaCodecsError) {
        FFmpegLogging.configured
        self.isVideo = isVideo
        let operation = "packetising \(isVideo ? "video" : "audio") as RTP"
        var created: UnsafeMutablePointer<AVFormatContext>?
        // The address only feeds the SDP's connection line (0.0.0.0: RTSP says where the packets go).
        let status = avformat_alloc_output_context2(&created, nil, "rtp", "rtp://0.0.0.0")
        guard status >= 0, let created else {
            throw .ffmpeg(status < 0 ? status : CFFmpeg_AVERROR(ENOMEM), while: operation)
        }
        context = created
        packet = av_packet_alloc()
        guard let source = parameters.parameters, let stream = avformat_new_stream(created, nil) else {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "avformat_new_stream failed")
        }
        let copied = avcodec_parameters_copy(stream.pointee.codecpar, source)
        guard copied >= 0 else { throw .ffmpeg(copied, while: "\(operation) (the codec parameters)") }
        stream.pointee.codecpar.pointee.codec_tag = 0
        stream.pointee.time_base = parameters.timeBase
        let bufferSize = Int32(maximumPacketSize * 2)
        guard let buffer = av_malloc(Int(bufferSize)) else {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "av_malloc failed")
        }
        let opaque = Unmanaged.passUnretained(collector).toOpaque()
        io = avio_alloc_context(
            buffer.assumingMemoryBound(to: UInt8.self), bufferSize, 1, opaque, nil,
            { opaque, bytes, count in
                guard let opaque, let bytes, count > 0 else { return count }
                let collector = Unmanaged<Collector>.fromOpaque(opaque).takeUnretainedValue()
                collector.packets.append(Array(UnsafeBufferPointer(start: bytes, count: Int(count))))
                return count
            }, nil)
        guard let io else {
            av_free(buffer)
            throw MediaCodecsError(.allocationFailed, while: operation, message: "avio_alloc_context failed")
        }
        io.pointee.max_packet_size = Int32(maximumPacketSize)
        created.pointee.pb = io
        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        av_dict_set(&options, "rtpflags", "skip_rtcp", 0)
        // AAC frames are gathered into one RTP packet up to this delay (5 frames, 107 ms at 48 kHz, when unset):
        // one frame per packet keeps the sound as early as the picture.
        let sampleRate = Int(stream.pointee.codecpar.pointee.sample_rate)
        if !isVideo, sampleRate > 0 { created.pointee.max_delay = Int32(1024 * 1_000_000 / sampleRate + 1) }
        let header = avformat_write_header(created, &options)
        guard header >= 0 else { throw .ffmpeg(header, while: "\(operation) (the header)") }
        clockRate = stream.pointee.time_base.den
        collector.packets.removeAll()
    }

    deinit {
        if let context {
            av_write_trailer(context)
            context.pointee.pb = nil
            avformat_free_context(context)
        }
        if let io {
            av_freep(&io.pointee.buffer)
            var pointer: UnsafeMutablePointer<AVIOContext>? = io
            avio_context_free(&pointer)
        }
        av_packet_free(&packet)
    }

    /// The RTP packets for one encoded packet, timed from `origin` (the RTP timestamps count from a random start,
    /// as RFC 3550 asks). A packet before `origin`, or not after the previous one in decode order, gives none.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/ffmpeg`` when the muxer fails.
    package func packetize(_ encoded: EncodedPacket, origin: CMTime) throws(MediaCodecsError) -> [[UInt8]] {
        guard let context, let packet, let stream = context.pointee.streams[0] else { return [] }
        let timeBase = stream.pointee.time_base
        let decodeTime = encoded.decodeTime.isNumeric ? encoded.decodeTime : encoded.presentationTime
        guard let pts = (encoded.presentationTime - origin).ffmpegTimestamp(in: timeBase),
            let dts = (decodeTime - origin).ffmpegTimestamp(in: timeBase), dts >= 0, pts >= dts
        else { return [] }
        if let last = lastDecodeTimestamp, dts <= last { return [] }
        lastDecodeTimestamp = dts
        let size = encoded.data.dataLength
        guard av_new_packet(packet, Int32(size)) >= 0 else {
            throw MediaCodecsError(.allocationFailed, while: "packetising as RTP", message: "av_new_packet failed")
        }
        defer { av_packet_unref(packet) }
        encoded.data.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress {
                packet.pointee.data.update(from: base.assumingMemoryBound(to: UInt8.self), count: size)
            }
        }
        packet.pointee.pts = pts
        packet.pointee.dts = dts
        packet.pointee.stream_index = 0
        if encoded.isKeyFrame { packet.pointee.flags |= AV_PKT_FLAG_KEY }
        if firstTimestamp == nil { firstTimestamp = pts }
        collector.packets.removeAll(keepingCapacity: true)
        let status = av_write_frame(context, packet)
        guard status >= 0 else { throw .ffmpeg(status, while: "packetising as RTP") }
        // The first packet out carries the first packet in (the muxer sends in order, whatever it gathers).
        if baseTimestamp == nil, let first = collector.packets.first, first.count >= 12, let firstTimestamp {
            let timestamp = first[4..<8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            baseTimestamp = timestamp &- UInt32(truncatingIfNeeded: firstTimestamp)
        }
        return collector.packets
    }

    /// The RTP timestamp of media time `time` (on the clock the packets' times count in), or nil before the first
    /// packet is out. For sender reports, which pair it with the wall-clock time of `time`.
    package func rtpTimestamp(at time: CMTime, origin: CMTime) -> UInt32? {
        guard let baseTimestamp, let stream = context?.pointee.streams[0],
            let ticks = (time - origin).ffmpegTimestamp(in: stream.pointee.time_base)
        else { return nil }
        return baseTimestamp &+ UInt32(truncatingIfNeeded: ticks)
    }

    /// The SDP describing `packetizers`' streams (`av_sdp_create`), each media section with
    /// `a=control:streamid=N`, N its index in the array; nil when FFmpeg cannot describe them.
    package static func sessionDescription(_ packetizers: [RTPPacketizer], name: String) -> String? {
        var contexts: [UnsafeMutablePointer<AVFormatContext>?] = packetizers.compactMap(\.context)
        guard let first = contexts.first ?? nil else { return nil }
        av_dict_set(&first.pointee.metadata, "title", name, 0)
        var buffer = [CChar](repeating: 0, count: 16384)
        let status = contexts.withUnsafeMutableBufferPointer { pointers in
            av_sdp_create(pointers.baseAddress, Int32(pointers.count), &buffer, Int32(buffer.count))
        }
        guard status >= 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
