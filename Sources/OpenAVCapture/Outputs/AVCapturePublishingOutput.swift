import CaptureDrivers
import CaptureGraph
import Foundation
import MediaCodecs
import Synchronization

/// What a publishing output sent and lost. Beyond Apple: ours.
///
/// Threading: a value; `Sendable`.
public struct AVCapturePublishingStatistics: Sendable, Equatable {
    /// Packets handed to the server (or the playlist).
    public var packetsSent = 0
    /// Of those, video packets (one per frame).
    public var videoPacketsSent = 0
    /// The bytes of the packets handed to the server (the media, without the container's overhead).
    public var bytesSent: Int64 = 0
    /// Packets the network side left out, by reason: `disconnected` (no connection: the server is away and the
    /// output is reconnecting), `waitingForKeyFrame` (connected again, the stream resumes at a key frame),
    /// `networkBehind` (the connection is slower than the stream: its queue of 4 MiB was full). The local recording
    /// never loses a packet to any of them.
    public var droppedPackets: [String: Int] = [:]
    /// Connections made after the first.
    public var reconnections = 0
    /// Whether a connection is open now.
    public var isConnected = false
    /// The last connection failure, as FFmpeg described it.
    public var lastError: String?

    public init() {}

    /// Every dropped packet, whatever the reason.
    public var totalDroppedPackets: Int { droppedPackets.values.reduce(0, +) }
}

/// Publishes a session's video and audio live: an HLS playlist of CMAF segments, an RTMP server (FLV), an SRT
/// listener (MPEG-TS, caller mode) or an RTSP server that takes RECORD (ANNOUNCE with the SDP, then RTP interleaved
/// over TCP). Beyond Apple: ours, an output beside the file outputs, for media servers and
/// CDNs people already run.
///
/// The media is encoded once (H.264 with a key frame every second, AAC) on the output's queue. When
/// ``recordingURL`` is set, the same packets are also written to that movie: one encoder for the file and the
/// network. The network side has a queue and a thread of its own: when the server goes away or stalls
/// (`rw_timeout` of 3 s), it drops packets with a counted reason (``statistics``) and reconnects with backoff
/// (0.25 s, doubling to 4 s), resuming at the next key frame, while the local recording goes on untouched.
///
/// URLs: `rtmp://host/app/key`, `srt://host:port?streamid=…` (add `&mode=caller`, the default),
/// `rtsp://[user:password@]host:port/path`, a path ending in
/// `.m3u8` (segments of about ``segmentDuration`` seconds beside it, the last ``playlistSize`` listed, older ones
/// deleted). Settings are read when the first buffer arrives. ``stopPublishing()`` (or the session stopping) ends
/// the stream: the playlist gets its end, the movie is finished.
///
/// Threading: thread safe. Buffers are posted from the capture thread to the output's serial queue without
/// waiting; network writes run on another serial queue.
open class AVCapturePublishingOutput: AVCaptureOutput, @unchecked Sendable {
    struct Settings: Sendable {
        var segmentDuration = 2.0
        var playlistSize = 6
        var videoBitRate: Int?
        var recordingURL: URL?
    }

    /// Where the stream goes.
    public let url: String
    private let format: NetworkMuxer.Format
    private let settings = LockedState(Settings())
    private let queue = DispatchQueue(label: "OpenAVCapture.AVCapturePublishingOutput")
    private let mailbox: SampleBufferMailbox<PublishingCore.Work>
    private let core: PublishingCore
    private let videoInFlight = Atomic<Int>(0)
    /// Video frames handed to the output, and those left out because 8 already waited for the encoder.
    private let framesReceived = Atomic<Int>(0)
    private let framesLate = Atomic<Int>(0)

    /// An output publishing to `url` (see the type). Traps for a URL that is none of RTMP, SRT (UDP, TCP), RTSP or a
    /// `.m3u8` path, naming the rule.
    public init(url: String) {
        guard let format = NetworkMuxer.Format.forURL(url) else {
            preconditionFailure(
                "AVCapturePublishingOutput: \(url) is not rtmp://, srt://, udp://, tcp://, rtsp:// or a path ending"
                    + " in .m3u8")
        }
        self.url = url
        self.format = format
        let core = PublishingCore(queue: queue, url: url, settings: settings)
        self.core = core
        mailbox = SampleBufferMailbox(queue: queue, capacity: 1024, limit: 1024) { core.handle($0) }
        super.init()
        core.output = self
    }

