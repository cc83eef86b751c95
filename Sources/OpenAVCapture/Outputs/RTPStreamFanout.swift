import Foundation

/// One RTP or RTCP packet of a served stream, the same bytes for every client.
///
/// Threading: a value; `Sendable`.
package struct RTPStreamPacket: Sendable {
    /// The stream's index in the SDP (0 video, 1 audio when there is sound).
    package let track: Int
    /// RTCP (a sender report) rather than RTP media.
    package let isControl: Bool
    package let bytes: [UInt8]

    /// The RTP sequence number (RTP packets only).
    package var sequenceNumber: UInt16 { UInt16(bytes[2]) << 8 | UInt16(bytes[3]) }
    /// The RTP timestamp (RTP packets only).
    package var timestamp: UInt32 { bytes[4..<8].reduce(0) { $0 << 8 | UInt32($1) } }
}

/// A client of an ``RTPStreamOutput``: it gets every packet from the moment it subscribes.
///
/// Threading: `receive` is called on the output's encoding queue, inside the output's lock, so it must not block or
/// call back into the output: it queues the packets (bounded) and returns.
package protocol RTPStreamSubscriber: AnyObject, Sendable {
    func receive(_ packets: [RTPStreamPacket])
    /// The stream is over (its server stopped); called outside the output's lock.
    func streamEnded()
}

/// The clients of a served stream, the packets a joining client starts with (the sender reports, then everything
/// since the last video key frame: at most one group of pictures, bounded in bytes), and the RTCP sender reports
/// (RFC 3550 §6.4.1) that let a client line the tracks up on one clock.
///
/// Threading: a value; kept in the output's mutex.
struct RTPStreamFanout {
    /// The backlog is given up (a joining client then waits for the next key frame) beyond this: 8 MiB.
    static let backlogLimitBytes = 8 << 20

    /// What the sender reports of one track say.
    struct TrackClock {
        var ssrc: UInt32 = 0
        var rtpTimestamp: UInt32 = 0
        /// The capture time (host clock, seconds) of the packet that carried `rtpTimestamp`.
        var captureTime = 0.0
        var clockRate = 90_000.0
        var packetCount: UInt32 = 0
        var octetCount: UInt32 = 0
        var hasSent = false
        var lastReportTime = -Double.infinity
    }

    private(set) var subscribers: [ObjectIdentifier: any RTPStreamSubscriber] = [:]
    private(set) var backlog: [RTPStreamPacket] = []
    private var backlogBytes = 0
    private var tracks: [TrackClock]
    /// Wall-clock seconds since 1970 minus host-clock seconds: NTP time of a capture time.
    private let wallClockOffset: Double

    init(trackCount: Int, wallClockOffset: Double) {
        tracks = Array(repeating: TrackClock(), count: trackCount)
        self.wallClockOffset = wallClockOffset
    }

    /// Adds a client; returns what it starts with (sender reports, then the backlog), in order.
    mutating func subscribe(_ subscriber: any RTPStreamSubscriber, now: Double) -> [RTPStreamPacket] {
        subscribers[ObjectIdentifier(subscriber)] = subscriber
        return tracks.indices.compactMap { senderReport(track: $0, now: now) } + backlog
    }

    /// Takes every client out.
    mutating func removeAll() -> [any RTPStreamSubscriber] {
        defer { subscribers = [:] }
        return Array(subscribers.values)
    }

    mutating func unsubscribe(_ subscriber: any RTPStreamSubscriber) {
        subscribers.removeValue(forKey: ObjectIdentifier(subscriber))
    }

