import OpenCoreMedia
import Synchronization

/// The state of a camera's controls with its observers: the part of `CameraControlling` every camera driver
/// shares. A driver owns one, changes state through `update`, and the store tells observers what changed.
///
/// Threading: thread safe. `update` runs its closure under the store's mutex (keep it short, never call out
/// from it); observers run afterwards, outside the mutex, on the updating thread.
package final class CameraControlStore: Sendable {
    package typealias Observer = @Sendable (CameraControlState, CameraControlState) -> Void

    private struct Guarded {
        var state: CameraControlState
        var observers: [Int: Observer] = [:]
        var nextToken = 0
        var revision: UInt64 = 0
    }

    package let capabilities: CameraCapabilities
    private let guarded: Mutex<Guarded>

    package init(capabilities: CameraCapabilities, initialState: CameraControlState) {
        self.capabilities = capabilities
        self.guarded = Mutex(Guarded(state: initialState))
    }

    package var state: CameraControlState { guarded.withLock { $0.state } }

    /// Changes the state; observers hear about it when something really changed.
    /// Returns the state after the change.
    @discardableResult
    package func update(_ change: (inout CameraControlState) -> Void) -> CameraControlState {
        revisedUpdate(change).state
    }

    /// The same, also returning the update's revision: every update counts one, in the order they take the
    /// store, so a state read after an update of revision `r` (a frame's snapshot) includes every change of a
    /// revision up to `r`.
    @discardableResult
    package func revisedUpdate(
        _ change: (inout CameraControlState) -> Void
    ) -> (state: CameraControlState, revision: UInt64) {
        let (old, new, revision, observers) = guarded.withLock { guarded in
            let old = guarded.state
            change(&guarded.state)
            guarded.revision += 1
            let observers = old == guarded.state ? [] : Array(guarded.observers.values)
            return (old, guarded.state, guarded.revision, observers)
        }
        for observer in observers { observer(old, new) }
        return (new, revision)
    }

    package func addObserver(_ observer: @escaping Observer) -> Int {
        guarded.withLock { guarded in
            let token = guarded.nextToken
            guarded.nextToken += 1
            guarded.observers[token] = observer
            return token
        }
    }

    package func removeObserver(_ token: Int) {
        _ = guarded.withLock { $0.observers.removeValue(forKey: token) }
    }
}