    /// The video encoder, which a movie file output recording the same camera shares (see
    /// ``AVCaptureMovieFileOutput``); its settings are this output's when the first picture comes.
    var sharedVideoEncoder: SharedVideoEncoder { core.sharedVideo }

    /// HLS: the target length of a segment, in seconds (cut at key frames, so whole seconds). Default 2.
    public var segmentDuration: Double {
        get { settings.withLock { $0.segmentDuration } }
        set { settings.withLock { $0.segmentDuration = max(1, newValue) } }
    }

    /// HLS: how many segments the playlist lists (older ones are deleted). Default 6.
    public var playlistSize: Int {
        get { settings.withLock { $0.playlistSize } }
        set { settings.withLock { $0.playlistSize = max(1, newValue) } }
    }

    /// The H.264 bit rate, or nil for the encoder's default.
    public var videoBitRate: Int? {
        get { settings.withLock { $0.videoBitRate } }
        set { settings.withLock { $0.videoBitRate = newValue } }
    }

    /// A movie written from the same encoded packets while publishing (nil: none). It must not exist yet.
    public var recordingURL: URL? {
        get { settings.withLock { $0.recordingURL } }
        set { settings.withLock { $0.recordingURL = newValue } }
    }

    /// What was sent and dropped so far.
    public var statistics: AVCapturePublishingStatistics { core.network.statistics }

    /// The local recording's failure, if writing it failed (nil while it goes well).
    public var recordingError: (any Error)? { core.recordingFailure.withLock { $0 } }

    /// Ends the stream: the last packets are sent, the playlist ended, the movie finished. Returns once done (at
    /// most the network timeout).
    public func stopPublishing() {
        let done = DispatchSemaphore(value: 0)
        queue.async { [core] in
            core.handle(.stop)
            done.signal()
        }
        done.wait()
        core.network.finish()
    }

    var currentSettings: Settings { settings.withLock { $0 } }
    var networkFormat: NetworkMuxer.Format {
        if case .hls = format {
            let current = currentSettings
            return .hls(segmentDuration: current.segmentDuration, playlistSize: current.playlistSize)
        }
        return format
    }
    func frameHandled() { videoInFlight.subtract(1, ordering: .relaxed) }

    override package var hasWorkInFlight: Bool { !mailbox.isIdle || videoInFlight.load(ordering: .relaxed) > 0 }

    override package var measurements: OutputMeasurements? {
        let statistics = self.statistics
        var measured = OutputMeasurements()
        measured.framesCaptured = framesReceived.load(ordering: .relaxed)
        measured.framesWritten = statistics.videoPacketsSent
        let late = framesLate.load(ordering: .relaxed)
        if late > 0 { measured.framesDropped[DropReason.frameWasLate.rawValue] = late }
        measured.packetsDropped = statistics.droppedPackets
        measured.bytesWritten = statistics.bytesSent + core.recordedBytes.load(ordering: .relaxed)
        measured.encoderQueueDepth = videoInFlight.load(ordering: .relaxed)
        measured.reconnections = statistics.reconnections
        measured.isConnected = statistics.isConnected
        let playlist = url.lowercased().hasSuffix(".m3u8") ? URL(fileURLWithPath: url) : nil
        measured.fileURL = currentSettings.recordingURL ?? playlist
        return measured
    }

    // MARK: Graph hooks

    override package func accepts(_ mediaType: AVMediaType) -> Bool { mediaType == .video || mediaType == .audio }

