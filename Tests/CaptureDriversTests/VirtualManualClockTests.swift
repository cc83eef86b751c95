// The clock a test moves by hand: devices on it deliver exactly what falls due in each advance, the advance returns
// once they have, and a stop ends a device's wait for the clock.

import CaptureDrivers
import Foundation
import OpenCoreMedia
import Testing

@Suite("VirtualManualClock, the clock tests step")
struct VirtualManualClockTests {
    private static let second: Int64 = 1_000_000_000

    /// The back camera at 30 fps on `clock`, streaming into a new recorder (or into `sink` after it).
    private func startCamera(
        on clock: VirtualManualClock, then sink: (@Sendable (StreamRecorder) -> Void)? = nil
    ) throws -> (VirtualCamera, StreamRecorder) {
        let camera = VirtualCamera(position: .back)
        camera.clockMode = .manual(clock)
        let recorder = StreamRecorder()
        let record = recorder.sink
        try camera.start(camera.configuration(fps: 30)) { event in
            record(event)
            sink?(recorder)
        }
        return (camera, recorder)
    }

    @Test("a 30 fps camera delivers its first frame at start, then exactly the frames each advance reaches")
    func cameraFollowsTheClock() throws {
        let clock = VirtualManualClock()
        let (camera, recorder) = try startCamera(on: clock)
        defer { camera.stop() }
        // The first frame is due at once; nothing more comes until the clock moves.
        #expect(recorder.wait(forEvents: 1))
        #expect(clock.advance(byNanoseconds: 0))
        #expect(recorder.frames.count == 1)
        // One second: frames 1 to 30 (frame 30 is due exactly at one second after frame 0).
        #expect(clock.advance(byNanoseconds: Self.second))
        #expect(recorder.frames.count == 31)
        // Half a frame: nothing; the other half: one more.
        #expect(clock.advance(byNanoseconds: Self.second / 60))
        #expect(recorder.frames.count == 31)
        #expect(clock.advance(byNanoseconds: Self.second / 60 + 1_000))
        #expect(recorder.frames.count == 32)
        let frames = recorder.frames
        let first = frames[0].presentationTime.value
        for (n, frame) in frames.enumerated() {
            #expect(frame.sequence == UInt64(n))
            #expect(frame.presentationTime == CMTime(value: first + Int64(n), timescale: 30))
        }
        #expect(clock.elapsedNanoseconds == Self.second + 2 * (Self.second / 60) + 1_000)
    }

    @Test("a camera and a microphone on one clock both deliver everything due before the advance returns")
    func cameraAndMicrophone() throws {
        let clock = VirtualManualClock()
        let camera = VirtualCamera(position: .front)
        let microphone = VirtualMicrophone()
        camera.clockMode = .manual(clock)
        microphone.clockMode = .manual(clock)
        let frames = StreamRecorder()
        let periods = StreamRecorder()
        try camera.start(camera.configuration(fps: 30), sink: frames.sink)
        defer { camera.stop() }
        try microphone.start(
            StreamConfiguration(
                format: .audio(AudioFormat(sampleRate: 48_000, channels: 1, sampleFormat: .float32)),
                frameDuration: .invalid),
            sink: periods.sink)
        defer { microphone.stop() }
        #expect(clock.advance(byNanoseconds: 2 * Self.second))
        // Each device's first item came as it started, and two seconds of items after it.
        let frameTimes = frames.frames.map(\.presentationTime)
        #expect(frameTimes.count == 61)
        #expect(frameTimes.last.map { $0 - frameTimes[0] } == CMTime(value: 2, timescale: 1))
        func end(_ period: RecordedPeriod) -> CMTime {
            period.presentationTime + period.sampleDuration * Int32(period.numSamples)
        }
        let sound = periods.periods
        let first = try #require(sound.first)
        let last = try #require(sound.last)
        let heard = end(last) - end(first)
        #expect((200...201).contains(sound.count), "\(sound.count) periods")
        #expect(heard <= CMTime(value: 2, timescale: 1) + CMTime(value: 1, timescale: 1_000_000), "\(heard.seconds) s")
        #expect(heard > CMTime(value: 199, timescale: 100), "\(heard.seconds) s")
        // Stepping on delivers the next second of each, no more.
        let before = (frames.frames.count, periods.periods.count)
        #expect(clock.advance(byNanoseconds: Self.second))
        #expect(frames.frames.count - before.0 == 30)
        #expect(periods.periods.count - before.1 == 100)
    }

    @Test("a device starting on a clock already advanced delivers its first frame at once, the rest as it moves")
    func startOnAnAdvancedClock() throws {
        let clock = VirtualManualClock()
        #expect(clock.advance(byNanoseconds: 5 * Self.second))
        let (camera, recorder) = try startCamera(on: clock)
        defer { camera.stop() }
        #expect(clock.advance(byNanoseconds: 0))
        #expect(recorder.frames.count == 1, "the clock's earlier time is not the camera's to catch up")
        #expect(clock.advance(byNanoseconds: Self.second / 10 + 1_000))
        #expect(recorder.frames.count == 4)
    }

    @Test("stop ends a device's wait for the clock at once, and an advance no longer waits for it")
    func stopEndsTheWait() throws {
        let clock = VirtualManualClock()
        let (camera, recorder) = try startCamera(on: clock)
        #expect(recorder.wait(forEvents: 1))
        camera.stop()
        recorder.close()
        #expect(clock.advance(byNanoseconds: Self.second, timeout: 5))
        #expect(recorder.eventsAfterClose == 0)
        #expect(recorder.frames.count == 1)
    }

    @Test("an advance reports false when a sink does not return in time, and the frames come once it does")
    func slowSinkTimesOut() throws {
        let clock = VirtualManualClock()
        let gate = DispatchSemaphore(value: 0)
        let (camera, recorder) = try startCamera(on: clock) { recorder in
            if recorder.frames.count == 2 { gate.wait() }
        }
        defer { camera.stop() }
        // Frames 1 to 3 are due; the sink holds frame 1 past the advance's timeout.
        #expect(!clock.advance(byNanoseconds: Self.second / 10 + 1_000_000, timeout: 0.2))
        gate.signal()
        #expect(clock.advance(byNanoseconds: 0))
        #expect(recorder.frames.count == 4)
    }
}
