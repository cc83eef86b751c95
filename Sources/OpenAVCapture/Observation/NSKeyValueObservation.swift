import Synchronization

/// The token returned by `observe(_:options:changeHandler:)`; the observation lasts as long as the token.
///
/// Keep the token for as long as you want notifications. Calling `invalidate()` or releasing the token ends the
/// observation:
///
/// ```swift
/// let token = device.observe(\.isAdjustingExposure, options: [.new]) { device, change in
///     print(change.newValue ?? false)
/// }
/// token.invalidate()   // or let `token` go
/// ```
///
/// The token never keeps the observed object alive: it holds the object's observer registry weakly and the object
/// not at all, like Apple's token, which holds its object weakly. When the object is deallocated the observation
/// simply ends; `invalidate()` on the token is then harmless. (The handler you pass is another matter: if it
/// captures the observed object strongly, the object keeps itself alive through its own registry until the
/// observation ends. Capture it weakly, or use the object passed to the handler.)
///
/// Differences from Apple: not an `NSObject` subclass, and `final`.
///
/// Threading: thread-safe. `invalidate()` may be called from any thread, from inside any change handler (including
/// this observation's own), and any number of times. Once `invalidate()` returns, no new call of the handler starts
/// on the calling thread; a call already running on another thread finishes normally.
public final class NSKeyValueObservation: Sendable {
    private struct State {
        var entry: ObserverEntry?
        weak var registry: KeyValueObserverRegistry?
    }

    private let state: Mutex<State>

    init(entry: ObserverEntry, registry: KeyValueObserverRegistry) {
        state = Mutex(State(entry: entry, registry: registry))
    }

    /// Ends the observation: the handler is not called for later changes. Calling it again does nothing.
    ///
    /// Also releases the handler (and whatever it captured), once any call of it already running has returned.
    public func invalidate() {
        // Take the entry and the registry out under the token's lock, but remove the entry outside it: the registry
        // takes its own lock, and releasing the handler may run arbitrary deinit code.
        let (entry, registry) = state.withLock { state in
            defer {
                state.entry = nil
                state.registry = nil
            }
            return (state.entry, state.registry)
        }
        guard let entry else { return }
        entry.deactivate()
        registry?.remove(entry)
    }

    deinit {
        invalidate()
    }
}
