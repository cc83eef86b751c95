import CaptureDrivers
import CaptureGraph
import Foundation
import MediaCodecs

/// A recording that shares a publishing output's H.264 encoder (ours; see ``AVCaptureMovieFileOutput``): the
/// encoder, the connection whose pictures it takes, and the rewriting of its packets into the compressed frames the
/// file takes as they are.
///
/// `@unchecked Sendable`: immutable; the connection and encoder are thread safe.
struct VideoEncoderSharing: @unchecked Sendable {
    let encoder: SharedVideoEncoder
    let connection: AVCaptureConnection
    let samples = EncodedVideoSamples()
}

/// Sharing the encoder: while it shares one, the output offers its pictures to the shared encoder (on its work
/// queue) instead of encoding them, and records the packets, its own and those of pictures the publishing output
/// encoded first, as a camera's H.264 is recorded: written as they come, from a key frame. The encoder makes an IDR
/// whenever the recording needs one (its start, a resume, a frame the writer could not take), so a recording starts
/// with the first picture after `startRecording`, as one that encodes its own.
extension AVCaptureFileOutput {
    /// At each recording's start: share the encoder found now, or stop sharing.
    func updateEncoderSharing() {
        let found = hasFileDelegate.load(ordering: .relaxed) ? nil : sharableVideoEncoder()
        let previous = encoderSharing.withLock { current -> VideoEncoderSharing? in
            defer { current = found }
            return current
        }
        if let previous, previous.encoder !== found?.encoder { previous.encoder.unsubscribe(ObjectIdentifier(self)) }
        guard let found, previous?.encoder !== found.encoder else { return }
        let weakOutput = WeakFileOutput(output: self)
        found.encoder.subscribe(ObjectIdentifier(self)) { packets in
            weakOutput.output?.recordSharedPackets(packets, of: found)
        }
    }

    /// The recordings are over: the encoder is left to the publishing output.
    func endEncoderSharing() {
        let previous = encoderSharing.withLock { current -> VideoEncoderSharing? in
            defer { current = nil }
            return current
        }
        previous?.encoder.unsubscribe(ObjectIdentifier(self))
    }

    func sharesEncoder(for connection: AVCaptureConnection) -> Bool {
        encoderSharing.withLock { $0?.connection === connection }
    }

    /// A picture for the shared encoder, encoded on the work queue (see ``encodeShared(_:keyFrame:)``).
    func offerToSharedEncoder(_ picture: CMSampleBuffer, from connection: AVCaptureConnection) {
        guard admitsVideoFrame() else { return }
        post(.sharedPicture(picture, connection), isVideo: true)
    }

    /// On the work queue: `picture` offered to the shared encoder (skipped when the publishing output encoded it
    /// first). Its packets come through the subscription, in encoding order, as every other packet does.
    func encodeShared(_ picture: CMSampleBuffer, keyFrame: Bool) {
        guard let sharing = encoderSharing.withLock({ $0 }) else { return }
        if keyFrame { sharing.encoder.requestKeyFrame() }
        do {
            _ = try sharing.encoder.encode(picture: picture, by: ObjectIdentifier(self))
        } catch {
            countDrop(DropReason.frameWasLate.rawValue)
        }
    }

    /// Packets of every picture the shared encoder made (on the queue of the output that offered it): to the engine,
    /// in encoding order. They are
    /// not bounded as pictures are: a packet left out would break the decoding of every frame up to the next key
    /// frame, and they are small.
    private func recordSharedPackets(_ shared: SharedVideoEncoder.Packets, of sharing: VideoEncoderSharing) {
        for packet in shared.packets {
            guard let sample = sharing.samples.sample(packet, of: shared.encoder) else { continue }
            framesAwaitingEngine.add(1, ordering: .relaxed)
            post(.sample(sample, sharing.connection, isVideo: true), isVideo: true, counted: false)
        }
    }
}

/// A file output without keeping it alive: the shared encoder's handler must not (the output holds the encoder).
private struct WeakFileOutput: Sendable {
    weak var output: AVCaptureFileOutput?
}
