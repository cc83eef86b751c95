import CaptureGraph
import Foundation
import MediaCodecs
import Synchronization

/// Encodes a session's video and audio once (H.264 with a key frame every second, AAC, through
/// ``LiveMediaEncoder``, as the publishing output does) and cuts the packets into RTP once (``RTPPacketizer``), for
/// any number of subscribers: an RTSP server's clients all get the same packets. Ours, package-internal: the public
/// face is `AVCaptureRTSPServer` in OpenAVCaptureWeb.
///
/// The stream starts at the first video key frame once both encoders exist; its SDP (``sessionDescription``) then
/// carries the parameter sets (`sprop-parameter-sets`) and the AAC configuration. A subscriber starts at the next
/// key frame, which its subscribing asks the encoder for (the next picture), with a sender report per track.
///
/// Threading: thread safe. Buffers are posted from the capture thread to the output's serial queue without
/// waiting; subscribers are called on that queue (see ``RTPStreamSubscriber``).
package final class RTPStreamOutput: AVCaptureOutput, @unchecked Sendable {
    private struct Shared {
        var fanout: RTPStreamFanout?
        var sessionDescription: String?
        var failure: String?
        var trackCount = 0
        /// The video encoder, to ask for a key frame when a subscriber joins.
        var keyFrames: SharedVideoEncoder?
    }

    private enum Work: @unchecked Sendable {
        case sample(CMSampleBuffer, isVideo: Bool)
    }

    private let queue = DispatchQueue(label: "OpenAVCapture.RTPStreamOutput")
    private let shared = Mutex(Shared())
    private let videoInFlight = Atomic<Int>(0)
    private var mailbox: SampleBufferMailbox<Work>?
    /// Only on `queue`.
    private lazy var encoder = LiveMediaEncoder(settings: .init(), owner: ObjectIdentifier(self))
    private var packetizers: (video: RTPPacketizer?, audio: RTPPacketizer?) = (nil, nil)
    private var origin: CMTime = .invalid
    private var early: [(EncodedPacket, Bool)] = []

    package override init() {
        super.init()
        mailbox = SampleBufferMailbox(queue: queue, capacity: 1024, limit: 1024) { [weak self] work in
            guard let self, case .sample(let buffer, let isVideo) = work else { return }
            if isVideo { videoInFlight.subtract(1, ordering: .relaxed) }
            handle(buffer, isVideo: isVideo)
        }
    }

    /// The SDP of the stream (nil until its first key frame is encoded), its tracks `streamid=0` (video) and
    /// `streamid=1` (audio, when the session has sound).
    package var sessionDescription: String? { shared.withLock { $0.sessionDescription } }

    /// Why encoding stopped, if it did.
    package var failure: String? { shared.withLock { $0.failure } }

    /// The tracks, once the stream started.
    package var trackCount: Int { shared.withLock { $0.trackCount } }

    /// Adds a subscriber, and asks the encoder to make the next picture a key frame, where the subscriber starts
    /// (``RTPStreamSubscriber/start(_:tracks:)``). False before the stream starts.
    package func subscribe(_ subscriber: any RTPStreamSubscriber) -> Bool {
        let keyFrames = shared.withLock { state -> SharedVideoEncoder? in
            guard state.fanout != nil else { return nil }
            state.fanout?.subscribe(subscriber)
            return state.keyFrames
        }
        keyFrames?.requestKeyFrame()
        return keyFrames != nil
    }

    package func unsubscribe(_ subscriber: any RTPStreamSubscriber) {
        shared.withLock { $0.fanout?.unsubscribe(subscriber) }
    }

    /// Ends every subscriber's stream (``RTPStreamSubscriber/streamEnded()``).
    package func closeSubscribers() {
        let ended = shared.withLock { $0.fanout?.removeAll() ?? [] }
        for subscriber in ended { subscriber.streamEnded() }
    }

    package var subscriberCount: Int { shared.withLock { $0.fanout?.count ?? 0 } }

    // MARK: Encoding, on `queue`

    private func handle(_ buffer: CMSampleBuffer, isVideo: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard shared.withLock({ $0.failure == nil }) else { return }
        do {
            let packets = isVideo ? try encoder.encode(picture: buffer) : try encoder.encode(sound: buffer)
            for packet in packets { try deliver(packet, isVideo: isVideo) }
        } catch {
            shared.withLock { $0.failure = "\(error)" }
        }
    }

    /// Waits for both encoders, starts the stream at the first key frame, then packetises and hands out.
    private func deliver(_ packet: EncodedPacket, isVideo: Bool) throws(MediaCodecsError) {
        if !origin.isNumeric {
            let hasAudio = connection(with: .audio) != nil
            early.append((packet, isVideo))
            guard let video = encoder.video, !hasAudio || encoder.audio != nil else { return }
            guard let key = early.first(where: { $0.1 && $0.0.isKeyFrame }) else {
                early.removeAll { $0.1 }
                return
            }
            origin = key.0.presentationTime
            let waiting = early
            early = []
            try start(video: video, audio: encoder.audio)
            for (packet, isVideo) in waiting where packet.presentationTime >= origin {
                try send(packet, isVideo: isVideo)
            }
            return
        }
        try send(packet, isVideo: isVideo)
    }

    private func start(video: VideoEncoder, audio: AudioEncoder?) throws(MediaCodecsError) {
        let videoPacketizer = try RTPPacketizer(parameters: .init(video: video), isVideo: true)
        let audioPacketizer = try audio.map { encoder throws(MediaCodecsError) in
            try RTPPacketizer(parameters: .init(audio: encoder), isVideo: false)
        }
        packetizers = (videoPacketizer, audioPacketizer)
        let description = RTPPacketizer.sessionDescription(
            [videoPacketizer] + (audioPacketizer.map { [$0] } ?? []), name: "OpenAVCapture live")
        let offset = Date().timeIntervalSince1970 - CMClock.hostTimeClock.time.seconds
        let keyFrames = encoder.sharedVideo
        shared.withLock {
            $0.fanout = RTPStreamFanout(trackCount: audioPacketizer == nil ? 1 : 2, wallClockOffset: offset)
            $0.sessionDescription = description
            $0.trackCount = audioPacketizer == nil ? 1 : 2
            $0.keyFrames = keyFrames
            if description == nil { $0.failure = "FFmpeg could not describe the stream as SDP (av_sdp_create)" }
        }
    }

    private func send(_ packet: EncodedPacket, isVideo: Bool) throws(MediaCodecsError) {
        guard let packetizer = isVideo ? packetizers.video : packetizers.audio else { return }
        let rtp = try packetizer.packetize(packet, origin: origin)
        guard !rtp.isEmpty else { return }
        let captureTime = packet.presentationTime.seconds
        let rtpTimestamp = packetizer.rtpTimestamp(at: packet.presentationTime, origin: origin)
        let now = CMClock.hostTimeClock.time.seconds
        shared.withLock { state in
            guard var fanout = state.fanout else { return }
            state.fanout = nil
            let delivery = fanout.add(
                rtp, track: isVideo ? 0 : 1, captureTime: captureTime, rtpTimestamp: rtpTimestamp,
                clockRate: packetizer.clockRate, isVideoKeyFrame: isVideo && packet.isKeyFrame, now: now)
            let joining = Set(delivery.joining.map(ObjectIdentifier.init))
            for (key, subscriber) in fanout.subscribers where !joining.contains(key) {
                subscriber.receive(delivery.live)
            }
            for subscriber in delivery.joining { subscriber.start(delivery.start, tracks: delivery.tracks) }
            state.fanout = fanout
        }
    }

    // MARK: Graph hooks

    override package var hasWorkInFlight: Bool {
        !(mailbox?.isIdle ?? true) || videoInFlight.load(ordering: .relaxed) > 0
    }

    override package func accepts(_ mediaType: AVMediaType) -> Bool { mediaType == .video || mediaType == .audio }

    override package func receive(_ sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        let isVideo = sampleBuffer.imageBuffer != nil
        if isVideo {
            // A few pictures wait at most: a late encoder drops pictures rather than delaying the stream.
            guard videoInFlight.add(1, ordering: .relaxed).newValue <= 4 else {
                videoInFlight.subtract(1, ordering: .relaxed)
                return
            }
        } else if sampleBuffer.formatDescription?.mediaType != .audio {
            return
        }
        let sound =
            isVideo ? sampleBuffer : AudioChannelGain.apply(to: sampleBuffer, channels: connection.audioChannels)
        if mailbox?.post(.sample(sound, isVideo: isVideo)) != true, isVideo {
            videoInFlight.subtract(1, ordering: .relaxed)
        }
    }

    override package func videoDemand(for connection: AVCaptureConnection) -> VideoFormatDemand? {
        VideoFormatDemand(pixelFormats: VideoEncoder.nativePixelFormats(for: .h264), evenDimensions: true)
    }
}
