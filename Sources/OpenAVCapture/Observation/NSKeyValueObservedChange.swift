import Foundation

/// One notification about an observed property, passed to the handler of `observe(_:options:changeHandler:)`.
///
/// Which values are present depends on the options given to `observe`, as in Apple's Foundation:
///
/// | notification                  | `newValue`          | `oldValue`          | `isPrior` |
/// |-------------------------------|---------------------|---------------------|-----------|
/// | initial (`.initial`)          | current, if `.new`  | always nil          | false     |
/// | before a change (`.prior`)    | always nil          | old, if `.old`      | true      |
/// | after a change                | new, if `.new`      | old, if `.old`      | false     |
///
/// `kind` is `.setting` for every notification our classes send, and `indexes` is nil. When `Value` is itself
/// optional, `newValue` and `oldValue` are doubly optional, as with Apple's KVO: `change.newValue ?? nil`.
///
/// To read the most recent value, read the property on the object itself: by the time a handler runs, another
/// thread may have changed it again.
///
/// Threading: a value type; `Sendable` when `Value` is.
public struct NSKeyValueObservedChange<Value> {
    /// Apple's name for the kind of change.
    public typealias Kind = NSKeyValueChange

    /// The kind of change; `.setting` for all of our properties.
    public let kind: Kind

    /// The value after the change; nil unless `.new` was asked for, and always nil in a prior notification.
    public let newValue: Value?

    /// The value before the change; nil unless `.old` was asked for, and always nil in the initial notification.
    public let oldValue: Value?

    /// The indexes of the changed elements of a to-many relationship; always nil for our properties.
    public let indexes: IndexSet?

    /// True when this notification is sent before the change happens, because `.prior` was asked for.
    public let isPrior: Bool

    init(kind: Kind = .setting, newValue: Value?, oldValue: Value?, indexes: IndexSet? = nil, isPrior: Bool) {
        self.kind = kind
        self.newValue = newValue
        self.oldValue = oldValue
        self.indexes = indexes
        self.isPrior = isPrior
    }
}

extension NSKeyValueObservedChange: Sendable where Value: Sendable {}
