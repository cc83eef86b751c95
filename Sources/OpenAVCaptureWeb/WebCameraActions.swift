import Foundation

/// What the web page's controls do. The app implements it (avcapture binds it to the example's CameraController);
/// the server converts taps to device points and checks input before calling.
///
/// Threading: called from the server's tasks, possibly concurrently; implementations must be thread safe.
public protocol WebCameraActions: AnyObject, Sendable {
    /// Focus once at a point of the device's picture ((0,0) top left, (1,1) bottom right).
    func focus(atDevicePoint point: CGPoint)
    /// Expose for a point of the device's picture.
    func expose(atDevicePoint point: CGPoint)
    /// Continuous focus and exposure at the centre again.
    func resetFocusAndExposure()
    /// Switches to the next camera; false when there is none.
    func switchCamera() -> Bool
    /// Sets the flash mode ("off", "on", "auto"); false when the camera cannot.
    func setFlashMode(_ mode: String) -> Bool
    /// Sets the torch mode ("off", "on", "auto"); false when the camera cannot.
    func setTorchMode(_ mode: String) -> Bool
    /// Ramps the zoom toward `value`, 0 (none) ... 1 (the most the app offers).
    func zoom(toValue value: Double)
    /// Takes a photo into the server's media directory.
    func takePhoto()
    /// Starts or stops recording into the server's media directory.
    func toggleRecording()
    /// What the page shows.
    func status() -> WebCameraStatus
}

/// The camera app's state as the page shows it.
public struct WebCameraStatus: Codable, Sendable, Equatable {
    public var camera: String
    public var cameras: [String]
    public var hasFlash: Bool
    public var flashMode: String
    public var hasTorch: Bool
    public var torchMode: String
    public var zoomValue: Double
    public var isRecording: Bool
    public var recordedSeconds: Double
    /// The microphone's level in dBFS, or nil without one.
    public var audioLevel: Float?
    /// The camera's focus and exposure points of interest, as the device reports them.
    public var focusPoint: [Double]
    public var exposurePoint: [Double]

    public init(
        camera: String, cameras: [String], hasFlash: Bool, flashMode: String, hasTorch: Bool, torchMode: String,
        zoomValue: Double, isRecording: Bool, recordedSeconds: Double, audioLevel: Float?, focusPoint: [Double],
        exposurePoint: [Double]
    ) {
        (self.camera, self.cameras, self.hasFlash, self.flashMode) = (camera, cameras, hasFlash, flashMode)
        (self.hasTorch, self.torchMode, self.zoomValue, self.isRecording) = (hasTorch, torchMode, zoomValue, isRecording)
        (self.recordedSeconds, self.audioLevel, self.focusPoint, self.exposurePoint) =
            (recordedSeconds, audioLevel, focusPoint, exposurePoint)
    }
}
