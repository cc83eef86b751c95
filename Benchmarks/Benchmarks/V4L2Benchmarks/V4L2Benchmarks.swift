// Benchmarks of the V4L2 camera driver on a simulated kernel (OpenAVCaptureTesting's SimulatedV4L2Camera: the real
// funnel, mmap streaming and wrapping; the kernel's side is a few bytes written per frame).
//
// What it shows (issue 7): no copy between a V4L2 buffer and a delegate that takes the native format. Each frame's
// pixel buffer is checked to point into one of the kernel's mapped buffers (a precondition in the loop), the
// frame path allocates nothing (thresholds: mallocs p100 = 0 per frame), and its time is read against the
// baseline measured in the same run: one memcpy of the frame, what a driver that copies would pay at least.

import Benchmark
import OpenAVCaptureTesting

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

let benchmarks: @Sendable () -> Void = {
    let metrics: [BenchmarkMetric] = [.wallClock, .cpuTotal, .mallocCountTotal, .throughput]
    // 1000 frames per sample: the harness's own few mallocs per sample round to 0 per frame; one per frame shows.
    let zeroAllocations = Benchmark.Configuration(
        metrics: metrics, warmupIterations: 3, scalingFactor: .kilo, maxDuration: .seconds(5),
        thresholds: [.mallocCountTotal: .init(absolute: [.p100: 0])])
    let width = 640
    let height = 480
    let frameBytes = width * height * 2

    Benchmark("Empty iteration (harness control)", configuration: .init(metrics: metrics, maxDuration: .seconds(1))) {
        benchmark in
        for _ in benchmark.scaledIterations { blackHole(0) }
    }

    // Baseline: copying one 640x480 YUYV frame.
    Benchmark("memcpy 640x480 YUYV frame (baseline)", configuration: zeroAllocations) {
        (benchmark: Benchmark, buffers: (UnsafeMutableRawPointer, UnsafeMutableRawPointer)) in
        for _ in benchmark.scaledIterations {
            memcpy(buffers.1, buffers.0, frameBytes)
            blackHole(buffers.1)
        }
    } setup: {
        let source = UnsafeMutableRawPointer.allocate(byteCount: frameBytes, alignment: 64)
        memset(source, 0x80, frameBytes)
        return (source, UnsafeMutableRawPointer.allocate(byteCount: frameBytes, alignment: 64))
    }

    // One frame through the driver: poll, DQBUF, wrap (no copy), hand to the handler, QBUF when released.
    Benchmark("V4L2 frame 640x480 YUYV to a native-format handler (simulated kernel)", configuration: zeroAllocations) {
        (benchmark: Benchmark, state: (camera: SimulatedV4L2Camera, buffers: KernelBuffers)) in
        try state.camera.capture(frames: benchmark.scaledIterations.count) { [buffers = state.buffers] sample in
            guard let image = sample.imageBuffer else { preconditionFailure("a raw frame has an image buffer") }
            CVPixelBufferLockBaseAddress(image, .readOnly)
            let address = CVPixelBufferGetBaseAddress(image).map { UInt(bitPattern: $0) }
            CVPixelBufferUnlockBaseAddress(image, .readOnly)
            precondition(address.map(buffers.contains) == true, "the frame is not the kernel's buffer: a copy")
            blackHole(image)
        }
    } setup: {
        let camera = try SimulatedV4L2Camera(width: width, height: height)
        try camera.capture(frames: 1) { _ in }  // starts streaming and maps the buffers
        return (camera, KernelBuffers(camera.kernelBufferAddresses.map { UInt(bitPattern: $0) }))
    }
}

/// The kernel's buffer addresses, checked without allocating.
struct KernelBuffers: Sendable {
    let addresses: [UInt]
    init(_ addresses: [UInt]) { self.addresses = addresses }
    func contains(_ address: UInt) -> Bool { addresses.contains(address) }
}
