// Benchmarks of the foundation types: CMTime arithmetic and pixel buffer pool recycling.
//
// Figures are reported as ratios against a baseline measured in the same run (`*.baseline` benchmarks), since
// the machines are shared and noisy. The pool checkout must allocate nothing after warm-up: its threshold on
// mallocs is 0, and `swift package benchmark` fails when it is exceeded.

import Benchmark
import OpenCoreMedia
import OpenCoreVideo

let benchmarks: @Sendable () -> Void = {
    let timeMetrics: [BenchmarkMetric] = [.wallClock, .cpuTotal, .mallocCountTotal, .throughput]
    let zeroAllocations = Benchmark.Configuration(
        metrics: timeMetrics, scalingFactor: .kilo,
        thresholds: [.mallocCountTotal: .init(absolute: [.p100: 0])])

    // Baseline: adding two Int64s the compiler cannot fold, for the CMTime ratios.
    Benchmark("Int64 add (baseline)", configuration: zeroAllocations) { benchmark in
        var total: Int64 = 0
        for i in benchmark.scaledIterations { total &+= blackHoleValue(Int64(i)) &+ 1001 }
        blackHole(total)
    }

    Benchmark("CMTime add, same timescale", configuration: zeroAllocations) { benchmark in
        let step = blackHoleValue(CMTime(value: 1001, timescale: 30000))
        var time = CMTime.zero
        for _ in benchmark.scaledIterations { time = CMTimeAdd(time, step) }
        blackHole(time)
    }

    Benchmark("CMTime add, different timescales", configuration: zeroAllocations) { benchmark in
        let video = blackHoleValue(CMTime(value: 1001, timescale: 30000))
        let audio = blackHoleValue(CMTime(value: 1024, timescale: 48000))
        var time = CMTime(value: 0, timescale: 30000)
        for _ in benchmark.scaledIterations {
            time = CMTimeAdd(time, video)
            blackHole(CMTimeAdd(time, audio))
        }
        blackHole(time)
    }

    Benchmark("CMTime compare, different timescales", configuration: zeroAllocations) { benchmark in
        let a = blackHoleValue(CMTime(value: 1001, timescale: 30000))
        let b = blackHoleValue(CMTime(value: 1601, timescale: 48000))
        var earlier = 0
        for i in benchmark.scaledIterations {
            // The operands change every iteration so the comparison cannot be hoisted out of the loop.
            let shifted = CMTime(value: b.value &+ Int64(i & 7), timescale: b.timescale)
            earlier &+= Int(CMTimeCompare(a, shifted))
        }
        blackHole(earlier)
    }

    Benchmark("CMTime convert scale (90 kHz → 48 kHz, rounded)", configuration: zeroAllocations) { benchmark in
        let time = blackHoleValue(CMTime(value: 123_456_789, timescale: 90000))
        for i in benchmark.scaledIterations {
            let varying = CMTime(value: time.value &+ Int64(i & 63), timescale: time.timescale)
            blackHole(CMTimeConvertScale(varying, timescale: 48000, method: .roundHalfAwayFromZero))
        }
    }

    // Pool checkout and return: the steady state of capture. Warm-up (the first checkouts) allocates the
    // buffers; after it, a checkout must allocate nothing.
    let attributes: CFDictionary = [
        kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
        kCVPixelBufferWidthKey: 1920, kCVPixelBufferHeightKey: 1080,
    ]
    // Control for the malloc counter: creating a buffer outside a pool allocates, so the counter must be > 0.
    Benchmark(
        "CVPixelBufferCreate 1920x1080 NV12, no pool (control)",
        configuration: .init(metrics: timeMetrics, scalingFactor: .kilo)
    ) { benchmark in
        for _ in benchmark.scaledIterations {
            var buffer: CVPixelBuffer?
            _ = CVPixelBufferCreate(nil, 1920, 1080, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &buffer)
            blackHole(buffer)
        }
    }

    Benchmark(
        "CVPixelBufferPool checkout+return 1920x1080 NV12",
        configuration: .init(
            metrics: timeMetrics, warmupIterations: 10, scalingFactor: .kilo,
            thresholds: [.mallocCountTotal: .init(absolute: [.p100: 0])])
    ) { (benchmark: Benchmark, pool: CVPixelBufferPool) in
        for _ in benchmark.scaledIterations {
            var buffer: CVPixelBuffer?
            let status = CVPixelBufferPoolCreatePixelBuffer(nil, pool, &buffer)
            precondition(status == kCVReturnSuccess, "pool checkout failed: \(status)")
            blackHole(buffer)
        }
    } setup: {
        var pool: CVPixelBufferPool?
        let status = CVPixelBufferPoolCreate(nil, nil, attributes, &pool)
        precondition(status == kCVReturnSuccess, "pool creation failed: \(status)")
        return pool!
    }
}

/// Hides a value from the optimizer so loops cannot be folded into constants.
@inline(never)
func blackHoleValue<T>(_ value: T) -> T { value }
