// CVPixelBufferRecycler: a fixed set of pre-made buffers, handed out by index and noticed when they come back.

import Synchronization

/// A fixed set of pixel buffers that a device hands out by index and takes back when their users let go.
///
/// For devices whose memory is their own: a V4L2 driver wraps its N mmap buffers once (with
/// `CVPixelBuffer(width:height:pixelFormatType:planes:release:)`), hands buffer `i` out when the kernel fills
/// it (``handOut(_:)``), and re-queues every buffer ``firstReturnedBuffer()`` reports. A buffer counts as
/// returned when it was handed out and the recycler's reference is now the only one, the rule
/// ``CVPixelBufferPool`` uses: nothing is allocated per frame.
///
/// Threading: thread safe; `@unchecked Sendable`. All state is under one mutex.
package final class CVPixelBufferRecycler: @unchecked Sendable {
    private struct State {
        var buffers: [CVPixelBuffer]
        var handedOut: [Bool]
    }

    private let state: Mutex<State>

    /// A recycler for `buffers`, none of them handed out. Their order gives their indices.
    package init(_ buffers: [CVPixelBuffer]) {
        state = Mutex(State(buffers: buffers, handedOut: Array(repeating: false, count: buffers.count)))
    }

    /// How many buffers the recycler holds.
    package var count: Int {
        state.withLock { $0.buffers.count }
    }

    /// How many buffers are handed out and not yet reported returned.
    package var handedOutCount: Int {
        state.withLock { $0.handedOut.count(where: { $0 }) }
    }

    /// Marks buffer `index` as handed out and returns it. Traps if it is out already: the device would be
    /// giving one memory area to two frames.
    package func handOut(_ index: Int) -> CVPixelBuffer {
        state.withLock { state in
            precondition(state.buffers.indices.contains(index), "buffer index \(index) is out of range")
            precondition(!state.handedOut[index], "buffer \(index) is handed out already")
            state.handedOut[index] = true
            let buffer = state.buffers[index]
            buffer.resetForReuse()
            return buffer
        }
    }

    /// The index of a handed-out buffer whose users have all let go, now marked as back; `nil` if there is none.
    ///
    /// Call it in a loop until `nil` to collect every returned buffer. Race-free for the reason given in
    /// ``CVPixelBufferPool``: once only the recycler holds a buffer, nobody else can obtain it except through
    /// ``handOut(_:)``, which takes the same mutex.
    package func firstReturnedBuffer() -> Int? {
        state.withLock { state in
            for index in state.buffers.indices
            where state.handedOut[index] && isKnownUniquelyReferenced(&state.buffers[index]) {
                // Pairs with the last holder's releasing decrement: its pixel accesses happen before the reuse.
                atomicMemoryFence(ordering: .acquiring)
                state.handedOut[index] = false
                return index
            }
            return nil
        }
    }
}
