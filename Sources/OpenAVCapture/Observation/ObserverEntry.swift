import Synchronization

/// One registered observer, as the registry stores it: its key path, its options and a type-erased way to call it.
///
/// `@unchecked Sendable` because the stored handler is not `@Sendable`: `observe(_:options:changeHandler:)` keeps
/// Apple's signature (a plain `@escaping` closure), so code written for Apple compiles unchanged. That is sound in
/// the way Apple's KVO is: the handler is called synchronously on whichever thread changes the property, it is
/// never called concurrently with itself by us unless the property is changed concurrently from several threads,
/// and the entry's own state (`isActive`) is atomic. Observers who capture non-thread-safe state must change the
/// property from one thread only, or hop themselves (e.g. `Task { @MainActor in … }`), exactly as with Apple's KVO.
class ObserverEntry: @unchecked Sendable {
    /// The key path the observer registered with (before alias resolution).
    let keyPath: ObservedKeyPath
    let options: NSKeyValueObservingOptions
    private let active = Atomic<Bool>(true)

    init(keyPath: ObservedKeyPath, options: NSKeyValueObservingOptions) {
        self.keyPath = keyPath
        self.options = options
    }

    /// False once the token was invalidated; checked before every call of the handler.
    var isActive: Bool {
        active.load(ordering: .acquiring)
    }

    func deactivate() {
        active.store(false, ordering: .releasing)
    }

    /// Called once, without any lock held, when the observed object (its registry) is deallocated.
    func observedObjectDidEnd() {}
}

/// An observer of a property of type `Value`; the observed object's type is erased to `AnyObject`.
///
/// Restates `@unchecked Sendable` for the reason given on ``ObserverEntry``.
final class ValueObserverEntry<Value>: ObserverEntry, @unchecked Sendable {
    private let handler: (AnyObject, NSKeyValueObservedChange<Value>) -> Void
    private let onObservedObjectEnd: (@Sendable () -> Void)?

    init(
        keyPath: ObservedKeyPath,
        options: NSKeyValueObservingOptions,
        handler: @escaping (AnyObject, NSKeyValueObservedChange<Value>) -> Void,
        onObservedObjectEnd: (@Sendable () -> Void)?
    ) {
        self.handler = handler
        self.onObservedObjectEnd = onObservedObjectEnd
        super.init(keyPath: keyPath, options: options)
    }

    /// Calls the handler unless the observation was invalidated.
    func deliver(_ change: NSKeyValueObservedChange<Value>, of object: AnyObject) {
        guard isActive else { return }
        handler(object, change)
    }

    override func observedObjectDidEnd() {
        deactivate()
        onObservedObjectEnd?()
    }
}

/// A key path used as a dictionary key inside the registry's lock.
///
/// `@unchecked Sendable` because `AnyKeyPath` is not `Sendable` (a key path may capture non-`Sendable` subscript
/// arguments). Key path objects are immutable, and the registry only hashes and compares them; the key paths of
/// observable properties capture nothing.
struct ObservedKeyPath: Hashable, @unchecked Sendable {
    let keyPath: AnyKeyPath

    init(_ keyPath: AnyKeyPath) {
        self.keyPath = keyPath
    }
}
