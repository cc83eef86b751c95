// Passthrough export of a composition with a scaled edit keeps its sound: the video packets copied (H.264, every
// frame, no re-encode), the sound re-encoded as AAC, stretched with the pitch kept (spectral) or halved (varispeed).

import Foundation
import OpenAVCapture
import OpenCoreMedia
import TestSupport
import Testing

@Suite("Passthrough export of a scaled edit keeps the sound", .serialized)
struct PassthroughSlowSoundTests {
    @Test(
        "0.5 … 1.5 s slowed 2×: video copied, sound 3 s long at 440 Hz (spectral) or 220 Hz slowed (varispeed)",
        arguments: [AVAudioTimePitchAlgorithm.spectral, .varispeed])
    func slowedSound(pitch: AVAudioTimePitchAlgorithm) async throws {
        guard MediaTool.available(for: "PassthroughSlowSoundTests") else { return }
        let source = AVURLAsset(url: try PlayerMovie.url())
        let composition = AVMutableComposition()
        try await composition.insertTimeRange(
            CMTimeRange(start: .zero, duration: source.duration), of: source, at: .zero)
        let slowed = CMTimeRange(start: CMTime(value: 1, timescale: 2), duration: CMTime(value: 1, timescale: 1))
        composition.scaleTimeRange(slowed, toDuration: CMTime(value: 2, timescale: 1))
        let url = try await export(
            composition, preset: AVAssetExportPresetPassthrough, name: "slow-sound-\(pitch.rawValue).mov"
        ) { $0.audioTimePitchAlgorithm = pitch }
        #expect(try variableRateDecodeErrors(url).isEmpty)
        let probe = try FFprobeReport(url)
        #expect(probe.stream("video")?["codec_name"] as? String == "h264")
        #expect(probe.stream("audio")?["codec_name"] as? String == "aac")
        // Every source frame, in order (the corner block's code, as the player tests read it).
        let frames = try decodedGreyBlocks(url)
        #expect(frames == Array(0..<PlayerMovie.frames), "\(frames)")
        let sound = try decodedSound(url)
        let seconds = Double(sound.count) / 48_000
        #expect(abs(seconds - 3) < 0.05, "\(seconds) s of sound")
        let inSlowed = zeroCrossingFrequency(sound[Int(0.7 * 48_000)..<Int(2.3 * 48_000)], sampleRate: 48_000)
        let after = zeroCrossingFrequency(sound[Int(2.6 * 48_000)..<Int(2.9 * 48_000)], sampleRate: 48_000)
        let expected = pitch == .varispeed ? 220.0 : 440.0
        #expect(abs(inSlowed - expected) < expected * 0.01, "\(pitch.rawValue): \(inSlowed) Hz in the slowed part")
        #expect(abs(after - 440) < 4.4, "\(after) Hz after it")
    }

    /// The frame codes of every decoded frame (PlayerMovie's grey corner block).
    func decodedGreyBlocks(_ url: URL) throws -> [Int] {
        let decoded = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-i", url.path, "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "rawvideo",
            "-pix_fmt", "yuv420p", "-",
        ])
        try #require(decoded.status == 0, "ffmpeg: \(decoded.error)")
        let bytes = [UInt8](decoded.output)
        // The Y' plane as stored (no range conversion: the codes run past 235), then the chroma planes.
        let size = 320 * 240 * 3 / 2
        return stride(from: 0, to: bytes.count - size + 1, by: size).map { start in
            var sum = 0
            for y in 16..<48 { for x in 16..<48 { sum += Int(bytes[start + y * 320 + x]) } }
            return Int(((Double(sum) / 1024 - 16) / 4).rounded())
        }
    }
}
