// The encoders and the muxer of one AVAssetWriter, owned by the writer's serial queue.

import Foundation
import Synchronization
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo

/// The encoders and muxer behind an ``AVAssetWriter``: one track per input, in the order the inputs were added.
///
/// Threading: thread-bound to the writer's serial queue (it is stored in a ``QueueBound``); not `Sendable`.
final class WriterPipeline {
    /// One input's encoder and stream.
    final class Track {
        let stream: Int
        /// Released once flushed at the finish, so the encoder's frames are not held through the muxer's rewrite.
        private(set) var video: VideoEncoder?
        private(set) var audio: AudioEncoder?
        /// Resamples audio whose rate differs from the settings; made for the first buffer that needs it.
        var converter: AudioConverter?
        /// Converts pictures whose pixel format or size differs from the encoder's (a pixel buffer adaptor takes
        /// every format, as Apple's does); made for the first buffer that needs it.
        var pixelConverter: PixelBufferConverter?
        var isFlushed = false

        init(stream: Int, video: VideoEncoder?, audio: AudioEncoder?) {
            self.stream = stream
            self.video = video
            self.audio = audio
        }

        func releaseEncoders() {
            video = nil
            audio = nil
            converter = nil
            pixelConverter = nil
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

    /// Makes every encoder and the muxer with its streams; claims the file (created exclusively).
    init(
        path: String, fileType: Muxer.FileType, options: Muxer.Options,
        tracks settings: [(WriterTrackSettings, OSType, Muxer.TrackTransform)], encodedBytes: EncodedByteCounter
    ) throws(MediaCodecsError) {
        self.encodedBytes = encodedBytes
        var encoders: [(VideoEncoder?, AudioEncoder?)] = []
        for (setting, pixelFormat, _) in settings {
            switch setting {
            case .video(var configuration):
                configuration.pixelFormat = pixelFormat
                encoders.append((try VideoEncoder(configuration), nil))
            case .audio(let configuration):
                encoders.append((nil, try AudioEncoder(configuration)))
            }
        }
        let muxer = try Muxer(path: path, fileType: fileType, options: options)
        var tracks: [Track] = []
        do throws(MediaCodecsError) {
            for (index, (video, audio)) in encoders.enumerated() {
                let stream: Int
                if let video {
                    stream = try muxer.addVideoStream(from: video, transform: settings[index].2)
                } else if let audio {
                    stream = try muxer.addAudioStream(from: audio)
                } else {
                    continue
                }
                tracks.append(Track(stream: stream, video: video, audio: audio))
            }
        } catch {
            // The muxer made the file; nothing was written to it.
            unlink(path)
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
        try encoder.send(try Self.picture(pixelBuffer, for: encoder, track: track), presentationTime: time)
        try drain(track)
    }

    /// `pixelBuffer` in the pixel format and size `encoder` was made for, converted when it is not.
    private static func picture(_ pixelBuffer: CVPixelBuffer, for encoder: VideoEncoder, track: Track)
        throws(MediaCodecsError) -> CVPixelBuffer
    {
        let configuration = encoder.configuration
        let source = PixelBufferConverter.Format(of: pixelBuffer)
        let target = PixelBufferConverter.Format(
            pixelFormatType: configuration.pixelFormat, width: configuration.width, height: configuration.height)
        if source == target { return pixelBuffer }
        let matrix = configuration.matrix ?? YCbCrMatrix.of(pixelBuffer)
        if track.pixelConverter?.source != source || track.pixelConverter?.matrix != matrix {
            // The encoder holds a few pictures (x264's lookahead is off, but frame threads keep theirs): no limit.
            track.pixelConverter = try PixelBufferConverter(from: source, to: target, matrix: matrix)
        }
        return try track.pixelConverter!.convert(pixelBuffer)
    }

    /// Encodes one buffer of PCM of track `index`, resampled first when its rate is not the encoder's.
    func appendAudio(_ sampleBuffer: CMSampleBuffer, track index: Int) throws(MediaCodecsError) {
        let track = tracks[index]
        guard let encoder = track.audio, !track.isFlushed else { return }
        if let sessionEnd, sampleBuffer.presentationTimeStamp >= sessionEnd { return }
        let rate = encoder.configuration.sampleRate
        if let source = sampleBuffer.formatDescription?.audioStreamBasicDescription,
            Int(source.mSampleRate.rounded()) != rate
        {
            if track.converter == nil || track.converter?.source != AudioConverter.Format(source) {
                let channels = Int(source.mChannelsPerFrame)
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
        try muxer.finish()
    }

    private func drain(_ track: Track) throws(MediaCodecsError) {
        if let video = track.video {
            while case .packet(let packet) = try video.receivePacket() { try write(packet, stream: track.stream) }
        }
        if let audio = track.audio {
            while case .packet(let packet) = try audio.receivePacket() { try write(packet, stream: track.stream) }
        }
    }

    private func write(_ packet: EncodedPacket, stream: Int) throws(MediaCodecsError) {
        try muxer.write(packet, stream: stream)
        encodedBytes.count.add(Int64(packet.data.dataLength), ordering: .relaxed)
    }
}

/// Bytes of encoded media a writer has handed to its muxer: what a recording holds before the muxer flushes it to
/// disk at the next fragment. Thread safe (an atomic).
final class EncodedByteCounter: Sendable {
    let count = Atomic<Int64>(0)
    var value: Int64 { count.load(ordering: .relaxed) }
}
