import Foundation
import Synchronization

/// Ours: how the machine holding the cameras is turned, which ``AVCaptureDevice/RotationCoordinator`` follows.
///
/// Apple's coordinators read the phone's gravity sensor. Linux has no one answer: a tablet's accelerometer speaks
/// through iio-sensor-proxy (D-Bus `net.hadess.SensorProxy`, `AccelerometerOrientation`), a convertible's through
/// its desktop, a fixed machine never turns. So the application (or a test) says what it knows by setting
/// `orientation`; every coordinator following this source updates at once. ``shared`` is what coordinators made
/// with Apple's initializer follow; it starts `.unknown`, which leaves the angles at 0: the camera as mounted.
///
/// Key-value observable: `orientation`, `interfaceOrientation` (real changes only, on the thread that set them).
///
/// Threading: thread safe.
public final class AVCaptureDeviceOrientationSource: KeyValueObservable, Sendable {
    /// How the machine is turned, with UIKit's `UIDeviceOrientation` raw values and meanings: `.landscapeLeft` is
    /// turned so its top edge is on the left (an iPhone's home button on the right), the camera's own orientation.
    public enum Orientation: Int, Sendable, Hashable, CaseIterable {
        case unknown = 0
        case portrait = 1
        case portraitUpsideDown = 2
        case landscapeLeft = 3
        case landscapeRight = 4
        case faceUp = 5
        case faceDown = 6
    }

    /// Both orientations, read together.
    struct State: Sendable, Equatable {
        var device: Orientation
        var interface: Orientation?
    }

    /// The source coordinators made with `init(device:previewLayer:)` follow.
    public static let shared = AVCaptureDeviceOrientationSource()

    public let keyValueObservers = KeyValueObserverRegistry()
    private let stored: Mutex<State>

    /// A source whose machine is turned `orientation`, its screen following it.
    public init(orientation: Orientation = .unknown) {
        stored = Mutex(State(device: orientation, interface: nil))
    }

    /// How the machine is turned now. Set it when you learn it; key-value observable.
    public var orientation: Orientation {
        get { stored.withLock { $0.device } }
        set { update { $0.device = newValue } }
    }

    /// How the screen showing the preview is turned, when it does not turn with the machine (an application locked
    /// in one orientation); nil (the default) when it does. Key-value observable.
    public var interfaceOrientation: Orientation? {
        get { stored.withLock { $0.interface } }
        set { update { $0.interface = newValue } }
    }

    /// Both, for the coordinators: observable, one notification per change of either.
    var state: State { stored.withLock { $0 } }

    private func update(_ change: (inout State) -> Void) {
        let (old, new) = stored.withLock { state in
            let old = state
            change(&state)
            return (old, state)
        }
        guard old != new else { return }
        if old.device != new.device {
            keyValueObservers.notifyChange(
                \AVCaptureDeviceOrientationSource.orientation, of: self, from: old.device, to: new.device)
        }
        if old.interface != new.interface {
            keyValueObservers.notifyChange(
                \AVCaptureDeviceOrientationSource.interfaceOrientation, of: self, from: old.interface, to: new.interface)
        }
        keyValueObservers.notifyChange(\AVCaptureDeviceOrientationSource.state, of: self, from: old, to: new)
    }
}
