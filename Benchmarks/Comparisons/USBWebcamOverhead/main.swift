// The framework's overhead on a real UVC camera (issue 22): CPU per frame of MJPEG 1280x720 captured from
// uvcvideo into a session (capture, decode, hand-off to a video data output's delegate), against the decode of the
// same frames in a tight loop, measured in the same run. Run inside the test VM with the USB webcam emulator
// plugged in (`make bench-usb-webcam` does all of it); on a machine with a real MJPEG webcam, give its name.
//
//   USBWebcamOverhead [camera name part] [seconds]
//
// Phases, each timed with CLOCK_PROCESS_CPUTIME_ID (every thread of this process; the emulator and the kernel's
// USB/IP threads are other processes and are not counted):
//   tap      the camera alone into a no-op handler on its capture thread (CaptureDeviceTap): dequeue, wrap, requeue
//   session  the same camera into AVCaptureSession → AVCaptureVideoDataOutput (NV12 full range) → a no-op delegate
//   decode   frames collected from the camera, decoded again and again by the session's decoder (TurboJPEG), alone
// Overhead = session CPU per captured frame ÷ decode CPU per frame − 1: what capturing and handing off add to the
// decode the frames need anyway.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import VMComparisonSupport

// Printed at the end of each phase; stdout is flushed when the program exits.
let arguments = Array(CommandLine.arguments.dropFirst())
let namePart = arguments.first ?? "OpenAV Test Webcam"
let seconds = Double(arguments.dropFirst().first ?? "10") ?? 10

// The camera, once discovery lists it (the emulator may still be enumerating).
let camera = waitForCamera("no camera named '\(namePart)'") { $0.localizedName.contains(namePart) }
guard
    let mjpeg = camera.formats.first(where: {
        $0.formatDescription.mediaSubType.rawValue == kCMVideoCodecType_JPEG
            && $0.formatDescription.dimensions.width == 1280 && $0.formatDescription.dimensions.height == 720
    })
else { fail("\(camera.localizedName) has no MJPEG 1280x720 format") }
let rate = mjpeg.videoSupportedFrameRateRanges.map(\.maxFrameRate).max() ?? 30
try camera.lockForConfiguration()
camera.activeFormat = mjpeg
camera.activeVideoMinFrameDuration = CMTime(value: 1, timescale: Int32(rate))
camera.activeVideoMaxFrameDuration = CMTime(value: 1, timescale: Int32(rate))
camera.unlockForConfiguration()
print("\(camera.localizedName): MJPEG 1280x720 at \(Int(rate)) fps, \(seconds) s per phase")

// 1. The camera alone; the first frames are kept for the decode phase.
let kept = Mutex<[CMSampleBuffer]>([])
let tapFrames = Atomic<Int>(0)
let tap = CaptureDeviceTap(device: camera) { event in
    guard let sample = event.sample, let data = sample.dataBuffer else { return }
    tapFrames.add(1, ordering: .relaxed)
    kept.withLock { frames in
        guard frames.count < 30 else { return }
        // A copy: the camera's buffer goes back to it at once.
        let copy = data.withUnsafeBytes { CMBlockBuffer(copying: $0) }
        if let own = try? CMSampleBuffer(
            dataBuffer: copy, formatDescription: sample.formatDescription, numSamples: 1,
            sampleTimings: (try? sample.sampleTimingInfos()) ?? [], sampleSizes: [data.dataLength])
        {
            frames.append(own)
        }
    }
}
try tap.start()
usleep(1_000_000)  // Warm-up: the camera's first frames, enumeration settling.
var cpu = processCPU()
var frames = tapFrames.load(ordering: .relaxed)
usleep(UInt32(seconds * 1e6))
let tapCPU = processCPU() - cpu
let tapCount = tapFrames.load(ordering: .relaxed) - frames
tap.stop()

// 2. The session.
final class Delegate: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    let count = Atomic<Int>(0)
    func captureOutput(_ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        count.add(1, ordering: .relaxed)
    }
}
let session = AVCaptureSession()
session.beginConfiguration()
session.sessionPreset = .inputPriority
session.addInput(try AVCaptureDeviceInput(device: camera))
let output = AVCaptureVideoDataOutput()
output.videoSettings = [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarFullRange]
let delegate = Delegate()
output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "frames"))
session.addOutput(output)
session.commitConfiguration()
session.startRunning()
usleep(1_000_000)
let before = output.deliveryStatistics
cpu = processCPU()
usleep(UInt32(seconds * 1e6))
let sessionCPU = processCPU() - cpu
let after = output.deliveryStatistics
session.stopRunning()
let captured = (after.delivered - before.delivered) + (after.droppedLate - before.droppedLate)
let lost = (after.droppedOutOfBuffers - before.droppedOutOfBuffers) + (after.droppedDiscontinuity - before.droppedDiscontinuity)

// 3. The same decode alone, over the camera's own frames.
let samples = kept.withLock { $0 }
guard !samples.isEmpty else { fail("the tap kept no frame") }
let decoder = CompressedFrameDecoder()
let decodes = max(300, captured)
cpu = processCPU()
for n in 0..<decodes {
    let frames = decoder.decode(samples[n % samples.count])
    precondition(frames.count == 1, "a camera frame did not decode")
}
let decodeCPU = processCPU() - cpu

func microseconds(_ seconds: Double, _ count: Int) -> String {
    String(format: "%.0f µs", seconds / Double(max(count, 1)) * 1e6)
}
let perSessionFrame = sessionCPU / Double(max(captured, 1))
let perDecode = decodeCPU / Double(decodes)
print("camera alone (tap):          \(microseconds(tapCPU, tapCount)) per frame, \(tapCount) frames")
print("session → data output:       \(microseconds(sessionCPU, captured)) per captured frame, \(captured) frames (\(after.droppedLate - before.droppedLate) late, \(lost) lost at the camera)")
print("decode alone, same frames:   \(microseconds(decodeCPU, decodes)) per frame, \(decodes) decodes of \(samples.count) frames")
print(String(format: "framework overhead: %+.1f %% over the decode (budget: +10 %%)", (perSessionFrame / perDecode - 1) * 100))
