// The encoders and the muxer of one AVAssetWriter, owned by the writer's serial queue.

import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// The encoders and muxer behind an ``AVAssetWriter``: one track per input, in the order the inputs were added.
///
/// Threading: thread-bound to the writer's serial queue (it is stored in a ``QueueBound``); not `Sendable`.
final class WriterPipeline {
    /// One input's encoder and stream.
    final class Track {
        let stream: Int
        let isVideo: Bool
        /// Released once flushed at the finish, so the encoder's frames are not held through the muxer's rewrite.
        private(set) var video: (any VideoPacketEncoder)?
        private(set) var audio: AudioEncoder?
        /// Converts audio whose rate or channel count differs from the settings; made for the first buffer that
        /// needs it.
        var converter: AudioConverter?
        /// Converts pictures whose pixel format or size differs from the encoder's (a pixel buffer adaptor takes
        /// every format, as Apple's does).
        var pictures = EncoderPictureConverter()
        /// Places pictures of another size by `AVVideoScalingModeResizeAspect`/`…Fill` (nil: stretched).
        var pictureFitter: PictureFitter?
        var isFlushed = false

        /// A passthrough video track (no encoder): its packets count as video for the size limits.
        var isCompressedVideo = false

        init(stream: Int, video: (any VideoPacketEncoder)?, audio: AudioEncoder?) {
            self.stream = stream
            self.isVideo = video != nil
            self.video = video
            self.audio = audio
        }

        func releaseEncoders() {
            video = nil
            audio = nil
            converter = nil
            pictures = EncoderPictureConverter()
        }
    }

    let muxer: Muxer
    let tracks: [Track]
    var sessionStart: CMTime?
    var sessionEnd: CMTime?
    /// Set after the first error: later work is skipped.
    var hasFailed = false
    /// Counts the encoded bytes handed to the muxer; the writer reads it from any thread.
    let encodedBytes: EncodedByteCounter
    /// The sizes the file must stay within (see ``write(_:stream:)``).
    let limits: FileSizeLimits
    /// Set when a packet did not fit within ``limits``: nothing at or after this time (the refused packet's) is
    /// written, so every track ends where the file stopped.
    private(set) var sealedAt: CMTime?
    /// Whether the muxer threw: the file as it stands is all there is (see ``keepPlayablePart()``).
    private(set) var muxerFailed = false
    /// Per audio stream, its last packet written: where it ends, how long it lasts and its size. A video packet
    /// is written only with room left for the audio still to come up to its end (see ``audioRoom(until:)``).
    private var lastAudio: [Int: (end: CMTime, duration: CMTime, bytes: Int)] = [:]

    /// Makes every encoder and the muxer with its streams; claims the file (created exclusively).
    init(
        path: String, fileType: Muxer.FileType, options: Muxer.Options,
        tracks settings: [(WriterTrackSettings, OSType, Muxer.TrackTransform)], displaySizes: [Int: CGSize] = [:],
        encodedBytes: EncodedByteCounter, limits: FileSizeLimits, segments: SegmentOutput? = nil
    ) throws(MediaCodecsError) {
        self.encodedBytes = encodedBytes
        self.limits = limits
        var encoders: [((any VideoPacketEncoder)?, AudioEncoder?)] = []
        for (setting, pixelFormat, _) in settings {
            switch setting {
            case .video(var configuration):
                configuration.pixelFormat = pixelFormat
                encoders.append((try VideoEncoderSelection.makeEncoder(configuration), nil))
            case .audio(let configuration):
                encoders.append((nil, try AudioEncoder(configuration)))
            case .passthrough:
                encoders.append((nil, nil))
            }
        }
        let muxer: Muxer
        if let segments {
            muxer = try Muxer(segmentsTo: segments, fileType: fileType, metadata: options.metadata)
        } else {
            muxer = try Muxer(path: path, fileType: fileType, options: options)
        }
        var tracks: [Track] = []
        do throws(MediaCodecsError) {
            for (index, (video, audio)) in encoders.enumerated() {
                let stream: Int
                if let video {
                    stream = try muxer.addVideoStream(from: video, transform: settings[index].2)
                } else if let audio {
                    stream = try muxer.addAudioStream(from: audio)
                } else if case .passthrough(let format) = settings[index].0 {
                    stream = try muxer.addStream(describedBy: format, transform: settings[index].2)
                } else {
                    continue
                }
                if let size = displaySizes[index], fileType.isMovie {
                    muxer.setDisplaySize(width: Double(size.width), height: Double(size.height), forStream: stream)
                }
                let track = Track(stream: stream, video: video, audio: audio)
                if case .passthrough(let format) = settings[index].0 {
                    track.isCompressedVideo = format.mediaType == .video
                }
                tracks.append(track)
            }
        } catch {
            // The muxer made the file; nothing was written to it.
            if segments == nil { WriterStorage.removeFile(path) }
            throw error
        }
        self.muxer = muxer
        self.tracks = tracks
    }