    /// The RTP packets of one encoded packet captured at `captureTime`: kept for joiners, and returned with a sender
    /// report when the track's last is a second old, for the clients.
    /// `rtpTimestamp` is the RTP time of `captureTime` (not read from the packets: the muxer may send a packet
    /// gathered from earlier frames).
    mutating func add(
        _ packets: [[UInt8]], track: Int, captureTime: Double, rtpTimestamp: UInt32?, clockRate: Int32,
        isVideoKeyFrame: Bool, now: Double
    ) -> [RTPStreamPacket] {
        guard let first = packets.first, first.count >= 12 else { return [] }
        var clock = tracks[track]
        clock.ssrc = first[8..<12].reduce(0) { $0 << 8 | UInt32($1) }
        if let rtpTimestamp {
            clock.rtpTimestamp = rtpTimestamp
            clock.captureTime = captureTime
            clock.clockRate = Double(clockRate)
        }
        clock.packetCount &+= UInt32(packets.count)
        clock.octetCount &+= UInt32(truncatingIfNeeded: packets.reduce(0) { $0 + $1.count - 12 })
        clock.hasSent = clock.hasSent || rtpTimestamp != nil
        tracks[track] = clock
        let media = packets.map { RTPStreamPacket(track: track, isControl: false, bytes: $0) }
        if isVideoKeyFrame {
            backlog.removeAll(keepingCapacity: true)
            backlogBytes = 0
        }
        let bytes = packets.reduce(0) { $0 + $1.count }
        if isVideoKeyFrame || !backlog.isEmpty, backlogBytes + bytes <= Self.backlogLimitBytes {
            backlog += media
            backlogBytes += bytes
        } else {
            backlog.removeAll()
            backlogBytes = 0
        }
        var out: [RTPStreamPacket] = []
        if captureTime - tracks[track].lastReportTime >= 1, let report = senderReport(track: track, now: now) {
            tracks[track].lastReportTime = captureTime
            out.append(report)
        }
        return out + media
    }

    /// The canonical name every track's reports carry: one name is what tells a client (GStreamer's rtpbin) that
    /// the tracks come from one source and are to be played in sync (RFC 3550 §6.5.1).
    static let canonicalName = Array("OpenAVCapture".utf8)

    /// An RTCP compound packet for `track`, a sender report and the source description with the canonical name (RFC
    /// 3550 §6.1: every compound packet has both), or nil before the track's first packet. `now` is the host time
    /// of sending: the report pairs it with the RTP time of that instant (RFC 3550 §6.4.1), extrapolated from the
    /// last packet's, as clients that take the report's time for its send time (GStreamer's rtpbin) expect.
    func senderReport(track: Int, now: Double) -> RTPStreamPacket? {
        var clock = tracks[track]
        guard clock.hasSent else { return nil }
        let elapsed = max(0, now - clock.captureTime)
        clock.rtpTimestamp &+= UInt32(truncatingIfNeeded: Int64((elapsed * clock.clockRate).rounded()))
        // NTP counts from 1900; the fraction is in 2^-32 s.
        let ntp = clock.captureTime + elapsed + wallClockOffset + 2_208_988_800
        let seconds = UInt32(truncatingIfNeeded: Int64(ntp.rounded(.down)))
        let fraction = UInt32(truncatingIfNeeded: Int64((ntp - ntp.rounded(.down)) * 4_294_967_296))
        var bytes: [UInt8] = [0x80, 200, 0, 6]
        for word in [clock.ssrc, seconds, fraction, clock.rtpTimestamp, clock.packetCount, clock.octetCount] {
            bytes += [UInt8(word >> 24), UInt8(word >> 16 & 0xff), UInt8(word >> 8 & 0xff), UInt8(word & 0xff)]
        }
        // SDES: one chunk, the SSRC, CNAME (item 1), then a zero byte or more to end the list on a 32-bit boundary.
        var chunk = bytes[4..<8] + [1, UInt8(Self.canonicalName.count)] + Self.canonicalName + [0]
        while chunk.count % 4 != 0 { chunk.append(0) }
        bytes += [0x81, 202, 0, UInt8(chunk.count / 4)] + chunk
        return RTPStreamPacket(track: track, isControl: true, bytes: bytes)
    }
}
