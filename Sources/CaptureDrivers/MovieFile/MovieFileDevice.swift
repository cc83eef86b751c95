import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// How a movie-file device paces its packets.
///
/// Value type; safe to use from any thread.
package enum MoviePacing: Sendable, Hashable {
    /// Each packet when the host clock reaches its time in the file: a live camera.
    case realTime
    /// As fast as the sink takes them, stamped with their file times: device time runs ahead of host time.
    case freeRunning
}

/// Where file time 0 falls on the host clock for the camera and microphone of one file, so that they play in sync
/// whichever starts first: the first to start sets it, and it is forgotten when both have stopped.
///
/// Threading: thread safe (a mutex).
final class MoviePlaybackClock: Sendable {
    private struct State {
        var anchor: Int64?
        var users = 0
    }

    private let state = Mutex(State())

    /// Host nanoseconds of file time 0, set now if no track of the file is playing.
    func join() -> Int64 {
        state.withLock { state in
            state.users += 1
            if let anchor = state.anchor { return anchor }
            let anchor = CMClock.hostNanosecondsNow()
            state.anchor = anchor
            return anchor
        }
    }

    func leave() {
        state.withLock { state in
            state.users = max(0, state.users - 1)
            if state.users == 0 { state.anchor = nil }
        }
    }
}

/// One track of a movie file played as a live device: the picture as a camera, the sound as a microphone.
///
/// The device delivers what the file holds, as a camera delivers what its sensor gives: compressed packets (H.264,
/// HEVC, MJPEG, AAC, … with their codec configuration in the format description) for the graph to decode, raw
/// frames (y4m) copied into pixel buffers, raw PCM (wav) as it is. File time t is host time anchor + t, the anchor
/// shared by the file's camera and microphone (`MoviePlaybackClock`); in `.realTime` a packet is delivered when its
/// decode time comes, in `.freeRunning` at once. With `loops`, the file starts again at its end, each pass the
/// longest track's length later on the host clock; without, the device falls silent at the end (a camera showing nothing more).
///
/// Threading: thread safe; `start` and `stop` are serialized by the caller; the sink runs on the capture thread.
package final class MovieFileDevice: CaptureBackend {
    package let identity: DeviceIdentity
    package let formats: [DeviceFormat]
    package let url: URL
    package let track: MovieTrack
    package let loops: Bool
    package let pacing: MoviePacing
    private let opener: MoviePacketSourceOpener
    private let playbackClock: MoviePlaybackClock
    private let lifecycle = VirtualDeviceLifecycle()

    init(
        url: URL, track: MovieTrack, uniqueID: String, loops: Bool, pacing: MoviePacing,
        opener: @escaping MoviePacketSourceOpener, clock: MoviePlaybackClock
    ) {
        self.url = url
        self.track = track
        self.loops = loops
        self.pacing = pacing
        self.opener = opener
        self.playbackClock = clock
        let name = url.lastPathComponent
        identity = DeviceIdentity(
            uniqueID: uniqueID, modelID: "OpenAVCapture Movie File", localizedName: name, manufacturer: "OpenAVCapture",
            kind: track.media == .video ? .external : .microphone, position: .unspecified, media: track.media,
            origin: .real)
        formats = [Self.format(of: track)]
    }

    /// The camera and microphone of the movie at `url`: its first video and first audio track, either nil when the
    /// file has none (or none we can play). The camera's unique ID is `file:` + the path, the microphone's the
    /// same + `#audio`.
    ///
    /// - Throws: what `opener` throws for a file it cannot read.
    package static func devices(
        url: URL, loops: Bool, pacing: MoviePacing, opener: @escaping MoviePacketSourceOpener
    ) throws -> (camera: MovieFileDevice?, microphone: MovieFileDevice?) {
        let source = try opener(url)
        let clock = MoviePlaybackClock()
        let base = "file:" + url.path
        let camera = source.tracks.first { $0.media == .video }.map {
            MovieFileDevice(url: url, track: $0, uniqueID: base, loops: loops, pacing: pacing, opener: opener, clock: clock)
        }
        let microphone = source.tracks.first { $0.media == .audio }.map {
            MovieFileDevice(
                url: url, track: $0, uniqueID: base + "#audio", loops: loops, pacing: pacing, opener: opener,
                clock: clock)
        }
        return (camera, microphone)
    }

    /// The one format a track streams: its size and codec (or raw pixel format) at its frame rate; for sound, what
    /// the graph will hand outputs (PCM as it is, compressed sound decoded to Float32).
    static func format(of track: MovieTrack) -> DeviceFormat {
        let description = track.formatDescription
        if track.media == .video {
            let size = description.dimensions
            let duration = track.frameDuration.isNumeric ? track.frameDuration : CMTime(value: 1, timescale: 30)
            return .video(
                VideoFormat(
                    width: size.width, height: size.height,
                    mediaSubType: track.rawPixelFormat ?? description.mediaSubType.rawValue,
                    frameDurationRanges: [FrameDurationRange(minFrameDuration: duration, maxFrameDuration: duration)],
                    fieldOfView: 60, maxZoomFactor: 1))
        }
        let asbd = description.audioStreamBasicDescription
        let rate = asbd?.mSampleRate ?? 48_000
        let channels = Int(asbd?.mChannelsPerFrame ?? 2)
        let sampleFormat: AudioSampleFormat =
            if asbd?.mFormatID == kAudioFormatLinearPCM, let asbd, asbd.mFormatFlags & kAudioFormatFlagIsFloat == 0 {
                asbd.mBitsPerChannel == 16 ? .int16 : .int32
            } else {
                .float32
            }
        return .audio(AudioFormat(sampleRate: rate, channels: channels, sampleFormat: sampleFormat))
    }

    // MARK: CaptureBackend

    package var controls: (any CameraControlling)? { nil }
    package var clock: CMClock { .hostTimeClock }
    package var isConnected: Bool { lifecycle.isConnected }
    package var isInUseByAnotherApplication: Bool { false }
    package var isAccessible: Bool { FileManager.default.isReadableFile(atPath: url.path) }

    /// Valid for the track's format; another frame duration is adjusted to the file's (a file has one rate).
    package func validate(_ configuration: StreamConfiguration) -> ConfigurationValidity {
        guard configuration.format == formats[0] else {
            return .invalid("\(identity.localizedName) plays only \(formats[0])")
        }
        guard case .video(let video) = configuration.format, !video.supports(frameDuration: configuration.frameDuration)
        else { return .valid }
        return .adjusted(
            StreamConfiguration(format: configuration.format, frameDuration: video.frameDurationRanges[0].minFrameDuration))
    }

    /// Opens the file and plays the track. Throws `.disconnected` when the file can no longer be read.
    package func start(_ configuration: StreamConfiguration, sink: @escaping StreamSink) throws(DeviceFault) {
        let source: any MoviePacketSource
        do {
            source = try opener(url)
        } catch {
            throw DeviceFault.disconnected
        }
        let player = MovieTrackPlayer(
            url: url, track: track, loops: loops, pacing: pacing, opener: opener, clock: playbackClock, sink: sink)
        let handOff = UncheckedSource(source: source)
        try lifecycle.start(
            name: "OpenAVCapture movie \(identity.localizedName)", prepare: {},
            body: { thread in player.run(from: handOff.source, on: thread) })
    }

    package func stop() {
        lifecycle.stop()
    }
}

