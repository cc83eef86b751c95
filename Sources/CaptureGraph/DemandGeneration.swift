import Synchronization

/// A count that goes up each time something a sink's answers depend on changes: an output's settings, delegate or
/// recording state, a connection's rotation or mirroring. A route computes its sink's demands once and again only
/// when the count it computed them at has moved, so the capture thread does not ask every output on every frame.
///
/// Threading: thread safe. `bump` after the change is written, so a route that reads the old count recomputes.
package final class DemandGeneration: Sendable {
    private let count = Atomic<UInt64>(0)

    package init() {}

    /// Says that the answers may have changed.
    package func bump() { count.wrappingAdd(1, ordering: .releasing) }

    /// The count now.
    package var current: UInt64 { count.load(ordering: .acquiring) }
}
