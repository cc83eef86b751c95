import CX11
import Foundation
import OpenCoreMedia
import SystemPackage

/// What the capture thread of a screen holds: its own X connection, the shared-memory segments frames are grabbed
/// into, the Damage object that tells it what changed, and the cursor's image.
///
/// Threading: thread-bound: made on the thread that starts the stream, then used only by the capture thread.
final class X11ScreenGrabber: ScreenGrabber, @unchecked Sendable {
    /// What one frame time came to.
    /// A failure to start, as the fault the session reports.
    struct StartFailure: Error {
        var fault: DeviceFault
    }

    let connection: X11Connection
    let frameNanoseconds: Int64
    private let frameDuration: CMTime
    private let monitor: ScreenMonitor
    private let displayName: String
    /// The area grabbed, fixed for the stream (its size is the stream's format, through `scaleFactor`).
    private let sourceWidth: Int32
    private let sourceHeight: Int32
    private let outputWidth: Int
    private let outputHeight: Int
    private let formatDescription: CMFormatDescription
    private let samples = CMSampleBufferRecycler(capacity: ScreenCaptureThread.bufferCount + 2)

    /// Unscaled: the segments handed out as frames, and which are free.
    private let segments: [X11SharedImage]
    private let recycler: CVPixelBufferRecycler?
    private var isFree: [Bool]
    /// Scaled: one private segment grabbed into, and the pool the scaled frames come from.
    private let scalingSource: X11SharedImage?
    private let scaledPool: CVPixelBufferPool?
    private let scaleColumns: [Int]

    /// The Damage object on the root window (nil where the server lacks the extension: every frame is then new).
    private let damage: Damage?
    private let damageRegion: XserverRegion
    /// A Damage notification arrived since the damage was last read.
    private var damagePending = true
    /// The cursor's image, refetched when XFixes says it changed.
    private var cursor: ScreenCursorImage?
    private var cursorStale = true
    private var cursorSerial: UInt = 0
    /// What the last delivered frame showed of the pointer.
    private var drawnPointer: PointerState?
    private var hasDeliveredFrame = false
    /// A change was seen but its frame could not be delivered (every segment held): the next frame time grabs anyway.
    private var owesFrame = false

    private struct PointerState: Equatable {
        var x: Int
        var y: Int
        /// The serial of the cursor image drawn, nil when the cursor is not captured.
        var cursorSerial: UInt?
        var ring: Bool
        var shown: Bool
    }

    init(screen: X11Screen, outputWidth: Int32, outputHeight: Int32, frameDuration: CMTime) throws(StartFailure) {
        let connection: X11Connection
        do {
            connection = try X11Connection(name: screen.displayName)
        } catch {
            throw StartFailure(fault: error.fault)
        }
        let name = screen.identity.localizedName
        guard connection.hasSharedMemory else {
            throw StartFailure(
                fault: .explained(
                    .io(.notSupported),
                    advice: "The X server \(connection.name) has no MIT-SHM extension, which \(name) needs; use a local"
                        + " Xorg, Xwayland or Xvfb server."))
        }
        let settings = screen.settings
        self.connection = connection
        self.monitor = screen.monitor
        self.displayName = connection.name
        self.frameDuration = frameDuration
        self.frameNanoseconds = max(
            1, CMTimeConvertScale(frameDuration, timescale: 1_000_000_000, method: .default).value)
        let sourceWidth = min(settings.cropWidth, screen.monitor.width)
        let sourceHeight = min(settings.cropHeight, screen.monitor.height)
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.outputWidth = Int(outputWidth)
        self.outputHeight = Int(outputHeight)
        let scales = sourceWidth != outputWidth || sourceHeight != outputHeight
        do {
            if scales {
                scalingSource = try X11SharedImage(connection: connection, width: sourceWidth, height: sourceHeight)
                segments = []
                recycler = nil
                scaledPool = try? CVPixelBufferPool(
                    width: Int(outputWidth), height: Int(outputHeight), pixelFormatType: kCVPixelFormatType_32BGRA,
                    minimumBufferCount: ScreenCaptureThread.bufferCount)
                scaleColumns = ScreenPointerOverlay.scaleColumns(sourceWidth: Int(sourceWidth), width: Int(outputWidth))
            } else {
                let made = try (0..<ScreenCaptureThread.bufferCount).map { _ throws(X11SharedImage.Failure) in
                    try X11SharedImage(connection: connection, width: sourceWidth, height: sourceHeight)
                }
                segments = made
                recycler = CVPixelBufferRecycler(
                    try made.map { segment throws(X11SharedImage.Failure) in
                        do {
                            return try segment.wrapPixelBuffer()
                        } catch {
                            throw X11SharedImage.Failure(message: "a pixel buffer could not wrap the segment: \(error)")
                        }
                    })
                scalingSource = nil
                scaledPool = nil
                scaleColumns = []
            }
        } catch {
            throw StartFailure(fault: .explained(.io(.notSupported), advice: "\(name): \(error.message)."))
        }
        isFree = Array(repeating: true, count: segments.count)
        do {
            formatDescription = try CMFormatDescription(
                videoCodecType: .init(rawValue: kCVPixelFormatType_32BGRA), width: Int(outputWidth),
                height: Int(outputHeight))
        } catch {
            throw StartFailure(fault: .io(.invalidArgument))
        }
        if connection.damageEventBase != nil {
            damage = XDamageCreate(connection.display, connection.root, Int32(XDamageReportNonEmpty))
            damageRegion = XFixesCreateRegion(connection.display, nil, 0)
        } else {
            damage = nil
            damageRegion = 0
        }
        if connection.fixesEventBase != nil {
            XFixesSelectCursorInput(connection.display, connection.root, UInt(XFixesDisplayCursorNotifyMask))
        }
        XSync(connection.display, 0)
        _ = CX11_takeLastError()
    }

