import CaptureDrivers
import CaptureGraph
import Foundation
import MediaCodecs
import Synchronization

/// Reads QR codes and barcodes from a session's video and reports them as `AVMetadataMachineReadableCodeObject`s,
/// decoded by zxing-cpp.
///
/// As Apple's: add the output to a session with a camera, then choose `metadataObjectTypes` among
/// `availableMetadataObjectTypes` (empty until the output is connected to a video input; setting a type not in it
/// traps, as Apple raises). Nothing is read while `metadataObjectTypes` is empty, which it is by default.
/// `rectOfInterest` (default: the whole frame, `(0, 0, 1, 1)`) limits where codes are looked for, in the output's
/// coordinates: 0 to 1 across the frame as the device delivers it, origin at the top left; objects are reported in
/// the same coordinates. The delegate is called on its queue with the objects of each frame that has any, and once
/// with an empty array when codes that were seen are gone.
///
/// Frames are read one at a time on the output's own queue, in the luma of the frame as the session's conversion
/// stage delivers it: while one is being read, or its objects delivered, newer frames are skipped, never queued, so
/// a slow decoder or delegate costs frames of analysis, not memory or latency.
///
/// Threading: thread safe; settings are guarded by a mutex. The delegate runs on the queue you give.
open class AVCaptureMetadataOutput: AVCaptureOutput, @unchecked Sendable {
    /// `@unchecked Sendable`: the delegate is not Sendable to Swift; it is only called on its queue.
    private struct Settings: @unchecked Sendable {
        var types: [AVMetadataObject.ObjectType] = []
        var symbologies: Set<BarcodeSymbology> = []
        var rectOfInterest = CGRect(x: 0, y: 0, width: 1, height: 1)
        var delegate: (any AVCaptureMetadataOutputObjectsDelegate)?
        var queue: DispatchQueue?
    }

    private let settings = Mutex(Settings())
    private let analysisQueue = DispatchQueue(label: "OpenAVCapture.AVCaptureMetadataOutput", qos: .userInitiated)
    /// One frame in flight at most: a frame arriving while one is read is skipped.
    private var mailbox: SampleBufferMailbox<Frame>!
    private let counters = Mutex((analysed: 0, skipped: 0))
    /// Read only on the analysis queue.
    private let reader = UncheckedSendable(BarcodeReader())
    private let sawObjects = Atomic<Bool>(false)

    private struct Frame: Sendable {
        let sampleBuffer: CMSampleBuffer
        let connection: AVCaptureConnection
    }

    public override init() {
        super.init()
        mailbox = SampleBufferMailbox(queue: analysisQueue, capacity: 1, limit: 1) { [weak self] frame in
            self?.analyse(frame)
        }
    }

    // MARK: Apple's API

    /// Sets the delegate and the queue it is called on. AVCaptureMetadataOutput.h: the queue "may not be NULL,
    /// except when setting the objectsDelegate to nil"; a delegate without a queue traps, as Apple raises
    /// NSInvalidArgumentException. A nil delegate with a queue is allowed; the queue is not kept.
    open func setMetadataObjectsDelegate(
        _ objectsDelegate: (any AVCaptureMetadataOutputObjectsDelegate)?, queue objectsCallbackQueue: DispatchQueue?
    ) {
        precondition(
            objectsDelegate == nil || objectsCallbackQueue != nil,
            "AVCaptureMetadataOutput.setMetadataObjectsDelegate: a delegate needs a queue (Apple raises"
                + " NSInvalidArgumentException)")
        settings.withLock {
            $0.delegate = objectsDelegate
            $0.queue = objectsDelegate == nil ? nil : objectsCallbackQueue
        }
        demandsChanged()
    }

    /// The delegate, or nil.
    open var metadataObjectsDelegate: (any AVCaptureMetadataOutputObjectsDelegate)? {
        settings.withLock { $0.delegate }
    }

    /// The queue the delegate is called on, or nil.
    open var metadataObjectsCallbackQueue: DispatchQueue? { settings.withLock { $0.queue } }

