import CWayland
import Foundation
import OpenCoreMedia

/// What the capture thread of a Wayland screen holds: its own compositor connection, the shared buffers the
/// compositor copies frames into, and the pool scaled frames come from.
///
/// Buffers are made at the first frame, from the size and format the compositor describes (`buffer` event): when
/// that is the stream's size in a BGRA layout (wl_shm ARGB8888 or XRGB8888, which are B, G, R, A bytes in memory),
/// the buffers themselves are handed on as frames and the compositor's copy is the only one; otherwise one private
/// buffer is scaled (nearest-neighbour) into pooled frames.
///
/// Threading: thread-bound: made on the thread that starts the stream, then used only by the capture thread.
final class WaylandScreenGrabber: ScreenGrabber, @unchecked Sendable {
    /// wl_shm's ARGB8888 and XRGB8888: little-endian words, so B, G, R, A bytes, which is BGRA.
    private static let bgraFormats: Set<UInt32> = [0, 1]
    /// How long the compositor may take to describe or fill a buffer before the screen counts as gone: a
    /// compositor copies at its next repaint, a few milliseconds; a second means it stopped answering.
    private static let answerMilliseconds: Int32 = 1000

    let connection: WaylandConnection
    let frameNanoseconds: Int64
    private let frameDuration: CMTime
    private let outputIndex: Int32
    private let monitor: ScreenMonitor
    private let displayName: String
    private let scale: Int32
    private let sourceWidth: Int32
    private let sourceHeight: Int32
    private let outputWidth: Int
    private let outputHeight: Int
    private let formatDescription: CMFormatDescription
    private let samples = CMSampleBufferRecycler(capacity: ScreenCaptureThread.bufferCount + 2)
    private let wakeDescriptor: Int32

    /// The compositor's description the buffers were made for.
    private var bufferInfo: CWayland_BufferInfo?
    /// Handed out as frames (the compositor's layout is the stream's).
    private var buffers: [WaylandSharedBuffer] = []
    private var recycler: CVPixelBufferRecycler?
    private var isFree: [Bool] = []
    /// Copied into and scaled from (any other layout).
    private var scalingSource: WaylandSharedBuffer?
    private var scaledPool: CVPixelBufferPool?
    private var scaleColumns: [Int] = []
    private var hasDeliveredFrame = false

    init(
        screen: WaylandScreen, outputWidth: Int32, outputHeight: Int32, frameDuration: CMTime, wakeDescriptor: Int32
    ) throws(DeviceFault) {
        let connection: WaylandConnection
        do {
            connection = try WaylandConnection(name: screen.displayName)
        } catch {
            throw .explained(.disconnected, advice: error.description)
        }
        guard
            let index = connection.outputs.first(where: { $0.output.globalName == screen.monitor.identifier })?.index,
            connection.screencopyVersion > 0
        else {
            throw .explained(
                .disconnected,
                advice: "The Wayland compositor \(screen.displayName) no longer has the output \(screen.monitor.name)"
                    + " (or its wlr-screencopy); list the screens again and make a new AVCaptureScreenInput.")
        }
        let settings = screen.settings
        self.connection = connection
        self.outputIndex = index
        self.monitor = screen.monitor
        self.displayName = screen.displayName
        scale = screen.scale
        self.frameDuration = frameDuration
        self.wakeDescriptor = wakeDescriptor
        frameNanoseconds = max(1, CMTimeConvertScale(frameDuration, timescale: 1_000_000_000, method: .default).value)
        sourceWidth = min(settings.cropWidth, screen.monitor.width)
        sourceHeight = min(settings.cropHeight, screen.monitor.height)
        self.outputWidth = Int(outputWidth)
        self.outputHeight = Int(outputHeight)
        do {
            formatDescription = try CMFormatDescription(
                videoCodecType: .init(rawValue: kCVPixelFormatType_32BGRA), width: Int(outputWidth),
                height: Int(outputHeight))
        } catch {
            throw .io(.invalidArgument)
        }
    }

    deinit {
        // The wl_buffers belong to this connection: they go before it closes; the mappings stay with their frames.
        for buffer in buffers { buffer.detach() }
        scalingSource?.detach()
    }

