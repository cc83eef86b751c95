// TrackSampleReader: one track of a file as sample buffers, compressed as stored or decoded, within a time range.

import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo

/// Reads one stream of a file with its own `Demuxer` and gives its samples as `CMSampleBuffer`s, one at a time:
/// the packets as stored (passthrough), or decoded to pixel buffers of one format and size, or to linear PCM of
/// one format. The asset reader's outputs, the image generator and exports are built on it.
///
/// Time range: the demuxer seeks to the key frame at or before the range's start. Passthrough gives every packet
/// from there whose presentation time is before the range's end (a decoder needs the key frame; Apple's reader
/// also starts at a sync sample). Decoded video gives the frames shown during the range (a frame that begins
/// before the start and lasts past it is the first); decoded audio is cut to the range to the sample. Timestamps
/// are the file's, exactly as a writer stored them (the stream's time base).
///
/// Each reader opens the file itself, so outputs of one asset reader never wait for one another (Apple's outputs
/// share one demuxer and must be read in step; ours need not be).
///
/// Threading: thread-bound; use it from one thread at a time (callers hold a lock). Not `Sendable`.
final class TrackSampleReader {
    /// What the samples become.
    ///
    /// Threading: a value; `Sendable`.
    enum Decoding: Sendable {
        /// The stored packets, with a format description of the codec.
        case passthrough
        /// Pixel buffers of `pixelFormat`, scaled to `width`×`height` when given. `readOnly`: the consumer never
        /// writes into them (an encoder), so frames the decoder made in that format are lent without a copy.
        case video(pixelFormat: OSType, width: Int?, height: Int?, readOnly: Bool = false)
        /// Interleaved linear PCM in `format` (Int16, Int32 or Float32).
        case audio(AudioStreamBasicDescription)
    }

    let stream: Demuxer.Stream
    let timeRange: CMTimeRange
    private let demuxer: Demuxer
    private let decoding: Decoding
    private var videoDecoder: VideoDecoder?
    private var scaler: PixelBufferConverter?
    private var audioDecoder: AudioDecoder?
    private var audioConverter: AudioConverter?
    private var passthroughFormat: CMFormatDescription?
    private var ready: [CMSampleBuffer] = []
    private var demuxerEnded = false
    private var finished = false
    /// The most decoded pictures held by the caller at once before decoding fails with `outOfBuffers`.
    static let pictureLimit = 1024

    /// A reader of `source`'s samples within `timeRange` (`.invalid` or an infinite duration: to the end).
    ///
    /// - Throws: ``AVError`` `.fileFormatNotRecognized` when the file cannot be opened again, `.decoderNotFound`
    ///   when the codec has no decoder (or no passthrough description), `.unsupportedOutputSettings` when the
    ///   format asked cannot be produced, `.formatUnsupported` when an audio track to decode claims a channel count
    ///   or rate out of range.
    init(source: AVAssetTrack.Source, timeRange: CMTimeRange, decoding: Decoding) throws(AVError) {
        stream = source.stream
        self.decoding = decoding
        self.timeRange = timeRange
        do {
            demuxer = try Demuxer(path: source.path)
        } catch {
            throw AVError(
                .fileFormatNotRecognized, "\(source.path) cannot be opened again (\(error.message))",
                suggestion: "Keep the file in place while it is read.")
        }
        demuxer.readOnly(streams: [stream.index])
        do {
            try setUpCodecs()
            if timeRange.start.isNumeric, timeRange.start > .zero {
                try demuxer.seek(to: timeRange.start, stream: stream.index)
            }
        } catch let error as AVError {
            throw error
        } catch let error as MediaCodecsError {
            throw AVError(.decoderNotFound, "Reading \(stream.codecName) from \(source.path): \(error.message)")
        } catch {
            throw AVError(.unknown, "Reading \(source.path): \(error)")
        }
    }

