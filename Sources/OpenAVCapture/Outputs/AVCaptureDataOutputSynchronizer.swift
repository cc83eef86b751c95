import CaptureDrivers
import Foundation
import Synchronization

/// Delivers the data of several outputs (video data, audio data, metadata) together, matched by presentation time,
/// to one delegate.
///
/// As Apple's: once made, the outputs' own delegates are no longer called (the synchronizer takes their places; do
/// not set them again while it is in use). The first video data output among `dataOutputs` is the master: each of its
/// frames (or frames it dropped) makes one collection, holding it and, for each other output, the data of the same
/// moment: another video data output's frame within half a frame of it, the metadata objects found in that frame,
/// and the audio buffer that arrived with it. Audio buffers that do not fit (more than one per frame) come in
/// collections of their own, in time order, so no audio is lost. A master frame waits for the other video and
/// metadata outputs' data of its moment at most until the master's second next frame arrives (another camera's frame
/// may reach its output a frame after the master's): no buffer is held longer than two frame intervals, and every
/// dropped master frame is reported with `sampleBufferWasDropped` and its reason.
///
/// Threading: thread safe. Matching runs on the synchronizer's own serial queue; the delegate runs on its queue.
open class AVCaptureDataOutputSynchronizer: NSObject, @unchecked Sendable {
    /// The outputs, master first as given.
    open var dataOutputs: [AVCaptureOutput] { storedDataOutputs }
    private let storedDataOutputs: [AVCaptureOutput]
    private let matchingQueue = DispatchQueue(label: "OpenAVCapture.AVCaptureDataOutputSynchronizer")
    private let target = Mutex<(delegate: WeakSynchronizerDelegate, queue: DispatchQueue?)>((WeakSynchronizerDelegate(), nil))
    /// Used only on `matchingQueue`.
    private var pending = PendingData()
    private var receivers: [OutputReceiver] = []

    /// A synchronizer of `dataOutputs` (video data, audio data and metadata outputs; at least one). Traps on an
    /// output of another kind, as Apple raises.
    public init(dataOutputs: [AVCaptureOutput]) {
        precondition(!dataOutputs.isEmpty, "AVCaptureDataOutputSynchronizer needs at least one data output")
        for output in dataOutputs {
            precondition(
                output is AVCaptureVideoDataOutput || output is AVCaptureAudioDataOutput
                    || output is AVCaptureMetadataOutput || output is AVCaptureDepthDataOutput,
                "AVCaptureDataOutputSynchronizer takes video data, audio data, metadata and depth data outputs, not"
                    + " \(type(of: output)) (Apple raises NSInvalidArgumentException)")
        }
        self.storedDataOutputs = dataOutputs
        super.init()
        let master = dataOutputs.first { $0 is AVCaptureVideoDataOutput } ?? dataOutputs[0]
        pending.master = ObjectIdentifier(master)
        for output in dataOutputs {
            let receiver = OutputReceiver(synchronizer: self)
            receivers.append(receiver)
            switch output {
            case let video as AVCaptureVideoDataOutput: video.setSampleBufferDelegate(receiver, queue: matchingQueue)
            case let audio as AVCaptureAudioDataOutput: audio.setSampleBufferDelegate(receiver, queue: matchingQueue)
            case let metadata as AVCaptureMetadataOutput:
                metadata.setMetadataObjectsDelegate(receiver, queue: matchingQueue)
            default: break  // Depth outputs never deliver here: no camera has depth.
            }
        }
    }

    /// Sets the delegate (held weakly, as Apple's) and the serial queue it is called on.
    open func setDelegate(_ delegate: (any AVCaptureDataOutputSynchronizerDelegate)?, queue delegateCallbackQueue: DispatchQueue?) {
        precondition(
            delegate == nil || delegateCallbackQueue != nil,
            "AVCaptureDataOutputSynchronizer: a delegate needs a queue (Apple raises NSInvalidArgumentException)")
        target.withLock { $0 = (WeakSynchronizerDelegate(object: delegate), delegate == nil ? nil : delegateCallbackQueue) }
    }

    /// The delegate, if it is still alive.
    open var delegate: (any AVCaptureDataOutputSynchronizerDelegate)? { target.withLock { $0.delegate.object } }
    /// The queue the delegate is called on.
    open var delegateCallbackQueue: DispatchQueue? { target.withLock { $0.queue } }

    // MARK: Matching, on the matching queue

    fileprivate func received(_ item: PendingData.Item, from output: AVCaptureOutput) {
        dispatchPrecondition(condition: .onQueue(matchingQueue))
        let key = ObjectIdentifier(output)
        if key == pending.master {
            pending.masters.append((output, item))
            // Beyond the wait allowed, the oldest master goes out with what arrived for it.
            while pending.masters.count > Self.mastersWaitingAtMost { emit(pending.masters.removeFirst()) }
        } else {
            pending.others[key, default: []].append((output, item))
        }
        while let oldest = pending.masters.first, otherVideoHasCaughtUp(with: oldest.item.time) {
            emit(pending.masters.removeFirst())
        }
    }

