// Stills from a test's point of view: a photo delegate that records Apple's callbacks in order, and a blocking
// still-image capture.

import Foundation
import OpenAVCapture
import Synchronization

/// Records every photo delegate callback, in order, and lets a test wait for the end of a capture.
public final class PhotoRecorder: NSObject, AVCapturePhotoCaptureDelegate, @unchecked Sendable {
    public enum Event: Equatable, Sendable {
        case willBegin(Int64)
        case willCapture(Int64)
        case didCapture(Int64)
        case didFinishProcessing(Int64, failed: Bool)
        case didFinishCapture(Int64, failed: Bool)
    }

    private let state = Mutex<(events: [Event], photos: [AVCapturePhoto], errors: [any Error])>(([], [], []))
    private let finished = DispatchSemaphore(value: 0)

    public override init() { super.init() }

    public var events: [Event] { state.withLock { $0.events } }
    public var photos: [AVCapturePhoto] { state.withLock { $0.photos } }
    public var errors: [any Error] { state.withLock { $0.errors } }

    /// Waits for `didFinishCaptureFor`; false when `timeout` passes first.
    public func waitForFinish(timeout: TimeInterval = 20) -> Bool {
        finished.wait(timeout: .now() + timeout) == .success
    }

    public func photoOutput(
        _ output: AVCapturePhotoOutput, willBeginCaptureFor resolvedSettings: AVCaptureResolvedPhotoSettings
    ) {
        state.withLock { $0.events.append(.willBegin(resolvedSettings.uniqueID)) }
    }

    public func photoOutput(
        _ output: AVCapturePhotoOutput, willCapturePhotoFor resolvedSettings: AVCaptureResolvedPhotoSettings
    ) {
        state.withLock { $0.events.append(.willCapture(resolvedSettings.uniqueID)) }
    }

    public func photoOutput(
        _ output: AVCapturePhotoOutput, didCapturePhotoFor resolvedSettings: AVCaptureResolvedPhotoSettings
    ) {
        state.withLock { $0.events.append(.didCapture(resolvedSettings.uniqueID)) }
    }

    public func photoOutput(
        _ output: AVCapturePhotoOutput, didFinishProcessingPhoto photo: AVCapturePhoto, error: (any Error)?
    ) {
        state.withLock { state in
            state.events.append(.didFinishProcessing(photo.resolvedSettings.uniqueID, failed: error != nil))
            if let error { state.errors.append(error) } else { state.photos.append(photo) }
        }
    }

    public func photoOutput(
        _ output: AVCapturePhotoOutput, didFinishCaptureFor resolvedSettings: AVCaptureResolvedPhotoSettings,
        error: (any Error)?
    ) {
        state.withLock { $0.events.append(.didFinishCapture(resolvedSettings.uniqueID, failed: error != nil)) }
        finished.signal()
    }
}

/// Takes one photo and waits for it; nil (with the recorder's errors) when it failed or timed out.
public func takePhoto(
    _ output: AVCapturePhotoOutput, _ settings: AVCapturePhotoSettings
) -> (AVCapturePhoto?, PhotoRecorder) {
    let recorder = PhotoRecorder()
    output.capturePhoto(with: settings, delegate: recorder)
    guard recorder.waitForFinish() else { return (nil, recorder) }
    return (recorder.photos.first, recorder)
}

/// The result of `captureStillImageAsynchronously`, waited for.
public func captureStill(
    _ output: AVCaptureStillImageOutput, from connection: AVCaptureConnection, timeout: TimeInterval = 20
)
    -> (sample: CMSampleBuffer?, error: (any Error)?)
{
    let result = Mutex<(CMSampleBuffer?, (any Error)?)?>(nil)
    let done = DispatchSemaphore(value: 0)
    output.captureStillImageAsynchronously(from: connection) { sample, error in
        let box = UncheckedBox((sample, error))
        result.withLock { $0 = box.value }
        done.signal()
    }
    guard done.wait(timeout: .now() + timeout) == .success else { return (nil, StillTimeout()) }
    return result.withLock { $0! }
}

/// A still that did not arrive in time.
public struct StillTimeout: Error {}

/// Carries a non-Sendable value across a closure boundary where the test knows it is safe.
private struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