    deinit {
        if let damage { XDamageDestroy(connection.display, damage) }
        if damageRegion != 0 { XFixesDestroyRegion(connection.display, damageRegion) }
    }

    /// Reads every event the server has sent: damage and cursor-shape notifications set flags for the next frame.
    /// The X connection: Damage and XFixes events are read as they come while the thread waits.
    var eventDescriptor: Int32? { connection.descriptor }

    func readEvents() {
        var event = XEvent()
        while XPending(connection.display) > 0 {
            XNextEvent(connection.display, &event)
            if let base = connection.damageEventBase, CX11_isDamageNotify(&event, base) != 0 {
                damagePending = true
            } else if let base = connection.fixesEventBase, CX11_isCursorNotify(&event, base) != 0 {
                cursorStale = true
            }
        }
    }

    /// The frame for the frame time `hostNanoseconds` (its presentation time: the pacing's guarantees hold for the
    /// timestamps exactly), or why there is none.
    func nextFrame(at hostNanoseconds: Int64, settings: ScreenCaptureSettings) -> ScreenGrabOutcome {
        let originX = monitor.x + min(max(0, settings.cropX), monitor.width - sourceWidth)
        let originY = monitor.y + min(max(0, settings.cropY), monitor.height - sourceHeight)
        let area = (x: Int(originX), y: Int(originY), width: Int(sourceWidth), height: Int(sourceHeight))
        // Damage is read only when it decides anything: reading it costs two round trips while the screen changes.
        let damaged = settings.removesDuplicateFrames ? readDamage(in: area) : true
        let pointer = pointerState(settings, area: area)
        if let failure = connectionFailure() { return .failed(failure) }
        let changed = damaged || pointer != drawnPointer || owesFrame
        if settings.removesDuplicateFrames && hasDeliveredFrame && !changed { return .unchanged }
        // Until a frame goes out, the change it would show is owed (its damage has been read).
        owesFrame = true
        let time = CMClock.hostTime(nanoseconds: hostNanoseconds)
        let timing = CMSampleTimingInfo(duration: frameDuration, presentationTimeStamp: time, decodeTimeStamp: .invalid)
        let image: CVPixelBuffer
        if let recycler {
            samples.releaseIdleImages()
            while let index = recycler.firstReturnedBuffer() { isFree[index] = true }
            guard let index = isFree.firstIndex(of: true) else { return .noFreeBuffer(time) }
            let segment = segments[index]
            guard segment.grab(connection: connection, x: originX, y: originY) else { return .failed(grabFailure()) }
            draw(
                pointer, into: segment.baseAddress, width: segment.width, height: segment.height,
                bytesPerRow: segment.bytesPerRow, area: area)
            isFree[index] = false
            image = recycler.handOut(index)
        } else if let source = scalingSource, let pool = scaledPool {
            guard case .success(let scaled) = pool.pixelBuffer(allocationThreshold: ScreenCaptureThread.bufferCount)
            else { return .noFreeBuffer(time) }
            guard source.grab(connection: connection, x: originX, y: originY) else { return .failed(grabFailure()) }
            draw(
                pointer, into: source.baseAddress, width: source.width, height: source.height,
                bytesPerRow: source.bytesPerRow, area: area)
            CVPixelBufferLockBaseAddress(scaled, [])
            ScreenPointerOverlay.scale(
                from: source.baseAddress, height: source.height, bytesPerRow: source.bytesPerRow,
                into: CVPixelBufferGetBaseAddress(scaled)!, width: outputWidth, height: outputHeight,
                bytesPerRow: CVPixelBufferGetBytesPerRow(scaled), columns: scaleColumns)
            CVPixelBufferUnlockBaseAddress(scaled, [])
            image = scaled
        } else {
            preconditionFailure("a screen grabber has either segments or a scaling source")
        }
        hasDeliveredFrame = true
        owesFrame = false
        drawnPointer = pointer
        return .frame(samples.sampleBuffer(imageBuffer: image, formatDescription: formatDescription, timing: timing))
    }

