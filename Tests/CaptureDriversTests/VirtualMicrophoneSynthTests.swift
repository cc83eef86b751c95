import CaptureDrivers
import Foundation
import Testing

@Suite("Virtual microphone sound")
struct VirtualMicrophoneSynthTests {
    private func render(_ synth: VirtualMicrophoneSynth, from start: Int64, frames: Int) -> [Float] {
        var samples = [Float](repeating: .nan, count: frames * synth.channelCount)
        samples.withUnsafeMutableBufferPointer {
            synth.render(startingAt: start, frameCount: frames, into: $0.baseAddress!)
        }
        return samples
    }

    private func renderInt16(_ synth: VirtualMicrophoneSynth, from start: Int64, frames: Int) -> [Int16] {
        var samples = [Int16](repeating: 0, count: frames * synth.channelCount)
        samples.withUnsafeMutableBufferPointer {
            synth.render(startingAt: start, frameCount: frames, into: $0.baseAddress!)
        }
        return samples
    }

    @Test("the tone peaks at −30 dBFS and the beep at −6 dBFS")
    func peakLevels() {
        let synth = VirtualMicrophoneSynth()
        let toneOnly = render(synth, from: 48_000 + 4_800, frames: 40_000)
        #expect(abs(VirtualSoundReader.peakLevel(samples: toneOnly) - -30) < 0.5)
        let beep = render(synth, from: 3 * 48_000, frames: 2_400)
        #expect(abs(VirtualSoundReader.peakLevel(samples: beep) - -6) < 0.5)
        let second = render(synth, from: 0, frames: 48_000)
        #expect(VirtualSoundReader.peakLevel(samples: second) <= -6 + 1e-4, "nothing is louder than the beep")
        #expect(abs(VirtualSoundReader.peakLevel(samples: renderInt16(synth, from: 0, frames: 48_000)) - -6) < 0.5)
        #expect(abs(VirtualSoundReader.peakLevel(samples: renderInt16(synth, from: 4_800, frames: 40_000)) - -30) < 0.5)
    }

    @Test("periods rendered one by one equal one long render", arguments: [1, 2])
    func periodsEqualOneRender(channels: Int) {
        let synth = VirtualMicrophoneSynth(sampleRate: 48_000, channelCount: channels)
        let start: Int64 = 47_000  // crosses a whole second and its beep
        let long = render(synth, from: start, frames: 480 * 300)
        let longInt16 = renderInt16(synth, from: start, frames: 480 * 300)
        var periods = [Float]()
        var periodsInt16 = [Int16]()
        // Uneven period sizes too, as ALSA may ask.
        var position = start
        var generator = SplitMix64(seed: 7)
        while position < start + 480 * 300 {
            let frames = min(Int(start + 480 * 300 - position), Int(generator.next() % 1_000) + 1)
            periods += render(synth, from: position, frames: frames)
            periodsInt16 += renderInt16(synth, from: position, frames: frames)
            position += Int64(frames)
        }
        #expect(periods == long)
        #expect(periodsInt16 == longInt16)
    }

    @Test("sample n is a function of n alone: no drift after an hour, a day, or before zero")
    func noDrift() {
        let synth = VirtualMicrophoneSynth()
        let later = render(synth, from: 86_400 * 48_000 + 12_345, frames: 4_800)
        let now = render(synth, from: 12_345, frames: 4_800)
        #expect(later == now)
        #expect(synth.sample(at: -48_000 + 5) == synth.sample(at: 5))
        #expect(synth.sample(at: 3_600 * 48_000 + 100) == synth.sample(at: 100))
    }

    @Test("channels carry the same signal, and Int16 is the float scaled by 32767")
    func channelsAndInt16() {
        let synth = VirtualMicrophoneSynth(sampleRate: 48_000, channelCount: 2)
        let floats = render(synth, from: 0, frames: 4_800)
        let ints = renderInt16(synth, from: 0, frames: 4_800)
        for frame in 0..<4_800 {
            #expect(floats[2 * frame] == floats[2 * frame + 1])
            #expect(floats[2 * frame] == synth.sample(at: Int64(frame)))
            let expected = (Double(floats[2 * frame]) * 32767).rounded()
            #expect(abs(Double(ints[2 * frame]) - expected) <= 1)
        }
    }

    @Test("the beep starts exactly at the whole second and lasts 50 ms")
    func beepTiming() {
        let synth = VirtualMicrophoneSynth()
        let toneAmplitude = pow(10, -30.0 / 20)
        // Outside [k·R, k·R + 2400) the signal is the bare tone.
        let bareToneSamples: [Int64] = [47_990, 47_999, 50_400, 50_500, 95_999]
        for n in bareToneSamples {
            let phase = Double(440 * n % 48_000) / 48_000
            let tone = toneAmplitude * sin(2 * Double.pi * phase)
            #expect(abs(Double(synth.sample(at: n)) - tone) < 1e-6, "sample \(n)")
        }
        // At the second the ramp is at zero (and the tone crosses zero), then the beep rises.
        #expect(synth.sample(at: 48_000) == 0)
        #expect(abs(synth.sample(at: 48_000 + 1_000)) > 0.1 || abs(synth.sample(at: 48_000 + 1_012)) > 0.1)
        #expect(synth.beepSampleCount == 2_400 && synth.rampSampleCount == 96)
    }

    @Test("the sample clock maps samples to host time with its ppm error")
    func sampleClock() {
        let fast = VirtualSampleClock(sampleRate: 48_000, ppm: 100)
        #expect(abs(fast.hostSeconds(ofSample: 48_000) - 1 / 1.0001) < 1e-12)
        #expect(abs(fast.samplePosition(atHostSeconds: 10) - 480_048) < 1e-6)
        let exact = VirtualSampleClock(sampleRate: 48_000)
        #expect(exact.hostSeconds(ofSample: 96_000) == 2)
    }
}
