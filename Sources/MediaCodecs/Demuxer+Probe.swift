// How a Demuxer learns its streams: libavformat's probe, told not to decode pictures the container already describes.

import CFFmpeg
import OpenCoreMedia

/// Runs `avformat_find_stream_info`, without decoding H.264 or HEVC pictures where the container describes them.
///
/// Why: libavformat's probe (FFmpeg 5.1, `libavformat/demux.c`) reads at least each stream's first packet (to learn
/// its first timestamp) and decodes every video packet it reads while the stream still lacks a parameter. An MP4's or
/// Matroska's header never names the pixel format, and for H.264 the probe also wants 7 decoded pictures to guess
/// the decoder's reordering delay. So each open decoded the first key frame, single-threaded: 0.07 s of CPU for a
/// 1080p camera's 20 Mb/s H.264, paid by every reader of the file (a movie-file camera opened it four times, the
/// recording's summary once more).
///
/// Where the container stamps every packet (its format has no `AVFMT_NOTIMESTAMPS`) and lists its streams in a
/// header (no `AVFMTCTX_NOHEADER`), and an H.264 or HEVC stream's parameter sets are in that header (`avcC`,
/// `hvcC`), the pixel format is taken from the parameter sets and the probe's decoder skips every picture
/// (`skip_frame=all`): it still reads and parses the same packets and reports the same streams, frame rates and
/// durations, but decodes none. The reordering delay is not needed there: the container's timestamps order the
/// pictures. Elementary streams (raw Annex B H.264: no timestamps, no header), transport streams (streams found by
/// reading), parameter sets only in the packets, and layouts outside the table below are probed as before.
///
/// The pixel format is the one FFmpeg's decoder would choose for the layout the parameter sets name (chroma format
/// and luma bit depth, and for H.264 the full range flag that makes 8-bit pictures `yuvj420p` or `yuvj422p`).
///
/// Threading: stateless; call it on the thread that owns the format context.
enum StreamProbe {
    /// Probes `context`'s streams; returns libavformat's status and the indices of the streams probed without
    /// decoding.
    static func findStreamInfo(_ context: UnsafeMutablePointer<AVFormatContext>) -> (status: Int32, described: Set<Int>)
    {
        let count = Int(context.pointee.nb_streams)
        var described = Set<Int>()
        let flags = context.pointee.iformat.pointee.flags
        if flags & AVFMT_NOTIMESTAMPS == 0 && context.pointee.ctx_flags & AVFMTCTX_NOHEADER == 0 {
            for index in 0..<count {
                guard let parameters = context.pointee.streams[index]?.pointee.codecpar,
                    let format = pixelFormat(declaredBy: parameters.pointee)
                else { continue }
                parameters.pointee.format = format.rawValue
                described.insert(index)
            }
        }
        guard !described.isEmpty else { return (avformat_find_stream_info(context, nil), []) }
        var options = [OpaquePointer?](repeating: nil, count: count)
        for index in described { av_dict_set(&options[index], "skip_frame", "all", 0) }
        let status = options.withUnsafeMutableBufferPointer { avformat_find_stream_info(context, $0.baseAddress) }
        for index in options.indices { av_dict_free(&options[index]) }
        return (status, described)
    }

    /// The pixel format an H.264 or HEVC stream's header parameter sets name; nil when the stream is something else,
    /// already has one, or its header does not say.
    static func pixelFormat(declaredBy parameters: AVCodecParameters) -> AVPixelFormat? {
        guard parameters.codec_type == AVMEDIA_TYPE_VIDEO, parameters.format == AV_PIX_FMT_NONE.rawValue,
            parameters.width > 0, parameters.height > 0, let bytes = parameters.extradata,
            parameters.extradata_size > 0
        else { return nil }
        let header = Array(UnsafeBufferPointer(start: bytes, count: Int(parameters.extradata_size)))
        let name: String
        switch parameters.codec_id {
        case AV_CODEC_ID_H264:
            guard let sps = H264Bitstream.sequenceParameterSets(avcC: header).first,
                let layout = H264Bitstream.pictureLayout(sps: sps), let range = H264Bitstream.signalRange(sps: sps),
                let layoutName = formatNames[layout.chromaFormat]?[layout.bitDepth]
            else { return nil }
            // FFmpeg 5.1's H.264 decoder names full-range 8-bit pictures yuvj…: the SPS's range, else the container's.
            let full = range == .full || (range == .unstated && parameters.color_range == AVCOL_RANGE_JPEG)
            name = full && layout.bitDepth == 8 ? "yuvj" + layoutName.dropFirst(3) : layoutName
        case AV_CODEC_ID_HEVC:
            guard let layout = hevcLayout(hvcC: header),
                let layoutName = formatNames[layout.chromaFormat]?[layout.bitDepth]
            else { return nil }
            name = layoutName
        default:
            return nil
        }
        let format = av_get_pix_fmt(name)
        return format == AV_PIX_FMT_NONE ? nil : format
    }

    /// FFmpeg's names of the layouts taken from parameter sets, by chroma format (1 4:2:0, 2 4:2:2) and luma bit
    /// depth. Monochrome, other depths and 4:4:4 (which the decoders name `gbrp` when the colour matrix is RGB,
    /// stated further into the parameter sets) are left to the decoding probe.
    private static let formatNames: [Int: [Int: String]] = [
        1: [8: "yuv420p", 10: "yuv420p10le"],
        2: [8: "yuv422p", 10: "yuv422p10le"],
    ]

    /// The chroma format and luma bit depth an `hvcC` record (HEVCDecoderConfigurationRecord, ISO/IEC 14496-15
    /// §8.3.3.1.2) states in its fixed part.
    private static func hevcLayout(hvcC record: [UInt8]) -> (chromaFormat: Int, bitDepth: Int)? {
        guard record.count >= 23, record[0] == 1 else { return nil }
        return (Int(record[16] & 0x03), 8 + Int(record[17] & 0x07))
    }
}