    /// Encodes one picture of track `index` at `time` (source clock) and writes what the encoder gives.
    func appendPixelBuffer(_ pixelBuffer: CVPixelBuffer, at time: CMTime, track index: Int) throws(MediaCodecsError) {
        let track = tracks[index]
        guard let encoder = track.video, !track.isFlushed else { return }
        if let sessionStart, time < sessionStart { return }
        if let sessionEnd, time >= sessionEnd { return }
        let configuration = encoder.configuration
        let picture: CVPixelBuffer
        if let fitter = track.pictureFitter,
            CVPixelBufferGetWidth(pixelBuffer) != configuration.width
                || CVPixelBufferGetHeight(pixelBuffer) != configuration.height
        {
            // Placed by the scaling mode rather than stretched.
            picture = try fitter.fit(
                pixelBuffer, matrix: EncoderPictureConverter.matrix(of: pixelBuffer, for: configuration))
        } else {
            picture = try track.pictures.picture(pixelBuffer, for: configuration)
        }
        try encoder.send(picture, presentationTime: time, forcingKeyFrame: false)
        try drain(track)
    }

    /// Writes a compressed frame of encoding track `index` as it is: a frame in the codec the track's encoder makes,
    /// whose every frame stands alone (Motion JPEG), so frames written this way and encoded ones mix in one track.
    func appendCompressedVideo(_ sampleBuffer: CMSampleBuffer, track index: Int) throws(MediaCodecsError) {
        let track = tracks[index]
        guard let encoder = track.video else { return }
        if let sessionStart, sampleBuffer.presentationTimeStamp < sessionStart { return }
        let codec = sampleBuffer.formatDescription?.mediaSubType
        guard encoder.configuration.codec == .jpeg, codec == .jpeg else {
            throw MediaCodecsError(
                .formatMismatch, while: "writing a compressed frame as it is",
                message:
                    "a \(codec.map { "\($0)" } ?? "non-video") frame cannot go into a \(encoder.configuration.codec) track"
            )
        }
        try appendCompressed(sampleBuffer, track: index)
    }

    /// Encodes one buffer of PCM of track `index`, converted first (libswresample, ``AudioConverter``) when its
    /// rate or channel count is not the encoder's. The converter's output keeps the input's timeline (each buffer
    /// stamped where its first sample was in the input), and what its filter still holds is flushed into the
    /// encoder when the track is finished (``flush(track:)``), so the file's sound lasts as long as what came.
    func appendAudio(_ sampleBuffer: CMSampleBuffer, track index: Int) throws(MediaCodecsError) {
        let track = tracks[index]
        guard let encoder = track.audio, !track.isFlushed else { return }
        if let sessionEnd, sampleBuffer.presentationTimeStamp >= sessionEnd { return }
        let rate = encoder.configuration.sampleRate
        let channels = encoder.configuration.channelCount
        if let source = sampleBuffer.formatDescription?.audioStreamBasicDescription,
            Int(source.mSampleRate.rounded()) != rate || Int(source.mChannelsPerFrame) != channels
        {
            if track.converter == nil || track.converter?.source != AudioConverter.Format(source) {
                // A source format that changed: what the old converter holds belongs before this buffer.
                if let old = track.converter {
                    var tail: [CMSampleBuffer] = []
                    try old.finish { tail.append($0) }
                    for buffer in tail { try encoder.send(buffer) }
                }
                let destination = AudioConverter.Format(sampleRate: rate, channelCount: channels, sample: .float32)
                track.converter = try AudioConverter(from: source, to: destination.audioStreamBasicDescription)
            }
            var converted: [CMSampleBuffer] = []
            try track.converter?.convert(sampleBuffer) { converted.append($0) }
            for buffer in converted { try encoder.send(buffer) }
        } else {
            try encoder.send(sampleBuffer)
        }
        try drain(track)
    }

