import CaptureDrivers
import Synchronization
import OpenCoreMedia
import OpenCoreVideo

/// Where the graph delivers one device's media: one output on one of its connections, as the router sees it. The
/// Apple surface implements it once per connection (its output's side of the route); the graph knows nothing of
/// outputs, connections or sessions.
///
/// Threading: every requirement is called on the device's capture thread, for every frame or drop the route gets,
/// and must return at once (queue the work): one slow sink never slows the device or the other sinks.
package protocol CaptureSink: AnyObject, Sendable {
    /// Whether the route takes media now (the connection's `isEnabled`).
    var isEnabled: Bool { get }

    /// The frame or audio buffer, in the format `videoDemand` asked for.
    func receive(_ sampleBuffer: CMSampleBuffer)

    /// The format the route's source port carries now: what a drop reports when the device does not say.
    var sourceFormat: CMFormatDescription? { get }

    /// A frame the device, the decoder or the converter lost for this route.
    func receiveDrop(presentationTime: CMTime, reason: DropReason, format: CMFormatDescription?)

    /// What the sink takes of a video frame: the graph's ``FrameConversionStage`` converts frames in other formats
    /// or sizes (once per target, shared by sinks asking the same). nil takes frames as they come, or asks nothing
    /// because the sink would not use the frame.
    var videoDemand: VideoFormatDemand? { get }

    /// Whether the sink takes compressed frames of `format` as the device delivers them (a movie written in the
    /// camera's own codec). Such a sink gets the compressed frame instead of the decoded one; when every sink of
    /// the device takes it, the frame is not decoded at all.
    func takesCompressedVideo(_ format: CMFormatDescription) -> Bool

    /// Whether the sink would use a video frame now (an output recording, a delegate set): when no enabled route of
    /// an MJPEG camera would, its frames are not decoded at all, only to be thrown away (a 720p frame's decode is
    /// milliseconds of CPU, and far more under emulation, taken from the other cameras).
    var wantsVideoFrames: Bool { get }

    /// Whether the sink may be given a decoder's own 4:2:0 planar pictures (which the decoder predicts later
    /// pictures from) instead of copies: it only reads what it takes and lets no drawing code see it.
    var takesLentPictures: Bool { get }

    /// Audio the route carries, before `receive`, for its level meters (`AVCaptureAudioChannel`). Allocation-free.
    func meter(_ sampleBuffer: CMSampleBuffer)
}

/// Where one device's media goes: its routes, replaced whole when a configuration is committed and read once per
/// buffer by the capture thread.
///
/// Threading: thread safe (a mutex).
package final class RouteTable: Sendable {
    private let sinks = Mutex<[any CaptureSink]>([])

    package init() {}

    /// The routes now.
    package var routes: [any CaptureSink] { sinks.withLock { $0 } }

    /// Replaces every route at once.
    package func replace(with routes: [any CaptureSink]) { sinks.withLock { $0 = routes } }
}
