import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// What the capture thread of a portal screen holds: a PipeWire connection of its own (the portal's remote), the
/// stream from the session's node, and the newest frame that stream delivered.
///
/// A screen node sends a frame only when the picture changed (damage). The capture thread's frame times take the
/// newest one, crop and scale it (nearest-neighbour) into a pooled buffer: an unchanged screen repeats its last
/// picture at the frame rate, and with `removesDuplicateFrames` a frame time with nothing new delivers nothing.
///
/// A session in cursor mode metadata sends the cursor beside the frames (`PipeWireCursorUpdate`): with
/// `capturesCursor` it is drawn here over the copied picture (the newest position and image), and a moved pointer
/// counts as something new; without, it is left out.
///
/// Threading: thread-bound: made on the thread that starts the stream, then used by the capture thread; the newest
/// frame is handed over from PipeWire's loop thread through a mutex.
final class PortalScreenGrabber: ScreenGrabber, @unchecked Sendable {
    let frameNanoseconds: Int64
    private let frameDuration: CMTime
    private let monitor: ScreenMonitor
    private let sourceWidth: Int32
    private let sourceHeight: Int32
    private let outputWidth: Int
    private let outputHeight: Int
    private let formatDescription: CMFormatDescription
    private let pool: CVPixelBufferPool
    private let columns: [Int]
    private let samples = CMSampleBufferRecycler(capacity: ScreenCaptureThread.bufferCount + 2)
    private let connection: PipeWireConnection
    private let session: ScreenCastSession
    private let stream: PipeWireCaptureStream
    private let newest: NewestFrameBox
    private var deliveredGeneration: UInt64 = 0
    private var deliveredCursorChanges: UInt64 = 0
    /// Whether the stream sends the cursor as metadata, for this grabber to draw.
    private let cursorIsMetadata: Bool

    /// What PipeWire's thread leaves for the capture thread, shared with the stream's sink.
    private final class NewestFrameBox: Sendable {
        let state = Mutex(NewestFrame())
    }

    /// `@unchecked Sendable`: the pixel buffer is only read once handed over, behind the mutex.
    fileprivate struct NewestFrame: @unchecked Sendable {
        var image: CVPixelBuffer?
        /// Counts the frames the node sent; 0 before the first.
        var generation: UInt64 = 0
        var fault: DeviceFault?
        /// The cursor as the metadata last said (cursor mode metadata only), and how often it changed.
        var cursor = PipeWireCursorUpdate(isVisible: false, x: 0, y: 0, image: nil)
        var cursorChanges: UInt64 = 0
    }

    /// Reads node `nodeID` of `session` (the screen's own, or its session in the other cursor mode).
    init(
        screen: PortalScreen, session: ScreenCastSession, nodeID: UInt32, outputWidth: Int32, outputHeight: Int32,
        frameDuration: CMTime
    ) throws(DeviceFault) {
        let descriptor: Int32
        do {
            descriptor = try session.openPipeWireRemote()
        } catch {
            throw .explained(.disconnected, advice: error.description)
        }
        // The connection takes the descriptor over, also when it fails. The node going, or PipeWire closing the
        // connection, is how a compositor's exit shows: its nodes go with its PipeWire client, and no stream
        // error comes.
        let newest = NewestFrameBox()
        self.newest = newest
        let connection: PipeWireConnection
        do {
            connection = try PipeWireConnection(
                fd: descriptor,
                onEvent: { event in
                    switch event {
                    case .nodeRemoved(let node) where node.id == nodeID:
                        newest.state.withLock { $0.fault = .disconnected }
                    case .connectionLost:
                        newest.state.withLock { $0.fault = .disconnected }
                    default: break
                    }
                })
        } catch {
            throw .explained(
                .disconnected, advice: "The ScreenCast portal's PipeWire connection did not work (\(error)).")
        }
        guard let node = connection.nodes.first(where: { $0.id == nodeID }) else {
            throw .explained(
                .disconnected,
                advice: "The ScreenCast portal's stream (PipeWire node \(nodeID)) is gone: the sharing "
                    + "was stopped. Make a new AVCaptureScreenInput to share again.")
        }
        let settings = screen.settings
        self.monitor = screen.monitor
        self.frameDuration = frameDuration
        self.connection = connection
        self.session = session
        cursorIsMetadata = session.cursorMode == .metadata
        frameNanoseconds = max(1, CMTimeConvertScale(frameDuration, timescale: 1_000_000_000, method: .default).value)
        sourceWidth = min(settings.cropWidth, monitor.width)
        sourceHeight = min(settings.cropHeight, monitor.height)
        self.outputWidth = Int(outputWidth)
        self.outputHeight = Int(outputHeight)
        columns = ScreenPointerOverlay.scaleColumns(sourceWidth: Int(sourceWidth), width: Int(outputWidth))
        do {
            formatDescription = try CMFormatDescription(
                videoCodecType: .init(rawValue: kCVPixelFormatType_32BGRA), width: Int(outputWidth),
                height: Int(outputHeight))
            pool = try CVPixelBufferPool(
                width: Int(outputWidth), height: Int(outputHeight), pixelFormatType: kCVPixelFormatType_32BGRA,
                minimumBufferCount: ScreenCaptureThread.bufferCount)
        } catch {
            throw .io(.invalidArgument)
        }
        var cursorSink: (@Sendable (PipeWireCursorUpdate) -> Void)?
        if session.cursorMode == .metadata {
            cursorSink = { @Sendable update in newest.state.withLock { $0.take(update) } }
        }
        stream = try PipeWireCaptureStream(
            connection: connection, node: node,
            format: .video(Screens.format(width: monitor.width, height: monitor.height)), frameDuration: frameDuration,
            sink: { event in
                switch event {
                case .output(let sample, _):
                    guard let image = sample.imageBuffer else { return }
                    // The previous frame goes back to the node as this one replaces it.
                    newest.state.withLock { state in
                        state.image = image
                        state.generation += 1
                    }
                case .fault(let fault):
                    newest.state.withLock { $0.fault = fault }
                default:
                    break
                }
            },
            cursorSink: cursorSink)
        try stream.start()
    }

