@testable import OpenAVCapture
import Testing

@Suite("Tokens: invalidate, release, no retain of the observed object")
struct ObservationLifetimeTests {
    @Test func invalidateStopsDeliveryAndIsIdempotent() {
        let thermostat = Thermostat(temperature: 20)
        let history = History<Double?>()
        let token = thermostat.observe(\.temperature, options: [.new]) { history.append($1.newValue) }
        thermostat.temperature = 21
        token.invalidate()
        thermostat.temperature = 22
        token.invalidate()
        token.invalidate()
        thermostat.temperature = 23
        #expect(history.all == [21])
        #expect(thermostat.keyValueObservers.observerCount == 0)
    }

    @Test func releasingTheTokenStopsDelivery() {
        let thermostat = Thermostat(temperature: 20)
        let history = History<Double?>()
        var token: NSKeyValueObservation? = thermostat.observe(\.temperature, options: [.new]) {
            history.append($1.newValue)
        }
        thermostat.temperature = 21
        #expect(token != nil)
        token = nil
        thermostat.temperature = 22
        #expect(history.all == [21])
        #expect(thermostat.keyValueObservers.observerCount == 0)
    }

    @Test func tokenDoesNotRetainTheObservedObject() {
        var thermostat: Thermostat? = Thermostat()
        weak let weakThermostat = thermostat
        weak let weakRegistry = thermostat?.keyValueObservers
        let token = thermostat!.observe(\.temperature, options: [.initial, .new]) { _, _ in }
        thermostat = nil
        #expect(weakThermostat == nil)
        #expect(weakRegistry == nil)  // the token holds the registry weakly too
        token.invalidate()  // after the object is gone: harmless
        token.invalidate()
    }

    @Test func invalidatingOneObserverLeavesTheOthers() {
        let thermostat = Thermostat(temperature: 20)
        let first = History<Double?>()
        let second = History<Double?>()
        let firstToken = thermostat.observe(\.temperature, options: [.new]) { first.append($1.newValue) }
        let secondToken = thermostat.observe(\.temperature, options: [.new]) { second.append($1.newValue) }
        thermostat.temperature = 21
        firstToken.invalidate()
        thermostat.temperature = 22
        #expect(first.all == [21])
        #expect(second.all == [21, 22])
        #expect(thermostat.keyValueObservers.observerCount == 1)
        secondToken.invalidate()
    }

    @Test func invalidatingReleasesTheHandler() {
        final class Captured: Sendable {}
        let thermostat = Thermostat()
        var captured: Captured? = Captured()
        weak let weakCaptured = captured
        let token = thermostat.observe(\.temperature) { [captured] _, _ in withExtendedLifetime(captured) {} }
        captured = nil
        #expect(weakCaptured != nil)
        token.invalidate()
        #expect(weakCaptured == nil)
    }
}

@Suite("Handlers that observe, invalidate or change the property during delivery")
struct ReentrancyTests {
    @Test func handlerInvalidatesItsOwnObservation() {
        let thermostat = Thermostat(temperature: 20)
        let history = History<Double?>()
        let box = TokenBox()
        box.token = thermostat.observe(\.temperature, options: [.new]) { _, change in
            history.append(change.newValue)
            box.token?.invalidate()
        }
        thermostat.temperature = 21
        thermostat.temperature = 22
        #expect(history.all == [21])
        #expect(thermostat.keyValueObservers.observerCount == 0)
    }

    @Test func handlerInvalidatesALaterObserverOfTheSameChange() {
        let thermostat = Thermostat(temperature: 20)
        let history = History<String>()
        let box = TokenBox()
        let first = thermostat.observe(\.temperature, options: [.new]) { _, _ in
            history.append("first")
            box.token?.invalidate()
        }
        box.token = thermostat.observe(\.temperature, options: [.new]) { _, _ in history.append("second") }
        thermostat.temperature = 21
        #expect(history.all == ["first"])
        first.invalidate()
    }

    @Test func handlerRegistersAnotherObserverNotifiedFromTheNextChange() {
        let thermostat = Thermostat(temperature: 20)
        let history = History<String>()
        let box = TokenBox()
        let first = thermostat.observe(\.temperature, options: [.new]) { thermostat, change in
            history.append("first \(change.newValue ?? 0)")
            if box.token == nil {
                box.token = thermostat.observe(\.temperature, options: [.initial, .new]) { _, change in
                    history.append("second \(change.newValue ?? 0)")
                }
            }
        }
        thermostat.temperature = 21
        thermostat.temperature = 22
        #expect(history.all == ["first 21.0", "second 21.0", "first 22.0", "second 22.0"])
        first.invalidate()
        box.token?.invalidate()
    }

    @Test func handlerChangesThePropertyAgain() {
        let thermostat = Thermostat(temperature: 20)
        let history = History<Event<Double>>()
        let token = thermostat.observe(\.temperature, options: [.prior, .new, .old]) { thermostat, change in
            history.append(Event(change))
            if !change.isPrior, change.newValue == 30 {
                thermostat.temperature = 25  // clamp
            }
        }
        thermostat.temperature = 30
        #expect(thermostat.temperature == 25)
        #expect(
            history.all == [
                Event(old: 20, isPrior: true),
                Event(new: 30, old: 20),
                Event(old: 30, isPrior: true),
                Event(new: 25, old: 30),
            ]
        )
        token.invalidate()
    }

    @Test func handlerOfOneKeyPathChangesAnother() {
        let thermostat = Thermostat(temperature: 20)
        let heating = History<Bool?>()
        let temperatureToken = thermostat.observe(\.temperature, options: [.new]) { thermostat, change in
            thermostat.isHeating = (change.newValue ?? 0) < 18
        }
        let heatingToken = thermostat.observe(\.isHeating, options: [.new]) { heating.append($1.newValue) }
        thermostat.temperature = 17
        thermostat.temperature = 16
        thermostat.temperature = 19
        #expect(heating.all == [true, false])
        temperatureToken.invalidate()
        heatingToken.invalidate()
    }
}
