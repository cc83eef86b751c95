import Foundation

/// One RTP or RTCP packet of a served stream, the same bytes for every client.
///
/// Threading: a value; `Sendable`.
package struct RTPStreamPacket: Sendable, Equatable {
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

/// Where one track of the stream starts for a joining client: its first RTP packet's sequence number and the RTP
/// time of the key frame it starts at (RFC 2326 §12.33, `RTP-Info`).
///
/// Threading: a value; `Sendable`.
package struct RTPTrackStart: Sendable, Equatable {
    package let track: Int
    package let sequenceNumber: UInt16
    package let rtpTimestamp: UInt32
}

/// A client of an ``RTPStreamOutput``: its stream starts at the next video key frame after it subscribes
/// (``start(_:tracks:)``), and it gets every packet from there on (``receive(_:)``).
///
/// Threading: `start` and `receive` are called on the output's encoding queue, inside the output's lock, so they
/// must not block or call back into the output: they queue the packets (bounded) and return.
package protocol RTPStreamSubscriber: AnyObject, Sendable {
    /// The client's first packets: a sender report per track, then the key frame; `tracks` says where each starts.
    func start(_ packets: [RTPStreamPacket], tracks: [RTPTrackStart])
    func receive(_ packets: [RTPStreamPacket])
    /// The stream is over (its server stopped); called outside the output's lock.
    func streamEnded()
}

/// The clients of a served stream, and the RTCP sender reports (RFC 3550 §6.4.1) that let a client line the tracks
/// up on one clock.
///
/// A joining client waits for the next video key frame (its output asks the encoder for one at once) and starts
/// there: sender reports for every track, then the key frame, then everything live. It is never sent packets from
/// before it joined: a burst of old packets arriving at once is what a receiver that times packets by their arrival
/// (GStreamer's rtpjitterbuffer) takes for network delay, and it spends seconds unlearning it, a different number
/// for each track, which shows as the sound drifting against the picture.
///
/// Threading: a value; kept in the output's mutex.
struct RTPStreamFanout {
    /// What one call of ``add(_:track:captureTime:rtpTimestamp:clockRate:isVideoKeyFrame:now:)`` hands out.
    struct Delivery {
        /// For the clients already playing: the packets (and a sender report when one is due).
        var live: [RTPStreamPacket] = []
        /// Clients starting at this key frame, with what they start with.
        var joining: [any RTPStreamSubscriber] = []
        var start: [RTPStreamPacket] = []
        var tracks: [RTPTrackStart] = []
    }

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
        /// The sequence number of the track's last RTP packet.
        var lastSequenceNumber: UInt16 = 0
    }

    private(set) var subscribers: [ObjectIdentifier: any RTPStreamSubscriber] = [:]
    /// Clients waiting for the next video key frame.
    private(set) var joining: [ObjectIdentifier: any RTPStreamSubscriber] = [:]
    private var tracks: [TrackClock]
    /// The capture time of the first key frame a joining client let pass because a track had not sent yet.
    private var joiningSince: Double?
    /// Wall-clock seconds since 1970 minus host-clock seconds: NTP time of a capture time.
    private let wallClockOffset: Double

    init(trackCount: Int, wallClockOffset: Double) {
        tracks = Array(repeating: TrackClock(), count: trackCount)
        self.wallClockOffset = wallClockOffset
    }

    /// Adds a client, which starts at the next video key frame.
    mutating func subscribe(_ subscriber: any RTPStreamSubscriber) {
        joining[ObjectIdentifier(subscriber)] = subscriber
    }

    /// Takes every client out.
    mutating func removeAll() -> [any RTPStreamSubscriber] {
        defer { (subscribers, joining) = ([:], [:]) }
        return Array(subscribers.values) + Array(joining.values)
    }

    mutating func unsubscribe(_ subscriber: any RTPStreamSubscriber) {
        subscribers.removeValue(forKey: ObjectIdentifier(subscriber))
        joining.removeValue(forKey: ObjectIdentifier(subscriber))
    }

    /// Clients playing or about to.
    var count: Int { subscribers.count + joining.count }

    /// The RTP packets of one encoded packet captured at `captureTime`, for the clients playing (with a sender report
    /// when the track's last is a second old), and, at a video key frame, for the clients joining.
    /// `rtpTimestamp` is the RTP time of `captureTime` (not read from the packets: the muxer may send a packet
    /// gathered from earlier frames).
    mutating func add(
        _ packets: [[UInt8]], track: Int, captureTime: Double, rtpTimestamp: UInt32?, clockRate: Int32,
        isVideoKeyFrame: Bool, now: Double
    ) -> Delivery {
        guard let first = packets.first, first.count >= 12, let last = packets.last, last.count >= 12 else {
            return Delivery()
        }
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
        let firstSequenceNumber = UInt16(first[2]) << 8 | UInt16(first[3])
        clock.lastSequenceNumber = UInt16(last[2]) << 8 | UInt16(last[3])
        tracks[track] = clock
        let media = packets.map { RTPStreamPacket(track: track, isControl: false, bytes: $0) }
        var delivery = Delivery()
        if captureTime - tracks[track].lastReportTime >= 1, let report = senderReport(track: track, now: now) {
            tracks[track].lastReportTime = captureTime
            delivery.live.append(report)
        }
        delivery.live += media
        if isVideoKeyFrame, !joining.isEmpty, let rtpTimestamp, startsEveryTrack(at: captureTime) {
            delivery.joining = Array(joining.values)
            for (key, subscriber) in joining { subscribers[key] = subscriber }
            joining = [:]
            delivery.start = tracks.indices.compactMap { senderReport(track: $0, now: now) } + media
            delivery.tracks = tracks.indices.compactMap { index in
                if index == track {
                    return RTPTrackStart(
                        track: index, sequenceNumber: firstSequenceNumber, rtpTimestamp: rtpTimestamp)
                }
                // The other track starts with its next packet, at the RTP time of the key frame.
                let other = tracks[index]
                guard other.hasSent else { return nil }
                let elapsed = Int64(((captureTime - other.captureTime) * other.clockRate).rounded())
                return RTPTrackStart(
                    track: index, sequenceNumber: other.lastSequenceNumber &+ 1,
                    rtpTimestamp: other.rtpTimestamp &+ UInt32(truncatingIfNeeded: elapsed))
            }
        }
        return delivery
    }

    /// Whether joining clients start at the key frame captured at `captureTime`: once every track has sent, so that
    /// their `RTP-Info` and first sender reports time every track. A client told nothing of a track before its
    /// packets (FFmpeg) takes the first packet's timestamp for that track's origin and moves it to the sender
    /// report's time when one comes; over UDP, where a report and a packet race on different ports, that move left
    /// the sound a few dozen milliseconds off the picture for the whole session. The sound starts a little after the
    /// picture (its encoder gathers 1,024 samples), so only a client joining as the stream starts waits, for the
    /// next key frame; past two seconds of waiting (a track that never sends) it starts without.
    private mutating func startsEveryTrack(at captureTime: Double) -> Bool {
        if tracks.allSatisfy(\.hasSent) {
            joiningSince = nil
            return true
        }
        guard let since = joiningSince else {
            joiningSince = captureTime
            return false
        }
        guard captureTime - since >= 2 else { return false }
        joiningSince = nil
        return true
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