    deinit { stream.stop() }

    func nextFrame(at hostNanoseconds: Int64, settings: ScreenCaptureSettings) -> ScreenGrabOutcome {
        let time = CMClock.hostTime(nanoseconds: hostNanoseconds)
        let (image, generation, fault, cursor, cursorChanges) = newest.state.withLock {
            ($0.image, $0.generation, $0.fault, $0.cursor, $0.cursorChanges)
        }
        let drawsCursor = cursorIsMetadata && settings.capturesCursor
        // The portal's Closed signal says the share ended, also where PipeWire tells this stream nothing.
        if session.isClosed {
            return .failed(
                .explained(
                    .disconnected,
                    advice: "The desktop stopped sharing the screen (the ScreenCast portal closed the session: the "
                        + "sharing was stopped, or the compositor exited); make a new AVCaptureScreenInput to share "
                        + "again."))
        }
        if let fault {
            return .failed(
                fault.kind == .disconnected
                    ? .explained(
                        .disconnected,
                        advice: "The ScreenCast portal's stream ended (the sharing was stopped, or the compositor "
                            + "exited); make a new AVCaptureScreenInput to share again.") : fault)
        }
        // Nothing yet (the node sends its first frame once the compositor paints), or nothing new when duplicates
        // are left out.
        guard let image, generation > 0 else { return .unchanged }
        if settings.removesDuplicateFrames && generation == deliveredGeneration
            && (!drawsCursor || cursorChanges == deliveredCursorChanges)
        {
            return .unchanged
        }
        samples.releaseIdleImages()
        guard case .success(let frame) = pool.pixelBuffer(allocationThreshold: ScreenCaptureThread.bufferCount)
        else { return .noFreeBuffer(time) }
        let originX = Int(min(max(0, settings.cropX), monitor.width - sourceWidth))
        let originY = Int(min(max(0, settings.cropY), monitor.height - sourceHeight))
        CVPixelBufferLockBaseAddress(image, .readOnly)
        CVPixelBufferLockBaseAddress(frame, [])
        defer {
            CVPixelBufferUnlockBaseAddress(frame, [])
            CVPixelBufferUnlockBaseAddress(image, .readOnly)
        }
        guard let source = CVPixelBufferGetBaseAddress(image), let target = CVPixelBufferGetBaseAddress(frame),
            CVPixelBufferGetWidth(image) >= originX + Int(sourceWidth),
            CVPixelBufferGetHeight(image) >= originY + Int(sourceHeight)
        else { return .unanswered(time) }
        let sourceStride = CVPixelBufferGetBytesPerRow(image)
        let targetStride = CVPixelBufferGetBytesPerRow(frame)
        let origin = source + originY * sourceStride + originX * 4
        if outputWidth == Int(sourceWidth) && outputHeight == Int(sourceHeight) {
            // Unscaled (the usual case): a row copy each, not a lookup a pixel.
            for row in 0..<outputHeight {
                (target + row * targetStride).copyMemory(from: origin + row * sourceStride, byteCount: outputWidth * 4)
            }
        } else {
            ScreenPointerOverlay.scale(
                from: origin, height: Int(sourceHeight), bytesPerRow: sourceStride, into: target, width: outputWidth,
                height: outputHeight, bytesPerRow: targetStride, columns: columns)
        }
        if drawsCursor, cursor.isVisible, let cursorImage = cursor.image {
            // The pointer's place in the delivered picture: the crop's origin off, scaled as the picture was.
            ScreenPointerOverlay.drawCursor(
                cursorImage, pointerX: (cursor.x - originX) * outputWidth / Int(sourceWidth),
                pointerY: (cursor.y - originY) * outputHeight / Int(sourceHeight), into: target, width: outputWidth,
                height: outputHeight, bytesPerRow: targetStride, originX: 0, originY: 0)
        }
        deliveredGeneration = generation
        deliveredCursorChanges = cursorChanges
        let timing = CMSampleTimingInfo(duration: frameDuration, presentationTimeStamp: time, decodeTimeStamp: .invalid)
        return .frame(samples.sampleBuffer(imageBuffer: frame, formatDescription: formatDescription, timing: timing))
    }
}

extension PortalScreenGrabber.NewestFrame {
    /// Keeps what `update` says of the cursor (an image only when it changed), counting a change.
    mutating func take(_ update: PipeWireCursorUpdate) {
        var next = update
        next.image = update.image ?? cursor.image
        guard next != cursor else { return }
        cursor = next
        cursorChanges += 1
    }
}
