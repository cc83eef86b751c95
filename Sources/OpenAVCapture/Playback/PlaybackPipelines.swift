// PlaybackPipelines: the player's video and audio threads: decode from the clock's time, hand out on time.

import CaptureDrivers
import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo

/// The two threads that play an item: video frames decoded (the asset reader's track reading, so a composition's
/// edits play too) and handed to the player's layers and the item's video outputs when the clock reaches them;
/// sound decoded to Float32, stretched for the rate (``AudioTimeStretcher``: `atempo` keeps the pitch for
/// `.spectral` and `.timeDomain`, `.varispeed` resamples) and written to the ALSA device a little ahead of the clock.
///
/// Video: the first frame of a request is shown at once (after a seek, the frame at the sought time: the preroll);
/// later frames wait for their time, and a frame whose successor is already due is skipped (counted), so a slow
/// machine shows fewer frames but never falls behind, and the last frame is always shown.
///
/// Sound with no device (none configured, none that opens) is decoded, stretched and paced all the same, and
/// dropped: the headless player still decodes and clocks.
///
/// Threading: each `run…` method is one thread's whole life; they share only the engine (its lock) and the sink.
final class PlaybackPipelines: @unchecked Sendable {
    let engine: PlaybackEngine
    let audio: PlayerAudioOutput

    init(engine: PlaybackEngine, audio: PlayerAudioOutput) {
        self.engine = engine
        self.audio = audio
    }

    // MARK: Video

    func runVideo() {
        var seen = 0
        while let job = engine.nextJob(.video, after: seen) {
            seen = job.generation
            do {
                try playVideo(job)
            } catch {
                engine.prerolled(job.generation)
                engine.fail(job.item, error)
            }
        }
    }

    private func playVideo(_ job: PlaybackEngine.Job) throws(AVError) {
        guard let track = job.item.asset.tracks(withMediaType: .video).first else {
            engine.prerolled(job.generation)
            return
        }
        let producer = try track.makeSampleProducer(
            timeRange: CMTimeRange(start: job.start, duration: .positiveInfinity),
            decoding: .video(pixelFormat: job.item.videoPixelFormat, width: nil, height: nil),
            pitch: job.item.audioTimePitchAlgorithm)
        // At (or past) the video's end nothing is shown from there on: the last frame stays on screen, as Apple's.
        var first = try producer.next()
        if first == nil { first = try lastFrame(of: track, before: job.start, job) }
        guard let frame = first else {
            engine.prerolled(job.generation)
            return
        }
        present(frame, of: job.item)
        engine.prerolled(job.generation)
        var upcoming = try producer.next()
        while let following = upcoming, engine.isCurrent(.video, job.generation) {
            guard engine.waitUntil(following.presentationTimeStamp, .video, job.generation) else { return }
            upcoming = try producer.next()
            // Skipped when its successor is due already (the machine is behind); the last frame is always shown.
            if let next = upcoming, next.presentationTimeStamp <= engine.now() {
                job.item.countSkippedFrame()
                continue
            }
            present(following, of: job.item)
        }
    }

    /// The last frame that starts before `time` (reading from a second before it).
    private func lastFrame(
        of track: AVAssetTrack, before time: CMTime, _ job: PlaybackEngine.Job
    ) throws(AVError)
        -> CMSampleBuffer?
    {
        guard time > .zero else { return nil }
        let from = max(.zero, time - CMTime(value: 1, timescale: 1))
        let producer = try track.makeSampleProducer(
            timeRange: CMTimeRange(start: from, duration: time - from),
            decoding: .video(pixelFormat: job.item.videoPixelFormat, width: nil, height: nil),
            pitch: job.item.audioTimePitchAlgorithm)
        var last: CMSampleBuffer?
        while let frame = try producer.next() { last = frame }
        return last
    }

    private func present(_ frame: CMSampleBuffer, of item: AVPlayerItem) {
        item.present(frame)
        for layer in engine.liveLayers() { layer.present(frame) }
    }

    // MARK: Audio

    func runAudio() {
        var seen = 0
        while let job = engine.nextJob(.audio, after: seen) {
            seen = job.generation
            audio.discardBuffered()
            guard job.rate > 0 else { continue }
            do {
                try playAudio(job)
            } catch {
                engine.fail(job.item, error)
            }
        }
    }

