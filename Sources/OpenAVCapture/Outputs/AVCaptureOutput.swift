import CaptureDrivers
import CaptureGraph
import Foundation
import Synchronization

/// Where a session's media goes: the base of every output.
///
/// The session hands each output the sample buffers of its connections on the device's capture thread through
/// `receive(_:from:)`; an output must return at once (queue the work) so one slow consumer never slows the
/// device or the other outputs.
///
/// Threading: thread safe; the connection list is guarded by a mutex.
open class AVCaptureOutput: NSObject, @unchecked Sendable {
    private let attachedConnections = Mutex<[AVCaptureConnection]>([])
    package let sessionReference = Mutex<WeakSession>(WeakSession())
    /// Moves whenever an answer of the hooks below may have changed: the graph's routes recompute them then only.
    package let demandGeneration: DemandGeneration

    override package init() {
        demandGeneration = DemandGeneration()
        super.init()
    }

    /// An output whose parts (its `sampleBuffers` sequences) tell `demandGeneration` of changes themselves.
    package init(demandGeneration: DemandGeneration) {
        self.demandGeneration = demandGeneration
        super.init()
    }

    /// The connections feeding this output.
    open var connections: [AVCaptureConnection] { attachedConnections.withLock { $0 } }

    /// The first connection whose input ports carry `mediaType`.
    open func connection(with mediaType: AVMediaType) -> AVCaptureConnection? {
        connections.first { $0.inputPorts.contains { $0.mediaType == mediaType } }
    }

    /// A metadata object in the coordinates of `connection`'s pictures: the object's normalized coordinates (of the
    /// frame as the device delivers it) turned by the connection's `videoRotationAngle` (clockwise, in quarter turns)
    /// and mirrored if `isVideoMirrored`, as a data output on that connection delivers its frames. Nil when the
    /// connection is not one of this output's.
    open func transformedMetadataObject(
        for metadataObject: AVMetadataObject, connection: AVCaptureConnection
    )
        -> AVMetadataObject?
    {
        guard connections.contains(where: { $0 === connection }) else { return nil }
        let settings = connection.currentSettings
        let quarterTurns = ((Int((settings.rotationAngle / 90).rounded()) % 4) + 4) % 4
        let mirrored = settings.isVideoMirrored
        return metadataObject.mapped { point in
            var turned: CGPoint
            switch quarterTurns {
            case 1: turned = CGPoint(x: 1 - point.y, y: point.x)
            case 2: turned = CGPoint(x: 1 - point.x, y: 1 - point.y)
            case 3: turned = CGPoint(x: point.y, y: 1 - point.x)
            default: turned = point
            }
            if mirrored { turned.x = 1 - turned.x }
            return turned
        }
    }

    package func setConnections(_ connections: [AVCaptureConnection]) {
        attachedConnections.withLock { $0 = connections }
    }

    /// The session the output belongs to, if any.
    package var session: AVCaptureSession? { sessionReference.withLock { $0.session } }

    /// Subclasses call it after changing anything `videoDemand`, `takesCompressedVideo`, `takesLentPictures` or
    /// `wantsVideoFrames` read (settings, delegates, recording state): the routes ask again at their next frame.
    package func demandsChanged() { demandGeneration.bump() }

    // MARK: The graph's hooks, overridden by each output

    /// Whether the output takes media of this type (automatic connections form only for these).
    package func accepts(_ mediaType: AVMediaType) -> Bool { false }

    /// Whether a session with these inputs can take the output (`canAddOutput(_:)`): outputs that need a kind of
    /// source no input offers (depth) say no.
    package func canJoin(inputs: [AVCaptureInput]) -> Bool { true }

    /// Whether the output takes more than one connection of a media type.
    package var acceptsMultipleConnectionsPerMediaType: Bool { false }

    /// A sample buffer for one of the output's connections, on the capture thread. Must not block.
    package func receive(_ sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {}

    /// What the output takes from a video connection now, read on the capture thread when the route is made and
    /// after `demandsChanged()` or a change of the connection's settings, before `receive(_:from:)`: the session's `FrameConversionStage` converts frames in other formats or sizes (once per
    /// target, shared by outputs that ask the same). nil takes frames as the device delivers them, or asks for
    /// nothing because the output would not use the frame. Must not block.
    package func videoDemand(for connection: AVCaptureConnection) -> VideoFormatDemand? { nil }

    /// Whether the output takes `connection`'s compressed frames of `format` as the device delivers them (a movie
    /// file output writing the camera's own codec), read on the capture thread for every compressed frame. Such an
    /// output gets the compressed frame instead of the decoded one; when every output of the device takes it, the
    /// frame is not decoded at all. Read again for another format, or after `demandsChanged()`. Must not block.
    package func takesCompressedVideo(_ format: CMFormatDescription, from connection: AVCaptureConnection) -> Bool {
        false
    }

    /// Whether the output would use a video frame of `connection` now; when no output of a compressed camera would,
    /// its frames are not decoded. Read on the capture thread, again after `demandsChanged()`. Must not block.
    package func wantsVideoFrames(from connection: AVCaptureConnection) -> Bool { true }

    /// Whether the output may be given a decoder's own 4:2:0 planar pictures from `connection`, which the decoder
    /// predicts later pictures from, instead of copies: it only reads the frames it takes (an encoder's input), lets
    /// no code that may draw on them see them, and takes `'y420'` as it is (or takes nothing now). Read on the
    /// capture thread, again after `demandsChanged()`. Must not block.
    package func takesLentPictures(from connection: AVCaptureConnection) -> Bool { false }

    /// A frame the device dropped, on the capture thread. Must not block.
    package func receiveDrop(
        presentationTime: CMTime, reason: DropReason, format: CMFormatDescription?, from connection: AVCaptureConnection
    ) {}

    /// The session started or stopped streaming to the output.
    package func sessionDidStartRunning() {}
    package func sessionWillStopRunning() {}
    package func sessionDidStopRunning() {}

    /// A device fault ended the output's input (unplugged, taken by another application).
    package func inputDidFail(_ error: AVError, connection: AVCaptureConnection) {}

    /// Whether something the output was given is still waiting for its queue, its delegate, an encoder or the
    /// writer: what a test stepping a manual clock waits out between steps, so that an output which drops what
    /// waits too long (8 frames for an encoder, Apple's late-frame policy) drops only what it would on a machine
    /// that keeps up. Not for the output's own queue (it may wait on it).
    package var hasWorkInFlight: Bool { false }

    /// What the output has done so far, for a monitor; nil for outputs that keep no counts (see OutputMeasurements).
    package var measurements: OutputMeasurements? { nil }
}

/// A weak reference to a session, for outputs and inputs to find theirs.
package struct WeakSession: Sendable {
    package weak var session: AVCaptureSession?
    package init(_ session: AVCaptureSession? = nil) { self.session = session }
}
