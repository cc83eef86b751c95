import CaptureGraph
import Dispatch
import Synchronization

/// The `sampleBuffers` sequences of one output: their continuations, and a serial queue that prepares each
/// buffer once and yields it to every sequence.
///
/// Threading: thread safe. `submit` is called on the capture thread and never blocks: at most one buffer is
/// being prepared at a time, and each sequence buffers `bufferSize` buffers (oldest kept, newer ones dropped,
/// so a slow consumer sees Apple's late-frame policy).
final class SampleBufferStreams: Sendable {
    private let continuations = Mutex<[Int: AsyncStream<CMSampleBuffer>.Continuation]>([:])
    private let nextID = Atomic<Int>(0)
    private let queue = DispatchQueue(label: "OpenAVCapture.sampleBuffers")
    private let delivery: SampleBufferDelivery
    private let bufferSize: Int
    /// Told when a sequence starts or ends (`isActive` may have changed).
    private let changes: DemandGeneration?

    /// - Parameters:
    ///   - bufferSize: buffers each sequence keeps for its consumer.
    ///   - preparing: buffers that may wait to be prepared (1 for video: Apple's late-frame policy).
    ///   - changes: bumped when a sequence starts or ends, for outputs whose demand depends on `isActive`.
    init(bufferSize: Int, preparing: Int = 1, changes: DemandGeneration? = nil) {
        self.bufferSize = bufferSize
        self.changes = changes
        self.delivery = SampleBufferDelivery(limit: preparing)
    }

    /// Whether any sequence is being iterated.
    var isActive: Bool { !continuations.withLock { $0.isEmpty } }

    /// A new sequence of the output's buffers.
    func makeStream() -> AsyncStream<CMSampleBuffer> {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        return AsyncStream(bufferingPolicy: .bufferingOldest(bufferSize)) { continuation in
            continuations.withLock { $0[id] = continuation }
            changes?.bump()
            continuation.onTermination = { [weak self] _ in
                _ = self?.continuations.withLock { $0.removeValue(forKey: id) }
                self?.changes?.bump()
            }
        }
    }

    /// Prepares a buffer on the streams' queue and yields it to every sequence; false when the previous one is
    /// still being prepared or some sequence's buffer was full (a drop to count).
    func submit(_ prepare: @escaping @Sendable () -> [CMSampleBuffer]) -> Bool {
        delivery.submit(on: queue) { [self] in
            let buffers = prepare()
            for continuation in continuations.withLock({ Array($0.values) }) {
                for buffer in buffers { continuation.yield(buffer) }
            }
        }
    }

    /// Ends every sequence (the output left its session).
    func finishAll() {
        for continuation in continuations.withLock({ Array($0.values) }) { continuation.finish() }
    }
}