    private func playAudio(_ job: PlaybackEngine.Job) throws(AVError) {
        guard let track = job.item.asset.tracks(withMediaType: .audio).first,
            let format = (track.formatDescriptions.first as? CMFormatDescription)?.audioStreamBasicDescription
        else { return }
        let rate = Int(format.mSampleRate)
        let channels = Int(format.mChannelsPerFrame)
        let floatFormat = AudioStreamBasicDescription.linearPCM(
            sampleRate: format.mSampleRate, channels: format.mChannelsPerFrame, bitsPerChannel: 32, isFloat: true)
        let producer = try track.makeSampleProducer(
            timeRange: CMTimeRange(start: job.start, duration: .positiveInfinity), decoding: .audio(floatFormat),
            pitch: job.item.audioTimePitchAlgorithm)
        var stretcher: AudioTimeStretcher?
        if abs(job.rate - 1) > 1e-9 {
            do {
                stretcher = try AudioTimeStretcher(
                    sampleRate: rate, channelCount: channels, factor: 1 / job.rate,
                    pitch: job.item.audioTimePitchAlgorithm == .varispeed ? .varispeed : .kept)
            } catch {
                throw AVError(.decodeFailed, "cannot play sound at rate \(job.rate): \(error.message)")
            }
        }
        audio.prepare(sampleRate: rate, channelCount: channels)
        // Output frames written so far: the item's time they reach is the start plus their count × rate.
        var written: Int64 = 0
        func deliver(_ samples: [Float]) -> Bool {
            guard !samples.isEmpty else { return true }
            let media =
                job.start
                + CMTime(seconds: Double(written) * job.rate / Double(rate), preferredTimescale: 1_000_000_000)
            // Written a little ahead of the clock, so the device never runs dry between writes.
            guard engine.waitUntil(media, lead: 0.1, .audio, job.generation) else { return false }
            written += Int64(samples.count / channels)
            audio.write(samples, gain: engine.gain)
            return true
        }
        while engine.isCurrent(.audio, job.generation) {
            guard let buffer = try producer.next() else {
                if let stretcher {
                    do { _ = deliver(try stretcher.finish()) } catch {}
                }
                audio.drain()
                return
            }
            var samples: [Float] = []
            buffer.dataBuffer?.withUnsafeBytes { bytes in
                samples = Array(bytes.bindMemory(to: Float.self).prefix(buffer.numSamples * channels))
            }
            if let stretcher {
                do {
                    samples = try samples.withUnsafeBufferPointer { pointer throws(MediaCodecsError) in
                        try stretcher.process(pointer, frameCount: buffer.numSamples)
                    }
                } catch {
                    throw AVError(.decodeFailed, "stretching sound failed: \(error.message)")
                }
            }
            guard deliver(samples) else { return }
        }
    }
}

/// Where a player's sound goes: an ALSA playback PCM, or nowhere (headless).
///
/// Threading: thread safe (`@unchecked Sendable`): a lock guards the device, which the audio thread alone writes.
final class PlayerAudioOutput: @unchecked Sendable {
    private let lock = NSLock()
    /// The ALSA PCM name asked for; nil is `default`.
    private var deviceName: String?
    private var pcm: ALSAPlaybackPCM?
    private var failure: String?
    private var opened: (name: String?, rate: Int, channels: Int)?

    /// Why sound is not heard, once the player tried to open its device; nil while it plays to a device.
    var unavailableReason: String? { lock.withLock { failure } }

    var device: String? {
        get { lock.withLock { deviceName } }
        set {
            lock.withLock {
                deviceName = newValue
                opened = nil
                pcm = nil
            }
        }
    }

    /// Opens the device for this format unless it is open for it already; failing leaves the output headless.
    func prepare(sampleRate: Int, channelCount: Int) {
        lock.withLock {
            if let opened, opened.name == deviceName, opened.rate == sampleRate, opened.channels == channelCount {
                return
            }
            pcm = nil
            opened = (deviceName, sampleRate, channelCount)
            let name = deviceName ?? "default"
            do {
                pcm = try ALSAPlaybackPCM(name: name, sampleRate: sampleRate, channelCount: channelCount)
                failure = nil
            } catch {
                failure =
                    "the ALSA device \(name) cannot play \(sampleRate) Hz × \(channelCount) (\(error)); "
                    + "sound is not played"
            }
        }
    }

    func write(_ samples: [Float], gain: Float) {
        guard let pcm = lock.withLock({ pcm }) else { return }
        var scaled = samples
        if gain != 1 { for index in scaled.indices { scaled[index] *= gain } }
        do {
            try pcm.write(scaled)
        } catch {
            lock.withLock {
                failure = "the ALSA device \(pcm.name) failed (\(error)); sound is not played"
                self.pcm = nil
            }
        }
    }

    func discardBuffered() { lock.withLock { pcm }?.discardBuffered() }
    func drain() { lock.withLock { pcm }?.drain() }
}
