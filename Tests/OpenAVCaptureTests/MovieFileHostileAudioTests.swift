// Sound files that claim what a `file:` microphone cannot play, opened through the public API: each must be refused
// with an error value that says why, before a session sizes anything from the claim. The first came from the audio
// file fuzz target (Fuzz/Corpus/audio/h-caf-alac-8323072-channels.bin): a CAF file whose ALAC track claims
// 8 323 072 channels became a microphone of that many, and the session connecting it made a level meter for each
// channel (gigabytes: an out-of-memory under AddressSanitizer).

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Testing

@Suite("file: microphones on hostile sound files")
struct MovieFileHostileAudioTests {
    /// A WAVE file of 16-bit PCM with `channels` channels at `sampleRate`, `frames` frames of silence.
    private func wave(channels: Int, sampleRate: Int, frames: Int, name: String) throws -> URL {
        try silentWave(channels: channels, sampleRate: sampleRate, frames: frames, name: name, suite: "hostile-audio-tests")
    }

    /// The error opening `url` as a movie-file device gives, nil when it opens.
    private func openingError(_ url: URL) -> AVError? {
        do {
            _ = try MovieFileDevice(url: url, clock: .freeRunning)
            return nil
        } catch {
            return error as? AVError
        }
    }

    @Test("a CAF file claiming 8 323 072 channels is refused with decoderNotFound (it became a microphone)")
    func eightMillionChannels() throws {
        // The fuzz input: its first byte picked the extension; the file follows.
        let input = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus/audio/h-caf-alac-8323072-channels.bin")
        let url = try scratchURL("8323072ch.caf", suite: "hostile-audio-tests")
        try Data(try Data(contentsOf: input).dropFirst()).write(to: url)
        let error = try #require(openingError(url))
        #expect(error.code == .decoderNotFound, "\(error)")
        #expect(error.localizedDescription.contains("8323072 channels"), "\(error.localizedDescription)")
    }

    @Test("a WAVE file of 9 channels is refused, one of 8 plays as an 8-channel microphone")
    func channelLimit() throws {
        let nine = try #require(openingError(try wave(channels: 9, sampleRate: 48_000, frames: 480, name: "9ch.wav")))
        #expect(nine.code == .decoderNotFound, "\(nine)")
        #expect(nine.localizedDescription.contains("9 channels"), "\(nine.localizedDescription)")
        let movie = try MovieFileDevice(url: try wave(channels: 8, sampleRate: 48_000, frames: 480, name: "8ch.wav"))
        let microphone = try #require(movie.microphone)
        let format = microphone.activeFormat.formatDescription.audioStreamBasicDescription
        #expect(format?.mChannelsPerFrame == 8, "\(String(describing: format))")
    }
}
