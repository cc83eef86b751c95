// Instructions per frame of the capture path, for `valgrind --tool=callgrind` (instruction counts do not depend
// on what else the machine is doing). Run each mode with two frame counts; (I(2N) − I(N)) / N is the cost of one
// frame, start-up excluded:
//
//   session N    free-running virtual camera (320x240) → AVCaptureVideoDataOutput → no-op delegate
//   camera N     the camera alone into a no-op handler on its capture thread (a CaptureDeviceTap): its own share
//   render N     the same frames rendered alone (VirtualFrameSource): the renderer's share
//   hop N        rendered, then handed to a serial DispatchQueue: the least any delegate hand-off costs
//
// Kernel time (the futex that wakes the delegate's thread) is not an instruction callgrind sees; it is what the
// wall-clock SessionBenchmarks add on top.
//
// valgrind 3.19 cannot read Swift 6.3's DWARF 5: strip the debug info first, keeping the symbols, and take the
// renderer's own share from callgrind_annotate --inclusive=yes (`VirtualFrameRenderer.renderNV12`):
//   strip --strip-debug -o /tmp/si .build/release/SessionInstructions
//   valgrind --tool=callgrind --callgrind-out-file=cg-150 /tmp/si session 150   (and 450)

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization

setenv("OPENAV_DEVICES", "virtual", 1)
let mode = CommandLine.arguments.dropFirst().first ?? "session"
let frames = Int(CommandLine.arguments.dropFirst(2).first ?? "200") ?? 200

final class Counter: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    let count = Atomic<Int>(0)
    let done = DispatchSemaphore(value: 0)
    let goal: Int
    init(goal: Int) { self.goal = goal }
    func captureOutput(_ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        if count.add(1, ordering: .relaxed).newValue == goal { done.signal() }
    }
}

switch mode {
case "render":
    let source = VirtualFrameSource(width: 320, height: 240)
    var made: CVPixelBuffer?
    CVPixelBufferCreate(nil, 320, 240, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &made)
    for index in 0..<frames { source.render(frameIndex: UInt32(index), into: made!) }
case "hop":
    let source = VirtualFrameSource(width: 320, height: 240)
    var pool: CVPixelBufferPool?
    CVPixelBufferPoolCreate(nil, nil, [
        kCVPixelBufferWidthKey: 320, kCVPixelBufferHeightKey: 240,
        kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
    ], &pool)
    let queue = DispatchQueue(label: "hop")
    let counter = Counter(goal: frames)
    for index in 0..<frames {
        var buffer: CVPixelBuffer?
        CVPixelBufferPoolCreatePixelBuffer(nil, pool!, &buffer)
        source.render(frameIndex: UInt32(index), into: buffer!)
        let box = UncheckedBox(buffer!)
        queue.async {
            withExtendedLifetime(box) {}
            if counter.count.add(1, ordering: .relaxed).newValue == frames { counter.done.signal() }
        }
    }
    counter.done.wait()
case "camera":
    // The camera alone at the session's format, into a handler on its capture thread: its own cost per frame.
    let device = AVCaptureDevice.default(for: .video)!
    device.virtualCamera!.clockMode = .freeRunning
    let session = AVCaptureSession()
    session.sessionPreset = .qvga320x240
    session.addInput(try AVCaptureDeviceInput(device: device))  // sets the camera's format; never started
    let counter = Counter(goal: frames)
    let tap = CaptureDeviceTap(device: device) { event in
        if case .sample = event, counter.count.add(1, ordering: .relaxed).newValue == frames { counter.done.signal() }
    }
    try tap.start()
    counter.done.wait()
    tap.stop()
default:
    let device = AVCaptureDevice.default(for: .video)!
    device.virtualCamera!.clockMode = .freeRunning
    let session = AVCaptureSession()
    session.sessionPreset = .qvga320x240
    session.addInput(try AVCaptureDeviceInput(device: device))
    let output = AVCaptureVideoDataOutput()
    output.alwaysDiscardsLateVideoFrames = false
    let counter = Counter(goal: frames)
    output.setSampleBufferDelegate(counter, queue: DispatchQueue(label: "delegate"))
    session.addOutput(output)
    session.startRunning()
    counter.done.wait()
    session.stopRunning()
    print("dropped: \(output.deliveryStatistics)")
}

final class UncheckedBox: @unchecked Sendable {
    let value: CVPixelBuffer
    init(_ value: CVPixelBuffer) { self.value = value }
}