    override package func receive(_ sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        let isVideo = sampleBuffer.imageBuffer != nil
        if isVideo {
            framesReceived.add(1, ordering: .relaxed)
            guard videoInFlight.add(1, ordering: .relaxed).newValue <= 8 else {
                videoInFlight.subtract(1, ordering: .relaxed)
                framesLate.add(1, ordering: .relaxed)
                return
            }
        } else if sampleBuffer.formatDescription?.mediaType != .audio {
            return
        }
        let sound = isVideo ? sampleBuffer : AudioChannelGain.apply(to: sampleBuffer, channels: connection.audioChannels)
        if !mailbox.post(.sample(sound, isVideo: isVideo)), isVideo { videoInFlight.subtract(1, ordering: .relaxed) }
    }

    override package func videoDemand(for connection: AVCaptureConnection) -> VideoFormatDemand? {
        VideoFormatDemand(pixelFormats: VideoEncoder.nativePixelFormats(for: .h264), evenDimensions: true)
    }

    override package func sessionDidStopRunning() {
        queue.async { [core] in
            core.handle(.stop)
            core.network.finish()
        }
    }
}

/// The encoding side of a publishing output: the encoder, the local movie, the hand-off to the network.
///
/// Threading: confined to the output's queue; `@unchecked Sendable` so the mailbox's handler can hold it.
final class PublishingCore: @unchecked Sendable {
    enum Work: @unchecked Sendable {
        case sample(CMSampleBuffer, isVideo: Bool)
        case stop
    }

    weak var output: AVCapturePublishingOutput?
    let network: PublishingNetwork
    let recordingFailure = Mutex<(any Error)?>(nil)
    /// The bytes of the packets written to the local movie.
    let recordedBytes = Atomic<Int64>(0)
    private let queue: DispatchQueue
    /// The video half of `encoder`, made at once so a movie file output can share it before the first picture.
    let sharedVideo: SharedVideoEncoder
    private var encoder: LiveMediaEncoder?
    private var file: Muxer?
    private var fileStreams: (video: Int?, audio: Int?) = (nil, nil)
    private var origin: CMTime = .invalid
    private var hasAudio = false
    private var isStopped = false
    /// Packets that came before every stream had its encoder (the muxers need all streams described first).
    private var early: [(EncodedPacket, Bool)] = []

    init(queue: DispatchQueue, url: String, settings: LockedState<AVCapturePublishingOutput.Settings>) {
        self.queue = queue
        network = PublishingNetwork(url: url)
        sharedVideo = SharedVideoEncoder { .init(bitRate: settings.withLock { $0.videoBitRate }) }
        // The pictures a movie file output sharing the encoder offered first come back here, to be published.
        let weakSelf = WeakCore(core: self)
        sharedVideo.subscribe(ObjectIdentifier(self)) { [queue] packets in
            queue.async { weakSelf.core?.deliverShared(packets.packets) }
        }
    }

    /// The core without keeping it alive (the encoder's handler must not: the core holds the encoder).
    private struct WeakCore: Sendable {
        weak var core: PublishingCore?
    }