/// A source opened on the caller's thread and handed to the capture thread, which alone uses it from then on.
private struct UncheckedSource: @unchecked Sendable {
    let source: any MoviePacketSource
}

/// One run of a movie track: the capture thread's loop.
///
/// Threading: `Sendable` parts; `run` is the capture thread's body and keeps its state on that thread.
private struct MovieTrackPlayer: Sendable {
    let url: URL
    let track: MovieTrack
    let loops: Bool
    let pacing: MoviePacing
    let opener: MoviePacketSourceOpener
    let clock: MoviePlaybackClock
    let sink: StreamSink

    func run(from opened: any MoviePacketSource, on thread: VirtualCaptureThread) {
        let anchor = CMClock.hostTime(nanoseconds: clock.join())
        defer { clock.leave() }
        var source = opened
        var passOffset = CMTime.zero
        var passEnd = CMTime.zero
        var sequence: UInt64 = 0
        var frames = RawFrameCopier()
        while !thread.isInterrupted {
            let next: MoviePacket?
            do {
                next = try source.nextPacket()
            } catch {
                // A file that cannot be read any more is a device gone.
                sink(.fault(.disconnected))
                return
            }
            guard let packet = next else {
                guard loops, passEnd > .zero else { break }
                do {
                    source = try opener(url)
                } catch {
                    sink(.fault(.disconnected))
                    return
                }
                // One period for every track of the file (the longest track's exact length, else the container's),
                // so a looping camera and microphone stay in sync pass after pass.
                let lengths = source.tracks.map(\.duration).filter { $0.isNumeric && $0 > .zero }
                let length = lengths.max() ?? (source.duration.isNumeric && source.duration > .zero ? source.duration : passEnd)
                passOffset = passOffset + length
                passEnd = .zero
                continue
            }
            guard packet.track == track.index else { continue }
            let presentation = packet.presentationTime.isNumeric ? packet.presentationTime : packet.decodeTime
            guard presentation.isNumeric else { continue }
            if packet.duration.isNumeric {
                passEnd = max(passEnd, presentation + packet.duration)
            } else {
                passEnd = max(passEnd, presentation)
            }
            let decode = packet.decodeTime.isNumeric ? packet.decodeTime : presentation
            if pacing == .realTime {
                let due = (anchor + passOffset + decode).convertScale(1_000_000_000, method: .roundHalfAwayFromZero)
                guard thread.sleep(untilHostNanoseconds: due.value) else { break }
            }
            let hostPresentation = anchor + passOffset + presentation
            let hostDecode = packet.decodeTime.isNumeric ? anchor + passOffset + packet.decodeTime : CMTime.invalid
            guard
                let sample = makeSample(
                    packet, presentation: hostPresentation, decode: hostDecode, frames: &frames)
            else {
                sink(.dropped(sequence: sequence, presentationTime: hostPresentation, reason: .outOfBuffers))
                sequence += 1
                continue
            }
            sink(.output(sample, sequence: sequence))
            sequence += 1
        }
        if let fault = thread.takeFault() { sink(.fault(fault)) }
    }

