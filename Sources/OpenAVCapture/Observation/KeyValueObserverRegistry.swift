import Synchronization

/// The observers of one object's properties, and the calls its property setters make to notify them.
///
/// A class becomes observable by conforming to ``KeyValueObservable`` and storing one registry:
///
/// ```swift
/// public final class Thermostat: KeyValueObservable, Sendable {
///     public let keyValueObservers = KeyValueObserverRegistry()
///     private let state = Mutex(State())
///
///     // Apple's behaviour: notify on every set, with true "before" timing for `.prior` observers.
///     public var temperature: Double {
///         get { state.withLock { $0.temperature } }
///         set {
///             let change = keyValueObservers.willChange(\Thermostat.temperature, of: self)
///             state.withLock { $0.temperature = newValue }
///             keyValueObservers.didChange(change)
///         }
///     }
///
///     // Our capture classes' behaviour: swap under the lock, notify only a real change, after unlocking.
///     public var isHeating: Bool {
///         get { state.withLock { $0.isHeating } }
///         set {
///             let oldValue = state.withLock { state in
///                 defer { state.isHeating = newValue }
///                 return state.isHeating
///             }
///             if oldValue != newValue {
///                 keyValueObservers.notifyChange(\Thermostat.isHeating, of: self, from: oldValue, to: newValue)
///             }
///         }
///     }
/// }
/// ```
///
/// Rules for class authors:
/// - Write the key path with the class that declares the property as its root (`\Thermostat.temperature`), never
///   `\Self.…` (a dynamic-`Self` key path crashes at run time on Swift 6.3/Linux).
/// - Notify after releasing your own locks: handlers run synchronously inside these calls and may read or set your
///   properties.
/// - Apple's KVO notifies on every set. Our capture classes notify only real changes (old != new), and say so in
///   the property's documentation; either choice is the class's.
/// - Key paths are matched with `AnyKeyPath` equality, which includes the root type: `\Sub.x` and `\Base.x` are
///   different key paths. A subclass that inherits observable properties calls
///   ``addAlias(_:for:)`` for each, e.g. in its `init`, so that `subclassInstance.observe(\.x)` is notified.
///
/// Cost: a change with no observers at all is one relaxed-acquire atomic load and no allocation. With observers (of
/// any property) it takes the registry's lock once (twice for `willChange` + `didChange`), hashes the key path, and
/// copies out the matching observers (a retain, no allocation); the getter is called only if an observer asked for
/// a value the setter did not pass.
///
/// Threading: thread-safe. Any thread may notify, register or invalidate at any time. Handlers run synchronously on
/// the thread that notifies, in registration order, and never while a lock of the registry is held, so a handler
/// may call `observe`, `invalidate()`, or set the property again (that nested change is delivered, nested, before
/// the outer delivery continues). The observers notified are those registered when the notification starts; an
/// observer registered by a handler is notified from the next change on.
public final class KeyValueObserverRegistry: Sendable {
    private struct State {
        /// Observers by canonical key path (alias already resolved), each list in registration order.
        var observers: [ObservedKeyPath: [ObserverEntry]] = [:]
        /// Alias key path → canonical key path.
        var aliases: [ObservedKeyPath: ObservedKeyPath] = [:]
    }

    /// The number of registered observers of all key paths; written under `state`'s lock, read without it.
    private let registeredCount = Atomic<Int>(0)
    private let state = Mutex(State())

    /// Creates an empty registry. Store exactly one per observable object.
    public init() {}

    deinit {
        let ended = state.withLock { state in
            defer { state.observers = [:] }
            return state.observers.values.flatMap { $0 }
        }
        // Outside the lock: ending an observation may finish an `AsyncStream`, whose termination handler runs here.
        for entry in ended {
            entry.observedObjectDidEnd()
        }
    }

    /// The number of registered observers, of all key paths. For tests and diagnostics.
    var observerCount: Int {
        registeredCount.load(ordering: .acquiring)
    }