    private func setUpCodecs() throws {
        switch decoding {
        case .passthrough:
            let track =
                stream.mediaType == .video
                ? try? DemuxerPacketSource.videoTrack(stream).get() : DemuxerPacketSource.audioTrack(stream)
            guard let format = track?.formatDescription else {
                throw AVError(
                    .decoderNotFound, "\(stream.codecName) has no sample description here",
                    suggestion: "Read it decoded (give output settings).")
            }
            passthroughFormat = format
        case .video(let pixelFormat, let width, let height, let readOnly):
            guard stream.mediaType == .video else {
                throw AVError(.unsupportedOutputSettings, "video settings for a \(stream.mediaType) track")
            }
            var configuration = VideoDecoder.Configuration(
                codecName: stream.codecName, extradata: stream.extradata, pixelFormat: pixelFormat,
                bufferLimit: Self.pictureLimit)
            configuration.threadCount = 2
            configuration.lendsFrames = readOnly
            videoDecoder = try VideoDecoder(configuration)
            let outWidth = width ?? stream.width
            let outHeight = height ?? stream.height
            if outWidth != stream.width || outHeight != stream.height {
                scaler = try PixelBufferConverter(
                    from: .init(pixelFormatType: pixelFormat, width: stream.width, height: stream.height),
                    to: .init(pixelFormatType: pixelFormat, width: outWidth, height: outHeight),
                    bufferLimit: Self.pictureLimit)
            }
        case .audio(let format):
            guard stream.mediaType == .audio else {
                throw AVError(.unsupportedOutputSettings, "audio settings for a \(stream.mediaType) track")
            }
            // The file's claim, checked before anything is sized from it (a fuzzed AAC track claiming 42 channels
            // once reached a trap here).
            guard stream.claimsDecodableAudio else {
                throw AVError(
                    .formatUnsupported,
                    "The \(stream.codecName) track claims \(stream.channelCount) channels at \(stream.sampleRate) Hz; "
                        + "audio is read with \(Demuxer.Stream.decodableAudioLimits)",
                    suggestion: "Check the file with ffprobe.")
            }
            audioDecoder = try AudioDecoder(
                .init(
                    codecName: stream.codecName, sampleRate: stream.sampleRate, channelCount: stream.channelCount,
                    extradata: stream.extradata))
            let decoded = AudioStreamBasicDescription.linearPCM(
                sampleRate: Float64(stream.sampleRate), channels: UInt32(stream.channelCount), bitsPerChannel: 32,
                isFloat: true)
            audioConverter = try AudioConverter(
                from: decoded, to: format, discontinuityTolerance: CMTime(value: 1, timescale: 100))
        }
    }

    /// Where reading stops: the range's end, or the track's (its edit list applied: an AAC track's last packet
    /// carries padding past the end the writer set).
    private var end: CMTime {
        var end = CMTime.positiveInfinity
        if timeRange.start.isNumeric, timeRange.duration.isNumeric { end = timeRange.end }
        if stream.mediaType == .audio, stream.duration.isNumeric {
            let start = stream.startTime.isNumeric ? stream.startTime : .zero
            end = min(end, start + stream.duration)
        }
        return end
    }

    /// The next sample buffer, or nil after the last.
    ///
    /// - Throws: ``AVError`` `.decodeFailed` when the file cannot be read or decoded further.
    func next() throws(AVError) -> CMSampleBuffer? {
        while true {
            if !ready.isEmpty { return ready.removeFirst() }
            if finished { return nil }
            do {
                try step()
            } catch let error as AVError {
                finished = true
                throw error
            } catch let error as MediaCodecsError {
                finished = true
                throw AVError(
                    .decodeFailed, "Reading \(stream.codecName) from \(demuxer.path) failed: \(error.message)",
                    suggestion: "Check the file with ffprobe.")
            } catch {
                finished = true
                throw AVError(.unknown, "Reading \(demuxer.path) failed: \(error)")
            }
        }
    }

    /// Reads one packet and turns it into whatever samples it completes.
    private func step() throws {
        guard !demuxerEnded else {
            try drainAtEnd()
            return
        }
        guard case .packet(let packet, let index) = try demuxer.readPacket() else {
            demuxerEnded = true
            try videoDecoder?.finish()
            try audioDecoder?.finish()
            return
        }
        guard index == stream.index else { return }
        switch decoding {
        case .passthrough:
            if packet.presentationTime.isNumeric, packet.presentationTime >= end {
                finished = true
                return
            }
            ready.append(try passthroughBuffer(packet))
        case .video:
            try videoDecoder?.send(
                packet.data, presentationTime: packet.presentationTime, decodeTime: packet.decodeTime,
                duration: packet.duration)
            try takeVideoFrames()
        case .audio:
            try audioDecoder?.send(packet.data, presentationTime: packet.presentationTime, duration: packet.duration)
            try takeAudioFrames()
        }
    }

