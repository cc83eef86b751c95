import Foundation
@testable import OpenAVCapture
import Testing

@Suite("Options give Apple's newValue, oldValue and isPrior")
struct ObservingOptionsTests {
    @Test func rawValuesAreApples() {
        #expect(NSKeyValueObservingOptions.new.rawValue == 1)
        #expect(NSKeyValueObservingOptions.old.rawValue == 2)
        #expect(NSKeyValueObservingOptions.initial.rawValue == 4)
        #expect(NSKeyValueObservingOptions.prior.rawValue == 8)
        #expect(NSKeyValueObservingOptions([.new, .old]).rawValue == 3)
        #expect(NSKeyValueChange.setting.rawValue == 1)
        #expect(NSKeyValueChange.insertion.rawValue == 2)
        #expect(NSKeyValueChange.removal.rawValue == 3)
        #expect(NSKeyValueChange.replacement.rawValue == 4)
    }

    /// Observes `temperature` (20) with `options`, sets it to 21 then 22, and returns the recorded history.
    private func history(_ options: NSKeyValueObservingOptions) -> [Event<Double>] {
        let thermostat = Thermostat(temperature: 20)
        let history = History<Event<Double>>()
        let token = thermostat.observe(\.temperature, options: options) { _, change in
            history.append(Event(change))
        }
        thermostat.temperature = 21
        thermostat.temperature = 22
        token.invalidate()
        return history.all
    }

    static let cases: [(NSKeyValueObservingOptions, [Event<Double>])] = [
        ([], [Event(), Event()]),
        ([.new], [Event(new: 21), Event(new: 22)]),
        ([.old], [Event(old: 20), Event(old: 21)]),
        ([.new, .old], [Event(new: 21, old: 20), Event(new: 22, old: 21)]),
        ([.initial], [Event(), Event(), Event()]),
        ([.initial, .new], [Event(new: 20), Event(new: 21), Event(new: 22)]),
        ([.initial, .old], [Event(), Event(old: 20), Event(old: 21)]),
        ([.initial, .new, .old], [Event(new: 20), Event(new: 21, old: 20), Event(new: 22, old: 21)]),
        ([.prior], [Event(isPrior: true), Event(), Event(isPrior: true), Event()]),
        ([.prior, .new], [Event(isPrior: true), Event(new: 21), Event(isPrior: true), Event(new: 22)]),
        (
            [.prior, .old],
            [Event(old: 20, isPrior: true), Event(old: 20), Event(old: 21, isPrior: true), Event(old: 21)]
        ),
        (
            [.prior, .new, .old],
            [
                Event(old: 20, isPrior: true), Event(new: 21, old: 20),
                Event(old: 21, isPrior: true), Event(new: 22, old: 21),
            ]
        ),
        (
            [.initial, .prior, .new, .old],
            [
                Event(new: 20), Event(old: 20, isPrior: true), Event(new: 21, old: 20),
                Event(old: 21, isPrior: true), Event(new: 22, old: 21),
            ]
        ),
    ]

    @Test(arguments: cases)
    func willChangeDidChangeHistory(options: NSKeyValueObservingOptions, expected: [Event<Double>]) {
        #expect(history(options) == expected)
    }

    @Test func observersWithDifferentOptionsEachGetTheirOwnShape() {
        let thermostat = Thermostat(temperature: 20)
        let plain = History<Event<Double>>()
        let newOnly = History<Event<Double>>()
        let oldAndPrior = History<Event<Double>>()
        let tokens = [
            thermostat.observe(\.temperature) { plain.append(Event($1)) },
            thermostat.observe(\.temperature, options: [.new]) { newOnly.append(Event($1)) },
            thermostat.observe(\.temperature, options: [.old, .prior]) { oldAndPrior.append(Event($1)) },
        ]
        thermostat.temperature = 21
        thermostat.isHeating = true
        thermostat.isHeating = false
        #expect(plain.all == [Event()])
        #expect(newOnly.all == [Event(new: 21)])
        #expect(oldAndPrior.all == [Event(old: 20, isPrior: true), Event(old: 20)])
        tokens.forEach { $0.invalidate() }
    }

    @Test func observersWithDifferentOptionsViaNotifyChange() {
        let thermostat = Thermostat()
        let plain = History<Event<Bool>>()
        let newAndPrior = History<Event<Bool>>()
        let old = History<Event<Bool>>()
        let tokens = [
            thermostat.observe(\.isHeating) { plain.append(Event($1)) },
            thermostat.observe(\.isHeating, options: [.new, .prior]) { newAndPrior.append(Event($1)) },
            thermostat.observe(\.isHeating, options: [.old]) { old.append(Event($1)) },
        ]
        thermostat.isHeating = true
        #expect(plain.all == [Event()])
        #expect(newAndPrior.all == [Event(isPrior: true), Event(new: true)])
        #expect(old.all == [Event(old: false)])
        tokens.forEach { $0.invalidate() }
    }