    /// Publishes the packets of pictures another output encoded first (see ``SharedVideoEncoder``).
    private func deliverShared(_ packets: [EncodedPacket]) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !isStopped, encoder != nil else { return }
        for packet in packets { deliver(packet, isVideo: true) }
    }

    func handle(_ work: Work) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch work {
        case .sample(let buffer, let isVideo):
            if isVideo { output?.frameHandled() }
            guard !isStopped else { return }
            if encoder == nil, let output {
                encoder = LiveMediaEncoder(
                    settings: .init(videoBitRate: output.currentSettings.videoBitRate), owner: ObjectIdentifier(self),
                    sharedVideo: sharedVideo)
                hasAudio = output.connection(with: .audio) != nil
            }
            do {
                let packets =
                    isVideo ? try encoder?.encode(picture: buffer) ?? [] : try encoder?.encode(sound: buffer) ?? []
                for packet in packets { deliver(packet, isVideo: isVideo) }
            } catch {
                recordingFailure.withLock { $0 = AVError(error, writing: output?.url ?? "") }
            }
        case .stop:
            guard !isStopped else { return }
            isStopped = true
            if let file {
                do throws(MediaCodecsError) {
                    try file.finish()
                } catch {
                    recordingFailure.withLock { $0 = AVError(error, writing: file.path) }
                }
            }
            file = nil
        }
    }

    /// Hands a packet to the file and the network once both streams are described; earlier ones wait (a second
    /// at most: the first video frame and the first sound come within it).
    private func deliver(_ packet: EncodedPacket, isVideo: Bool) {
        guard let encoder else { return }
        let ready = encoder.video != nil && (!hasAudio || encoder.audio != nil)
        if !ready {
            early.append((packet, isVideo))
            return
        }
        if !origin.isNumeric {
            // The stream starts at the first key frame; everything is timed from it.
            let waiting = early + [(packet, isVideo)]
            early.removeAll()
            guard let key = waiting.first(where: { $0.1 && $0.0.isKeyFrame }) else { return }
            origin = key.0.presentationTime
            network.start(
                video: encoder.video.map { NetworkMuxer.StreamParameters(video: $0) },
                audio: encoder.audio.map { NetworkMuxer.StreamParameters(audio: $0) }, origin: origin,
                format: output?.networkFormat ?? .flv)
            openFile(encoder)
            for (early, isVideo) in waiting where early.presentationTime >= origin || !isVideo {
                send(early, isVideo: isVideo)
            }
            return
        }
        send(packet, isVideo: isVideo)
    }

    private func send(_ packet: EncodedPacket, isVideo: Bool) {
        if let file, let stream = isVideo ? fileStreams.video : fileStreams.audio {
            do throws(MediaCodecsError) {
                try file.write(packet, stream: stream)
                recordedBytes.add(Int64(packet.data.dataLength), ordering: .relaxed)
            } catch {
                recordingFailure.withLock { $0 = AVError(error, writing: file.path) }
                self.file = nil
            }
        }
        network.enqueue(packet, isVideo: isVideo)
    }

    private func openFile(_ encoder: LiveMediaEncoder) {
        guard let url = output?.currentSettings.recordingURL else { return }
        do throws(MediaCodecsError) {
            var options = Muxer.Options()
            options.fragmentInterval = CMTime(value: 10, timescale: 1)
            // Finished in place, as a movie file output's: no copy of the media at the end.
            options.fastStart = false
            let muxer = try Muxer(path: url.path, fileType: url.pathExtension.lowercased() == "mp4" ? .mp4 : .mov, options: options)
            if let video = encoder.video { fileStreams.video = try muxer.addVideoStream(from: video) }
            if let audio = encoder.audio { fileStreams.audio = try muxer.addAudioStream(from: audio) }
            try muxer.start(atSourceTime: origin)
            file = muxer
        } catch {
            recordingFailure.withLock { $0 = AVError(error, writing: url.path) }
        }
    }
}

/// The network side of a publishing output: a bounded queue of packets and a serial queue that connects, writes,
/// and reconnects with backoff. Packets it cannot take are dropped here, counted by reason.
///
/// Threading: thread safe. `enqueue` from the encoding queue; everything else runs on its own serial queue.
final class PublishingNetwork: @unchecked Sendable {
    /// 4 MiB waiting at most: about 3 s of 1080p30 at 10 Mb/s.
    static let queueLimitBytes = 4 << 20

    private struct Pending {
        var packets: [(EncodedPacket, Bool)] = []
        var bytes = 0
        var statistics = AVCapturePublishingStatistics()
        /// Connected and the last packet sent was whole: a key frame is needed after a reconnect.
        var needsKeyFrame = true
        var isFinished = false
        /// Before the first connection's outcome: packets wait (the stream's first key frame among them).
        var isStarting = true
    }

    let url: String
    private let queue = DispatchQueue(label: "OpenAVCapture.AVCapturePublishingOutput.network")
    private let pending = Mutex(Pending())
    /// Only on `queue`.
    private var muxer: NetworkMuxer?
    private var parameters: (video: NetworkMuxer.StreamParameters?, audio: NetworkMuxer.StreamParameters?, origin: CMTime,
        format: NetworkMuxer.Format)?
    private var backoff = 0.25
    private var hasConnected = false
    private var isConnecting = false

    init(url: String) { self.url = url }

    var statistics: AVCapturePublishingStatistics { pending.withLock { $0.statistics } }

