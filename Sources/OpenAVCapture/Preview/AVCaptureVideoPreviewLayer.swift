import Foundation
import Synchronization

/// What a preview shows and how: the session's video, its gravity in the layer's bounds, and the conversions
/// between layer points and device points, exact for every gravity, orientation and mirroring.
///
/// On Linux the layer is a model: renderers (a window, a web page) read it. It is a ``CALayer`` (frame, bounds,
/// position, sublayers …), as Apple's; conversions use its `bounds`. It holds its session strongly, as Apple's does.
///
/// Threading: thread safe; properties are guarded by a mutex (the layer geometry by `CALayer`'s lock).
open class AVCaptureVideoPreviewLayer: CALayer, @unchecked Sendable {
    private struct State {
        var session: AVCaptureSession?
        var connection: AVCaptureConnection?
        var gravity: AVLayerVideoGravity = .resizeAspect
    }

    private let state = Mutex(State())

    /// A layer showing `session`'s video, connected to its first video port.
    public init(session: AVCaptureSession) {
        super.init()
        setSession(session, connecting: true)
    }

    /// A layer for `session` without a connection; add one with `AVCaptureConnection(inputPort:videoPreviewLayer:)`.
    public init(sessionWithNoConnection session: AVCaptureSession) {
        super.init()
        setSession(session, connecting: false)
    }

    /// A layer with no session yet.
    public override init() { super.init() }

    /// The session whose video the layer shows. Setting it connects to the session's first video port.
    open var session: AVCaptureSession? {
        get { state.withLock { $0.session } }
        set { setSession(newValue, connecting: true) }
    }

    /// Sets the session without forming a connection.
    open func setSessionWithNoConnection(_ session: AVCaptureSession) {
        setSession(session, connecting: false)
    }

    private func setSession(_ session: AVCaptureSession?, connecting: Bool) {
        let old = state.withLock { state in
            defer {
                state.session = session
                state.connection = nil
            }
            return (state.session, state.connection)
        }
        if let oldConnection = old.1 { old.0?.removeConnection(oldConnection) }
        guard connecting, let session else { return }
        let connection = session.connectPreviewLayer(self)
        state.withLock { $0.connection = connection }
    }

    /// The connection from the session's video port, if any.
    open var connection: AVCaptureConnection? {
        state.withLock { state in
            state.connection ?? state.session?.connections.first { $0.videoPreviewLayer === self }
        }
    }

    /// How the video fills the layer's bounds (`.resizeAspect` by default).
    open var videoGravity: AVLayerVideoGravity {
        get { state.withLock { $0.gravity } }
        set { state.withLock { $0.gravity = newValue } }
    }

    /// A copy of another preview layer's session-less settings (Apple's presentation-layer initializer).
    public override init(layer: Any) {
        super.init(layer: layer)
        if let other = layer as? AVCaptureVideoPreviewLayer {
            let gravity = other.videoGravity
            state.withLock { $0.gravity = gravity }
        }
    }

    // MARK: - Converting between layer and device coordinates
    // In the class body, not an extension: Swift cannot override members declared in extensions, and Apple's are open.

    /// The geometry now: the layer's bounds, the connected device's video size, gravity, rotation and mirroring.
    package var geometry: PreviewGeometry {
        let connection = self.connection
        let dimensions = connection?.inputPorts.first?.formatDescription?.dimensions ?? CMVideoDimensions()
        return PreviewGeometry(
            layerBounds: bounds, videoDimensions: CGSize(width: CGFloat(dimensions.width), height: CGFloat(dimensions.height)),
            videoGravity: videoGravity,
            rotation: PreviewGeometry.Rotation(degrees: connection?.videoRotationAngle ?? 0) ?? .degrees0,
            isVideoMirrored: connection?.isVideoMirrored ?? false)
    }

    /// The point of the device's unrotated picture ((0,0) top left, (1,1) bottom right) under a layer point,
    /// accounting for gravity, rotation and mirroring. Points outside the shown video map outside 0...1.
    open func captureDevicePointConverted(fromLayerPoint pointInLayer: CGPoint) -> CGPoint {
        geometry.captureDevicePointConverted(fromLayerPoint: pointInLayer)
    }

    /// The layer point showing a point of the device's unrotated picture.
    open func layerPointConverted(fromCaptureDevicePoint captureDevicePointOfInterest: CGPoint) -> CGPoint {
        geometry.layerPointConverted(fromCaptureDevicePoint: captureDevicePointOfInterest)
    }

    /// The rectangle of the device's unrotated picture (normalized) under a layer rectangle, for
    /// `AVCaptureMetadataOutput.rectOfInterest`.
    open func metadataOutputRectConverted(fromLayerRect rectInLayerCoordinates: CGRect) -> CGRect {
        geometry.metadataOutputRectConverted(fromLayerRect: rectInLayerCoordinates)
    }

    /// The layer rectangle showing a normalized rectangle of the device's unrotated picture.
    open func layerRectConverted(fromMetadataOutputRect rectInMetadataOutputCoordinates: CGRect) -> CGRect {
        geometry.layerRectConverted(fromMetadataOutputRect: rectInMetadataOutputCoordinates)
    }

    /// A metadata object (from an `AVCaptureMetadataOutput`, in its coordinates) in this layer's coordinates, to draw
    /// over the video: corners and bounds converted as `layerPointConverted(fromCaptureDevicePoint:)` converts points,
    /// through gravity, rotation and mirroring.
    open func transformedMetadataObject(for metadataObject: AVMetadataObject) -> AVMetadataObject? {
        let geometry = geometry
        return metadataObject.mapped { geometry.layerPointConverted(fromCaptureDevicePoint: $0) }
    }

    /// The Objective-C era name of `captureDevicePointConverted(fromLayerPoint:)`, as the seeds use it.
    open func captureDevicePointOfInterest(for pointInLayer: CGPoint) -> CGPoint {
        captureDevicePointConverted(fromLayerPoint: pointInLayer)
    }

    /// The Objective-C era name of `layerPointConverted(fromCaptureDevicePoint:)`.
    open func pointForCaptureDevicePoint(ofInterest captureDevicePointOfInterest: CGPoint) -> CGPoint {
        layerPointConverted(fromCaptureDevicePoint: captureDevicePointOfInterest)
    }

    /// The Objective-C era name of `metadataOutputRectConverted(fromLayerRect:)`.
    open func metadataOutputRectOfInterest(for rectInLayerCoordinates: CGRect) -> CGRect {
        metadataOutputRectConverted(fromLayerRect: rectInLayerCoordinates)
    }

    /// The Objective-C era name of `layerRectConverted(fromMetadataOutputRect:)`.
    open func rectForMetadataOutputRect(ofInterest rectInMetadataOutputCoordinates: CGRect) -> CGRect {
        layerRectConverted(fromMetadataOutputRect: rectInMetadataOutputCoordinates)
    }
}
