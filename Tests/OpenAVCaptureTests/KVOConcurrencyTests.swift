import Dispatch
@testable import OpenAVCapture
import Synchronization
import Testing

@Suite("Many threads changing, observing and invalidating")
struct ConcurrencyTests {
    static let threads = 8
    static let iterations = 500

    @Test func countsAddUpUnderConcurrentChangesAndRegistrations() {
        let thermostat = Thermostat(temperature: 0)
        let posts = Atomic<Int>(0)
        let priors = Atomic<Int>(0)
        let heatingChanges = Atomic<Int>(0)
        let transientMisses = Atomic<Int>(0)
        let persistent = thermostat.observe(\.temperature, options: [.prior, .new, .old]) { _, change in
            if change.isPrior {
                #expect(change.newValue == nil)
                priors.add(1, ordering: .relaxed)
            } else {
                #expect(change.newValue != nil)
                posts.add(1, ordering: .relaxed)
            }
        }
        let heating = thermostat.observe(\.isHeating) { _, _ in heatingChanges.add(1, ordering: .relaxed) }

        DispatchQueue.concurrentPerform(iterations: Self.threads) { thread in
            for iteration in 0..<Self.iterations {
                // A transient observer that must see at least this thread's own change: delivery is synchronous.
                let seen = Atomic<Int>(0)
                let token = thermostat.observe(\.temperature, options: [.new]) { _, _ in
                    seen.add(1, ordering: .relaxed)
                }
                thermostat.temperature = Double(thread * Self.iterations + iteration)
                token.invalidate()
                if seen.load(ordering: .relaxed) < 1 {
                    transientMisses.add(1, ordering: .relaxed)
                }
                if thread == 0 {
                    thermostat.isHeating.toggle()  // the only thread writing it: every set is a real change
                }
            }
        }

        let changes = Self.threads * Self.iterations
        #expect(posts.load(ordering: .relaxed) == changes)
        #expect(priors.load(ordering: .relaxed) == changes)
        #expect(heatingChanges.load(ordering: .relaxed) == Self.iterations)
        #expect(transientMisses.load(ordering: .relaxed) == 0)
        #expect(thermostat.keyValueObservers.observerCount == 2)
        persistent.invalidate()
        heating.invalidate()
        #expect(thermostat.keyValueObservers.observerCount == 0)
    }

    @Test func invalidatingOnOneThreadWhileAnotherNotifies() {
        let thermostat = Thermostat(temperature: 0)
        let delivered = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: Self.threads) { thread in
            for iteration in 0..<Self.iterations {
                if thread.isMultiple(of: 2) {
                    thermostat.temperature = Double(iteration)
                } else {
                    let token = thermostat.observe(\.temperature, options: [.initial, .new]) { _, _ in
                        delivered.add(1, ordering: .relaxed)
                    }
                    token.invalidate()
                }
            }
        }
        // Every registering thread got its `.initial` notification; the rest depends on interleaving.
        #expect(delivered.load(ordering: .relaxed) >= Self.threads / 2 * Self.iterations)
        #expect(thermostat.keyValueObservers.observerCount == 0)
    }

    @Test func releasingTokensFromManyThreads() {
        let thermostat = Thermostat()
        let tokens = Mutex<[NSKeyValueObservation]>([])
        DispatchQueue.concurrentPerform(iterations: Self.threads) { _ in
            for _ in 0..<Self.iterations {
                let token = thermostat.observe(\.isHeating) { _, _ in }
                tokens.withLock { $0.append(token) }
            }
        }
        #expect(thermostat.keyValueObservers.observerCount == Self.threads * Self.iterations)
        DispatchQueue.concurrentPerform(iterations: Self.threads) { _ in
            while tokens.withLock({ $0.popLast() }) != nil {}
        }
        #expect(thermostat.keyValueObservers.observerCount == 0)
    }
}

@Suite("Cost of a change")
struct ChangeCostTests {
    @Test func noObserverMeansTheGetterIsNeverCalled() {
        let thermostat = Thermostat()
        thermostat.temperature = 1
        thermostat.temperature = 2
        #expect(thermostat.temperatureReads == 0)
    }

    @Test func getterIsCalledOnlyForValuesObserversAskedFor() {
        let thermostat = Thermostat()
        let noValues = thermostat.observe(\.temperature) { _, _ in }
        thermostat.temperature = 1
        #expect(thermostat.temperatureReads == 0)
        let newOnly = thermostat.observe(\.temperature, options: [.new]) { _, _ in }
        thermostat.temperature = 2
        #expect(thermostat.temperatureReads == 1)  // after the change only
        let oldToo = thermostat.observe(\.temperature, options: [.old]) { _, _ in }
        thermostat.temperature = 3
        #expect(thermostat.temperatureReads == 3)  // once before, once after
        noValues.invalidate()
        newOnly.invalidate()
        oldToo.invalidate()
    }
}
