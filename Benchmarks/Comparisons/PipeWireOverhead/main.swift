// What PipeWire costs against raw V4L2 (issue 32): the same vivid frames, 1920x1080 NV12, captured by a session into
// a video data output, once straight from the V4L2 node (mmap) and once through PipeWire's V4L2 plugin (the daemon
// reads the node and hands each frame over). `make bench-pipewire` runs it inside the test VM: it starts a headless
// PipeWire session and runs this once per backend, alternating, several times (Scripts/pipewire-overhead.sh).
//
//   PipeWireOverhead raw|pipewire [seconds]
//
// Per run, over `seconds` after a one-second warm-up:
//   CPU per delivered frame of this process (CLOCK_PROCESS_CPUTIME_ID: every thread), and through PipeWire of the
//   daemon too (utime + stime from /proc): in the raw run this process does the V4L2 work the daemon does there.
//   Latency from a frame's presentation time (the host clock when it was captured) to its delegate call: p50, p99.
//   CPU and context switches by thread of this process (from /proc, in ticks of 10 ms): where the CPU goes.
// The last line is `RESULT key=value …` for the script.

import Foundation
import OpenAVCapture
import Synchronization
import VMComparisonSupport

let arguments = Array(CommandLine.arguments.dropFirst())
let backend = arguments.first ?? "raw"
let seconds = Double(arguments.dropFirst().first ?? "10") ?? 10
let prefix = backend == "pipewire" ? "pipewire:" : "v4l2:"

/// The PipeWire daemon's CPU seconds so far (user + system), or 0 when no daemon runs.
func daemonCPU() -> Double {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    for pid in entries where Int(pid) != nil {
        guard let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8),
            comm.trimmingCharacters(in: .whitespacesAndNewlines) == "pipewire",
            let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { continue }
        // Fields after the command name: state is the first, utime the 12th, stime the 13th.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { continue }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
    return 0
}

// vivid, through the backend asked for (OPENAV_BACKEND says which the registry admits).
let camera = waitForCamera("no vivid camera whose uniqueID starts with \(prefix)") {
    $0.localizedName == "vivid" && $0.uniqueID.hasPrefix(prefix)
}
let nv12 = kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
let candidates = camera.formats.filter {
    $0.formatDescription.mediaSubType.rawValue == nv12 && $0.formatDescription.dimensions.width == 1920
        && $0.formatDescription.dimensions.height == 1080
}
guard let format = candidates.max(by: { a, b in
    (a.videoSupportedFrameRateRanges.map(\.maxFrameRate).max() ?? 0)
        < (b.videoSupportedFrameRateRanges.map(\.maxFrameRate).max() ?? 0)
})
else { fail("\(camera.uniqueID) has no NV12 1920x1080 format") }
let rate = min(30, format.videoSupportedFrameRateRanges.map(\.maxFrameRate).max() ?? 30)
try camera.lockForConfiguration()
camera.activeFormat = format
camera.activeVideoMinFrameDuration = CMTime(value: 1, timescale: Int32(rate))
camera.activeVideoMaxFrameDuration = CMTime(value: 1, timescale: Int32(rate))
camera.unlockForConfiguration()
print("\(camera.localizedName) [\(camera.uniqueID)]: NV12 1920x1080 at \(rate) fps, \(seconds) s")

final class Delegate: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    let latencies = Mutex<[Double]>([])
    let measuring = Atomic<Bool>(false)
    func captureOutput(_ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        let now = CMClockGetTime(CMClockGetHostTimeClock())
        guard measuring.load(ordering: .relaxed) else { return }
        let latency = (now - sampleBuffer.presentationTimeStamp).seconds
        latencies.withLock { $0.append(latency) }
    }
}
let session = AVCaptureSession()
session.beginConfiguration()
session.sessionPreset = .inputPriority
session.addInput(try AVCaptureDeviceInput(device: camera))
let output = AVCaptureVideoDataOutput()
output.videoSettings = [kCVPixelBufferPixelFormatTypeKey: nv12]
let delegate = Delegate()
output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "frames"))
session.addOutput(output)
session.commitConfiguration()
session.startRunning()
usleep(1_000_000)  // Warm-up: negotiation, the first buffers.
// This process's clock is read last before and first after the window, so reading /proc is not counted.
let daemonBefore = daemonCPU()
let threadsBefore = threadSamples()
let cpuBefore = processCPU()
delegate.measuring.store(true, ordering: .relaxed)
usleep(UInt32(seconds * 1e6))
delegate.measuring.store(false, ordering: .relaxed)
let cpu = processCPU() - cpuBefore
let threadsAfter = threadSamples()
let daemon = daemonCPU() - daemonBefore
session.stopRunning()

let latencies = delegate.latencies.withLock { $0 }.sorted()
guard !latencies.isEmpty else { fail("no frame reached the delegate") }
func percentile(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
let frames = latencies.count
let ours = cpu / Double(frames) * 1e6
let theirs = daemon / Double(frames) * 1e6
print(String(format: "this process: %.0f µs per frame; daemon: %.0f µs per frame; %d frames (%.1f fps)",
    ours, theirs, frames, Double(frames) / seconds))
for (name, after) in threadsAfter.sorted(by: { $0.key < $1.key }) {
    let before = threadsBefore[name] ?? ThreadSample(cpu: 0, switches: 0)
    let cpuMs = (after.cpu - before.cpu) * 1000
    let switches = after.switches - before.switches
    guard cpuMs > 0 || switches > 0 else { continue }
    print(String(format: "  thread %@: %.0f ms CPU, %d context switches (%.1f per frame)", name, cpuMs, switches,
        Double(switches) / Double(frames)))
}
print(String(format: "capture to delegate: p50 %.2f ms, p99 %.2f ms", percentile(0.5) * 1000, percentile(0.99) * 1000))
print(String(format: "RESULT backend=%@ frames=%d ours_us=%.1f daemon_us=%.1f total_us=%.1f p50_ms=%.3f p99_ms=%.3f",
    backend, frames, ours, theirs, ours + theirs, percentile(0.5) * 1000, percentile(0.99) * 1000))