    /// Makes observers of `alias` receive the notifications sent for `keyPath`.
    ///
    /// Needed because `AnyKeyPath` equality includes the root type: an observer who writes
    /// `multiCamSession.observe(\.isRunning)` registers `\AVCaptureMultiCamSession.isRunning`, while
    /// `AVCaptureSession`'s setter notifies `\AVCaptureSession.isRunning`. The subclass's `init` calls
    /// `keyValueObservers.addAlias(\AVCaptureMultiCamSession.isRunning, for: \AVCaptureSession.isRunning)`.
    /// Observers already registered under `alias` are moved. One level only: `keyPath` must not itself be an alias.
    public func addAlias<AliasRoot, Root, Value>(
        _ alias: KeyPath<AliasRoot, Value>,
        for keyPath: KeyPath<Root, Value>
    ) {
        let alias = ObservedKeyPath(alias)
        let canonical = ObservedKeyPath(keyPath)
        guard alias != canonical else { return }
        state.withLock { state in
            state.aliases[alias] = canonical
            if let moved = state.observers.removeValue(forKey: alias) {
                state.observers[canonical, default: []].append(contentsOf: moved)
            }
        }
    }

    // MARK: Notifying (called by property setters)

    /// Tells `.prior` observers of `keyPath` that its value is about to change; call before changing it.
    ///
    /// Reads the current value through `keyPath` only if an observer asked for `.old`. Pass the result to
    /// ``didChange(_:)`` after the change. Do not hold your own lock across this call.
    public func willChange<Object: AnyObject, Value>(
        _ keyPath: KeyPath<Object, Value>,
        of object: Object
    ) -> PendingKeyValueChange<Object, Value> {
        guard hasObservers else {
            return PendingKeyValueChange(object: object, keyPath: keyPath, oldValue: nil)
        }
        let entries = observers(of: ObservedKeyPath(keyPath))
        let oldValue = entries.contains { $0.options.contains(.old) } ? object[keyPath: keyPath] : nil
        for entry in entries where entry.options.contains(.prior) {
            let change = NSKeyValueObservedChange<Value>(
                newValue: nil,
                oldValue: entry.options.contains(.old) ? oldValue : nil,
                isPrior: true
            )
            deliver(change, to: entry, of: object)
        }
        return PendingKeyValueChange(object: object, keyPath: keyPath, oldValue: oldValue)
    }

    /// Tells the observers of a property that its value changed; call after ``willChange(_:of:)`` and the change.
    ///
    /// Reads the new value through the key path only if an observer asked for `.new`. An observer that registered
    /// between the two calls is notified too, with a nil `oldValue`.
    public func didChange<Object: AnyObject, Value>(_ change: consuming PendingKeyValueChange<Object, Value>) {
        guard hasObservers else { return }
        let entries = observers(of: ObservedKeyPath(change.keyPath))
        guard !entries.isEmpty else { return }
        let newValue = entries.contains { $0.options.contains(.new) } ? change.object[keyPath: change.keyPath] : nil
        for entry in entries {
            let notification = NSKeyValueObservedChange<Value>(
                newValue: entry.options.contains(.new) ? newValue : nil,
                oldValue: entry.options.contains(.old) ? change.oldValue : nil,
                isPrior: false
            )
            deliver(notification, to: entry, of: change.object)
        }
    }

    /// Tells the observers of `keyPath` that its value changed from `oldValue` to `newValue`; call after the change.
    ///
    /// The convenience for setters that swap the value under their own lock and compare (our capture classes notify
    /// only when `oldValue != newValue`). Never calls the getter. `.prior` observers still get their "before"
    /// notification first (all prior notifications, then all after-notifications), but it is sent after the fact:
    /// a prior handler that reads the property sees the new value. Use the ``willChange(_:of:)`` /
    /// ``didChange(_:)`` pair when that matters.
    public func notifyChange<Object: AnyObject, Value>(
        _ keyPath: KeyPath<Object, Value>,
        of object: Object,
        from oldValue: Value,
        to newValue: Value
    ) {
        guard hasObservers else { return }
        let entries = observers(of: ObservedKeyPath(keyPath))
        for entry in entries where entry.options.contains(.prior) {
            let change = NSKeyValueObservedChange<Value>(
                newValue: nil,
                oldValue: entry.options.contains(.old) ? oldValue : nil,
                isPrior: true
            )
            deliver(change, to: entry, of: object)
        }
        for entry in entries {
            let change = NSKeyValueObservedChange<Value>(
                newValue: entry.options.contains(.new) ? newValue : nil,
                oldValue: entry.options.contains(.old) ? oldValue : nil,
                isPrior: false
            )
            deliver(change, to: entry, of: object)
        }
    }

