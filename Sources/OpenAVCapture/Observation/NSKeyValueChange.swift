/// The kind of change an observer is told about, `NSKeyValueObservedChange.kind`.
///
/// Our capture classes only ever send `.setting`: their observable properties are replaced as a whole. The other
/// cases exist for source compatibility with Apple's Foundation (they describe changes to ordered to-many
/// relationships, with `indexes` set). The raw values are Apple's.
///
/// Threading: a value type; `Sendable`.
public enum NSKeyValueChange: UInt, Sendable {
    /// The value was replaced. Apple's constant is `NSKeyValueChangeSetting` (1).
    case setting = 1
    /// Objects were inserted into a to-many relationship. Apple's constant is `NSKeyValueChangeInsertion` (2).
    case insertion = 2
    /// Objects were removed from a to-many relationship. Apple's constant is `NSKeyValueChangeRemoval` (3).
    case removal = 3
    /// Objects were replaced in a to-many relationship. Apple's constant is `NSKeyValueChangeReplacement` (4).
    case replacement = 4
}
