import Foundation
import Synchronization

/// An unplug of a virtual device planned from the environment, for programs a test runs in another process (the
/// `avcapture` tool), which `OpenAVCaptureTesting`'s controllers cannot reach: the same fault injection as
/// `VirtualCameraController.unplug()` and `replug()`.
///
/// `OPENAV_VIRTUAL_UNPLUG=UNIQUEID:AFTER:FOR`, seconds, e.g. `virtual:back-camera:2:1`: the virtual device whose
/// `uniqueID` is UNIQUEID is unplugged AFTER seconds after its first stream of the process started, and replugged
/// FOR seconds after that. Once per process; unset (or malformed) plans nothing.
///
/// Threading: thread safe; the unplug and replug run on a global queue (they block until the capture thread
/// stopped, as the controllers' do).
package enum VirtualUnplugSchedule {
    package struct Plan: Sendable, Equatable {
        package var uniqueID: String
        package var after: Double
        package var outage: Double

        package init(uniqueID: String, after: Double, outage: Double) {
            self.uniqueID = uniqueID
            self.after = after
            self.outage = outage
        }
    }

    /// The plan `OPENAV_VIRTUAL_UNPLUG` gives, read once.
    static let plan: Plan? = parse(ProcessInfo.processInfo.environment["OPENAV_VIRTUAL_UNPLUG"])

    private static let hasFired = Atomic<Bool>(false)

    /// `UNIQUEID:AFTER:FOR`; the unique ID may hold colons itself (`virtual:back-camera`).
    package static func parse(_ text: String?) -> Plan? {
        guard let text else { return nil }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count >= 3, let after = Double(parts[parts.count - 2]), let outage = Double(parts[parts.count - 1]),
            after >= 0, outage >= 0, after.isFinite, outage.isFinite
        else { return nil }
        return Plan(uniqueID: parts.dropLast(2).joined(separator: ":"), after: after, outage: outage)
    }

    /// `device` started streaming: when the plan names it and has not fired yet, its unplug and replug are set.
    static func streamDidStart(_ device: some VirtualDevice) {
        guard let plan, plan.uniqueID == device.identity.uniqueID,
            !hasFired.exchange(true, ordering: .acquiringAndReleasing)
        else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + plan.after) {
            device.simulateUnplug()
            DispatchQueue.global().asyncAfter(deadline: .now() + plan.outage) { device.simulateReplug() }
        }
    }
}
