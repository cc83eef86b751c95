import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// One track of a movie file played as a live device: the picture as a camera, the sound as a microphone.
///
/// The device delivers what the file holds, as a camera delivers what its sensor gives: compressed packets (H.264,
/// HEVC, MJPEG, AAC, … with their codec configuration in the format description) for the graph to decode, raw
/// frames in pixel buffers (a y4m file's read into them straight from the file, others copied from packets), raw
/// PCM (wav) as it is. File time t is host time anchor + t, the anchor shared by the file's camera and microphone
/// (`MoviePlaybackClock`); in `.realTime` a packet is delivered when its decode time comes, in `.freeRunning` at
/// once, on a `.manual` clock when the clock reaches that time. With `loops`, the file starts again at its end, each
/// pass the longest track's length later on the host clock.
///
/// The end of the input (without `loops`) is reported as the device's disconnection: once every playing track of
/// the file has delivered its last packet, each sends `.fault(.explained(.disconnected, advice:))` saying the file
/// ended, and `isConnected` turns false for good (a played-out file is an unplugged camera; open the file again to
/// play it again). The session turns that into its runtime error (`.deviceWasDisconnected`) and a recording
/// finishes with `AVErrorRecordingSuccessfullyFinishedKey` true. A file that can no longer be read is `.io(EIO)`.
///
/// Threading: thread safe; `start` and `stop` are serialized by the caller; the sink runs on the capture thread.
package final class MovieFileDevice: CaptureBackend {
    package let identity: DeviceIdentity
    package let formats: [DeviceFormat]
    package let url: URL
    package let track: MovieTrack
    package let loops: Bool
    package let pacing: VirtualClockMode
    private let opener: MoviePacketSourceOpener
    private let playbackClock: MoviePlaybackClock
    private let lifecycle = VirtualDeviceLifecycle()
    /// Set when the track has played to its end (not looping): the device is gone from then on.
    private let endOfInput = Atomic<Bool>(false)

    init(
        url: URL, track: MovieTrack, uniqueID: String, loops: Bool, pacing: VirtualClockMode,
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
        url: URL, loops: Bool, pacing: VirtualClockMode, opener: @escaping MoviePacketSourceOpener
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
                    mediaSubType: track.rawLayout?.pixelFormat ?? description.mediaSubType.rawValue,
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
    package var isConnected: Bool { lifecycle.isConnected && !endOfInput.load(ordering: .acquiring) }

    /// Whether the track has played to its end (the reason `isConnected` is false).
    package var hasReachedEndOfInput: Bool { endOfInput.load(ordering: .acquiring) }
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

    /// Opens the file and plays the track. Throws `.disconnected` once the file has played to its end, `.io` when
    /// it can no longer be read.
    package func start(_ configuration: StreamConfiguration, sink: @escaping StreamSink) throws(DeviceFault) {
        guard !hasReachedEndOfInput else { throw Self.endOfInputFault(name: identity.localizedName) }
        let source: any MoviePacketSource
        do {
            source = try opener(url)
        } catch {
            throw DeviceFault.explained(.io(.ioError), advice: "\(url.path) can no longer be read: \(error)")
        }
        let player = MovieTrackPlayer(
            url: url, name: identity.localizedName, track: track, loops: loops, pacing: pacing, opener: opener,
            clock: playbackClock, endOfInput: { [weak self] in self?.endOfInput.store(true, ordering: .releasing) },
            sink: sink)
        let handOff = UncheckedSource(source: source)
        try lifecycle.start(
            name: "OpenAVCapture movie \(identity.localizedName)", pacedBy: pacing.manualClock, prepare: {},
            body: { thread in player.run(from: handOff.source, on: thread) })
    }

    /// The fault a movie-file device ends with at the end of its input.
    static func endOfInputFault(name: String) -> DeviceFault {
        .explained(.disconnected, advice: "\(name) reached the end of its input. Open the file again to play it again.")
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
    let name: String
    let track: MovieTrack
    let loops: Bool
    let pacing: VirtualClockMode
    let opener: MoviePacketSourceOpener
    let clock: MoviePlaybackClock
    /// Marks the device played out, before the fault that says so is sent.
    let endOfInput: @Sendable () -> Void
    let sink: StreamSink

    func run(from opened: any MoviePacketSource, on thread: VirtualCaptureThread) {
        let anchor = CMClock.hostTime(nanoseconds: clock.join(track.media))
        var ended = false
        defer { clock.leave(track.media, ended: ended) }
        var source = opened
        source.playOnly(track: track.index)
        var passOffset = CMTime.zero
        var passEnd = CMTime.zero
        var sequence: UInt64 = 0
        var frames = RawFrameCopier()
        // The thread took its place on a manual clock before it started; its items begin at the anchor.
        let manual = thread.manualTurn
        if let manual {
            manual.clock.begin(
                manual.participant, at: anchor.convertScale(1_000_000_000, method: .roundHalfAwayFromZero).value)
        }
        while !thread.isInterrupted {
            let next: FileItem?
            do {
                next = try nextItem(from: source, frames: &frames, on: thread)
            } catch {
                sink(.fault(.explained(.io(.ioError), advice: "reading \(url.path) failed: \(error)")))
                return
            }
            guard let item = next else {
                guard loops, passEnd > .zero else {
                    ended = true
                    finish(on: thread)
                    return
                }
                do {
                    source = try opener(url)
                } catch {
                    sink(.fault(.explained(.io(.ioError), advice: "reopening \(url.path) failed: \(error)")))
                    return
                }
                source.playOnly(track: track.index)
                // One period for every track of the file (the longest track's exact length, else the container's),
                // so a looping camera and microphone stay in sync pass after pass.
                let lengths = source.tracks.map(\.duration).filter { $0.isNumeric && $0 > .zero }
                let length = lengths.max() ?? (source.duration.isNumeric && source.duration > .zero ? source.duration : passEnd)
                passOffset = passOffset + length
                passEnd = .zero
                continue
            }
            guard let times = item.times(of: track) else { continue }
            let presentation = times.presentation
            passEnd = max(passEnd, presentation + (times.duration.isNumeric ? times.duration : .zero))
            if pacing != .freeRunning {
                let due = (anchor + passOffset + times.decode).convertScale(
                    1_000_000_000, method: .roundHalfAwayFromZero)
                if let manual {
                    let turn = manual.clock.waitForTurn(
                        manual.participant, at: due.value, isInterrupted: { thread.isInterrupted })
                    guard turn else { break }
                } else {
                    guard thread.sleep(untilHostNanoseconds: due.value) else { break }
                }
            }
            let hostPresentation = anchor + passOffset + presentation
            let made: Made
            switch item {
            case .packet(let packet):
                let hostDecode = packet.decodeTime.isNumeric ? anchor + passOffset + packet.decodeTime : CMTime.invalid
                made = makeSample(
                    packet, presentation: hostPresentation, decode: hostDecode, frames: &frames, on: thread)
            case .frame(let buffer, _, let duration):
                let timing = CMSampleTimingInfo(
                    duration: duration, presentationTimeStamp: hostPresentation, decodeTimeStamp: .invalid)
                made = frames.sample(wrapping: buffer, timing: timing).map(Made.sample) ?? .damaged
            case .nothing:
                continue
            }
            switch made {
            case .sample(let sample):
                sink(.output(sample, sequence: sequence))
            case .damaged:
                sink(.dropped(sequence: sequence, presentationTime: hostPresentation, reason: .discontinuity))
            case .interrupted:
                break
            }
            sequence += 1
        }
        if let fault = thread.takeFault() { sink(.fault(fault)) }
    }

    /// One thing read from the file for this track.
    private enum FileItem {
        /// A packet (of any track of the file).
        case packet(MoviePacket)
        /// A raw frame the source read straight into a pool buffer, with its file times.
        case frame(CVPixelBuffer, presentationTime: CMTime, duration: CMTime)
        /// Nothing to deliver: stopped while waiting for a pool buffer.
        case nothing

        /// The item's file times for `track` (presentation, decode for pacing, duration); nil for another track's
        /// packet or one without a time.
        func times(of track: MovieTrack) -> (presentation: CMTime, decode: CMTime, duration: CMTime)? {
            switch self {
            case .packet(let packet):
                guard packet.track == track.index else { return nil }
                let presentation = packet.presentationTime.isNumeric ? packet.presentationTime : packet.decodeTime
                guard presentation.isNumeric else { return nil }
                return (presentation, packet.decodeTime.isNumeric ? packet.decodeTime : presentation, packet.duration)
            case .frame(_, let presentation, let duration):
                return (presentation, presentation, duration)
            case .nothing:
                return nil
            }
        }
    }

    /// The next item of the file, nil at its end: a raw frame read straight into a pool buffer when the source can
    /// (waiting for a buffer while every one is held downstream, as a file can wait), else the next packet.
    private func nextItem(
        from source: any MoviePacketSource, frames: inout RawFrameCopier, on thread: VirtualCaptureThread
    ) throws -> FileItem? {
        guard let layout = track.rawLayout, !layout.isBottomUp, let reader = source as? any MovieRawFrameReader,
            reader.readsRawFrames
        else { return try source.nextPacket().map(FileItem.packet) }
        while true {
            switch try frames.read(from: reader, layout: layout, size: track.formatDescription.dimensions) {
            case .frame(let buffer, let presentation, let duration):
                return .frame(buffer, presentationTime: presentation, duration: duration)
            case .endOfFile:
                return nil
            case .damaged:
                throw RawFrameCopier.Unreadable(pixelFormat: layout.pixelFormat)
            case .noBuffer:
                guard waitForAPoolBuffer(on: thread) else { return .nothing }
            }
        }
    }

    /// A file can wait where a camera would drop: while every pool buffer is held downstream, the reader waits 2 ms
    /// of host time for one to come back (the buffers are freed by other threads, on no clock of the device's) and
    /// tries again; false when the device was stopped meanwhile.
    private func waitForAPoolBuffer(on thread: VirtualCaptureThread) -> Bool {
        thread.sleep(untilHostNanoseconds: CMClock.hostNanosecondsNow() + 2_000_000)
    }

    /// The end of the input: waits (in short slices, so `stop` is prompt) until every playing track of the file has
    /// delivered its last packet (and the picture has reported its end), then reports the device gone.
    private func finish(on thread: VirtualCaptureThread) {
        // Played out from now on, even if stopped while waiting for the file's other track.
        endOfInput()
        // Nothing more is due from this track: a manual clock's advances must not wait for it while it waits for
        // the other track, which only that clock moves on.
        if let manual = thread.manualTurn { manual.clock.leave(manual.participant) }
        clock.trackEnded()
        while !clock.mayReportEnd(of: track.media) {
            guard thread.sleep(untilHostNanoseconds: CMClock.hostNanosecondsNow() + 5_000_000) else { break }
        }
        if let fault = thread.takeFault() {
            sink(.fault(fault))
            return
        }
        guard !thread.isInterrupted else { return }
        sink(.fault(MovieFileDevice.endOfInputFault(name: name)))
        if track.media == .video { clock.videoReportedEnd() }
    }

    /// What became of one packet.
    private enum Made {
        case sample(CMSampleBuffer)
        /// The packet cannot be a buffer (a raw frame of the wrong size, a sample buffer refused): a discontinuity.
        case damaged
        /// Stopped while waiting for a buffer.
        case interrupted
    }

    private func makeSample(
        _ packet: MoviePacket, presentation: CMTime, decode: CMTime, frames: inout RawFrameCopier,
        on thread: VirtualCaptureThread
    ) -> Made {
        let description = track.formatDescription
        if track.media == .video, let layout = track.rawLayout {
            let timing = CMSampleTimingInfo(
                duration: packet.duration, presentationTimeStamp: presentation, decodeTimeStamp: .invalid)
            while true {
                switch frames.sample(of: packet.data, layout: layout, size: description.dimensions, timing: timing) {
                case .sample(let sample): return .sample(sample)
                case .damaged: return .damaged
                case .noBuffer:
                    guard waitForAPoolBuffer(on: thread) else { return .interrupted }
                }
            }
        }
        if track.media == .audio, let asbd = description.audioStreamBasicDescription,
            asbd.mFormatID == kAudioFormatLinearPCM, asbd.mBytesPerFrame > 0
        {
            let bytesPerFrame = Int(asbd.mBytesPerFrame)
            let count = packet.data.dataLength / bytesPerFrame
            guard count > 0 else { return .damaged }
            let timing = CMSampleTimingInfo(
                duration: CMTime(value: 1, timescale: Int32(asbd.mSampleRate)), presentationTimeStamp: presentation,
                decodeTimeStamp: .invalid)
            guard
                let sample = try? CMSampleBuffer(
                    dataBuffer: packet.data, formatDescription: description, numSamples: count,
                    sampleTimings: [timing], sampleSizes: [bytesPerFrame])
            else { return .damaged }
            return .sample(sample)
        }
        let timing = CMSampleTimingInfo(
            duration: packet.duration, presentationTimeStamp: presentation, decodeTimeStamp: decode)
        guard
            let sample = try? CMSampleBuffer(
                dataBuffer: packet.data, formatDescription: description, numSamples: 1, sampleTimings: [timing],
                sampleSizes: [packet.data.dataLength])
        else { return .damaged }
        if track.media == .video { CompressedFrameSync.mark(sample, isKeyFrame: packet.isKeyFrame) }
        return .sample(sample)
    }
}
