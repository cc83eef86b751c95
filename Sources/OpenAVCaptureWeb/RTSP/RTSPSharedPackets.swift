import NIOCore
import OpenAVCapture
import Synchronization

/// The bytes of one hand-out of the stream as the network takes them, made once for every client: the encoder's
/// queue hands the same packets (one array) to each client in turn, and each client used to copy them into a buffer
/// of its own. Here the first client of a hand-out makes the interleaved frames (on the channels nearly every client
/// asks for, `2 × track` and `2 × track + 1`) or the datagrams' payloads, and the others reuse them: a `ByteBuffer`
/// written to many connections is shared, not copied.
///
/// Threading: thread safe. It is called on the encoder's queue, one client after another, so the lock is never
/// contended; a hand-out is recognised by its array (equal arrays are the same packets: sequence numbers differ).
final class RTSPSharedPackets: Sendable {
    private struct Made {
        var packets: [RTPStreamPacket] = []
        var interleaved: ByteBuffer?
        var payloads: [ByteBuffer]?
    }

    private let made = Mutex(Made())

    /// `packets` framed for RTP over the RTSP connection (RFC 2326 §10.12: `$`, channel, length) on the usual channels.
    func interleaved(_ packets: [RTPStreamPacket]) -> ByteBuffer {
        made.withLock { made in
            if made.packets != packets { made = Made(packets: packets) }
            if let interleaved = made.interleaved { return interleaved }
            let interleaved = Self.frame(packets) { UInt8(truncatingIfNeeded: 2 * $0.track + ($0.isControl ? 1 : 0)) }
            made.interleaved = interleaved
            return interleaved
        }
    }

    /// Each of `packets` as a datagram's payload.
    func payloads(_ packets: [RTPStreamPacket]) -> [ByteBuffer] {
        made.withLock { made in
            if made.packets != packets { made = Made(packets: packets) }
            if let payloads = made.payloads { return payloads }
            let payloads = packets.map { ByteBuffer(bytes: $0.bytes) }
            made.payloads = payloads
            return payloads
        }
    }

    /// `packets` framed for the connection, each on the channel `channel` gives it (nil leaves it out).
    static func frame(_ packets: [RTPStreamPacket], channel: (RTPStreamPacket) -> UInt8?) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(packets.reduce(0) { $0 + $1.bytes.count + 4 })
        for packet in packets {
            guard let number = channel(packet) else { continue }
            buffer.writeInteger(UInt8(ascii: "$"))
            buffer.writeInteger(number)
            buffer.writeInteger(UInt16(packet.bytes.count))
            buffer.writeBytes(packet.bytes)
        }
        return buffer
    }
}
