import CaptureDrivers
import Foundation
import OpenCoreMedia
import Testing

@Suite("The virtual microphone as a capture backend")
struct VirtualMicrophoneStreamTests {
    private func configuration(
        _ microphone: VirtualMicrophone, channels: Int = 1, _ sampleFormat: AudioSampleFormat = .float32
    )
        -> StreamConfiguration
    {
        StreamConfiguration(
            format: .audio(AudioFormat(sampleRate: 48_000, channels: channels, sampleFormat: sampleFormat)),
            frameDuration: .invalid)
    }

    @Test("formats: 48 kHz, mono and stereo, float32 and int16, mono float32 first")
    func formats() {
        let microphone = VirtualMicrophone()
        #expect(
            microphone.formats == [
                .audio(AudioFormat(sampleRate: 48_000, channels: 1, sampleFormat: .float32)),
                .audio(AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .float32)),
                .audio(AudioFormat(sampleRate: 48_000, channels: 1, sampleFormat: .int16)),
                .audio(AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .int16)),
            ])
        #expect(microphone.controls == nil && microphone.clock === CMClock.hostTimeClock)
        #expect(microphone.validate(configuration(microphone)) == .valid)
        let foreign = StreamConfiguration(
            format: .audio(AudioFormat(sampleRate: 44_100, channels: 1, sampleFormat: .float32)),
            frameDuration: .invalid)
        #expect(microphone.validate(foreign).isInvalid)
    }

    @Test("real time: contiguous 10 ms periods stamped exactly at 48 kHz, each delivered once recorded")
    func realTimePeriods() throws {
        let microphone = VirtualMicrophone()
        let recorder = StreamRecorder()
        try microphone.start(configuration(microphone), sink: recorder.sink)
        let arrived = recorder.wait(forEvents: 15)
        microphone.stop()
        #expect(arrived)
        let periods = recorder.periods
        try #require(periods.count >= 15)
        let first = periods[0].presentationTime
        #expect(first.timescale == 48_000 && first.value % 480 == 0)
        let description = try #require(periods[0].formatDescription)
        #expect(description.audioStreamBasicDescription?.mSampleRate == 48_000)
        #expect(description.audioStreamBasicDescription?.mChannelsPerFrame == 1)
        for (n, period) in periods.enumerated() {
            #expect(period.sequence == UInt64(n))
            #expect(period.presentationTime == CMTime(value: first.value + Int64(n) * 480, timescale: 48_000))
            #expect(period.numSamples == 480 && period.samples.count == 480)
            #expect(period.sampleDuration == CMTime(value: 1, timescale: 48_000))
            #expect(period.formatDescription === description, "one format description per stream")
            let end = period.presentationTime.seconds + 0.01
            let lateness = Double(period.deliveredAt) / 1e9 - end
            // Real time: delivered once its last sample is due, never before (how long after is not asserted).
            #expect(lateness >= 0, "period \(n) delivered \(-lateness) s before its end")
        }
    }

    @Test(
        "beeps fall at whole host seconds within 1 ms over 2+ seconds of audio",
        arguments: [
            (1, AudioSampleFormat.float32), (2, AudioSampleFormat.int16),
        ])
    func beepsAtWholeSeconds(channels: Int, sampleFormat: AudioSampleFormat) throws {
        let microphone = VirtualMicrophone()
        microphone.clockMode = .freeRunning
        let recorder = StreamRecorder()
        try microphone.start(configuration(microphone, channels: channels, sampleFormat), sink: recorder.sink)
        recorder.wait(forEvents: 230)
        microphone.stop()
        let periods = recorder.periods
        try #require(periods.count >= 230)
        for (n, period) in periods.enumerated().dropFirst() {
            #expect(period.presentationTime == periods[n - 1].presentationTime + CMTime(value: 480, timescale: 48_000))
        }
        let samples = periods.flatMap(\.samples)
        let start = periods[0].presentationTime.seconds
        let beeps = VirtualSoundReader.findBeeps(samples: samples, sampleRate: 48_000, channels: 1)
        #expect(beeps.count >= 2)
        for beep in beeps {
            let host = start + beep
            #expect(abs(host - host.rounded()) < 0.001, "beep at host \(host) s")
        }
    }

    @Test("ppm +500: periods stamped (1 − 500e-6) × 10 ms apart, on the affine sample clock")
    func clockError() throws {
        let microphone = VirtualMicrophone()
        microphone.ppm = 500
        microphone.clockMode = .freeRunning
        let recorder = StreamRecorder()
        try microphone.start(configuration(microphone), sink: recorder.sink)
        recorder.wait(forEvents: 120)
        microphone.stop()
        let periods = recorder.periods
        try #require(periods.count >= 120)
        let rate = 48_000 * (1 + 500e-6)
        let firstSample = (periods[0].presentationTime.seconds * rate).rounded()
        #expect(firstSample.truncatingRemainder(dividingBy: 480) == 0, "periods start at multiples of 480 samples")
        for (n, period) in periods.enumerated() {
            // Sample s is at s / (48000 · (1 + ppm·1e-6)) host seconds, rounded to the nanosecond.
            let expected = ((firstSample + Double(n * 480)) / rate * 1e9).rounded()
            #expect(period.presentationTime.timescale == 1_000_000_000)
            #expect(abs(Double(period.presentationTime.value) - expected) <= 1, "period \(n)")
            if n > 0 {
                let spacing = Double(period.presentationTime.value - periods[n - 1].presentationTime.value)
                #expect(abs(spacing - (1 - 500e-6) * 10_000_000) <= 4, "spacing \(spacing) ns")
            }
        }
        // Over the whole run, the drift against a 48 kHz clock is 500 ppm.
        let span = Double(periods.last!.presentationTime.value - periods[0].presentationTime.value)
        let nominal = Double((periods.count - 1) * 10_000_000)
        #expect(abs((nominal - span) / nominal * 1e6 - 500) < 0.5)
    }

    @Test("unplug, busy and stall behave as on the cameras")
    func faults() throws {
        let connections = ConnectionRecorder()
        let microphone = VirtualMicrophone(registry: connections.registry)
        let recorder = StreamRecorder()
        try microphone.start(configuration(microphone), sink: recorder.sink)
        recorder.wait(forEvents: 2)
        microphone.simulateStall(for: 0.1)
        let resumed = recorder.wait { events in
            guard let drop = events.lastIndex(where: { if case .dropped = $0 { true } else { false } }) else {
                return false
            }
            return events.count > drop + 1
        }
        #expect(resumed)
        microphone.simulateUnplug()
        guard case .fault(.disconnected) = recorder.events.last else {
            Issue.record("no disconnection: \(String(describing: recorder.events.last))")
            return
        }
        let events = recorder.events.dropLast()
        #expect(events.enumerated().allSatisfy { $0.element.sequence == UInt64($0.offset) })
        let drops = events.filter { if case .dropped(_, _, .discontinuity) = $0 { true } else { false } }
        #expect((8...13).contains(drops.count), "\(drops.count) periods dropped in a 0.1 s stall")
        let first = events.first!.presentationTimeValue
        for event in events {
            #expect(event.presentationTimeValue == first + 480 * Int64(event.sequence!), "contiguous through drops")
        }
        #expect(throws: DeviceFault.disconnected) {
            try microphone.start(configuration(microphone), sink: recorder.sink)
        }
        microphone.simulateReplug()
        microphone.simulateBusy(true)
        #expect(throws: DeviceFault.busy) { try microphone.start(configuration(microphone), sink: recorder.sink) }
        microphone.simulateBusy(false)
        #expect(
            connections.kinds(for: microphone) == [
                "disconnected", "connected", "availabilityChanged", "availabilityChanged",
            ])
    }
}