    /// The frame for the frame time `hostNanoseconds` (its presentation time), or why there is none.
    func nextFrame(at hostNanoseconds: Int64, settings: ScreenCaptureSettings) -> ScreenGrabOutcome {
        let time = CMClock.hostTime(nanoseconds: hostNanoseconds)
        let originX = min(max(0, settings.cropX), monitor.width - sourceWidth)
        let originY = min(max(0, settings.cropY), monitor.height - sourceHeight)
        // Regions are in the compositor's layout units: a scaled (HiDPI) output's buffer comes back in pixels, the
        // crop's size again (a crop not on the scale's grid is widened to it and then scaled to the stream's size).
        let (left, top) = (originX / scale, originY / scale)
        let right = (originX + sourceWidth + scale - 1) / scale
        let bottom = (originY + sourceHeight + scale - 1) / scale
        guard
            let frame = CWayland_frameRequest(
                connection.pointer, outputIndex, settings.capturesCursor, left, top, right - left, bottom - top)
        else { return .failed(lost) }
        defer { CWayland_frameDestroy(frame) }
        var info = CWayland_BufferInfo()
        switch CWayland_frameAwaitBufferInfo(frame, Self.answerMilliseconds, wakeDescriptor, &info) {
        case CWayland_waitDone: break
        case CWayland_waitWoken: return .stopped
        case CWayland_waitTimedOut where !connection.hasFailed: return .unanswered(time)
        default: return .failed(lost)
        }
        guard prepareBuffers(for: info) else { return .failed(unusable(info)) }
        // Pick the memory the compositor copies into: a free hand-out buffer, or the private scaling source.
        let target: WaylandSharedBuffer
        var handOutIndex: Int?
        if let recycler {
            samples.releaseIdleImages()
            while let index = recycler.firstReturnedBuffer() { isFree[index] = true }
            guard let index = isFree.firstIndex(of: true) else { return .noFreeBuffer(time) }
            target = buffers[index]
            handOutIndex = index
        } else if let source = scalingSource {
            target = source
        } else {
            preconditionFailure("prepareBuffers made either hand-out buffers or a scaling source")
        }
        // With duplicate removal the copy waits for damage, at most until the next frame time.
        let onDamage = settings.removesDuplicateFrames && hasDeliveredFrame
        CWayland_frameCopy(frame, target.pointer, onDamage)
        let wait = onDamage ? Int32(clamping: max(1, frameNanoseconds / 1_000_000)) : Self.answerMilliseconds
        var inverted = false
        var readyNanoseconds: Int64 = 0
        switch CWayland_frameAwaitReady(frame, wait, wakeDescriptor, &inverted, &readyNanoseconds) {
        case CWayland_waitDone: break
        case CWayland_waitTimedOut where onDamage: return .unchanged
        case CWayland_waitTimedOut where !connection.hasFailed: return .unanswered(time)
        case CWayland_waitWoken: return .stopped
        default: return .failed(lost)
        }
        let timing = CMSampleTimingInfo(duration: frameDuration, presentationTimeStamp: time, decodeTimeStamp: .invalid)
        let image: CVPixelBuffer
        if let recycler, let index = handOutIndex {
            if inverted { Self.flipRows(target) }
            isFree[index] = false
            image = recycler.handOut(index)
        } else {
            guard let pool = scaledPool,
                case .success(let scaled) = pool.pixelBuffer(
                    allocationThreshold: ScreenCaptureThread.bufferCount)
            else { return .noFreeBuffer(time) }
            if inverted { Self.flipRows(target) }
            CVPixelBufferLockBaseAddress(scaled, [])
            ScreenPointerOverlay.scale(
                from: target.baseAddress, height: target.height, bytesPerRow: target.bytesPerRow,
                into: CVPixelBufferGetBaseAddress(scaled)!, width: outputWidth, height: outputHeight,
                bytesPerRow: CVPixelBufferGetBytesPerRow(scaled), columns: scaleColumns)
            CVPixelBufferUnlockBaseAddress(scaled, [])
            image = scaled
        }
        hasDeliveredFrame = true
        return .frame(samples.sampleBuffer(imageBuffer: image, formatDescription: formatDescription, timing: timing))
    }

    /// Makes the buffers for the compositor's description once (a later, different description is refused: the
    /// output changed size or format, so the stream's format no longer fits).
    private func prepareBuffers(for info: CWayland_BufferInfo) -> Bool {
        if let known = bufferInfo {
            return known.width == info.width && known.height == info.height && known.stride == info.stride
                && known.format == info.format
        }
        guard Self.bgraFormats.contains(info.format) else { return false }
        bufferInfo = info
        if Int(info.width) == outputWidth && Int(info.height) == outputHeight {
            let made = (0..<ScreenCaptureThread.bufferCount).compactMap { _ in
                WaylandSharedBuffer(connection: connection, info: info)
            }
            let wrapped = made.compactMap { try? $0.wrapPixelBuffer() }
            guard made.count == ScreenCaptureThread.bufferCount, wrapped.count == made.count else {
                return false
            }
            buffers = made
            recycler = CVPixelBufferRecycler(wrapped)
            isFree = Array(repeating: true, count: made.count)
        } else {
            guard let source = WaylandSharedBuffer(connection: connection, info: info) else { return false }
            scalingSource = source
            scaledPool = try? CVPixelBufferPool(
                width: outputWidth, height: outputHeight, pixelFormatType: kCVPixelFormatType_32BGRA,
                minimumBufferCount: ScreenCaptureThread.bufferCount)
            scaleColumns = ScreenPointerOverlay.scaleColumns(sourceWidth: Int(info.width), width: outputWidth)
            guard scaledPool != nil else { return false }
        }
        return true
    }

    /// Puts a bottom-first copy the right way up (compositors whose renderer reads upside down say so in `flags`).
    private static func flipRows(_ buffer: WaylandSharedBuffer) {
        let stride = buffer.bytesPerRow
        let row = UnsafeMutableRawPointer.allocate(byteCount: stride, alignment: 16)
        defer { row.deallocate() }
        for top in 0..<buffer.height / 2 {
            let upper = buffer.baseAddress + top * stride
            let lower = buffer.baseAddress + (buffer.height - 1 - top) * stride
            row.copyMemory(from: upper, byteCount: stride)
            upper.copyMemory(from: lower, byteCount: stride)
            lower.copyMemory(from: row, byteCount: stride)
        }
    }

    private var lost: DeviceFault {
        .explained(
            .disconnected,
            advice: "The Wayland compositor \(displayName) closed the connection or dropped the output"
                + " \(monitor.name) (it exited, or the output was unplugged); make a new AVCaptureScreenInput once"
                + " it is back.")
    }

    private func unusable(_ info: CWayland_BufferInfo) -> DeviceFault {
        .explained(
            .io(.notSupported),
            advice: "The Wayland compositor \(displayName) offers \(monitor.name)'s frames as wl_shm format"
                + " \(info.format), \(info.width)x\(info.height), which is not a BGRA layout or changed while"
                + " recording; make a new AVCaptureScreenInput.")
    }
}
