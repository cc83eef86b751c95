// Files that claim what the reader cannot decode, read through the public API: each must end in an error value
// (or be read), never a trap. The first came from the demuxer fuzz target (Fuzz/Corpus/demuxer/
// g-aac-42-channels.bin): an AAC track claiming 42 channels made AVAssetReaderTrackOutput's init trap.

import Foundation
import OpenAVCapture
import Testing

@Suite("AVAssetReader on hostile files")
struct AVAssetReaderHostileFileTests {
    /// A WAVE file of 16-bit PCM with `channels` channels at `sampleRate`, `frames` frames of silence.
    private func wave(channels: Int, sampleRate: Int, frames: Int, name: String) throws -> URL {
        try silentWave(channels: channels, sampleRate: sampleRate, frames: frames, name: name, suite: "hostile-file-tests")
    }

    @Test("a 5 KB fragment claiming 83 886 080 samples: the asset fails to load with an error value")
    func hugeIndexClaim() async throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/Findings/demuxer-oom-ffmpeg-trun.bin")
        let copy = try scratchURL("huge-index.mp4", suite: "hostile-file-tests")
        try FileManager.default.copyItem(at: url, to: copy)
        let asset = AVURLAsset(url: copy)
        // libavformat sizes an index of 2 139 095 072 bytes from the claim (virtual memory, never touched: the
        // process stays at its usual size), then finds the data invalid.
        let error = await #expect(throws: AVError.self) { _ = try await asset.load(.tracks) }
        #expect(error?.code == .fileFormatNotRecognized, "\(String(describing: error))")
        #expect(asset.tracks.isEmpty)
    }

    @Test("a track claiming 42 channels: startReading fails with formatUnsupported (it trapped in the output's init)")
    func fortyTwoChannels() throws {
        let asset = AVURLAsset(url: try wave(channels: 42, sampleRate: 48_000, frames: 480, name: "42ch.wav"))
        let track = try #require(asset.tracks.first { $0.mediaType == .audio })
        let reader = try AVAssetReader(asset: asset)
        let output = AVAssetReaderTrackOutput(track: track, outputSettings: [AVFormatIDKey: kAudioFormatLinearPCM])
        reader.add(output)
        #expect(!reader.startReading())
        #expect(reader.status == .failed)
        let error = try #require(reader.error as? AVError)
        #expect(error.code == .formatUnsupported)
        let description = error.userInfo[NSLocalizedDescriptionKey] as? String ?? ""
        #expect(description.contains("42 channels"), "\(description)")
        #expect(output.copyNextSampleBuffer() == nil)
    }

    @Test("asking for 2 channels does not help: the file's 42 are refused with the same error")
    func fortyTwoChannelsAskedForStereo() throws {
        let asset = AVURLAsset(url: try wave(channels: 42, sampleRate: 48_000, frames: 480, name: "42ch-stereo.wav"))
        let track = try #require(asset.tracks.first { $0.mediaType == .audio })
        let reader = try AVAssetReader(asset: asset)
        reader.add(
            AVAssetReaderTrackOutput(
                track: track, outputSettings: [AVFormatIDKey: kAudioFormatLinearPCM, AVNumberOfChannelsKey: 2]))
        #expect(!reader.startReading())
        #expect((reader.error as? AVError)?.code == .formatUnsupported)
    }

    @Test("a 4 kHz track (below the 8 kHz an output may ask for) is read at its own rate (it trapped too)")
    func lowRateTrackIsRead() throws {
        let asset = AVURLAsset(url: try wave(channels: 1, sampleRate: 4_000, frames: 4_000, name: "4khz.wav"))
        let track = try #require(asset.tracks.first { $0.mediaType == .audio })
        let reader = try AVAssetReader(asset: asset)
        let output = AVAssetReaderTrackOutput(track: track, outputSettings: [AVFormatIDKey: kAudioFormatLinearPCM])
        reader.add(output)
        #expect(reader.startReading(), "\(String(describing: reader.error))")
        var frames = 0
        while let sample = output.copyNextSampleBuffer() {
            #expect(sample.formatDescription?.audioStreamBasicDescription?.mSampleRate == 4_000)
            frames += sample.numSamples
        }
        #expect(reader.status == .completed, "\(String(describing: reader.error))")
        #expect(frames == 4_000)
    }
}
