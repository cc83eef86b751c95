import Foundation
import Synchronization

/// A control a person uses to change a capture setting: a slider or a picker that the session shows beside its
/// preview. Apple shows them on the iPhone's Camera Control button; here the renderers show them (the preview window
/// of OpenAVCaptureUI draws them over the picture, the web camera app of OpenAVCaptureWeb as range inputs, both from
/// our ``CaptureControlAppearance``) and a person's change reaches the control through our `userDid…` methods,
/// which is what those renderers call.
///
/// Add controls with `AVCaptureSession.addControl(_:)`; a control belongs to at most one session. A disabled
/// control, or one not in a session, ignores a person's changes.
///
/// Threading: thread safe.
open class AVCaptureControl: NSObject, @unchecked Sendable {
    private let enabled = Mutex(true)
    private let owner = Mutex<ControlOwner>(ControlOwner())

    override init() { super.init() }

    /// Whether a person can use the control (true by default).
    open var isEnabled: Bool {
        get { enabled.withLock { $0 } }
        set { enabled.withLock { $0 = newValue } }
    }

    /// The session the control is in.
    var session: AVCaptureSession? { owner.withLock { $0.session } }

    /// Joins or leaves a session; false when it is already in another.
    func attach(to session: AVCaptureSession?) -> Bool {
        owner.withLock { owner in
            if let session, let current = owner.session, current !== session { return false }
            owner.session = session
            return true
        }
    }

    /// Whether a person's change counts now: enabled, and in a session that has a controls delegate.
    var acceptsUserChanges: Bool { isEnabled && (session?.controlsAreLive ?? false) }

    /// The devices the control drives (the system sliders'); a session accepts it only with them as inputs.
    var drivenDevices: [AVCaptureDevice] { [] }

    /// What renderers show; each kind of control overrides it (nil: not shown).
    func makeAppearance() -> CaptureControlAppearance? { nil }

    /// A person's change on the appearance's scale; each kind of control overrides it.
    func applyAppearanceValue(_ value: Double) {}
}

private struct ControlOwner: @unchecked Sendable {
    weak var session: AVCaptureSession?
}

/// Calls `action` with values on the queue the application gave.
///
/// Threading: thread safe.
final class ControlAction<Value: Sendable>: Sendable {
    /// The application's action and queue. `@unchecked Sendable`: the action runs only on that queue, as Apple's.
    private struct Target: @unchecked Sendable {
        let queue: DispatchQueue
        let action: (Value) -> Void
    }

    private let target = Mutex<Target?>(nil)

    func set(queue: DispatchQueue, action: @escaping (Value) -> Void) {
        let new = Target(queue: queue, action: action)
        target.withLock { $0 = new }
    }

    /// Runs the action asynchronously on its queue, when one was set.
    func fire(_ value: Value) {
        guard let target = target.withLock({ $0 }) else { return }
        target.queue.async { target.action(value) }
    }
}
