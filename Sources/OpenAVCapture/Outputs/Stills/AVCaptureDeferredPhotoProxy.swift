import Foundation
import Synchronization

/// A photo delivered before its processing is done: `photoOutput(_:didFinishCapturingDeferredPhotoProxy:error:)`
/// gets it as soon as the frame is taken, with a quick preview in `previewPixelBuffer` (BGRA, a quarter of the
/// photo's width and height); the output goes on encoding the photo (JPEG or HEIC, with its EXIF) on a queue of its
/// own, and `fileDataRepresentation()` returns that file, waiting for the encoding when it is not done yet.
///
/// Apple's proxy is handed to PhotoKit, which finishes the processing later; Linux has no photo library, so here the
/// proxy itself gives the finished file. `metadata` is empty: the file's EXIF carries it.
///
/// Threading: thread safe; `fileDataRepresentation()` may block, so call it off the delegate's queue when the caller
/// must not wait.
open class AVCaptureDeferredPhotoProxy: AVCapturePhoto, @unchecked Sendable {
    private let pending: PendingStill

    init(
        timestamp: CMTime, preview: CVPixelBuffer?, pending: PendingStill,
        resolvedSettings: AVCaptureResolvedPhotoSettings
    ) {
        self.pending = pending
        super.init(proxyAt: timestamp, preview: preview, resolvedSettings: resolvedSettings)
    }

    /// The finished photo's file, once its encoding is done (waits for it); nil when the encoding failed.
    public override func fileDataRepresentation() -> Data? {
        guard case .success(let still) = pending.result() else { return nil }
        return still.fileData
    }

    /// Ours: whether the finished file is ready, so `fileDataRepresentation()` will not wait.
    public var isProcessingFinished: Bool { pending.isFulfilled }
}

/// A still whose encoding finishes later: fulfilled once, awaited by any number of threads.
///
/// Threading: thread safe.
final class PendingStill: Sendable {
    private let stored = Mutex<Result<StillImage, AVError>?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    /// Sets the outcome (once) and wakes the waiters.
    func fulfil(_ result: Result<StillImage, AVError>) {
        stored.withLock { $0 = result }
        ready.signal()
    }

    var isFulfilled: Bool { stored.withLock { $0 != nil } }

    /// The outcome, waiting for it.
    func result() -> Result<StillImage, AVError> {
        if let done = stored.withLock({ $0 }) { return done }
        ready.wait()
        // Pass the wake-up on to the next waiter.
        ready.signal()
        return stored.withLock { $0! }
    }
}
