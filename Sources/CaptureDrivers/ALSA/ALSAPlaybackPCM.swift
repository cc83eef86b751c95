import CALSA
import SystemPackage

/// One open ALSA playback PCM (`snd_pcm_t` opened for `SND_PCM_STREAM_PLAYBACK`), its only owner: closed
/// (`snd_pcm_close`) when it goes away. Takes interleaved native-endian Float32 frames at one rate and channel count
/// (a `plug` PCM such as `default` converts to what the card takes; a plain PCM must take Float32 itself).
///
/// Writes block until the device has room (blocking mode), so a writer is paced by the sound card; PCMs with no
/// pacing of their own (ALSA's `file` plugin over `null`, used by tests) accept everything at once, and the writer
/// paces itself. An underrun (`EPIPE`) is recovered by preparing the PCM again and writing on.
///
/// Wraps `snd_pcm_open`, `snd_pcm_set_params`, `snd_pcm_writei`, `snd_pcm_prepare`, `snd_pcm_drop`,
/// `snd_pcm_drain` and `snd_pcm_close`. Failures are the `Errno` libasound returned (negated).
///
/// Threading: thread-bound; opened on any thread and then used by one thread at a time (the player's audio thread).
/// `@unchecked Sendable` for that one hand-off.
package final class ALSAPlaybackPCM: @unchecked Sendable {
    private let handle: OpaquePointer
    /// The PCM's name, as opened (`default`, `file:FILE=/tmp/out.raw,FORMAT=raw`).
    package let name: String
    package let sampleRate: Int
    package let channelCount: Int

    /// Opens `name` for playback of Float32 interleaved frames at `sampleRate` and `channelCount`, with about
    /// `latencyMicroseconds` of buffering.
    ///
    /// - Throws: `ENOENT` for an unknown name or no sound card, `EBUSY` when another process holds the device,
    ///   `EINVAL` when the PCM cannot take the format.
    package init(name: String, sampleRate: Int, channelCount: Int, latencyMicroseconds: UInt32 = 100_000) throws(Errno)
    {
        var pcm: OpaquePointer?
        try alsaCheck(snd_pcm_open(&pcm, name, SND_PCM_STREAM_PLAYBACK, 0))
        guard let pcm else { throw Errno.noSuchFileOrDirectory }
        // snd_pcm_set_params: access, format, channels, rate, and whether ALSA may resample (soft_resample: 1, so a
        // card without the file's rate still plays it through a plug PCM).
        let result = snd_pcm_set_params(
            pcm, SND_PCM_FORMAT_FLOAT_LE, SND_PCM_ACCESS_RW_INTERLEAVED, UInt32(channelCount), UInt32(sampleRate), 1,
            latencyMicroseconds)
        if result < 0 {
            snd_pcm_close(pcm)
            throw Errno(rawValue: -result)
        }
        handle = pcm
        self.name = name
        self.sampleRate = sampleRate
        self.channelCount = channelCount
    }

    deinit {
        snd_pcm_close(handle)
    }

    /// Writes interleaved frames, blocking until the device took them all; an underrun is recovered
    /// (`snd_pcm_prepare`) and the rest written.
    ///
    /// - Throws: `ENODEV` when the device is gone, or what `snd_pcm_prepare` returned when the PCM cannot recover.
    package func write(_ samples: [Float]) throws(Errno) {
        guard channelCount > 0 else { return }
        var frames = samples.count / channelCount
        var offset = 0
        while frames > 0 {
            let written = samples.withUnsafeBufferPointer { buffer in
                snd_pcm_writei(handle, buffer.baseAddress! + offset * channelCount, snd_pcm_uframes_t(frames))
            }
            if written == -Int(EPIPE) || written == -Int(EINTR) || written == -Int(ESTRPIPE) {
                try alsaCheck(snd_pcm_prepare(handle))
                continue
            }
            let count = try alsaCheck(written)
            frames -= count
            offset += count
        }
    }

    /// Throws away what is buffered and not yet played (`snd_pcm_drop`), ready to write again: a pause or a seek.
    package func discardBuffered() {
        snd_pcm_drop(handle)
        snd_pcm_prepare(handle)
    }

    /// Plays what is buffered to the end (`snd_pcm_drain`), then is ready to write again.
    package func drain() {
        snd_pcm_drain(handle)
        snd_pcm_prepare(handle)
    }
}
