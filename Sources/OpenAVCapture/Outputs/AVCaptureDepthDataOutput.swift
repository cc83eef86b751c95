import Foundation

/// Depth maps from a depth-capable camera. No Linux camera here has depth (no format lists
/// `supportedDepthDataFormats`), so, as on Apple's cameras without depth, a session refuses this output:
/// `canAddOutput(_:)` is false until an input offers depth, and the delegate is never called. It exists with Apple's
/// signatures so code that offers depth where it exists compiles and takes its no-depth path.
///
/// Threading: thread safe; properties are guarded by a mutex.
open class AVCaptureDepthDataOutput: AVCaptureOutput, @unchecked Sendable {
    private let settings = NSLock()
    private var filtering = true
    private var dropsLateData = true
    private var delegateTarget: (delegate: (any AVCaptureDepthDataOutputDelegate)?, queue: DispatchQueue?) = (nil, nil)

    public override init() { super.init() }

    /// Whether holes in the depth map are filled; true by default, as Apple's.
    open var isFilteringEnabled: Bool {
        get { settings.withLock { filtering } }
        set { settings.withLock { filtering = newValue } }
    }

    /// Whether late depth data is dropped rather than queued; true by default, as Apple's.
    open var alwaysDiscardsLateDepthData: Bool {
        get { settings.withLock { dropsLateData } }
        set { settings.withLock { dropsLateData = newValue } }
    }

    /// The delegate and the queue it is called on. AVCaptureDepthDataOutput.h: the queue may not be nil except when
    /// the delegate is nil, "otherwise -setDelegate:callbackQueue: throws an NSInvalidArgumentException"; we trap
    /// there. A nil delegate with a queue is allowed; the queue is not kept.
    open func setDelegate(_ delegate: (any AVCaptureDepthDataOutputDelegate)?, callbackQueue: DispatchQueue?) {
        precondition(
            delegate == nil || callbackQueue != nil,
            "AVCaptureDepthDataOutput.setDelegate: a delegate needs a callbackQueue (Apple raises"
                + " NSInvalidArgumentException)")
        settings.withLock { delegateTarget = (delegate, delegate == nil ? nil : callbackQueue) }
    }

    /// The delegate, or nil.
    open var delegate: (any AVCaptureDepthDataOutputDelegate)? { settings.withLock { delegateTarget.delegate } }
    /// The queue the delegate is called on, or nil.
    open var delegateCallbackQueue: DispatchQueue? { settings.withLock { delegateTarget.queue } }

    package override func accepts(_ mediaType: AVMediaType) -> Bool { mediaType == .depthData }

    /// Only a session with an input that offers depth takes the output; none here does.
    package override func canJoin(inputs: [AVCaptureInput]) -> Bool {
        inputs.contains { input in
            (input as? AVCaptureDeviceInput).map { !$0.device.activeFormat.supportedDepthDataFormats.isEmpty } ?? false
        }
    }
}

/// Receives depth data from an ``AVCaptureDepthDataOutput``. Both methods are optional, as Apple's.
public protocol AVCaptureDepthDataOutputDelegate: NSObjectProtocol {
    /// New depth data, on the delegate queue.
    func depthDataOutput(
        _ output: AVCaptureDepthDataOutput, didOutput depthData: AVDepthData, timestamp: CMTime,
        connection: AVCaptureConnection)
    /// Depth data that was dropped, and why.
    func depthDataOutput(
        _ output: AVCaptureDepthDataOutput, didDrop depthData: AVDepthData, timestamp: CMTime,
        connection: AVCaptureConnection, reason: AVCaptureOutput.DataDroppedReason)
}

extension AVCaptureDepthDataOutputDelegate {
    public func depthDataOutput(
        _ output: AVCaptureDepthDataOutput, didOutput depthData: AVDepthData, timestamp: CMTime,
        connection: AVCaptureConnection
    ) {}
    public func depthDataOutput(
        _ output: AVCaptureDepthDataOutput, didDrop depthData: AVDepthData, timestamp: CMTime,
        connection: AVCaptureConnection, reason: AVCaptureOutput.DataDroppedReason
    ) {}
}

/// A depth (or disparity) map and what it means. Apple's type; made by depth cameras, none of which exist here, so
/// only code handed one by a depth-capable platform sees an instance. Its map is a pixel buffer in one of the
/// depth pixel formats (``kCVPixelFormatType_DepthFloat32`` …).
///
/// Threading: immutable; safe to share between threads.
open class AVDepthData: NSObject, @unchecked Sendable {
    /// How accurate the depth values are, with Apple's raw values.
    public enum Accuracy: Int, Sendable, Hashable {
        case relative = 0
        case absolute = 1
    }

    /// How good the map is, with Apple's raw values.
    public enum Quality: Int, Sendable, Hashable {
        case low = 0
        case high = 1
    }

    /// The map.
    public let depthDataMap: CVPixelBuffer
    /// The map's pixel format.
    public var depthDataType: OSType { CVPixelBufferGetPixelFormatType(depthDataMap) }
    /// Whether values are absolute distances or relative.
    public let depthDataAccuracy: Accuracy
    /// The map's quality.
    public let depthDataQuality: Quality
    /// Whether the map was filtered (holes filled).
    public let isDepthDataFiltered: Bool

    /// A depth map over `depthDataMap` (ours: Apple makes these from a dictionary representation only).
    public init(depthDataMap: CVPixelBuffer, accuracy: Accuracy, quality: Quality, isFiltered: Bool) {
        self.depthDataMap = depthDataMap
        self.depthDataAccuracy = accuracy
        self.depthDataQuality = quality
        self.isDepthDataFiltered = isFiltered
    }
}
