// Benchmarks of screen capture (issue 17): AVCaptureScreenInput on an Xvfb server of the benchmark's own, 1920x1080 at
// depth 24, frames into a session with a BGRA video data output (no conversion, no encoding).
//
// What it shows:
// - CPU per frame at 1080p30 "before encoding": the process's CPU time per delivered frame (the capture thread's
//   XShmGetImage request and wait, the cursor, the session's routing and the data output's hand-off). The budget is
//   3 ms; read it against the baseline measured in the same run, one memcpy of a 1080p BGRA frame (what a copying
//   driver would pay at least). The X server's own copy into the shared segment is the server's CPU, not ours; the
//   benchmark prints it once (Xvfb's CPU per frame, from /proc) so the whole cost is visible.
// - The idle-screen cost with removesDuplicateFrames: CPU time per second of a still screen (30 frame times of
//   Damage checks and pointer queries, no grabs), as a share of one core; the budget is 5 %.
//
// Needs /usr/bin/Xvfb (Debian's xvfb; `make deps` installs it); without it every benchmark here says so and does
// nothing.

import Benchmark
import Foundation
import OpenAVCapture
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Xvfb on a display number of its own choosing, for the benchmarks' life; DISPLAY points at it.
final class BenchmarkXServer: Sendable {
    let displayName: String
    let pid: Int32

    static let shared: BenchmarkXServer? = {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/Xvfb") else {
            print("ScreenBenchmarks: /usr/bin/Xvfb not installed (apt-get install xvfb); nothing measured")
            return nil
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/Xvfb")
        process.arguments = ["-displayfd", "1", "-screen", "0", "1920x1080x24", "-nolisten", "tcp", "-noreset"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        var data = Data()
        while !data.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return nil }
            data.append(chunk)
        }
        let number = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        setenv("DISPLAY", ":" + number, 1)
        // Killed at exit: a benchmark process ends without running deinitializers.
        let pid = process.processIdentifier
        atexit_pid.store(pid, ordering: .relaxed)
        atexit { kill(atexit_pid.load(ordering: .relaxed), SIGKILL) }
        return BenchmarkXServer(displayName: ":" + number, pid: pid)
    }()

    private init(displayName: String, pid: Int32) {
        self.displayName = displayName
        self.pid = pid
    }

    /// The server's CPU time so far, in seconds (utime + stime from /proc/PID/stat).
    var cpuSeconds: Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14 and stime 15 (1-based in proc(5)), so 11 and 12 here.
        let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

let atexit_pid = Atomic<Int32>(0)

/// This process's CPU time (every thread), in nanoseconds: finer than the harness's cpuTotal, which moves in 10 ms
/// scheduler ticks here and so reads 0 or 10 000 µs for one frame.
func processCPUNanoseconds() -> Int {
    var now = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
    return now.tv_sec * 1_000_000_000 + now.tv_nsec
}

/// Custom metrics: what the budgets are stated in.
let cpuPerFrame = BenchmarkMetric.custom("CPU per frame, this process (µs)", useScalingFactor: false)
let serverCPUPerFrame = BenchmarkMetric.custom("CPU per frame, Xvfb (µs, 10 ms ticks)", useScalingFactor: false)
let idleShare = BenchmarkMetric.custom("CPU share of one core, idle (‰)", useScalingFactor: false)
let memcpyPerFrame = BenchmarkMetric.custom("CPU per memcpy (µs)", useScalingFactor: false)

/// Counts delivered frames and lets the benchmark wait for the next one.
final class FrameWaiter: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    let arrived = DispatchSemaphore(value: 0)

    func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        blackHole(sampleBuffer.imageBuffer)
        arrived.signal()
    }
}

/// A running session: the main display at 30 fps into a BGRA data output.
struct ScreenSession: @unchecked Sendable {
    let session: AVCaptureSession
    let input: AVCaptureScreenInput
    let waiter: FrameWaiter

