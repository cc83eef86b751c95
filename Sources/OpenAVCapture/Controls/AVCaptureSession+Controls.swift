import CaptureGraph
import Foundation
import Synchronization

/// Told when a person starts and stops using a session's controls. Apple's methods; the renderers here call
/// `AVCaptureSession.userDidEngageControls()` and `userDidDisengageControls()` when they show and hide them.
///
/// Threading: the methods run on the queue given to `setControlsDelegate(_:queue:)`.
public protocol AVCaptureSessionControlsDelegate: NSObjectProtocol {
    func sessionControlsDidBecomeActive(_ session: AVCaptureSession)
    func sessionControlsWillEnterFullscreenAppearance(_ session: AVCaptureSession)
    func sessionControlsWillExitFullscreenAppearance(_ session: AVCaptureSession)
    func sessionControlsDidBecomeInactive(_ session: AVCaptureSession)
}

/// A session's controls and their delegate.
///
/// Threading: thread safe (a mutex).
final class SessionControls: Sendable {
    struct State {
        var controls: [AVCaptureControl] = []
        var delegate = WeakControlsDelegate()
        var queue: DispatchQueue?
    }

    /// The delegate, held weakly as Apple's session holds it. `@unchecked Sendable`: it is called only on its queue.
    struct WeakControlsDelegate: @unchecked Sendable {
        weak var object: (any AVCaptureSessionControlsDelegate)?
    }

    let state = Mutex(State())
}

extension AVCaptureSession {
    /// Whether the session can show controls: true, as the preview window and web camera app can show them.
    public var supportsControls: Bool { true }

    /// How many controls the session takes: 6 here (Apple's count is the platform's).
    public var maxControlsCount: Int { 6 }

    /// The session's controls, in the order added.
    public var controls: [AVCaptureControl] { controlStorage.state.withLock { $0.controls } }

    /// Whether `control` can be added: not in a session already, room left, and for a system slider its device is
    /// one of the session's inputs.
    public func canAddControl(_ control: AVCaptureControl) -> Bool {
        guard control.session == nil, controls.count < maxControlsCount else { return false }
        let devices = inputs.compactMap { ($0 as? AVCaptureDeviceInput)?.device }
        return control.drivenDevices.allSatisfy { driven in devices.contains { $0 === driven } }
    }

    /// Adds `control` when `canAddControl(control)` is true; otherwise leaves it out and logs once (Apple documents
    /// no exception for it). May be called while the session runs. A control reacts to a person only once the
    /// session has a controls delegate.
    public func addControl(_ control: AVCaptureControl) {
        guard canAddControl(control) else {
            ToleratedMisuse.report(
                "AVCaptureSession.addControl",
                "AVCaptureSession: addControl was called with canAddControl false (the control is in a session"
                    + " already, the session has \(maxControlsCount) controls, or its device is not an input); the"
                    + " control is left out")
            return
        }
        _ = control.attach(to: self)
        controlStorage.state.withLock { $0.controls.append(control) }
    }

    /// Removes `control`; a control not in the session is left alone.
    public func removeControl(_ control: AVCaptureControl) {
        let removed = controlStorage.state.withLock { state -> Bool in
            guard let index = state.controls.firstIndex(where: { $0 === control }) else { return false }
            state.controls.remove(at: index)
            return true
        }
        if removed { _ = control.attach(to: nil) }
    }

    /// Sets the delegate told when controls become active and inactive, and its queue. Apple requires a delegate
    /// for controls to become active; here controls ignore a person's changes without one.
    public func setControlsDelegate(
        _ controlsDelegate: (any AVCaptureSessionControlsDelegate)?, queue controlsDelegateCallbackQueue: DispatchQueue?
    ) {
        controlStorage.state.withLock { state in
            state.delegate = SessionControls.WeakControlsDelegate(object: controlsDelegate)
            state.queue = controlsDelegate == nil ? nil : controlsDelegateCallbackQueue
        }
    }

    /// The controls delegate, held weakly.
    public var controlsDelegate: (any AVCaptureSessionControlsDelegate)? {
        controlStorage.state.withLock { $0.delegate }.object
    }

    /// The queue the controls delegate is called on.
    public var controlsDelegateCallbackQueue: DispatchQueue? { controlStorage.state.withLock { $0.queue } }

    /// Ours: a renderer started showing the controls to a person (Apple: a light press of Camera Control).
    public func userDidEngageControls() {
        notifyControlsDelegate { $0.sessionControlsDidBecomeActive($1) }
    }

    /// Ours: a renderer stopped showing the controls.
    public func userDidDisengageControls() {
        notifyControlsDelegate { $0.sessionControlsDidBecomeInactive($1) }
    }

    /// Whether controls react to a person: the session has a controls delegate.
    var controlsAreLive: Bool { controlsDelegate != nil }

    private func notifyControlsDelegate(
        _ call: @escaping (any AVCaptureSessionControlsDelegate, AVCaptureSession) -> Void
    ) {
        let (weakDelegate, queue) = controlStorage.state.withLock { ($0.delegate, $0.queue) }
        guard let delegate = weakDelegate.object, let queue else { return }
        let carried = UncheckedSendable((delegate, call))
        queue.async { carried.value.1(carried.value.0, self) }
    }
}

extension AVCaptureSessionControlsDelegate {
    /// Does nothing unless the delegate implements it (Apple's method is optional).
    public func sessionControlsWillEnterFullscreenAppearance(_ session: AVCaptureSession) {}
    /// Does nothing unless the delegate implements it (Apple's method is optional).
    public func sessionControlsWillExitFullscreenAppearance(_ session: AVCaptureSession) {}
}
