// Benchmarks of still capture on the virtual back camera, through the public API only (issue 6, "Performance"):
// request → photo delivered, at 1920x1080 (budget ≤ 30 ms) and 12 MP (4032x3024, the `.photo` preset; budget
// ≤ 150 ms), as JPEG, HEIC, and uncompressed NV12 (the baseline).
//
// What the figures mean:
// - "Request → delivered (ns)": host time from `capturePhoto(with:delegate:)` to `didFinishProcessingPhoto`. The
//   camera runs in real time at 30 fps, as an app sees it, so this includes the wait for the next frame (0–33 ms,
//   16.7 ms on average; the request lands at a random phase of the frame grid).
// - "Frame wait (ns)": request → `didCapturePhotoFor`, the part that waits for the frame.
// - "Processing (ns)": `didCapturePhotoFor` → `didFinishProcessingPhoto`: encoding, EXIF, the sample buffer.
// - The baseline, run in the same process: the same capture delivering uncompressed NV12 (the frame copied into a
//   buffer of its own, no encoding). JPEG processing / NV12 processing is the encoder's cost in units of one copy
//   of the frame; request → delivered of JPEG − NV12 is what encoding adds to what an app waits.
//
// - Zero shutter lag (issue 37): the cases above run with it off, so they keep measuring the wait for the next
//   frame; "NV12 1920x1080, zero shutter lag on" against "NV12 1920x1080 (baseline)" compares the two. "Frame after press (ns)" is how long
//   after the request the photo's frame was presented (its timestamp, host clock), 0 for a frame presented before
//   it; "Frame age at press (ns)" is how long before the request it was presented, 0 for a later frame. With zero
//   shutter lag the photo is the frame current at the press (after = 0, age 0–33 ms); without, the next (after
//   0–33 ms, age 0).
//
// Run: `OPENAV_DEVICES=virtual swift package --allow-writing-to-package-directory benchmark --target StillBenchmarks`
// (the benchmarks set `OPENAV_DEVICES=virtual` themselves before discovery).

import Benchmark
import Dispatch
import Foundation
import OpenAVCapture
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

let benchmarks: @Sendable () -> Void = {
    setenv("OPENAV_DEVICES", "virtual", 1)
    let configuration = Benchmark.Configuration(
        metrics: [requestToDelivered, frameWait, processing, frameAfterPress, frameAgeAtPress], warmupIterations: 3,
        maxDuration: .seconds(8), maxIterations: 60)

    let nv12: [String: Any] = [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange]
    let jpeg: [String: Any] = [AVVideoCodecKey: AVVideoCodecType.jpeg]
    let cases: [(name: String, preset: AVCaptureSession.Preset, format: [String: Any], zeroShutterLag: Bool)] = [
        ("NV12 1920x1080, zero shutter lag on", .hd1920x1080, nv12, true),
        ("NV12 1920x1080 (baseline)", .hd1920x1080, nv12, false),
        ("JPEG 1920x1080", .hd1920x1080, jpeg, false),
        ("NV12 4032x3024 (baseline)", .photo, nv12, false),
        ("JPEG 4032x3024", .photo, jpeg, false),
        ("HEIC 1920x1080", .hd1920x1080, [AVVideoCodecKey: AVVideoCodecType.hevc], false),
    ]
    for entry in cases {
        let rig = Holder<PhotoRig>()
        Benchmark("Photo \(entry.name): request → delivered", configuration: configuration) {
            (benchmark: Benchmark, rig: PhotoRig) in
            usleep(UInt32.random(in: 0..<33_334))  // a random phase against the 30 fps frame grid
            guard let timing = rig.take(format: entry.format) else {
                benchmark.error("no photo within 10 s")
                return
            }
            benchmark.measurement(requestToDelivered, timing.delivered)
            benchmark.measurement(frameWait, timing.captured)
            benchmark.measurement(processing, timing.delivered - timing.captured)
            benchmark.measurement(frameAfterPress, max(0, timing.frame))
            benchmark.measurement(frameAgeAtPress, max(0, -timing.frame))
        } setup: {
            let made = PhotoRig(preset: entry.preset)
            made.output.isZeroShutterLagEnabled = entry.zeroShutterLag
            made.session.startRunning()
            precondition(made.session.isRunning, "the session did not start")
            return rig.hold(made)
        } teardown: {
            rig.close()
        }
    }
}