    /// Writes one compressed sample of passthrough track `index` as it is, at its time (source clock).
    func appendCompressed(_ sample: CMSampleBuffer, track index: Int) throws(MediaCodecsError) {
        let track = tracks[index]
        guard let data = sample.dataBuffer, !track.isFlushed else { return }
        let time = sample.presentationTimeStamp
        if let sessionEnd, time >= sessionEnd { return }
        var duration = sample.duration
        if sample.numSamples > 1, let rate = sample.formatDescription?.audioStreamBasicDescription?.mSampleRate {
            duration = CMTime(value: Int64(sample.numSamples), timescale: Int32(rate))
        }
        let isKey = CMGetAttachment(sample, key: kCMSampleAttachmentKey_NotSync, attachmentModeOut: nil) == nil
        try write(
            EncodedPacket(
                data: data, presentationTime: time, decodeTime: sample.decodeTimeStamp, duration: duration,
                isKeyFrame: isKey),
            stream: track.stream)
    }

    /// Flushes track `index`'s encoder (its input was marked finished).
    func flush(track index: Int) throws(MediaCodecsError) {
        let track = tracks[index]
        guard !track.isFlushed, sessionStart != nil else { return }
        track.isFlushed = true
        if let converter = track.converter, let encoder = track.audio {
            var converted: [CMSampleBuffer] = []
            try converter.finish { converted.append($0) }
            for buffer in converted { try encoder.send(buffer) }
        }
        if let video = track.video { try video.finish() }
        if let audio = track.audio { try audio.finish() }
        try drain(track)
    }

    /// Flushes every encoder and finishes the file.
    func finish() throws(MediaCodecsError) {
        for index in tracks.indices { try flush(track: index) }
        // Every packet is in the muxer: the encoders (x264 keeps tens of megabytes of frames at 1080p) go before
        // the muxer rewrites a fragmented movie, which is the moment of the recording's peak memory otherwise.
        for track in tracks { track.releaseEncoders() }
        if sealedAt != nil, muxer.mediaBytes == 0 {
            // Not one packet fitted: a file without media is no recording.
            muxer.abandon()
            throw MediaCodecsError(
                .invalidState, while: "finishing \(muxer.path)",
                message: "no sample fitted within the size limit; the file was removed")
        }
        do throws(MediaCodecsError) {
            try muxer.finish()
        } catch {
            if !muxer.keptFragmentedFile { muxer.abandon() }
            throw error
        }
    }

    /// What a failed writer leaves at its URL.
    enum FileAfterFailure: Sendable, Equatable {
        /// Nothing playable had been written: no file.
        case removed
        /// What was written before the failure, finished: a complete movie (or the complete fragmented one).
        case complete
        /// The movie fragments complete on disk when the failure came (the muxer itself failed), or an audio file
        /// as written: playable, unfinished.
        case partial
    }

    /// After a failure: finishes the file with what was written when the muxer is sound (an encoder failed), or
    /// keeps the complete fragments on disk (see ``Muxer/abandon()``); removes a file with nothing playable.
    func keepPlayablePart() -> FileAfterFailure {
        for track in tracks { track.releaseEncoders() }
        if !muxerFailed, muxer.isWriting, muxer.mediaBytes > 0 {
            do throws(MediaCodecsError) {
                try muxer.finish()
                return .complete
            } catch {
                // The trailer or the rewrite failed: the fragments on disk, or the kept fragmented movie, below.
            }
        }
        if muxer.keptFragmentedFile { return .complete }
        return muxer.abandon() == .removed ? .removed : .partial
    }

    private func drain(_ track: Track) throws(MediaCodecsError) {
        if let video = track.video {
            while case .packet(let packet) = try video.receivePacket() { try write(packet, stream: track.stream) }
        }
        if let audio = track.audio {
            while case .packet(let packet) = try audio.receivePacket() { try write(packet, stream: track.stream) }
        }
    }

