// The pre-event output's ring, fed a synthetic 10 Mb/s stream (1080p30's H.264 rate: a 150 kB key frame a second,
// 38 kB predicted frames, AAC packets of 171 bytes): the memory bound is a structural property, checked after every
// packet, never a timing.

import MediaCodecs
import Testing

@testable import OpenAVCapture

/// Two minutes of 10 Mb/s video at 30 fps with a key frame a second, and 64 kb/s AAC, in arrival order.
private func tenMegabitStream(seconds: Int = 120) -> [(EncodedPacket, isVideo: Bool)] {
    var packets: [(EncodedPacket, isVideo: Bool, order: Double)] = []
    let keyBytes = 150_000
    let predictedBytes = (10_000_000 / 8 - keyBytes) / 29
    for frame in 0..<(seconds * 30) {
        let isKey = frame % 30 == 0
        let time = CMTime(value: Int64(frame) * 3000, timescale: 90000)
        packets.append(
            (EncodedPacket(
                data: CMBlockBuffer(length: isKey ? keyBytes : predictedBytes), presentationTime: time, decodeTime: time,
                duration: CMTime(value: 3000, timescale: 90000), isKeyFrame: isKey), true, time.seconds))
    }
    for index in 0..<(seconds * 48000 / 1024) {
        // AAC arrives late by its delay (1,024 samples) and one frame of buffering.
        let time = CMTime(value: Int64(index) * 1024 - 1024, timescale: 48000)
        packets.append(
            (EncodedPacket(
                data: CMBlockBuffer(length: 171), presentationTime: time, decodeTime: time,
                duration: CMTime(value: 1024, timescale: 48000), isKeyFrame: true), false, time.seconds + 0.043))
    }
    return packets.sorted { $0.order < $1.order }.map { ($0.0, $0.isVideo) }
}

@Suite("The pre-event ring: bounded bytes, whole groups of pictures, the pre-roll kept")
struct EncodedMediaRingTests {
    @Test("At 10 Mb/s with a 10 s pre-roll and 24 MiB: never above the cap, 10 s to 11 s held, starting on a key frame")
    func tenSecondsFit() {
        var ring = EncodedMediaRing(capacityBytes: 24 << 20, duration: CMTime(value: 10, timescale: 1), hasVideo: true)
        var checked = 0
        for (packet, isVideo) in tenMegabitStream() {
            ring.append(packet, isVideo: isVideo)
            #expect(ring.heldBytes <= ring.capacityBytes)
            #expect(ring.heldBytes == ring.entries.reduce(0) { $0 + $1.packet.data.dataLength })
            #expect(ring.entries.first?.isKeyFrame ?? true, "the ring does not start with a key frame")
            if isVideo, packet.presentationTime.seconds >= 11 {
                let held = ring.heldDuration.seconds
                #expect(held >= 10 - 1.0 / 30 && held <= 11, "\(held) s held at \(packet.presentationTime.seconds) s")
                let start = ring.packets(forTriggerAt: packet.presentationTime).first
                #expect(start?.isKeyFrame == true)
                #expect((start?.time.seconds ?? .infinity) <= packet.presentationTime.seconds - 10 + 1e-9)
                checked += 1
            }
        }
        #expect(checked > 3000)
        // 11 s of 10 Mb/s at most: about 13.75 MB.
        #expect(ring.largestHeldBytes <= 11 * 1_250_000 + 200_000, "\(ring.largestHeldBytes) bytes")
    }

    @Test("At 10 Mb/s with an 8 MiB cap (10 s needs 12.5 MB): never above 8 MiB, whole seconds dropped first")
    func capBinds() {
        let cap = 8 << 20
        var ring = EncodedMediaRing(capacityBytes: cap, duration: CMTime(value: 10, timescale: 1), hasVideo: true)
        for (packet, isVideo) in tenMegabitStream() {
            ring.append(packet, isVideo: isVideo)
            #expect(ring.heldBytes <= cap)
            #expect(ring.entries.first?.isKeyFrame ?? true)
        }
        #expect(ring.largestHeldBytes <= cap)
        // 8 MiB is 6.7 s of 10 Mb/s; whole groups go, so at least 5.7 s stay.
        #expect(ring.heldDuration.seconds >= 5.7 && ring.heldDuration.seconds < 10, "\(ring.heldDuration.seconds) s")
    }

    @Test("A packet larger than the cap is not kept, and nothing that depends on it either")
    func oversizedPacket() {
        var ring = EncodedMediaRing(capacityBytes: 100_000, duration: CMTime(value: 10, timescale: 1), hasVideo: true)
        let key = EncodedPacket(
            data: CMBlockBuffer(length: 150_000), presentationTime: .zero, decodeTime: .zero,
            duration: CMTime(value: 1, timescale: 30), isKeyFrame: true)
        ring.append(key, isVideo: true)
        #expect(ring.heldBytes == 0 && ring.entries.isEmpty)
        let next = EncodedPacket(
            data: CMBlockBuffer(length: 1000), presentationTime: CMTime(value: 1, timescale: 30),
            decodeTime: CMTime(value: 1, timescale: 30), duration: CMTime(value: 1, timescale: 30), isKeyFrame: false)
        ring.append(next, isVideo: true)
        #expect(ring.entries.isEmpty, "a predicted frame without its key frame was kept")
    }
}