let requestToDelivered = BenchmarkMetric.custom("Request → delivered (ns)", useScalingFactor: false)
let frameWait = BenchmarkMetric.custom("Frame wait (ns)", useScalingFactor: false)
let processing = BenchmarkMetric.custom("Processing (ns)", useScalingFactor: false)
let frameAfterPress = BenchmarkMetric.custom("Frame after press (ns)", useScalingFactor: false)
let frameAgeAtPress = BenchmarkMetric.custom("Frame age at press (ns)", useScalingFactor: false)

/// A running session of the virtual back camera with a photo output.
final class PhotoRig: @unchecked Sendable {
    let session = AVCaptureSession()
    let output = AVCapturePhotoOutput()

    init(preset: AVCaptureSession.Preset) {
        let camera = AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back)!
        session.beginConfiguration()
        session.sessionPreset = preset
        session.addInput(try! AVCaptureDeviceInput(device: camera))
        session.addOutput(output)
        session.commitConfiguration()
    }

    /// Takes one photo; nanoseconds from the request to `didCapturePhotoFor`, to `didFinishProcessingPhoto`, and to
    /// the photo's frame's presentation time (negative: before the request).
    func take(format: [String: Any]) -> (captured: Int, delivered: Int, frame: Int)? {
        let timer = PhotoTimer()
        output.capturePhoto(with: AVCapturePhotoSettings(format: format), delegate: timer)
        guard timer.done.wait(timeout: .now() + 10) == .success else { return nil }
        return timer.marks.withLock { marks in
            (Int(marks.captured - timer.start), Int(marks.delivered - timer.start), Int(marks.frame - timer.start))
        }
    }
}

/// Notes host times at the delegate's callbacks.
final class PhotoTimer: NSObject, AVCapturePhotoCaptureDelegate, @unchecked Sendable {
    let start = hostNanoseconds()
    let marks = Mutex<(captured: Int64, delivered: Int64, frame: Int64)>((0, 0, 0))
    let done = DispatchSemaphore(value: 0)

    func photoOutput(
        _ output: AVCapturePhotoOutput, didCapturePhotoFor resolvedSettings: AVCaptureResolvedPhotoSettings
    ) {
        let now = hostNanoseconds()
        marks.withLock { $0.captured = now }
    }

    func photoOutput(
        _ output: AVCapturePhotoOutput, didFinishProcessingPhoto photo: AVCapturePhoto, error: (any Error)?
    ) {
        let now = hostNanoseconds()
        let frame = CMTimeConvertScale(photo.timestamp, timescale: 1_000_000_000, method: .roundHalfAwayFromZero).value
        marks.withLock {
            $0.delivered = now
            $0.frame = frame
        }
        precondition(
            error == nil && (photo.fileDataRepresentation() != nil || photo.pixelBuffer != nil),
            "no photo: \(String(describing: error))")
        done.signal()
    }
}

/// Keeps a rig alive between setup and teardown and stops it at the end.
final class Holder<Value: AnyObject & Sendable>: @unchecked Sendable {
    private var value: Value?
    func hold(_ value: Value) -> Value {
        self.value = value
        return value
    }
    func close() {
        (value as? PhotoRig)?.session.stopRunning()
        value = nil
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds: the host clock every buffer is stamped on.
func hostNanoseconds() -> Int64 {
    CMTimeConvertScale(CMClockGetTime(CMClock.hostTimeClock), timescale: 1_000_000_000, method: .roundHalfAwayFromZero)
        .value
}