    /// The types this output can report now: the machine-readable codes zxing-cpp reads (QR, Aztec, DataMatrix,
    /// PDF417, EAN-8, EAN-13 (and UPC-A as EAN-13), UPC-E, Code 39, Code 93, Code 128, ITF and ITF-14) once the output
    /// is connected to a video input; empty before. No `.face`: there is no face detector here.
    open var availableMetadataObjectTypes: [AVMetadataObject.ObjectType] {
        connection(with: .video) == nil ? [] : AVMetadataObject.ObjectType.readable
    }

    /// The types to report; empty (the default) reports nothing. Every type must be in
    /// `availableMetadataObjectTypes`, or setting traps, as Apple raises.
    open var metadataObjectTypes: [AVMetadataObject.ObjectType]! {
        get { settings.withLock { $0.types } }
        set {
            let types = newValue ?? []
            let available = availableMetadataObjectTypes
            for type in types {
                precondition(
                    available.contains(type),
                    "AVCaptureMetadataOutput: metadataObjectTypes contains \(type.rawValue), which is not in"
                        + " availableMetadataObjectTypes (add the output to a session with a camera first; Apple raises"
                        + " NSInvalidArgumentException)")
            }
            settings.withLock {
                $0.types = types
                $0.symbologies = types.reduce(into: Set()) { $0.formUnion($1.symbologies) }
            }
            demandsChanged()
        }
    }

    /// Where to look, in the output's coordinates (0 to 1, origin top left); the whole frame by default. Objects
    /// outside are not reported; a smaller rectangle is also faster to read. AVCaptureMetadataOutput.h documents
    /// no exception for a rectangle reaching outside `(0, 0, 1, 1)`: the part inside is used (the whole frame when
    /// nothing is inside), logged once.
    open var rectOfInterest: CGRect {
        get { settings.withLock { $0.rectOfInterest } }
        set {
            let unit = CGRect(x: 0, y: 0, width: 1, height: 1)
            var rect = newValue.isNull ? unit : newValue.standardized
            if !unit.contains(rect) {
                let inside = rect.intersection(unit)
                let used = inside.isNull || inside.width <= 0 || inside.height <= 0 ? unit : inside
                ToleratedMisuse.report(
                    "AVCaptureMetadataOutput.rectOfInterest",
                    "AVCaptureMetadataOutput: rectOfInterest \(newValue) reaches outside (0, 0, 1, 1); \(used) is used")
                rect = used
            }
            settings.withLock { $0.rectOfInterest = rect }
        }
    }

    // MARK: Ours

    /// How many frames were read, and how many skipped because the previous one was still being read or delivered.
    package var analysisStatistics: (analysed: Int, skipped: Int) { counters.withLock { $0 } }

    // MARK: The graph's hooks

    override package func accepts(_ mediaType: AVMediaType) -> Bool { mediaType == .video }

    /// Luma is all it needs: planar Y'CbCr or grey as they come, YUYV read in place; anything else becomes NV12.
    override package func videoDemand(for connection: AVCaptureConnection) -> VideoFormatDemand? {
        guard isReading else { return nil }
        return VideoFormatDemand(pixelFormats: BarcodeReader.lumaFormats)
    }

    override package func receive(_ sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        guard isReading, sampleBuffer.imageBuffer != nil else { return }
        if !mailbox.post(Frame(sampleBuffer: sampleBuffer, connection: connection)) {
            counters.withLock { $0.skipped += 1 }
        }
    }

    // MARK: Reading

    private var isReading: Bool {
        settings.withLock { !$0.symbologies.isEmpty && $0.delegate != nil }
    }

    /// Reads one frame and hands its objects to the delegate, on the analysis queue.
    private func analyse(_ frame: Frame) {
        counters.withLock { $0.analysed += 1 }
        let current = settings.withLock { $0 }
        guard let delegate = current.delegate, let queue = current.queue,
            let image = frame.sampleBuffer.imageBuffer
        else { return }
        let objects = read(image, frame: frame.sampleBuffer, settings: current)
        let hadObjects = sawObjects.exchange(!objects.isEmpty, ordering: .relaxed)
        guard !objects.isEmpty || hadObjects else { return }
        // Synchronously: the frame counts as in flight until the delegate is done, so a slow delegate skips frames
        // instead of piling up results.
        let connection = frame.connection
        queue.sync {
            delegate.metadataOutput(self, didOutput: objects, from: connection)
        }
    }

