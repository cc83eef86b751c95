/// A class whose properties can be observed with Apple's Swift KVO call shape, `object.observe(\.property) { … }`.
///
/// Foundation on Linux has no key-value observing, so our capture classes (`AVCaptureDevice`, `AVCaptureSession`,
/// outputs) conform to this protocol instead of inheriting Apple's `NSObject` machinery. Conforming takes one stored
/// registry; the setters of observable properties then notify it (see ``KeyValueObserverRegistry``):
///
/// ```swift
/// public let keyValueObservers = KeyValueObserverRegistry()
/// ```
///
/// Every conforming class gets Apple's `observe(_:options:changeHandler:)` and our extension,
/// `values(of:includingCurrent:bufferingPolicy:)`, an `AsyncStream` of the property's values.
///
/// Only properties whose setters notify are observable; observing any other key path compiles, and never fires.
/// Each observable property's documentation says so ("Key-value observable").
///
/// Threading: conforming classes must be thread-safe in the sense of ``KeyValueObserverRegistry``: change
/// notifications are delivered synchronously on the thread that changed the property.
public protocol KeyValueObservable: AnyObject {
    /// The object's observers. Return the same registry every time; store it in a `let`.
    var keyValueObservers: KeyValueObserverRegistry { get }
}

extension KeyValueObservable {
    /// Calls `changeHandler` whenever the property at `keyPath` changes, until the returned token is invalidated or
    /// released.
    ///
    /// Apple's signature and semantics (see ``NSKeyValueObservingOptions`` and ``NSKeyValueObservedChange``):
    /// `.initial` calls the handler once before this method returns; `.prior` adds a notification before each
    /// change. The handler gets the observed object, so it need not capture it.
    ///
    /// The handler is not `@Sendable`, to keep Apple's signature: it runs synchronously on the thread that changed
    /// the property, exactly as with Apple's KVO. Do not rely on actor isolation inside it; hop explicitly, e.g.
    /// `Task { @MainActor in … }`.
    ///
    /// - Returns: The token that keeps the observation alive. It does not keep the observed object alive.
    public func observe<Value>(
        _ keyPath: KeyPath<Self, Value>,
        options: NSKeyValueObservingOptions = [],
        changeHandler: @escaping (Self, NSKeyValueObservedChange<Value>) -> Void
    ) -> NSKeyValueObservation {
        keyValueObservers.addObserver(keyPath, of: self, options: options, handler: changeHandler)
    }

    /// The successive values of the property at `keyPath`, as an `AsyncStream`. Our extension; Apple has none.
    ///
    /// ```swift
    /// for await isRunning in session.values(of: \.isRunning) { … }
    /// ```
    ///
    /// - Parameters:
    ///   - includingCurrent: Whether the stream starts with the current value (an `.initial` notification).
    ///   - bufferingPolicy: What to keep while the consumer is slower than the changes. The default, `.unbounded`,
    ///     yields every value in order; our capture classes notify only real changes of state, which are rare. For a
    ///     property that changes at frame rate (exposure duration, ISO, lens position), pass `.bufferingNewest(1)`
    ///     to get the latest value without a growing buffer.
    ///
    /// The observation ends when the stream ends: when its consumer stops iterating and the stream is released,
    /// when the consuming task is cancelled, or when the observed object is deallocated (the stream then finishes).
    /// The stream does not keep the observed object alive.
    ///
    /// Threading: values are yielded on the thread that changed the property; iterate from any task.
    public func values<Value: Sendable>(
        of keyPath: KeyPath<Self, Value>,
        includingCurrent: Bool = true,
        bufferingPolicy: AsyncStream<Value>.Continuation.BufferingPolicy = .unbounded
    ) -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: bufferingPolicy)
        let token = keyValueObservers.addObserver(
            keyPath,
            of: self,
            options: includingCurrent ? [.initial, .new] : [.new],
            handler: { _, change in
                if let value = change.newValue {
                    continuation.yield(value)
                }
            },
            onObservedObjectEnd: { continuation.finish() }
        )
        continuation.onTermination = { _ in token.invalidate() }
        return stream
    }
}
