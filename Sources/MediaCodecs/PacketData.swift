import CFFmpeg
import OpenCoreMedia

// The byte copies every libavcodec user here makes: compressed bytes into a packet (decoders, the muxer) and a
// codec's out-of-band header into a context (decoders).

/// Gives `packet` a fresh buffer holding `data`'s bytes. The caller unrefs the packet when done with it.
///
/// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/ffmpeg`` when `av_new_packet` fails.
func loadPacket(
    _ packet: UnsafeMutablePointer<AVPacket>, from data: CMBlockBuffer, while operation: String
) throws(MediaCodecsError) {
    let size = data.dataLength
    let status = av_new_packet(packet, Int32(size))
    guard status >= 0 else { throw .ffmpeg(status, while: operation) }
    if size > 0, let destination = packet.pointee.data {
        data.withUnsafeBytes { UnsafeMutableRawPointer(destination).copyMemory(from: $0.baseAddress!, byteCount: size) }
    }
}

/// Copies `extradata` (an avcC/hvcC record, an AudioSpecificConfig) into `context`, padded as libavcodec requires;
/// nothing when it is empty. The context frees it.
///
/// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/allocationFailed``.
func attachExtradata(
    _ extradata: [UInt8], to context: UnsafeMutablePointer<AVCodecContext>, while operation: String
) throws(MediaCodecsError) {
    guard !extradata.isEmpty else { return }
    let size = extradata.count
    guard let bytes = av_mallocz(size + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
        throw MediaCodecsError(.allocationFailed, while: operation, message: "av_mallocz gave NULL")
    }
    extradata.withUnsafeBytes { bytes.copyMemory(from: $0.baseAddress!, byteCount: size) }
    context.pointee.extradata = bytes.assumingMemoryBound(to: UInt8.self)
    context.pointee.extradata_size = Int32(size)
}