    private func drainAtEnd() throws {
        switch decoding {
        case .passthrough: break
        case .video: try takeVideoFrames()
        case .audio:
            try takeAudioFrames()
            try audioConverter?.finish { ready.append($0) }
        }
        finished = true
    }

    private func passthroughBuffer(_ packet: EncodedPacket) throws -> CMSampleBuffer {
        let format = passthroughFormat
        if let asbd = format?.audioStreamBasicDescription, asbd.mFormatID == kAudioFormatLinearPCM,
            asbd.mBytesPerFrame > 0
        {
            let frames = packet.data.dataLength / Int(asbd.mBytesPerFrame)
            return try CMSampleBuffer(
                dataBuffer: packet.data, formatDescription: format, numSamples: frames,
                sampleTimings: [
                    CMSampleTimingInfo(
                        duration: CMTime(value: 1, timescale: Int32(asbd.mSampleRate)),
                        presentationTimeStamp: packet.presentationTime, decodeTimeStamp: .invalid)
                ], sampleSizes: [Int(asbd.mBytesPerFrame)])
        }
        let buffer = try CMSampleBuffer(
            dataBuffer: packet.data, formatDescription: format, numSamples: 1,
            sampleTimings: [
                CMSampleTimingInfo(
                    duration: packet.duration, presentationTimeStamp: packet.presentationTime,
                    decodeTimeStamp: packet.decodeTime)
            ], sampleSizes: [packet.data.dataLength])
        if !packet.isKeyFrame {
            // Ours: a buffer-level attachment (CoreMedia keeps it per sample; a reader's buffer holds one sample).
            CMSetAttachment(
                buffer, key: kCMSampleAttachmentKey_NotSync, value: true as CFTypeRef,
                attachmentMode: kCMAttachmentMode_ShouldNotPropagate)
        }
        return buffer
    }

    private func takeVideoFrames() throws {
        guard let decoder = videoDecoder else { return }
        while case .frame(let frame) = try decoder.receiveFrame() {
            let time = frame.presentationTime
            if time.isNumeric, time >= end {
                finished = true
                return
            }
            let start = timeRange.start.isNumeric ? timeRange.start : .zero
            if time.isNumeric, time < start {
                let shownUntil = frame.duration.isNumeric ? time + frame.duration : time
                if shownUntil <= start { continue }
            }
            let picture = try scaler?.convert(frame.pixelBuffer) ?? frame.pixelBuffer
            let description = try CMFormatDescription(imageBuffer: picture)
            ready.append(
                try CMSampleBuffer(
                    imageBuffer: picture, formatDescription: description,
                    sampleTiming: CMSampleTimingInfo(
                        duration: frame.duration, presentationTimeStamp: time, decodeTimeStamp: .invalid)))
        }
    }

    private func takeAudioFrames() throws {
        guard let decoder = audioDecoder, let converter = audioConverter else { return }
        while case .samples(let decoded) = try decoder.receive() {
            guard let cut = try trimmed(decoded) else {
                if decoded.presentationTimeStamp >= end { finished = true }
                continue
            }
            try converter.convert(cut) { ready.append($0) }
        }
    }

    /// `buffer` (interleaved Float32) cut to the time range; nil when none of it is inside.
    private func trimmed(_ buffer: CMSampleBuffer) throws -> CMSampleBuffer? {
        guard let asbd = buffer.formatDescription?.audioStreamBasicDescription else { return buffer }
        let rate = Int64(asbd.mSampleRate)
        let frames = Int64(buffer.numSamples)
        let time = buffer.presentationTimeStamp
        guard time.isNumeric, rate > 0 else { return buffer }
        let start = timeRange.start.isNumeric ? timeRange.start : .zero
        let first = max(
            0, min(frames, ((start - time).convertScale(Int32(rate), method: .roundHalfAwayFromZero)).value))
        var last = frames
        if end.isNumeric {
            last = max(0, min(frames, (end - time).convertScale(Int32(rate), method: .roundHalfAwayFromZero).value))
        }
        guard last > first else { return nil }
        if first == 0, last == frames { return buffer }
        return try buffer.copy(samplesIn: Int(first)..<Int(last))
    }
}