    /// Writes `packet` when it fits within ``limits``; the first that does not seals the file at its time.
    private func write(_ packet: EncodedPacket, stream: Int) throws(MediaCodecsError) {
        let time = packet.presentationTime.isNumeric ? packet.presentationTime : packet.decodeTime
        if let sealedAt, !(time < sealedAt) { return }
        let isVideo = tracks.contains { $0.stream == stream && ($0.isVideo || $0.isCompressedVideo) }
        if let (limit, reason) = limits.tightest(),
            Int64(
                muxer.finishedSizeBound(afterWriting: packet, stream: stream)
                    + (isVideo ? audioRoom(until: time + packet.duration) : 0)) > limit
        {
            // A later packet of another track may still come from before this one (the audio encoder's delay):
            // it is written if it fits, so the tracks end together.
            sealedAt = sealedAt.map { min($0, time) } ?? time
            limits.noteReached(reason, at: sealedAt ?? time)
            return
        }
        do throws(MediaCodecsError) {
            try muxer.write(packet, stream: stream)
        } catch {
            muxerFailed = true
            throw error
        }
        encodedBytes.count.add(Int64(packet.data.dataLength), ordering: .relaxed)
        if !isVideo, time.isNumeric, packet.duration.isNumeric, packet.duration > .zero {
            lastAudio[stream] = (time + packet.duration, packet.duration, packet.data.dataLength)
        }
    }

    /// The bytes the audio packets still to come up to `end` will take, judged by each audio stream's last packet:
    /// the audio encoder delivers later than the video encoder, so without this room a recording stopped by a
    /// video frame could lose the sound of its last frames.
    private func audioRoom(until end: CMTime) -> Int {
        guard end.isNumeric else { return 0 }
        var room = 0
        for (_, last) in lastAudio where last.end < end {
            let packets = ((end - last.end).seconds / last.duration.seconds).rounded(.up)
            room += Int(packets) * (last.bytes + 40)  // 40: its index entries, and a timing change
        }
        return room
    }
}

/// Bytes of encoded media a writer has handed to its muxer: what a recording holds before the muxer flushes it to
/// disk at the next fragment. Thread safe (an atomic).
final class EncodedByteCounter: Sendable {
    let count = Atomic<Int64>(0)
    var value: Int64 { count.load(ordering: .relaxed) }
}

/// The sizes a writer's file must stay within, and which one stopped it. The file output sets them (the disk budget
/// as free space changes); the writer's pipeline checks every packet against the tighter before writing it.
///
/// Thread safe: atomics, and a mutex for the time the file stopped.
final class FileSizeLimits: Sendable {
    /// Which limit stopped the file.
    enum Reason: Int, Sendable {
        /// ``maximumFileBytes``: the recording's `maxRecordedFileSize`.
        case fileSize = 1
        /// ``diskBudget``: the volume's free space, less what it must keep.
        case disk = 2
    }

    /// The most bytes the finished file may have; `Int64.max` for no limit.
    let maximumFileBytes = Atomic<Int64>(.max)
    /// The most bytes the file may grow to before the volume's free space would fall below what it must keep;
    /// `Int64.max` for no limit.
    let diskBudget = Atomic<Int64>(.max)
    private let reached = Atomic<Int>(0)
    private let stopTime = Mutex<CMTime>(.invalid)

    /// The tighter limit and its reason, or nil when neither is set.
    func tightest() -> (Int64, Reason)? {
        let size = maximumFileBytes.load(ordering: .relaxed)
        let disk = diskBudget.load(ordering: .relaxed)
        guard size < .max || disk < .max else { return nil }
        return size <= disk ? (size, .fileSize) : (disk, .disk)
    }

    /// The limit that stopped the file, if one did.
    var reason: Reason? { Reason(rawValue: reached.load(ordering: .acquiring)) }
    /// The time (the writer's source time) from which nothing was written; invalid while no limit stopped it.
    var stoppedAt: CMTime { stopTime.withLock { $0 } }

    func noteReached(_ reason: Reason, at time: CMTime) {
        stopTime.withLock { $0 = time }
        _ = reached.compareExchange(expected: 0, desired: reason.rawValue, ordering: .acquiringAndReleasing)
    }
}