    @Test func everyNotificationIsASettingWithoutIndexes() {
        let events = history([.initial, .prior, .new, .old])
        #expect(events.count == 5)
        #expect(events.allSatisfy { $0.kind == .setting && !$0.hasIndexes })
    }

    @Test func initialIsSentBeforeObserveReturns() {
        let thermostat = Thermostat(temperature: 19.5)
        let history = History<Event<Double>>()
        let token = thermostat.observe(\.temperature, options: [.initial, .new]) { _, change in
            history.append(Event(change))
        }
        #expect(history.all == [Event(new: 19.5)])
        withExtendedLifetime(token) {}
    }

    @Test func priorHandlerSeesTheOldStateWithWillChange() {
        let thermostat = Thermostat(temperature: 20)
        let seen = History<Double>()
        let token = thermostat.observe(\.temperature, options: [.prior]) { thermostat, _ in
            seen.append(thermostat.temperature)
        }
        thermostat.temperature = 25
        #expect(seen.all == [20, 25])
        token.invalidate()
    }

    @Test func notifyChangeGivesTheSameShapeAsWillChangeDidChange() {
        let thermostat = Thermostat()
        let history = History<Event<Bool>>()
        let token = thermostat.observe(\.isHeating, options: [.prior, .new, .old]) { _, change in
            history.append(Event(change))
        }
        thermostat.isHeating = true
        #expect(history.all == [Event(old: false, isPrior: true), Event(new: true, old: false)])
        token.invalidate()
    }

    @Test func appleStyleSetterNotifiesEverySetAndOursOnlyRealChanges() {
        let thermostat = Thermostat(temperature: 20)
        let temperatures = History<Event<Double>>()
        let heating = History<Event<Bool>>()
        let temperatureToken = thermostat.observe(\.temperature, options: [.new]) { temperatures.append(Event($1)) }
        let heatingToken = thermostat.observe(\.isHeating, options: [.new]) { heating.append(Event($1)) }
        thermostat.temperature = 20
        thermostat.temperature = 20
        thermostat.isHeating = false
        thermostat.isHeating = true
        thermostat.isHeating = true
        #expect(temperatures.all == [Event(new: 20), Event(new: 20)])
        #expect(heating.all == [Event(new: true)])
        temperatureToken.invalidate()
        heatingToken.invalidate()
    }

    @Test func onlyObserversOfTheChangedKeyPathAreNotified() {
        let thermostat = Thermostat(temperature: 20)
        let temperatures = History<Double?>()
        let heating = History<Bool?>()
        let temperatureToken = thermostat.observe(\.temperature, options: [.new]) { temperatures.append($1.newValue) }
        let heatingToken = thermostat.observe(\.isHeating, options: [.new]) { heating.append($1.newValue) }
        thermostat.temperature = 23
        #expect(temperatures.all == [23])
        #expect(heating.all == [])
        thermostat.isHeating = true
        #expect(temperatures.all == [23])
        #expect(heating.all == [true])
        temperatureToken.invalidate()
        heatingToken.invalidate()
    }

    @Test func handlerGetsTheObservedObject() {
        let thermostat = Thermostat()
        let same = History<Bool>()
        let token = thermostat.observe(\.temperature) { observed, _ in
            same.append(observed === thermostat)
        }
        thermostat.temperature = 1
        #expect(same.all == [true])
        token.invalidate()
    }

    @Test func aliasDeliversBaseClassNotificationsToSubclassKeyPaths() {
        let heater = SmartHeater()
        let viaSubclass = History<Int?>()
        let viaBase = History<Int?>()
        let subclassToken = heater.observe(\.power, options: [.new]) { viaSubclass.append($1.newValue) }
        let base: Heater = heater
        let baseToken = base.observe(\.power, options: [.new]) { viaBase.append($1.newValue) }
        heater.power = 3
        base.power = 4
        #expect(viaSubclass.all == [3, 4])
        #expect(viaBase.all == [3, 4])
        subclassToken.invalidate()
        baseToken.invalidate()
        heater.power = 5
        #expect(viaSubclass.all == [3, 4])
        #expect(heater.keyValueObservers.observerCount == 0)
    }

    @Test func withoutAliasASubclassKeyPathIsADifferentKeyPathUntilAliased() {
        let heater = PlainHeater()
        let history = History<Int?>()
        let token = heater.observe(\.power, options: [.new]) { history.append($1.newValue) }
        heater.power = 1
        #expect(history.all == [])  // documented: `\PlainHeater.power != \Heater.power`
        heater.keyValueObservers.addAlias(\PlainHeater.power, for: \Heater.power)
        heater.power = 2
        #expect(history.all == [2])
        #expect(heater.keyValueObservers.observerCount == 1)
        token.invalidate()
        #expect(heater.keyValueObservers.observerCount == 0)
    }
}