    private func makeSample(
        _ packet: MoviePacket, presentation: CMTime, decode: CMTime, frames: inout RawFrameCopier
    ) -> CMSampleBuffer? {
        let description = track.formatDescription
        if track.media == .video, let pixelFormat = track.rawPixelFormat {
            return frames.sample(
                of: packet.data, pixelFormat: pixelFormat, size: description.dimensions,
                timing: CMSampleTimingInfo(
                    duration: packet.duration, presentationTimeStamp: presentation, decodeTimeStamp: .invalid))
        }
        if track.media == .audio, let asbd = description.audioStreamBasicDescription,
            asbd.mFormatID == kAudioFormatLinearPCM, asbd.mBytesPerFrame > 0
        {
            let bytesPerFrame = Int(asbd.mBytesPerFrame)
            let count = packet.data.dataLength / bytesPerFrame
            guard count > 0 else { return nil }
            let timing = CMSampleTimingInfo(
                duration: CMTime(value: 1, timescale: Int32(asbd.mSampleRate)), presentationTimeStamp: presentation,
                decodeTimeStamp: .invalid)
            return try? CMSampleBuffer(
                dataBuffer: packet.data, formatDescription: description, numSamples: count, sampleTimings: [timing],
                sampleSizes: [bytesPerFrame])
        }
        let timing = CMSampleTimingInfo(
            duration: packet.duration, presentationTimeStamp: presentation, decodeTimeStamp: decode)
        return try? CMSampleBuffer(
            dataBuffer: packet.data, formatDescription: description, numSamples: 1, sampleTimings: [timing],
            sampleSizes: [packet.data.dataLength])
    }
}

/// Raw frames (y4m's planar 4:2:0) copied from packets into pixel buffers of a pool, one description for all.
///
/// Not `Sendable`: lives on the capture thread.
private struct RawFrameCopier {
    private var pool: CVPixelBufferPool?
    private var description: CMFormatDescription?

    mutating func sample(
        of data: CMBlockBuffer, pixelFormat: OSType, size: CMVideoDimensions, timing: CMSampleTimingInfo
    ) -> CMSampleBuffer? {
        let width = Int(size.width)
        let height = Int(size.height)
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        guard data.dataLength >= width * height + 2 * chromaWidth * chromaHeight else { return nil }
        if pool == nil {
            pool = try? CVPixelBufferPool(
                width: width, height: height, pixelFormatType: pixelFormat, minimumBufferCount: 2)
        }
        guard let pool, case .success(let buffer) = pool.pixelBuffer(allocationThreshold: 8) else { return nil }
        data.withUnsafeBytes { bytes in
            buffer.withLockedPlanes { planes in
                var offset = 0
                for (index, plane) in planes.enumerated() {
                    let rowBytes = index == 0 ? width : chromaWidth
                    let rows = index == 0 ? height : chromaHeight
                    for row in 0..<rows {
                        plane.row(row).copyMemory(
                            from: UnsafeRawBufferPointer(rebasing: bytes[(offset + row * rowBytes)..<(offset + (row + 1) * rowBytes)]))
                    }
                    offset += rowBytes * rows
                }
            }
        }
        if description == nil { description = try? CMFormatDescription(imageBuffer: buffer) }
        guard let description else { return nil }
        return try? CMSampleBuffer(imageBuffer: buffer, formatDescription: description, sampleTiming: timing)
    }
}