    /// Master frames that may wait for the other outputs' data of their moment. Two: a camera whose frames reach
    /// its output a frame after the master's (a webcam's transfer, a decoder) still joins the master's collection,
    /// whichever of the two outputs' frames this queue happens to take first.
    private static let mastersWaitingAtMost = 2

    /// Whether every other video data output and metadata output has delivered data at or after `time` less half a
    /// frame (a metadata output that finds nothing never does: the master then waits for the frames after it).
    private func otherVideoHasCaughtUp(with time: CMTime) -> Bool {
        dataOutputs.allSatisfy { output in
            guard output is AVCaptureVideoDataOutput || output is AVCaptureMetadataOutput,
                ObjectIdentifier(output) != pending.master
            else { return true }
            return pending.others[ObjectIdentifier(output)]?.contains { $0.item.time.seconds >= time.seconds - halfFrame }
                ?? false
        }
    }

    private var halfFrame: Double { pending.masterDuration.map { $0 / 2 } ?? 1.0 / 60 }

    /// Sends the collection of the master item, and before it audio-only collections for audio it cannot carry.
    private func emit(_ master: (output: AVCaptureOutput, item: PendingData.Item)) {
        let time = master.item.time
        if case .sample(let buffer) = master.item.kind, buffer.duration.isNumeric, buffer.duration.seconds > 0 {
            pending.masterDuration = buffer.duration.seconds
        }
        var entries: [(AVCaptureOutput, AVCaptureSynchronizedData)] = [(master.output, master.item.data)]
        for output in dataOutputs where ObjectIdentifier(output) != pending.master {
            let key = ObjectIdentifier(output)
            var items = pending.others[key] ?? []
            switch output {
            case is AVCaptureAudioDataOutput:
                // All audio up to the end of this frame; the last goes with the frame, earlier ones alone.
                let due = items.filter { $0.item.time.seconds < time.seconds + 2 * halfFrame }
                items.removeFirst(due.count)
                for early in due.dropLast() { deliver([(output, early.item.data)], at: early.item.time) }
                if let last = due.last { entries.append((output, last.item.data)) }
            default:
                // Video and metadata: the item of this moment, if any; older ones are stale and let go.
                let index = items.firstIndex { abs($0.item.time.seconds - time.seconds) < halfFrame }
                if let index { entries.append((output, items[index].item.data)) }
                items.removeAll { $0.item.time.seconds < time.seconds + halfFrame }
            }
            pending.others[key] = items
        }
        deliver(entries, at: time)
    }

    private func deliver(_ entries: [(AVCaptureOutput, AVCaptureSynchronizedData)], at time: CMTime) {
        let (weak, queue) = target.withLock { $0 }
        guard let delegate = weak.object, let queue else { return }
        let collection = AVCaptureSynchronizedDataCollection(entries: entries, order: dataOutputs)
        // Synchronously, so the delegate sees collections in order and buffers are not held beyond its call.
        queue.sync { delegate.dataOutputSynchronizer(self, didOutput: collection) }
    }
}

/// What the synchronizer is waiting to match. Used only on the matching queue.
private struct PendingData {
    struct Item {
        enum Kind {
            case sample(CMSampleBuffer)
            case dropped(CMSampleBuffer, AVCaptureOutput.DataDroppedReason)
            case metadata([AVMetadataObject])
        }
        let kind: Kind
        let time: CMTime

        var data: AVCaptureSynchronizedData {
            switch kind {
            case .sample(let buffer):
                AVCaptureSynchronizedSampleBufferData(
                    timestamp: time, sampleBuffer: buffer, wasDropped: false, droppedReason: .none)
            case .dropped(let notice, let reason):
                AVCaptureSynchronizedSampleBufferData(
                    timestamp: time, sampleBuffer: notice, wasDropped: true, droppedReason: reason)
            case .metadata(let objects): AVCaptureSynchronizedMetadataObjectData(timestamp: time, metadataObjects: objects)
            }
        }
    }

    var master: ObjectIdentifier?
    /// Master items waiting for the other outputs, oldest first.
    var masters: [(output: AVCaptureOutput, item: Item)] = []
    var masterDuration: Double?
    var others: [ObjectIdentifier: [(output: AVCaptureOutput, item: Item)]] = [:]
}