    /// Whether the server reported damage inside `area` since the last call. Reads and resets the damage.
    private func readDamage(in area: (x: Int, y: Int, width: Int, height: Int)) -> Bool {
        guard let damage else { return true }
        guard damagePending else { return false }
        damagePending = false
        // Subtracting before the grab: anything drawn after it is reported again, so no change is missed.
        XDamageSubtract(connection.display, damage, 0, damageRegion)
        var count: Int32 = 0
        guard let rectangles = XFixesFetchRegion(connection.display, damageRegion, &count) else { return true }
        defer { XFree(rectangles) }
        for index in 0..<Int(count) {
            let rectangle = rectangles[index]
            let (x, y) = (Int(rectangle.x), Int(rectangle.y))
            if x < area.x + area.width && x + Int(rectangle.width) > area.x && y < area.y + area.height
                && y + Int(rectangle.height) > area.y
            {
                return true
            }
        }
        return false
    }

    /// Where the pointer is and what would be drawn of it; hidden when neither the cursor nor clicks are captured
    /// or it is outside the area.
    private func pointerState(
        _ settings: ScreenCaptureSettings, area: (x: Int, y: Int, width: Int, height: Int)
    )
        -> PointerState?
    {
        guard settings.capturesCursor || settings.capturesMouseClicks else { return nil }
        var rootReturn: Window = 0
        var child: Window = 0
        var rootX: Int32 = 0
        var rootY: Int32 = 0
        var windowX: Int32 = 0
        var windowY: Int32 = 0
        var mask: UInt32 = 0
        guard
            XQueryPointer(
                connection.display, connection.root, &rootReturn, &child, &rootX, &rootY, &windowX, &windowY, &mask)
                != 0
        else { return nil }
        if settings.capturesCursor && cursorStale { refreshCursor() }
        let buttons = UInt32(Button1Mask | Button2Mask | Button3Mask)
        let ring = settings.capturesMouseClicks && mask & buttons != 0
        let (x, y) = (Int(rootX), Int(rootY))
        // The largest thing drawn around the pointer decides whether it can touch the area.
        let reach = max(ScreenPointerOverlay.clickRingRadius, cursor.map { max($0.width, $0.height) } ?? 0)
        let near =
            x + reach >= area.x && x - reach < area.x + area.width && y + reach >= area.y
            && y - reach < area.y + area.height
        return PointerState(
            x: x, y: y, cursorSerial: settings.capturesCursor ? cursorSerial : nil, ring: ring,
            shown: near && (settings.capturesCursor || ring))
    }

    private func refreshCursor() {
        cursorStale = false
        guard connection.fixesEventBase != nil, let image = XFixesGetCursorImage(connection.display) else {
            cursor = nil
            return
        }
        defer { XFree(image) }
        let value = image.pointee
        let count = Int(value.width) * Int(value.height)
        // XFixes gives each 32-bit ARGB pixel in an unsigned long.
        let pixels = (0..<count).map { UInt32(truncatingIfNeeded: value.pixels[$0]) }
        cursor = ScreenCursorImage(
            width: Int(value.width), height: Int(value.height), hotspotX: Int(value.xhot), hotspotY: Int(value.yhot),
            pixels: pixels)
        cursorSerial = UInt(value.cursor_serial)
    }

    private func draw(
        _ pointer: PointerState?, into base: UnsafeMutableRawPointer, width: Int, height: Int, bytesPerRow: Int,
        area: (x: Int, y: Int, width: Int, height: Int)
    ) {
        guard let pointer, pointer.shown else { return }
        if pointer.cursorSerial != nil, let cursor {
            ScreenPointerOverlay.drawCursor(
                cursor, pointerX: pointer.x, pointerY: pointer.y, into: base, width: width, height: height,
                bytesPerRow: bytesPerRow, originX: area.x, originY: area.y)
        }
        if pointer.ring {
            ScreenPointerOverlay.drawClickRing(
                pointerX: pointer.x, pointerY: pointer.y, into: base, width: width, height: height,
                bytesPerRow: bytesPerRow, originX: area.x, originY: area.y)
        }
    }

    /// The fault for a lost connection, if the last requests found one.
    private func connectionFailure() -> DeviceFault? {
        CX11_takeLastError() == -1 ? lostConnection : nil
    }

    private var lostConnection: DeviceFault {
        .explained(
            .disconnected,
            advice: "The X server \(displayName) closed the connection (it exited or the session ended); make a new"
                + " AVCaptureScreenInput once a server runs.")
    }

    /// Why `XShmGetImage` failed: the connection is gone, or the area no longer fits the screen (its size changed).
    private func grabFailure() -> DeviceFault {
        XSync(connection.display, 0)
        if CX11_takeLastError() == -1 { return lostConnection }
        return .explained(
            .io(.invalidArgument),
            advice: "The X server \(displayName) refused to read the screen area: the screen's size probably changed;"
                + " make a new AVCaptureScreenInput.")
    }
}