    private func read(_ image: CVPixelBuffer, frame: CMSampleBuffer, settings: Settings) -> [AVMetadataObject] {
        reader.value.objects(
            in: image, types: settings.types, symbologies: settings.symbologies, rectOfInterest: settings.rectOfInterest,
            time: frame.presentationTimeStamp, duration: frame.duration)
    }
}

extension BarcodeReader {
    /// The pixel formats whose luma is read in place: planar Y'CbCr and grey, and YUYV with a pixel stride of 2.
    package static let lumaFormats: [OSType] = [
        kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr8BiPlanarFullRange,
        kCVPixelFormatType_420YpCbCr8Planar, kCVPixelFormatType_420YpCbCr8PlanarFullRange,
        kCVPixelFormatType_OneComponent8, kCVPixelFormatType_422YpCbCr8_yuvs, kCVPixelFormatType_422YpCbCr8FullRange,
    ]

    /// The codes of `types` in `image` within `rectOfInterest` (normalized), as metadata objects in the image's
    /// normalized coordinates; empty for an image whose luma cannot be read in place.
    package func objects(
        in image: CVPixelBuffer, types: [AVMetadataObject.ObjectType], symbologies: Set<BarcodeSymbology>,
        rectOfInterest region: CGRect, time: CMTime, duration: CMTime, effort: BarcodeReadingEffort? = nil
    ) -> [AVMetadataMachineReadableCodeObject] {
        let format = CVPixelBufferGetPixelFormatType(image)
        guard Self.lumaFormats.contains(format) else { return [] }
        CVPixelBufferLockBaseAddress(image, .readOnly)
        defer { CVPixelBufferUnlockBaseAddress(image, .readOnly) }
        let isPacked = format == kCVPixelFormatType_422YpCbCr8_yuvs || format == kCVPixelFormatType_422YpCbCr8FullRange
        let isPlanar = CVPixelBufferIsPlanar(image)
        let base = isPlanar ? CVPixelBufferGetBaseAddressOfPlane(image, 0) : CVPixelBufferGetBaseAddress(image)
        let rowBytes = isPlanar ? CVPixelBufferGetBytesPerRowOfPlane(image, 0) : CVPixelBufferGetBytesPerRow(image)
        guard let base else { return [] }
        let width = CVPixelBufferGetWidth(image)
        let height = CVPixelBufferGetHeight(image)
        let x0 = max(0, min(width, Int((region.minX * CGFloat(width)).rounded(.down))))
        let y0 = max(0, min(height, Int((region.minY * CGFloat(height)).rounded(.down))))
        let x1 = max(x0, min(width, Int((region.maxX * CGFloat(width)).rounded(.up))))
        let y1 = max(y0, min(height, Int((region.maxY * CGFloat(height)).rounded(.up))))
        guard x1 > x0, y1 > y0 else { return [] }
        let pixelStride = isPacked ? 2 : 1
        let start = base.assumingMemoryBound(to: UInt8.self) + y0 * rowBytes + x0 * pixelStride
        let symbols = read(
            luma: start, width: x1 - x0, height: y1 - y0, rowStride: rowBytes, pixelStride: pixelStride,
            symbologies: symbologies, effort: effort)
        return symbols.compactMap { symbol in
            let (type, text) = AVMetadataObject.ObjectType.reported(symbol)
            guard types.contains(type) else { return nil }
            let corners = symbol.corners.map { corner in
                CGPoint(x: (corner.x + Double(x0)) / Double(width), y: (corner.y + Double(y0)) / Double(height))
            }
            return AVMetadataMachineReadableCodeObject(
                type: type, time: time, duration: duration, corners: corners, stringValue: text)
        }
    }
}

/// Receives the objects a metadata output found.
public protocol AVCaptureMetadataOutputObjectsDelegate: NSObjectProtocol {
    /// The objects of one frame (empty once when the objects seen before are gone), on the delegate queue.
    func metadataOutput(
        _ output: AVCaptureMetadataOutput, didOutput metadataObjects: [AVMetadataObject],
        from connection: AVCaptureConnection)
}

extension AVCaptureMetadataOutputObjectsDelegate {
    public func metadataOutput(
        _ output: AVCaptureMetadataOutput, didOutput metadataObjects: [AVMetadataObject],
        from connection: AVCaptureConnection
    ) {}
}
