import CaptureDrivers
import Foundation
import Testing

@Suite("Virtual signal readers")
struct VirtualSignalReaderTests {
    private func render(_ synth: VirtualMicrophoneSynth, from start: Int64, frames: Int) -> [Float] {
        var samples = [Float](repeating: 0, count: frames * synth.channelCount)
        samples.withUnsafeMutableBufferPointer {
            synth.render(startingAt: start, frameCount: frames, into: $0.baseAddress!)
        }
        return samples
    }

    // MARK: Beeps

    @Test("beep onsets are found at whole seconds within 0.5 ms", arguments: [(48_000, 1), (48_000, 2), (44_100, 1)])
    func beepsAtWholeSeconds(format: (rate: Int, channels: Int)) {
        let synth = VirtualMicrophoneSynth(sampleRate: format.rate, channelCount: format.channels)
        // From an arbitrary sample, so the expected onsets are not the buffer's round numbers.
        let start: Int64 = 12_345
        let samples = render(synth, from: start, frames: 5 * format.rate + 3_000)
        let onsets = VirtualSoundReader.findBeeps(samples: samples, sampleRate: format.rate, channels: format.channels)
        let expected = (1...5).map { Double($0) - Double(start) / Double(format.rate) }
        #expect(onsets.count == expected.count, "\(onsets)")
        for (onset, second) in zip(onsets, expected) {
            #expect(abs(onset - second) < 0.0005, "onset \(onset) expected \(second)")
            #expect(abs(onset - second) < 0.0001, "finer than the brief asks: \(onset) vs \(second)")
        }
    }

    @Test("a beep at the very first sample is found at 0; Int16 reads the same")
    func beepAtZero() {
        let synth = VirtualMicrophoneSynth()
        var ints = [Int16](repeating: 0, count: 3 * 48_000)
        ints.withUnsafeMutableBufferPointer {
            synth.render(startingAt: 0, frameCount: 3 * 48_000, into: $0.baseAddress!)
        }
        let onsets = VirtualSoundReader.findBeeps(samples: ints, sampleRate: 48_000, channels: 1)
        #expect(onsets.count == 3)
        for (onset, second) in zip(onsets, [0.0, 1, 2]) {
            #expect(abs(onset - second) < 0.0005, "\(onset)")
        }
    }

    @Test("no beeps are found in the tone alone, in silence, or in a 440 Hz tone at −6 dBFS")
    func noBeepsElsewhere() {
        let synth = VirtualMicrophoneSynth()
        let toneOnly = render(synth, from: 2_500, frames: 45_000)
        #expect(VirtualSoundReader.findBeeps(samples: toneOnly, sampleRate: 48_000, channels: 1).isEmpty)
        #expect(
            VirtualSoundReader.findBeeps(samples: [Float](repeating: 0, count: 48_000), sampleRate: 48_000, channels: 1)
                .isEmpty)
        let loud = (0..<48_000).map { Float(0.5 * sin(2 * Double.pi * 440 * Double($0) / 48_000)) }
        #expect(VirtualSoundReader.findBeeps(samples: loud, sampleRate: 48_000, channels: 1).isEmpty)
    }

    @Test("a beep delayed by a fraction of a millisecond is found delayed")
    func delayedBeep() {
        let synth = VirtualMicrophoneSynth()
        // 17 samples of silence in front: the onsets move 17 / 48000 s later.
        let samples = [Float](repeating: 0, count: 17) + render(synth, from: 40_000, frames: 3 * 48_000)
        let onsets = VirtualSoundReader.findBeeps(samples: samples, sampleRate: 48_000, channels: 1)
        #expect(onsets.count == 3)
        for (k, onset) in onsets.enumerated() {
            let expected = (Double(k + 1) * 48_000 - 40_000 + 17) / 48_000
            #expect(abs(onset - expected) < 0.0001, "\(onset) vs \(expected)")
        }
    }

    // MARK: Pictures

    @Test("linear brightness inverts the BT.709 transfer in both ranges")
    func linearBrightnessInverts() {
        for linear in stride(from: 0.0, through: 1.0, by: 0.01) {
            let encoded = VirtualColorEncoding.encoded(fromLinear: linear)
            #expect(abs(VirtualPictureReader.linearBrightness(luma: 16 + 219 * encoded) - linear) < 1e-9)
            #expect(abs(VirtualPictureReader.linearBrightness(luma: 255 * encoded, range: .full) - linear) < 1e-9)
        }
        #expect(VirtualPictureReader.linearBrightness(luma: 16) == 0)
        #expect(abs(VirtualPictureReader.linearBrightness(luma: 235) - 1) < 1e-12)
    }

    @Test("measurements on a hand-made plane")
    func handMadePlane() {
        // A 100 × 20 plane: level 50, with a 30.5-pixel run at 250 from x = 20.25 (ends blended).
        var pixels = [UInt8](repeating: 50, count: 100 * 20)
        for y in 0..<20 {
            for x in 21..<50 { pixels[y * 100 + x] = 250 }
            pixels[y * 100 + 20] = 200  // 75 % covered
            pixels[y * 100 + 50] = 200  // 75 % covered: 20.25 ..< 50.75
        }
        VirtualLumaPlane.with(pixels, width: 100, height: 20) { plane in
            let size = VirtualPictureReader.measureObjectSize(plane, row: 10, columns: 0..<100)
            #expect(size.map { abs($0 - 30.5) < 0.3 } == true, "\(String(describing: size))")
            let mean = VirtualPictureReader.measureMeanLuma(
                plane, in: VirtualPixelRect(x: 60, y: 0, width: 40, height: 20))
            #expect(mean == 50)
            #expect(
                VirtualPictureReader.measureMeanLuma(plane, in: VirtualPixelRect(x: 100, y: 0, width: 5, height: 5))
                    == nil)
            #expect(
                VirtualPictureReader.measureFocusSharpness(
                    plane, in: VirtualPixelRect(x: 0, y: 0, width: 100, height: 20)) == 150)
            #expect(!VirtualPictureReader.isFlashFrame(plane))
        }
        VirtualLumaPlane.with([UInt8](repeating: 255, count: 64 * 48), width: 64, height: 48) { plane in
            #expect(VirtualPictureReader.isFlashFrame(plane), "full-range white, as ffmpeg's gray output has it")
        }
    }

    @Test("the frame index reads in full range too")
    func fullRangeCode() {
        let frame = TestFrame(frameParameters(index: 0x0BAD_F00D), width: 640, height: 480)
        let full = frame.packedLuma.map { UInt8(min(255, max(0, (Double($0) - 16) * 255 / 219)).rounded()) }
        #expect(TestPlane(width: 640, height: 480, pixels: full).frameIndex == 0x0BAD_F00D)
    }
}
