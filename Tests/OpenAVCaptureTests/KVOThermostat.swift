import OpenAVCapture
import Synchronization

/// A small observable class, written the way our capture classes are.
///
/// `temperature` notifies on every set, with `willChange`/`didChange` (Apple's behaviour, true prior timing);
/// `isHeating` notifies only real changes, with `notifyChange` (our capture classes' behaviour).
final class Thermostat: KeyValueObservable, Sendable {
    private struct State {
        var temperature: Double
        var isHeating = false
        var temperatureReads = 0
    }

    let keyValueObservers = KeyValueObserverRegistry()
    private let state: Mutex<State>

    init(temperature: Double = 20) {
        state = Mutex(State(temperature: temperature))
    }

    var temperature: Double {
        get {
            state.withLock { state in
                state.temperatureReads += 1
                return state.temperature
            }
        }
        set {
            let change = keyValueObservers.willChange(\Thermostat.temperature, of: self)
            state.withLock { $0.temperature = newValue }
            keyValueObservers.didChange(change)
        }
    }

    /// How many times the `temperature` getter ran.
    var temperatureReads: Int {
        state.withLock { $0.temperatureReads }
    }

    var isHeating: Bool {
        get { state.withLock { $0.isHeating } }
        set {
            let oldValue = state.withLock { state in
                defer { state.isHeating = newValue }
                return state.isHeating
            }
            if oldValue != newValue {
                keyValueObservers.notifyChange(\Thermostat.isHeating, of: self, from: oldValue, to: newValue)
            }
        }
    }
}

/// A base class with an inherited observable property, and a subclass that aliases it.
class Heater: KeyValueObservable, @unchecked Sendable {
    let keyValueObservers = KeyValueObserverRegistry()
    private let level = Mutex(0)

    var power: Int {
        get { level.withLock { $0 } }
        set {
            let oldValue = level.withLock { level in
                defer { level = newValue }
                return level
            }
            keyValueObservers.notifyChange(\Heater.power, of: self, from: oldValue, to: newValue)
        }
    }
}

final class SmartHeater: Heater, @unchecked Sendable {
    override init() {
        super.init()
        keyValueObservers.addAlias(\SmartHeater.power, for: \Heater.power)
    }
}

/// A subclass that does not alias the inherited property.
final class PlainHeater: Heater, @unchecked Sendable {}

/// One notification as a test records it.
struct Event<Value: Equatable & Sendable>: Equatable, Sendable, CustomStringConvertible {
    var kind: NSKeyValueChange = .setting
    var newValue: Value?
    var oldValue: Value?
    var isPrior = false
    var hasIndexes = false

    init(new newValue: Value? = nil, old oldValue: Value? = nil, isPrior: Bool = false) {
        self.newValue = newValue
        self.oldValue = oldValue
        self.isPrior = isPrior
    }

    init(_ change: NSKeyValueObservedChange<Value>) {
        kind = change.kind
        newValue = change.newValue
        oldValue = change.oldValue
        isPrior = change.isPrior
        hasIndexes = change.indexes != nil
    }

    var description: String {
        let new = newValue.map { "\($0)" } ?? "nil"
        let old = oldValue.map { "\($0)" } ?? "nil"
        return "(\(isPrior ? "prior " : "")new: \(new), old: \(old))"
    }
}

/// A thread-safe history of values.
final class History<Element: Sendable>: Sendable {
    private let elements = Mutex<[Element]>([])

    func append(_ element: Element) {
        elements.withLock { $0.append(element) }
    }

    var all: [Element] {
        elements.withLock { $0 }
    }
}

/// A slot for a token that a handler needs to reach (to invalidate itself).
final class TokenBox: Sendable {
    private let slot = Mutex<NSKeyValueObservation?>(nil)

    var token: NSKeyValueObservation? {
        get { slot.withLock { $0 } }
        set { slot.withLock { $0 = newValue } }
    }
}