    // MARK: Registering (called by `KeyValueObservable`)

    /// Registers `handler` for `keyPath` of `object` (whose registry this is) and sends the `.initial` notification.
    func addObserver<Root: AnyObject, Value>(
        _ keyPath: KeyPath<Root, Value>,
        of object: Root,
        options: NSKeyValueObservingOptions,
        handler: @escaping (Root, NSKeyValueObservedChange<Value>) -> Void,
        onObservedObjectEnd: (@Sendable () -> Void)? = nil
    ) -> NSKeyValueObservation {
        let entry = ValueObserverEntry<Value>(
            keyPath: ObservedKeyPath(keyPath),
            options: options,
            handler: { object, change in
                // Always succeeds: the registry belongs to one object, of type `Root` or a subclass of it.
                guard let root = object as? Root else {
                    assertionFailure("notified with an object of type \(type(of: object)), not \(Root.self)")
                    return
                }
                handler(root, change)
            },
            onObservedObjectEnd: onObservedObjectEnd
        )
        state.withLock { state in
            let key = state.aliases[entry.keyPath] ?? entry.keyPath
            state.observers[key, default: []].append(entry)
            registeredCount.add(1, ordering: .releasing)
        }
        let token = NSKeyValueObservation(entry: entry, registry: self)
        if options.contains(.initial) {
            // Apple: sent before `observe` returns; `newValue` only with `.new`, never an `oldValue`.
            let current = options.contains(.new) ? object[keyPath: keyPath] : nil
            entry.deliver(NSKeyValueObservedChange(newValue: current, oldValue: nil, isPrior: false), of: object)
        }
        return token
    }

    /// Removes `entry`; called by its token, which keeps `entry` alive until the lock is released.
    func remove(_ entry: ObserverEntry) {
        state.withLock { state in
            let key = state.aliases[entry.keyPath] ?? entry.keyPath
            guard let index = state.observers[key]?.firstIndex(where: { $0 === entry }) else { return }
            state.observers[key]?.remove(at: index)
            if state.observers[key]?.isEmpty == true {
                state.observers[key] = nil
            }
            registeredCount.subtract(1, ordering: .releasing)
        }
    }

    // MARK: Private

    private var hasObservers: Bool {
        registeredCount.load(ordering: .acquiring) != 0
    }

    /// The observers of `keyPath` now, in registration order; copying the array out is a retain, not an allocation.
    private func observers(of keyPath: ObservedKeyPath) -> [ObserverEntry] {
        state.withLock { state in
            let key = state.aliases.isEmpty ? keyPath : state.aliases[keyPath] ?? keyPath
            return state.observers[key] ?? []
        }
    }

    private func deliver<Value>(
        _ change: NSKeyValueObservedChange<Value>,
        to entry: ObserverEntry,
        of object: AnyObject
    ) {
        // Equal key paths have equal value types, and `addAlias` requires the same `Value`; so this cast succeeds.
        guard let entry = entry as? ValueObserverEntry<Value> else {
            assertionFailure("observer of \(entry.keyPath.keyPath) does not take \(Value.self)")
            return
        }
        entry.deliver(change, of: object)
    }
}

/// A change announced with ``KeyValueObserverRegistry/willChange(_:of:)`` and not yet completed.
///
/// Hand it to ``KeyValueObserverRegistry/didChange(_:)`` once the property has its new value. Non-copyable, so that
/// a change cannot be completed twice. It holds the object strongly; keep it on the stack, in the setter.
///
/// Threading: create and complete it on the same thread, in the same setter.
public struct PendingKeyValueChange<Object: AnyObject, Value>: ~Copyable {
    let object: Object
    let keyPath: KeyPath<Object, Value>
    let oldValue: Value?
}
