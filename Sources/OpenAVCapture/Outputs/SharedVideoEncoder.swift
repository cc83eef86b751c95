import CaptureGraph
import Foundation
import MediaCodecs
import Synchronization

/// One H.264 encoder for every output that wants the same camera's pictures encoded the same way: a publishing
/// output, and the movie file outputs recording its stream (see ``AVCaptureMovieFileOutput``). Encoding 1080p costs
/// far more than anything else a recording does, so the outputs take one stream of packets instead of each
/// encoding the same pictures.
///
/// Every output holding it offers the pictures it receives. A picture is encoded once, by whichever output offers
/// it first; an offer of the same or an older presentation time is skipped (the other output got there first). The
/// packets of each picture go back to the output that offered it and to every other subscriber's handler, in
/// encoding order. Whoever holds it keeps it alive: a movie still recording keeps encoding after the publishing
/// output stopped or left the session.
///
/// The encoder is made for the first picture (its size and pixel format, the frame rate its duration says; later
/// pictures in another format or size are converted to those): H.264 with ``VideoEncoder``'s defaults (a key frame
/// every second) unless the settings say otherwise. ``requestKeyFrame()`` makes the next picture an IDR, where a
/// recording joining the stream starts without waiting for the GOP.
///
/// Threading: thread safe. Encoding runs under a lock on the offering output's queue; subscribers' handlers run
/// there too, under the lock, so they must only hand the packets to their own queue.
final class SharedVideoEncoder: Sendable {
    struct Settings: Sendable {
        var bitRate: Int?
        /// Frames from one key frame to the next; nil: one second's worth.
        var keyFrameInterval: Int?
    }

    /// The packets of one picture, with the encoder that made them (its configuration and parameter sets).
    struct Packets: @unchecked Sendable {
        let packets: [EncodedPacket]
        /// Only its immutable description may be read: the encoder is in use under the lock.
        let encoder: VideoEncoder
    }

    /// Called with the packets of every picture encoded, under the lock: it must not call back.
    typealias Handler = @Sendable (Packets) -> Void

    private struct State: ~Copyable {
        var encoder: VideoEncoder?
        var pictures = EncoderPictureConverter()
        var lastTime = CMTime.invalid
        var forcesKeyFrame = false
        var subscribers: [ObjectIdentifier: Handler] = [:]
    }

    /// Read when the first picture makes the encoder (an output's settings apply from its first buffer).
    private let settings: @Sendable () -> Settings
    private let state = Mutex(State())

    init(settings: @escaping @Sendable () -> Settings) { self.settings = settings }

    /// The encoder, once the first picture made it (its configuration and `extradata` describe the stream).
    var video: VideoEncoder? { state.withLock { UncheckedSendable($0.encoder) }.value }

    /// `subscriber` gets the packets of the pictures others offer, through `handler`.
    func subscribe(_ subscriber: ObjectIdentifier, handler: @escaping Handler) {
        state.withLock { $0.subscribers[subscriber] = handler }
    }

    func unsubscribe(_ subscriber: ObjectIdentifier) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: subscriber) }
    }

    /// The next picture encoded becomes a key frame (an IDR).
    func requestKeyFrame() { state.withLock { $0.forcesKeyFrame = true } }

    /// Encodes `buffer`'s picture unless a picture at or after its time was encoded already, and hands its packets
    /// (one, with x264's zero latency) to every subscriber. Returns them only to an offerer that is no subscriber.
    func encode(picture buffer: CMSampleBuffer, by subscriber: ObjectIdentifier) throws(MediaCodecsError)
        -> [EncodedPacket]
    {
        guard let image = buffer.imageBuffer, buffer.presentationTimeStamp.isNumeric else { return [] }
        let time = buffer.presentationTimeStamp
        let duration = buffer.duration
        let settings = self.settings
        let sendableImage = UncheckedSendable(image)
        return try state.withLock { (state: inout State) throws(MediaCodecsError) -> [EncodedPacket] in
            if state.lastTime.isNumeric, time <= state.lastTime { return [] }
            let image = sendableImage.value
            if state.encoder == nil {
                let settings = settings()
                let rate = duration.isNumeric && duration > .zero ? max(1, Int((1 / duration.seconds).rounded())) : 30
                var configuration = VideoEncoder.Configuration(
                    codec: .h264, width: CVPixelBufferGetWidth(image) & ~1,
                    height: CVPixelBufferGetHeight(image) & ~1, frameRate: rate,
                    pixelFormat: CVPixelBufferGetPixelFormatType(image))
                if let bitRate = settings.bitRate { configuration.averageBitRate = bitRate }
                if let interval = settings.keyFrameInterval { configuration.maxKeyFrameInterval = max(1, interval) }
                state.encoder = try VideoEncoder(configuration)
            }
            guard let encoder = state.encoder else { return [] }
            let picture = try state.pictures.picture(image, for: encoder.configuration)
            try encoder.send(picture, presentationTime: time, forcingKeyFrame: state.forcesKeyFrame)
            state.forcesKeyFrame = false
            state.lastTime = time
            var packets: [EncodedPacket] = []
            while case .packet(let packet) = try encoder.receivePacket() { packets.append(packet) }
            // Every subscriber, the offering one too, gets the packets through its handler, under the lock: each
            // sees them in encoding order, whichever output encoded them. Only an owner that is no subscriber
            // (nothing shares its encoder) takes them back here.
            if !packets.isEmpty {
                let shared = Packets(packets: packets, encoder: encoder)
                for handler in state.subscribers.values { handler(shared) }
            }
            return state.subscribers[subscriber] == nil ? packets : []
        }
    }
}
