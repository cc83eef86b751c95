@testable import OpenAVCapture
import Testing

@Suite("values(of:) as an AsyncStream", .timeLimit(.minutes(1)))
struct ValueStreamTests {
    @Test func yieldsTheCurrentValueThenEveryChangeInOrder() async {
        let thermostat = Thermostat(temperature: 20)
        let stream = thermostat.values(of: \.temperature)
        thermostat.temperature = 21
        thermostat.temperature = 22
        thermostat.temperature = 23
        var received: [Double] = []
        for await value in stream {
            received.append(value)
            if received.count == 4 { break }
        }
        #expect(received == [20, 21, 22, 23])
    }

    @Test func withoutCurrentStartsAtTheFirstChange() async {
        let thermostat = Thermostat()
        let stream = thermostat.values(of: \.isHeating, includingCurrent: false)
        thermostat.isHeating = true
        thermostat.isHeating = true  // not a real change: not notified
        thermostat.isHeating = false
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next() == true)
        #expect(await iterator.next() == false)
    }

    @Test func bufferingNewestKeepsOnlyTheLatest() async {
        let thermostat = Thermostat(temperature: 20)
        let stream = thermostat.values(of: \.temperature, bufferingPolicy: .bufferingNewest(1))
        thermostat.temperature = 21
        thermostat.temperature = 22
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next() == 22)
        thermostat.temperature = 23
        #expect(await iterator.next() == 23)
    }

    @Test func releasingTheStreamRemovesTheObserver() {
        let thermostat = Thermostat()
        func makeAndDrop() {
            let stream = thermostat.values(of: \.temperature)
            #expect(thermostat.keyValueObservers.observerCount == 1)
            withExtendedLifetime(stream) {}
        }
        makeAndDrop()
        #expect(thermostat.keyValueObservers.observerCount == 0)
    }

    @Test func breakingOutOfTheLoopRemovesTheObserver() async {
        let thermostat = Thermostat(temperature: 20)
        func consumeFirst() async -> Double? {
            for await value in thermostat.values(of: \.temperature) {
                return value
            }
            return nil
        }
        #expect(await consumeFirst() == 20)
        #expect(thermostat.keyValueObservers.observerCount == 0)
    }

    @Test func cancellingTheConsumerRemovesTheObserver() async {
        let thermostat = Thermostat(temperature: 20)
        let stream = thermostat.values(of: \.temperature, includingCurrent: false)
        let consumer = Task {
            var count = 0
            for await _ in stream {
                count += 1
            }
            return count
        }
        consumer.cancel()
        _ = await consumer.value
        #expect(thermostat.keyValueObservers.observerCount == 0)
    }

    @Test func deallocatingTheObjectFinishesTheStream() async {
        var thermostat: Thermostat? = Thermostat(temperature: 20)
        weak let weakThermostat = thermostat
        weak let weakRegistry = thermostat?.keyValueObservers
        let stream = thermostat!.values(of: \.temperature)
        thermostat?.temperature = 21
        thermostat = nil
        #expect(weakThermostat == nil)
        #expect(weakRegistry == nil)
        var received: [Double] = []
        for await value in stream {
            received.append(value)
        }
        #expect(received == [20, 21])
    }
}