/// Stands in for an output's delegate and hands what it gets to the synchronizer.
private final class OutputReceiver: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate,
    AVCaptureAudioDataOutputSampleBufferDelegate, AVCaptureMetadataOutputObjectsDelegate, @unchecked Sendable
{
    weak var synchronizer: AVCaptureDataOutputSynchronizer?

    init(synchronizer: AVCaptureDataOutputSynchronizer) { self.synchronizer = synchronizer }

    func captureOutput(_ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        synchronizer?.received(.init(kind: .sample(sampleBuffer), time: sampleBuffer.presentationTimeStamp), from: output)
    }

    func captureOutput(_ output: AVCaptureOutput, didDrop sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        let reason = (CMGetAttachment(sampleBuffer, key: kCMSampleBufferAttachmentKey_DroppedFrameReason, attachmentModeOut: nil)
            as? String).flatMap(DropReason.init(rawValue:)).map(AVCaptureOutput.DataDroppedReason.init) ?? .discontinuity
        synchronizer?.received(
            .init(kind: .dropped(sampleBuffer, reason), time: sampleBuffer.presentationTimeStamp), from: output)
    }

    func metadataOutput(
        _ output: AVCaptureMetadataOutput, didOutput metadataObjects: [AVMetadataObject], from connection: AVCaptureConnection
    ) {
        guard let time = metadataObjects.first?.time else { return }
        synchronizer?.received(.init(kind: .metadata(metadataObjects), time: time), from: output)
    }
}

/// Holds the synchronizer's delegate weakly. `@unchecked Sendable`: read under a lock, used on the delegate's queue.
private struct WeakSynchronizerDelegate: @unchecked Sendable {
    weak var object: (any AVCaptureDataOutputSynchronizerDelegate)?
}

/// Receives the synchronizer's collections.
public protocol AVCaptureDataOutputSynchronizerDelegate: NSObjectProtocol {
    /// One moment's data from the synchronized outputs, on the delegate queue.
    func dataOutputSynchronizer(
        _ synchronizer: AVCaptureDataOutputSynchronizer, didOutput synchronizedDataCollection: AVCaptureSynchronizedDataCollection)
}

/// The data of one moment, by output. Iterating gives the outputs that have data in it, in the synchronizer's order.
///
/// Threading: immutable; safe to share between threads.
open class AVCaptureSynchronizedDataCollection: NSObject, Sequence, @unchecked Sendable {
    private let entries: [(AVCaptureOutput, AVCaptureSynchronizedData)]

    fileprivate init(entries: [(AVCaptureOutput, AVCaptureSynchronizedData)], order: [AVCaptureOutput]) {
        self.entries = order.compactMap { output in entries.first { $0.0 === output } }
    }

    /// The data of `captureOutput`, or nil when it has none in this collection.
    public func synchronizedData(for captureOutput: AVCaptureOutput) -> AVCaptureSynchronizedData? {
        entries.first { $0.0 === captureOutput }?.1
    }

    /// The data of `dataOutput`, or nil.
    public subscript(dataOutput: AVCaptureOutput) -> AVCaptureSynchronizedData? { synchronizedData(for: dataOutput) }

    /// How many outputs have data in the collection.
    public var count: Int { entries.count }

    public func makeIterator() -> IndexingIterator<[AVCaptureOutput]> { entries.map(\.0).makeIterator() }
}

/// One output's data in a collection.
///
/// Threading: immutable; safe to share between threads.
open class AVCaptureSynchronizedData: NSObject, @unchecked Sendable {
    /// The presentation time of the data.
    public let timestamp: CMTime
    package init(timestamp: CMTime) { self.timestamp = timestamp }
}

/// A video or audio data output's buffer in a collection, or the notice of one it dropped.
open class AVCaptureSynchronizedSampleBufferData: AVCaptureSynchronizedData, @unchecked Sendable {
    /// The buffer; for a drop, the notice (no image) the output's `didDrop` would have had.
    public let sampleBuffer: CMSampleBuffer
    /// Whether the buffer was dropped.
    public let sampleBufferWasDropped: Bool
    /// Why it was dropped; `.none` when it was not.
    public let droppedReason: AVCaptureOutput.DataDroppedReason

    package init(timestamp: CMTime, sampleBuffer: CMSampleBuffer, wasDropped: Bool, droppedReason: AVCaptureOutput.DataDroppedReason) {
        self.sampleBuffer = sampleBuffer
        self.sampleBufferWasDropped = wasDropped
        self.droppedReason = droppedReason
        super.init(timestamp: timestamp)
    }
}

/// A metadata output's objects in a collection.
open class AVCaptureSynchronizedMetadataObjectData: AVCaptureSynchronizedData, @unchecked Sendable {
    /// The objects found in the frame of the collection's moment.
    public let metadataObjects: [AVMetadataObject]

    package init(timestamp: CMTime, metadataObjects: [AVMetadataObject]) {
        self.metadataObjects = metadataObjects
        super.init(timestamp: timestamp)
    }
}

/// A depth output's data in a collection: never made here (no camera has depth); Apple's type, for code that reads
/// collections of depth-capable platforms.
open class AVCaptureSynchronizedDepthData: AVCaptureSynchronizedData, @unchecked Sendable {
    public let depthData: AVDepthData
    public let depthDataWasDropped: Bool
    public let droppedReason: AVCaptureOutput.DataDroppedReason

    package init(timestamp: CMTime, depthData: AVDepthData, wasDropped: Bool, droppedReason: AVCaptureOutput.DataDroppedReason) {
        self.depthData = depthData
        self.depthDataWasDropped = wasDropped
        self.droppedReason = droppedReason
        super.init(timestamp: timestamp)
    }
}
