/// The options that decide which notifications an observer gets and what each change carries.
///
/// Pass them to `observe(_:options:changeHandler:)`. The raw values are Apple's, so `rawValue` round-trips with code
/// written for Apple's Foundation:
///
/// | option     | raw value | effect                                                                              |
/// |------------|-----------|-------------------------------------------------------------------------------------|
/// | `.new`     | 1         | `newValue` is set in notifications sent after a change and in the initial one       |
/// | `.old`     | 2         | `oldValue` is set in notifications sent for a change (before and after it)          |
/// | `.initial` | 4         | one notification is sent immediately, before `observe` returns                      |
/// | `.prior`   | 8         | a separate notification (`isPrior == true`) is also sent before each change         |
///
/// An empty set is valid: the handler is still called after each change, with `newValue` and `oldValue` nil.
///
/// Threading: a value type; `Sendable`.
public struct NSKeyValueObservingOptions: OptionSet, Hashable, Sendable {
    /// The bit mask; Apple's values.
    public let rawValue: UInt

    /// Creates options from a bit mask; unknown bits are kept and ignored.
    public init(rawValue: UInt) {
        self.rawValue = rawValue
    }

    /// Deliver the value after the change as `newValue` (and the current value in the `.initial` notification).
    ///
    /// Apple's constant is `NSKeyValueObservingOptionNew` (1).
    public static let new = NSKeyValueObservingOptions(rawValue: 0x01)

    /// Deliver the value before the change as `oldValue`. Never set in the `.initial` notification.
    ///
    /// Apple's constant is `NSKeyValueObservingOptionOld` (2).
    public static let old = NSKeyValueObservingOptions(rawValue: 0x02)

    /// Send one notification with the current value immediately, before `observe` returns.
    ///
    /// Apple's constant is `NSKeyValueObservingOptionInitial` (4).
    public static let initial = NSKeyValueObservingOptions(rawValue: 0x04)

    /// Also send a notification before each change, with `isPrior == true`, `oldValue` (if `.old`) and no `newValue`.
    ///
    /// The notification after the change is the same as without this option. Apple's constant is
    /// `NSKeyValueObservingOptionPrior` (8).
    public static let prior = NSKeyValueObservingOptions(rawValue: 0x08)
}
