import CaptureDrivers
import Foundation

/// The test controls of "Virtual Microphone": how fast its sample clock runs against the host clock, how it
/// paces periods, and faults on demand.
///
/// Get one from the microphone's `AVCaptureDevice`: `VirtualMicrophoneController(device)` or
/// `device.virtualMicrophone`, nil for any other device. The microphone plays a 440 Hz tone at −30 dBFS peak with
/// a 50 ms 1 kHz beep at −6 dBFS at every whole second of its sample clock, in 10 ms periods.
///
/// The microphone is shared by the whole process: restore what a test changes (`restoreDefaults()`).
///
/// Threading: thread safe; every member may be called from any thread. The fault methods block until the capture
/// thread has delivered its last event, so do not call them from a sink of the same microphone.
public final class VirtualMicrophoneController: Sendable {
    /// The microphone this controls.
    public let device: AVCaptureDevice
    let microphone: VirtualMicrophone

    /// The controller of `device`, or nil when it is not the virtual microphone.
    public init?(_ device: AVCaptureDevice) {
        guard let microphone = device.backend as? VirtualMicrophone else { return nil }
        self.device = device
        self.microphone = microphone
    }

    /// How fast the sample clock runs against the host clock, in parts per million (positive: fast); 0 by
    /// default. At `ppm` the microphone delivers `48000 · (1 + ppm · 10⁻⁶)` samples per host second, so its
    /// beeps (at whole seconds of sample time) drift against the cameras' flashes by `ppm` µs per second, and
    /// presentation times are stamped at `sampleIndex / (48000 · (1 + ppm · 10⁻⁶))` s. Takes effect at the next
    /// start of streaming.
    public var clockErrorPPM: Double {
        get { microphone.ppm }
        set {
            precondition(newValue.isFinite && abs(newValue) < 100_000, "a clock error of \(newValue) ppm is absurd")
            microphone.ppm = newValue
        }
    }

    /// How the microphone paces periods; `.realTime` by default. Takes effect at the next start of streaming.
    public var clockMode: VirtualDeviceClockMode {
        get { VirtualDeviceClockMode(microphone.clockMode) }
        set { microphone.clockMode = newValue.driverMode }
    }

    /// Whether the microphone is streaming.
    public var isStreaming: Bool { microphone.isStreaming }

    /// The microphone goes away (see `VirtualCameraController.unplug()`).
    public func unplug() {
        microphone.simulateUnplug()
    }

    /// The microphone comes back (see `VirtualCameraController.replug()`).
    public func replug() {
        microphone.simulateReplug()
    }

    /// Another process takes or releases the microphone (see `VirtualCameraController.setBusy(_:)`).
    public func setBusy(_ busy: Bool) {
        microphone.simulateBusy(busy)
    }

    /// Whether `setBusy(true)` holds the microphone.
    public var isBusy: Bool { microphone.isInUseByAnotherApplication }

    /// The running stream delivers nothing for `seconds`, then reports the periods that fell due as dropped with
    /// reason `.discontinuity` (see `VirtualCameraController.stall(for:)`).
    public func stall(for seconds: Double) {
        precondition(seconds >= 0 && seconds.isFinite, "a stall lasts a finite time ≥ 0, not \(seconds) s")
        microphone.simulateStall(for: seconds)
    }

    /// Connected, not busy, real-time clock, no clock error. Call it when the microphone is not streaming.
    public func restoreDefaults() {
        replug()
        setBusy(false)
        clockMode = .realTime
        clockErrorPPM = 0
    }
}