    /// The streams are known: connect.
    func start(
        video: NetworkMuxer.StreamParameters?, audio: NetworkMuxer.StreamParameters?, origin: CMTime,
        format: NetworkMuxer.Format
    ) {
        let described = UncheckedSendable((video, audio, origin, format))
        queue.async { [self] in
            parameters = described.value
            connect()
        }
    }

    func enqueue(_ packet: EncodedPacket, isVideo: Bool) {
        let wake = pending.withLock { state -> Bool in
            guard !state.isFinished else { return false }
            guard state.statistics.isConnected || state.isStarting else {
                state.statistics.droppedPackets["disconnected", default: 0] += 1
                state.needsKeyFrame = true
                return false
            }
            if state.needsKeyFrame {
                guard isVideo, packet.isKeyFrame else {
                    state.statistics.droppedPackets["waitingForKeyFrame", default: 0] += 1
                    return false
                }
                state.needsKeyFrame = false
            }
            guard state.bytes + packet.data.dataLength <= Self.queueLimitBytes else {
                state.statistics.droppedPackets["networkBehind", default: 0] += 1
                state.needsKeyFrame = true
                return false
            }
            state.packets.append((packet, isVideo))
            state.bytes += packet.data.dataLength
            return state.packets.count == 1
        }
        if wake { queue.async { [self] in pump() } }
    }

    /// Sends what waits; a failed write closes the connection and schedules a reconnection.
    private func pump() {
        while let muxer {
            let next = pending.withLock { state -> (EncodedPacket, Bool)? in
                guard !state.packets.isEmpty else { return nil }
                let first = state.packets.removeFirst()
                state.bytes -= first.0.data.dataLength
                return first
            }
            guard let (packet, isVideo) = next else { return }
            do throws(MediaCodecsError) {
                try muxer.write(packet, isVideo: isVideo)
                pending.withLock { state in
                    state.statistics.packetsSent += 1
                    state.statistics.bytesSent += Int64(packet.data.dataLength)
                    if isVideo { state.statistics.videoPacketsSent += 1 }
                }
            } catch {
                disconnected(error.description)
                return
            }
        }
    }

    private func disconnected(_ reason: String) {
        muxer = nil
        pending.withLock { state in
            state.statistics.isConnected = false
            state.statistics.lastError = reason
            state.statistics.droppedPackets["disconnected", default: 0] += state.packets.count
            state.packets.removeAll()
            state.bytes = 0
        }
        scheduleConnect()
    }

    private func scheduleConnect() {
        guard !isConnecting, !pending.withLock({ $0.isFinished }) else { return }
        isConnecting = true
        let delay = backoff
        backoff = min(4, backoff * 2)
        queue.asyncAfter(deadline: .now() + delay) { [self] in
            isConnecting = false
            connect()
        }
    }

    private func connect() {
        guard muxer == nil, let parameters, !pending.withLock({ $0.isFinished }) else { return }
        do throws(MediaCodecsError) {
            muxer = try NetworkMuxer(
                url: url, format: parameters.format, video: parameters.video, audio: parameters.audio,
                origin: parameters.origin)
            backoff = 0.25
            pending.withLock { state in
                if hasConnected { state.statistics.reconnections += 1 }
                state.statistics.isConnected = true
                // The first connection takes what waited from the stream's first key frame on.
                if !state.isStarting { state.needsKeyFrame = true }
                state.isStarting = false
            }
            hasConnected = true
            pump()
        } catch {
            pending.withLock { state in
                state.statistics.lastError = error.description
                if state.isStarting {
                    state.isStarting = false
                    state.statistics.droppedPackets["disconnected", default: 0] += state.packets.count
                    state.packets.removeAll()
                    state.bytes = 0
                }
            }
            scheduleConnect()
        }
    }

    /// Sends what waits and closes the connection (the playlist's end); nothing more is taken.
    func finish() {
        queue.sync {
            pump()
            pending.withLock { $0.isFinished = true }
            muxer?.finish()
            muxer = nil
            pending.withLock { $0.statistics.isConnected = false }
        }
    }
}
