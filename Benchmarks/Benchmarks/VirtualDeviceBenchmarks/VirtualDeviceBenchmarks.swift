// Benchmarks of the virtual devices: rendering a camera frame and a microphone period, through
// OpenAVCaptureTesting's public sources (the same renderer and synthesizer the devices run on their capture
// threads).
//
// Budgets (issue 3): a 1920x1080 NV12 frame in ≤ 2 ms on one core and a 10 ms 48 kHz period in ≤ 20 µs, both
// allocating nothing after warm-up (thresholds: mallocs p100 = 0, checked by `swift package benchmark`). The
// baseline, `memset` of a 1920x1080 NV12 frame's bytes, is measured in the same run so the figures read as ratios
// on a shared, noisy machine.

import Benchmark
import OpenAVCaptureTesting

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

let benchmarks: @Sendable () -> Void = {
    let metrics: [BenchmarkMetric] = [.wallClock, .cpuTotal, .mallocCountTotal, .throughput]
    // 1000 frames per sample: the harness's own few mallocs per sample (see the control below) then round to 0
    // per frame, while a single malloc per frame would still show as 1.
    let zeroAllocations = Benchmark.Configuration(
        metrics: metrics, warmupIterations: 3, scalingFactor: .kilo, maxDuration: .seconds(5),
        thresholds: [.mallocCountTotal: .init(absolute: [.p100: 0])])

    // Control for the malloc counter: an empty iteration, one per sample, shows the harness's own mallocs.
    Benchmark("Empty iteration (harness control)", configuration: .init(metrics: metrics, maxDuration: .seconds(1))) {
        benchmark in
        for _ in benchmark.scaledIterations { blackHole(0) }
    }

    /// A 1920x1080 NV12 buffer, allocated once per benchmark.
    func frameBuffer() -> CVPixelBuffer {
        var buffer: CVPixelBuffer?
        let status = CVPixelBufferCreate(nil, 1920, 1080, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &buffer)
        precondition(status == kCVReturnSuccess, "cannot allocate a 1920x1080 NV12 buffer: \(status)")
        return buffer!
    }

    // Baseline: writing every byte of a 1920x1080 NV12 frame once (both planes, padding included).
    Benchmark("memset 1920x1080 NV12 frame (baseline)", configuration: zeroAllocations) {
        (benchmark: Benchmark, buffer: CVPixelBuffer) in
        var value: Int32 = 0
        for _ in benchmark.scaledIterations {
            value = (value &+ 1) & 0xFF
            buffer.withLockedPlanes { planes in
                for plane in planes { memset(plane.baseAddress, value, plane.bytesPerRow * plane.height) }
            }
            blackHole(buffer)
        }
    } setup: {
        frameBuffer()
    }

    // Frame n of a 30 fps stream: every 30th is the (cheaper) flash frame, as on the device.
    Benchmark("Virtual camera frame 1920x1080 NV12", configuration: zeroAllocations) {
        (benchmark: Benchmark, state: (source: VirtualFrameSource, buffer: CVPixelBuffer)) in
        var frameIndex: UInt32 = 1
        for _ in benchmark.scaledIterations {
            state.source.render(frameIndex: frameIndex, into: state.buffer)
            frameIndex &+= 1
            blackHole(state.buffer)
        }
    } setup: {
        let source = VirtualFrameSource(width: 1920, height: 1080)
        let buffer = frameBuffer()
        source.render(frameIndex: 1, into: buffer)  // builds the row templates
        return (source, buffer)
    }

    // One 10 ms period (480 frames) of 48 kHz stereo Float32, as the microphone delivers it.
    Benchmark(
        "Virtual microphone period 10 ms 48 kHz stereo Float32",
        configuration: .init(
            metrics: metrics, warmupIterations: 10, scalingFactor: .kilo, maxDuration: .seconds(3),
            thresholds: [.mallocCountTotal: .init(absolute: [.p100: 0])])
    ) { (benchmark: Benchmark, state: (source: VirtualSoundSource, buffer: UnsafeMutableBufferPointer<Float>)) in
        var start: Int64 = 0
        for _ in benchmark.scaledIterations {
            state.source.render(startingAt: start, frameCount: 480, into: state.buffer)
            start &+= 480
            blackHole(state.buffer[0])
        }
    } setup: {
        (
            VirtualSoundSource(sampleRate: 48_000, channelCount: 2),
            UnsafeMutableBufferPointer<Float>.allocate(capacity: 960)
        )
    }
}
