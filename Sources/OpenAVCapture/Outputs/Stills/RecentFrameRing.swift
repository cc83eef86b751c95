import CaptureGraph
import Foundation
import Synchronization

/// The newest frames of a still output's connections, kept so that a zero-shutter-lag photo is the frame that was
/// current when the shutter was pressed instead of the next one.
///
/// Holds `capacity` frames per connection (1 by default: the frame on screen when `capturePhoto` is called). Each
/// frame it holds is a device buffer the camera cannot refill: a V4L2 camera streams through 4 buffers, so holding
/// more than one would starve the camera; a deeper ring pays off only with display-latency compensation, which the
/// renderers here do not report. Frames are released as newer ones arrive, and all at once by `removeAll()` (the
/// session stops, the output leaves it, zero shutter lag is turned off).
///
/// Threading: thread safe (a mutex; the capture thread's `keep` takes it once per frame, only while enabled).
final class RecentFrameRing: Sendable {
    private struct Slot {
        weak var connection: AVCaptureConnection?
        var frames: [UncheckedSendable<CMSampleBuffer>]
    }

    private let capacity: Int
    private let slots = Mutex<[ObjectIdentifier: Slot]>([:])
    private let enabled = Atomic<Bool>(false)

    init(capacity: Int = 1) {
        precondition(capacity >= 1, "RecentFrameRing: capacity must be at least 1")
        self.capacity = capacity
    }

    /// Whether frames are kept; turning it off releases every frame held.
    var isEnabled: Bool {
        get { enabled.load(ordering: .acquiring) }
        set {
            enabled.store(newValue, ordering: .releasing)
            if !newValue { removeAll() }
        }
    }

    /// Notes a frame of `connection` (on the capture thread): the oldest one held goes.
    func keep(_ frame: CMSampleBuffer, of connection: AVCaptureConnection) {
        guard enabled.load(ordering: .acquiring) else { return }
        let released = slots.withLock { slots -> [UncheckedSendable<CMSampleBuffer>] in
            var slot = slots[ObjectIdentifier(connection)] ?? Slot(connection: connection, frames: [])
            slot.connection = connection
            slot.frames.append(UncheckedSendable(frame))
            let excess = max(0, slot.frames.count - capacity)
            let dropped = Array(slot.frames.prefix(excess))
            slot.frames.removeFirst(excess)
            slots[ObjectIdentifier(connection)] = slot
            return dropped
        }
        // Released outside the lock: the last reference to a device buffer hands it back to the camera.
        _ = released
    }

    /// The newest frame of `connection`, or nil when none has come since the ring was enabled or emptied.
    func newest(of connection: AVCaptureConnection) -> CMSampleBuffer? {
        slots.withLock { slots in
            guard let slot = slots[ObjectIdentifier(connection)], slot.connection === connection else { return nil }
            return slot.frames.last?.value
        }
    }

    /// Releases every frame held.
    func removeAll() {
        let released = slots.withLock { slots in
            defer { slots.removeAll() }
            return slots
        }
        _ = released
    }
}
