import Foundation

extension AVCaptureSession {
    /// Why a session was interrupted, with Apple's raw values.
    public enum InterruptionReason: Int, Sendable, Hashable {
        case videoDeviceNotAvailableInBackground = 1
        /// Another process took the microphone.
        case audioDeviceInUseByAnotherClient = 2
        /// Another process took the camera.
        case videoDeviceInUseByAnotherClient = 3
        case videoDeviceNotAvailableWithMultipleForegroundApps = 4
        case videoDeviceNotAvailableDueToSystemPressure = 5
        case sensitiveContentMitigationActivated = 6
    }

    /// Posted when a session hits an error while running; `userInfo[AVCaptureSessionErrorKey]` is the `AVError`.
    public static let runtimeErrorNotification = NSNotification.Name("AVCaptureSessionRuntimeErrorNotification")
    /// Posted when a session starts running.
    public static let didStartRunningNotification = NSNotification.Name("AVCaptureSessionDidStartRunningNotification")
    /// Posted when a session stops running.
    public static let didStopRunningNotification = NSNotification.Name("AVCaptureSessionDidStopRunningNotification")
    /// Posted when a running session loses a device for a while (another process took it, it was unplugged);
    /// `userInfo[AVCaptureSessionInterruptionReasonKey]` says why where Apple has a reason for it.
    public static let wasInterruptedNotification = NSNotification.Name("AVCaptureSessionWasInterruptedNotification")
    /// Posted when every device of an interrupted session streams again.
    public static let interruptionEndedNotification = NSNotification.Name(
        "AVCaptureSessionInterruptionEndedNotification")
}

/// `userInfo` key of `.AVCaptureSessionRuntimeError`: the `AVError`.
public let AVCaptureSessionErrorKey = "AVCaptureSessionErrorKey"
/// `userInfo` key of `.AVCaptureSessionWasInterrupted`: the `InterruptionReason` raw value (an `Int`).
public let AVCaptureSessionInterruptionReasonKey = "AVCaptureSessionInterruptionReasonKey"

extension NSNotification.Name {
    public static let AVCaptureSessionRuntimeError = AVCaptureSession.runtimeErrorNotification
    public static let AVCaptureSessionDidStartRunning = AVCaptureSession.didStartRunningNotification
    public static let AVCaptureSessionDidStopRunning = AVCaptureSession.didStopRunningNotification
    public static let AVCaptureSessionWasInterrupted = AVCaptureSession.wasInterruptedNotification
    public static let AVCaptureSessionInterruptionEnded = AVCaptureSession.interruptionEndedNotification
}
