// A PipeWire connection's last reference may go on the connection's own loop thread: a stream's loop task or a
// frame's lease released there. Closing a `pw_thread_loop` from inside itself joins the thread with itself and
// frees the loop under its own feet, so the close must move off that thread.

@testable import CaptureDrivers
import Dispatch
import Foundation
import Synchronization
import Testing
import TestSupport

@Suite(
    "PipeWire connection lifetime", .serialized,
    .enabled(
        if: PipeWireTestSession.daemonsUnavailableReason == nil, "\(PipeWireTestSession.daemonsUnavailableReason ?? "")"
    ))
struct PipeWireConnectionLifetimeTests {
    /// Holds the only strong reference, so a task on the loop thread can drop it there.
    private final class Holder: @unchecked Sendable {
        var connection: PipeWireConnection?
        init(_ connection: PipeWireConnection) { self.connection = connection }
    }

    @Test("the last reference dropped on the loop thread closes the connection off that thread")
    func lastReferenceOnTheLoopThread() throws {
        let session = try PipeWireTestSession.start()
        defer { session.stop() }
        for _ in 0..<20 {
            let closed = DispatchSemaphore(value: 0)
            let holder = Holder(try PipeWireConnection(onEvent: { _ in }))
            let weakConnection = WeakBox(holder.connection)
            holder.connection!.onLoopThread {
                // The task holds no reference of its own: this is the connection's last one.
                holder.connection = nil
                closed.signal()
            }
            #expect(closed.wait(timeout: .now() + 10) == .success)
            #expect(weakConnection.value == nil)
        }
        // The closes finished on threads of their own; a fresh connection still works beside them.
        let connection = try PipeWireConnection(onEvent: { _ in })
        try connection.roundtrip()
        #expect(connection.isAlive)
    }
}

private final class WeakBox<Value: AnyObject>: @unchecked Sendable {
    weak var value: Value?
    init(_ value: Value?) { self.value = value }
}
