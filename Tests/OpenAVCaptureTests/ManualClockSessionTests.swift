// A session on a camera whose clock the test moves (OpenAVCaptureTesting's VirtualDeviceClock): every frame comes,
// in order, a frame time apart, exactly as many as the clock was moved on; nothing is waited for but the delegate's
// queue.

import Foundation
import OpenAVCaptureTesting
import Testing
import TestSupport

@Suite(.serialized) struct ManualClockSessionTests {
    @Test("stepped a frame at a time, a video data output gets each frame once, 1/30 s apart, none dropped")
    func steppedFrames() throws {
        try withManualClock([VirtualDevices.back]) { clock in
            let delegate = RecordingDelegate()
            let output = AVCaptureVideoDataOutput()
            // A frame may come while the delegate call for the one before is returning: it waits instead of being
            // dropped as late (at most four wait, and the test steps one frame at a time).
            output.alwaysDiscardsLateVideoFrames = false
            output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "manual-clock-frames"))
            let session = try makeSession(preset: .vga640x480, devices: [VirtualDevices.back], outputs: [output])
            session.startRunning()
            defer { session.stopRunning() }
            // The first frame is due as the camera starts; nothing else comes until the clock moves.
            #expect(delegate.wait(for: 1))
            let frameTime = CMTime(value: 1, timescale: 30)
            for step in 1...60 {
                #expect(clock.advance(by: frameTime))
                // The frame reached the session when the advance returned; its delegate call is on the output's queue.
                let arrived = delegate.wait(for: step + 1)
                let drops = delegate.dropped.map { "\($0.time.seconds) \($0.reason ?? "")" }
                #expect(arrived, "frame \(step) never came: \(delegate.received.count) frames, drops \(drops)")
                if !arrived { break }
            }
            #expect(clock.elapsed == CMTime(value: 2, timescale: 1))
            let frames = delegate.received
            #expect(frames.count == 61)
            #expect(delegate.dropped.isEmpty, "\(delegate.dropped.map(\.reason))")
            for (earlier, later) in zip(frames, frames.dropFirst()) {
                #expect(later.time - earlier.time == frameTime, "\(earlier.time.seconds) then \(later.time.seconds)")
            }
        }
    }

    @Test("stepping with settling: a delegate slower than the frames still gets every one; no device, no step")
    func steppingWaitsForTheOutputs() throws {
        let controller = try #require(VirtualCameraController(VirtualDevices.back))
        let clock = VirtualDeviceClock()
        let frameTime = CMTime(value: 1, timescale: 30)
        // Nothing is on the clock yet: stepping would pace nothing.
        #expect(clock.deviceCount == 0)
        #expect(!clock.advance(by: frameTime, step: frameTime, settling: []))
        #expect(clock.elapsed == .zero)
        controller.clockMode = .manual(clock)
        defer { controller.clockMode = .realTime }
        // Each frame takes the delegate 20 ms, and late frames are discarded (one in flight): stepping a second at
        // once would lose most of them; stepping with settling loses none.
        let delegate = RecordingDelegate(work: 0.02)
        let output = AVCaptureVideoDataOutput()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "settled-frames"))
        let session = try makeSession(preset: .vga640x480, devices: [VirtualDevices.back], outputs: [output])
        session.startRunning()
        defer { session.stopRunning() }
        #expect(clock.advance(by: CMTime(value: 1, timescale: 1), step: frameTime, settling: [output]))
        #expect(clock.deviceCount == 1)
        #expect(delegate.received.count == 31, "\(delegate.received.count) frames")
        #expect(delegate.dropped.isEmpty, "\(delegate.dropped.map(\.reason))")
    }
}
