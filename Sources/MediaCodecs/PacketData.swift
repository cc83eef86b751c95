import CFFmpeg
import OpenCoreMedia

// How compressed bytes reach libavcodec and libavformat: a packet that references a block buffer, or a copy, and a
// codec's out-of-band header into a context (decoders).

/// Gives `packet` `data`'s bytes. A zero-padded block buffer that is no loan (``CMBlockBuffer/isZeroPadded``,
/// ``CMBlockBuffer/isOnLoan``: one we or FFmpeg allocated) is referenced, not copied: the packet's `AVBufferRef`
/// holds the block buffer, read-only (a bitstream filter that changes a packet copies it first), and releases it
/// when libavcodec or libavformat drop the last reference. Anything else is copied into a fresh padded buffer.
/// The caller unrefs the packet when done with it.
///
/// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/ffmpeg`` when `av_new_packet` fails, of kind
///   ``MediaCodecsError/Kind/allocationFailed`` when `av_buffer_create` does.
func loadPacket(
    _ packet: UnsafeMutablePointer<AVPacket>, from data: CMBlockBuffer, while operation: String
) throws(MediaCodecsError) {
    let size = data.dataLength
    // `CMBlockBuffer.trailingZeroBytes` covers FFmpeg's padding (PacketReferenceTests checks it against the headers).
    if data.isZeroPadded, !data.isOnLoan, size > 0 {
        try reference(data, into: packet, while: operation)
        return
    }
    let status = av_new_packet(packet, Int32(size))
    guard status >= 0 else { throw .ffmpeg(status, while: operation) }
    if size > 0, let destination = packet.pointee.data {
        data.withUnsafeBytes { UnsafeMutableRawPointer(destination).copyMemory(from: $0.baseAddress!, byteCount: size) }
    }
}

/// `packet` made to reference `data` (its whole length) through an `AVBufferRef` that keeps `data` alive.
private func reference(
    _ data: CMBlockBuffer, into packet: UnsafeMutablePointer<AVPacket>, while operation: String
) throws(MediaCodecsError) {
    let owner = Unmanaged.passRetained(data)
    let bytes = data.withUnsafeBytes { UnsafeMutableRawPointer(mutating: $0.baseAddress!) }
    let size = data.dataLength
    let releaseBlock: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?) -> Void = { opaque, _ in
        if let opaque { Unmanaged<CMBlockBuffer>.fromOpaque(opaque).release() }
    }
    guard
        let buffer = av_buffer_create(
            bytes.assumingMemoryBound(to: UInt8.self), size + Int(AV_INPUT_BUFFER_PADDING_SIZE), releaseBlock,
            owner.toOpaque(), Int32(AV_BUFFER_FLAG_READONLY))
    else {
        owner.release()
        throw MediaCodecsError(.allocationFailed, while: operation, message: "av_buffer_create gave NULL")
    }
    av_packet_unref(packet)
    packet.pointee.buf = buffer
    packet.pointee.data = buffer.pointee.data
    packet.pointee.size = Int32(size)
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
