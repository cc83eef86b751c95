import Dispatch
import Foundation
import OpenAVCapture
import Synchronization
import Testing

/// snd-aloop's capture side through the public API only, where it exists (the VM of `make test-kernel`, which sets
/// `OPENAV_DEVICES=all`); elsewhere this skips, saying why.
enum Loopback {
    /// The microphone discovery lists for `hw:CARD=Loopback,DEV=1` (ALSA's capture side of the loopback).
    static var microphone: AVCaptureDevice? {
        AVCaptureDevice.DiscoverySession(deviceTypes: [.microphone], mediaType: .audio, position: .unspecified)
            .devices.first { $0.uniqueID == "alsa:hw:CARD=Loopback,DEV=1" }
    }
}

/// Collects the left channel of what an audio data output delivers.
private final class SoundCollector: NSObject, AVCaptureAudioDataOutputSampleBufferDelegate, @unchecked Sendable {
    private let state = Mutex<(samples: [Float], times: [CMTime], rate: Double)>(([], [], 0))
    private let arrivals = DispatchSemaphore(value: 0)

    func captureOutput(_ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        guard let asbd = sampleBuffer.formatDescription?.audioStreamBasicDescription else { return }
        let left = leftChannel(of: sampleBuffer)
        state.withLock { state in
            state.samples += left
            state.times.append(sampleBuffer.presentationTimeStamp)
            state.rate = asbd.mSampleRate
        }
        arrivals.signal()
    }

    var samples: [Float] { state.withLock { $0.samples } }
    var times: [CMTime] { state.withLock { $0.times } }
    var rate: Double { state.withLock { $0.rate } }

    func wait(forSamples count: Int, timeout: Double) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while state.withLock({ $0.samples.count }) < count {
            if arrivals.wait(timeout: deadline) == .timedOut { return state.withLock { $0.samples.count } >= count }
        }
        return true
    }
}

@Suite(
    .serialized,
    .enabled(
        if: Loopback.microphone != nil,
        "no snd-aloop microphone in discovery: this runs in the VM (`make test-kernel`) with OPENAV_DEVICES=all"))
struct ALSASessionKernelTests {
    @Test func aSessionRecordsATonePlayedIntoTheLoopback() throws {
        let microphone = try #require(Loopback.microphone)
        #expect(microphone.hasMediaType(.audio) && microphone.deviceType == .microphone)
        // aplay plays 3 s of a 1 kHz sine into the loopback's substream 0, which the microphone's plughw captures.
        var tone = [Int16](repeating: 0, count: 3 * 48_000)
        for index in tone.indices {
            tone[index] = Int16((sin(2 * Double.pi * 1_000 * Double(index) / 48_000) * 16_384).rounded())
        }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("openav-session-tone.raw")
        try tone.withUnsafeBytes { try Data($0).write(to: url) }
        #expect(
            Vivid.shell("aplay -q -D hw:Loopback,0,0 -f S16_LE -r 48000 -c 1 -t raw '\(url.path)' >/dev/null 2>&1 &")
                == 0)
        // The loopback's two sides must agree on a format: let the playback set it before the microphone opens.
        let status = "/proc/asound/Loopback/pcm0p/sub0/status"
        _ = waitUntil(timeout: 5) { (try? String(contentsOfFile: status, encoding: .utf8))?.contains("RUNNING") == true }
        try #require(
            (try? String(contentsOfFile: status, encoding: .utf8))?.contains("RUNNING") == true, "aplay did not start")

        let session = AVCaptureSession()
        let input = try AVCaptureDeviceInput(device: microphone)
        #expect(session.canAddInput(input))
        session.addInput(input)
        let output = AVCaptureAudioDataOutput()
        let sound = SoundCollector()
        output.setSampleBufferDelegate(sound, queue: DispatchQueue(label: "loopback sound"))
        session.addOutput(output)
        session.startRunning()
        let heard = sound.wait(forSamples: 48_000, timeout: 15)
        session.stopRunning()
        try #require(heard, "\(sound.samples.count) samples")

        let loud = sound.samples.drop { abs($0) < 0.1 }.prefix(24_000)
        try #require(loud.count == 24_000, "half a second of the tone")
        var crossings = 0
        let samples = Array(loud)
        for index in 1..<samples.count where samples[index - 1] < 0 && samples[index] >= 0 { crossings += 1 }
        let hertz = Double(crossings) / (Double(samples.count) / sound.rate)
        #expect(abs(hertz - 1_000) < 5, "captured \(hertz) Hz at \(sound.rate) Hz")
        let times = sound.times
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "timestamps in order")
        let now = CMClock.hostTimeClock.time.seconds
        #expect(abs(now - times.last!.seconds) < 1, "stamped on the host clock")
    }
}