    init(removesDuplicateFrames: Bool) throws {
        guard let input = AVCaptureScreenInput(displayID: CGMainDisplayID()) else {
            throw AVError(.screenCaptureFailed, userInfo: [NSLocalizedDescriptionKey: "no display"])
        }
        input.minFrameDuration = CMTime(value: 1, timescale: 30)
        input.removesDuplicateFrames = removesDuplicateFrames
        let output = AVCaptureVideoDataOutput()
        output.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA]
        let waiter = FrameWaiter()
        output.setSampleBufferDelegate(waiter, queue: DispatchQueue(label: "screen-benchmark"))
        let session = AVCaptureSession()
        session.addInput(input)
        session.addOutput(output)
        session.startRunning()
        self.session = session
        self.input = input
        self.waiter = waiter
    }
}

let benchmarks: @Sendable () -> Void = {
    let metrics: [BenchmarkMetric] = [.wallClock, .throughput]
    let frameBytes = 1920 * 1080 * 4
    /// Frames per sample: one second at 30 fps, so a sample's CPU time is well above the clock's resolution.
    let framesPerSample = 30

    Benchmark(
        "memcpy 1920x1080 BGRA frame (baseline)",
        configuration: .init(metrics: metrics + [memcpyPerFrame], maxDuration: .seconds(3))
    ) { (benchmark: Benchmark, buffers: (UnsafeMutableRawPointer, UnsafeMutableRawPointer)) in
        let before = processCPUNanoseconds()
        for _ in 0..<framesPerSample {
            memcpy(buffers.1, buffers.0, frameBytes)
            blackHole(buffers.1)
        }
        benchmark.measurement(memcpyPerFrame, (processCPUNanoseconds() - before) / framesPerSample / 1000)
    } setup: {
        let source = UnsafeMutableRawPointer.allocate(byteCount: frameBytes, alignment: 64)
        memset(source, 0x80, frameBytes)
        return (source, UnsafeMutableRawPointer.allocate(byteCount: frameBytes, alignment: 64))
    }

    // One iteration is 30 delivered frames (a second): the custom metrics are CPU per frame, ours and the server's.
    Benchmark(
        "Screen 1920x1080 @ 30 fps frame into a session (BGRA data output)",
        configuration: .init(
            metrics: metrics + [cpuPerFrame, serverCPUPerFrame], warmupIterations: 1, maxDuration: .seconds(20),
            maxIterations: 12)
    ) { (benchmark: Benchmark, screen: ScreenSession?) in
        guard let screen, let server = BenchmarkXServer.shared else { return }
        let serverBefore = server.cpuSeconds
        let before = processCPUNanoseconds()
        for _ in 0..<framesPerSample { screen.waiter.arrived.wait() }
        benchmark.measurement(cpuPerFrame, (processCPUNanoseconds() - before) / framesPerSample / 1000)
        benchmark.measurement(
            serverCPUPerFrame, Int((server.cpuSeconds - serverBefore) * 1_000_000) / framesPerSample)
    } setup: {
        guard BenchmarkXServer.shared != nil else { return nil }
        return try ScreenSession(removesDuplicateFrames: false)
    }

    // One iteration is one second of a still screen: its CPU time over that second is the share of a core.
    Benchmark(
        "Idle screen 1920x1080, removesDuplicateFrames, one second",
        configuration: .init(
            metrics: metrics + [idleShare], warmupIterations: 1, maxDuration: .seconds(10), maxIterations: 5)
    ) { (benchmark: Benchmark, screen: ScreenSession?) in
        guard let screen else { return }
        let before = processCPUNanoseconds()
        let start = DispatchTime.now().uptimeNanoseconds
        usleep(1_000_000)
        blackHole(screen)
        let wall = Int(DispatchTime.now().uptimeNanoseconds - start)
        benchmark.measurement(idleShare, (processCPUNanoseconds() - before) * 1000 / wall)
    } setup: {
        guard BenchmarkXServer.shared != nil else { return nil }
        let screen = try ScreenSession(removesDuplicateFrames: true)
        // The first frame is delivered; after it a still screen delivers nothing.
        screen.waiter.arrived.wait()
        return screen
    }
}
