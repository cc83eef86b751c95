// RTPStreamFanout: where a joining RTSP client starts. It waits for a video key frame at which every track has sent,
// so its RTP-Info and first sender reports time both tracks (a client told nothing of the sound before its packets
// takes the first packet for the sound's origin, then moves it: the offset FFmpeg over UDP kept).

import Testing

@testable import OpenAVCapture

@Suite("RTPStreamFanout: a joining client starts with every track timed")
struct RTPStreamFanoutTests {
    /// A subscriber that keeps what it is handed.
    final class Recorder: RTPStreamSubscriber, @unchecked Sendable {
        var started: (packets: [RTPStreamPacket], tracks: [RTPTrackStart])?
        var received: [[RTPStreamPacket]] = []
        func start(_ packets: [RTPStreamPacket], tracks: [RTPTrackStart]) { started = (packets, tracks) }
        func receive(_ packets: [RTPStreamPacket]) { received.append(packets) }
        func streamEnded() {}
    }

    /// An RTP packet: version 2, `sequence`, `timestamp`, `ssrc`, a few payload bytes.
    static func rtp(sequence: UInt16, timestamp: UInt32, ssrc: UInt32) -> [UInt8] {
        let shifts: [UInt32] = [24, 16, 8, 0]
        var bytes: [UInt8] = [0x80, 96, UInt8(sequence >> 8), UInt8(sequence & 0xff)]
        bytes += shifts.map { UInt8(truncatingIfNeeded: timestamp >> $0) }
        bytes += shifts.map { UInt8(truncatingIfNeeded: ssrc >> $0) }
        return bytes + [1, 2, 3]
    }

    /// Video at 90 kHz (frame `n` captured at n/30 s), sound at 48 kHz.
    func video(_ fanout: inout RTPStreamFanout, frame: Int, key: Bool) -> RTPStreamFanout.Delivery {
        let time = Double(frame) / 30
        let timestamp = UInt32(1_000 + frame * 3_000)
        return fanout.add(
            [Self.rtp(sequence: UInt16(100 + frame), timestamp: timestamp, ssrc: 0xAAAA)], track: 0,
            captureTime: time, rtpTimestamp: timestamp, clockRate: 90_000, isVideoKeyFrame: key, now: time + 0.01)
    }

    func sound(_ fanout: inout RTPStreamFanout, frame: Int) -> RTPStreamFanout.Delivery {
        let time = Double(frame) * 1024 / 48_000
        let timestamp = UInt32(5_000 + frame * 1024)
        return fanout.add(
            [Self.rtp(sequence: UInt16(700 + frame), timestamp: timestamp, ssrc: 0xBBBB)], track: 1,
            captureTime: time, rtpTimestamp: timestamp, clockRate: 48_000, isVideoKeyFrame: false, now: time + 0.01)
    }

    @Test("A client joining before the sound has sent starts at the next key frame after it, both tracks timed")
    func waitsForEveryTrack() {
        var fanout = RTPStreamFanout(trackCount: 2, wallClockOffset: 0)
        let client = Recorder()
        fanout.subscribe(client)
        _ = video(&fanout, frame: 0, key: true)
        #expect(client.started == nil, "started at a key frame before the sound had sent")
        _ = sound(&fanout, frame: 1)
        _ = video(&fanout, frame: 1, key: false)
        let delivery = video(&fanout, frame: 2, key: true)
        #expect(delivery.joining.count == 1)
        #expect(delivery.tracks.map(\.track) == [0, 1], "RTP-Info must name both tracks: \(delivery.tracks)")
        // The sound's RTP time at the key frame's capture time (2/30 s), from its last packet (1024/48000 s).
        let sound = delivery.tracks.first { $0.track == 1 }
        let elapsed: Double = (2.0 / 30 - 1024.0 / 48_000) * 48_000
        let expected = UInt32(6_024) + UInt32(elapsed.rounded())
        #expect(sound?.rtpTimestamp == expected)
        #expect(sound?.sequenceNumber == 702)
        // A sender report per track, then the key frame.
        #expect(delivery.start.prefix(2).allSatisfy(\.isControl) && delivery.start.count == 3)
        #expect(Set(delivery.start.prefix(2).map(\.track)) == [0, 1])
    }

    @Test("A track that never sends keeps a joining client waiting two seconds of stream at most")
    func startsWithoutASilentTrack() {
        var fanout = RTPStreamFanout(trackCount: 2, wallClockOffset: 0)
        let client = Recorder()
        fanout.subscribe(client)
        #expect(video(&fanout, frame: 0, key: true).joining.isEmpty)
        #expect(video(&fanout, frame: 30, key: true).joining.isEmpty)
        let late = video(&fanout, frame: 60, key: true)
        #expect(late.joining.count == 1)
        #expect(late.tracks.map(\.track) == [0])
    }

    @Test("Once every track has sent, a joining client starts at the first key frame")
    func startsAtOnceWhenEveryTrackSent() {
        var fanout = RTPStreamFanout(trackCount: 2, wallClockOffset: 0)
        _ = video(&fanout, frame: 0, key: true)
        _ = sound(&fanout, frame: 0)
        let client = Recorder()
        fanout.subscribe(client)
        #expect(video(&fanout, frame: 1, key: false).joining.isEmpty)
        let delivery = video(&fanout, frame: 2, key: true)
        #expect(delivery.joining.count == 1)
        #expect(delivery.tracks.map(\.track) == [0, 1])
    }
}
