// Code reading (issue 21, "Performance": 1920x1080 at 30 fps keeps real time on one core, ≤ 10 ms CPU per analysed
// frame with the default rectOfInterest), through `MachineReadableCodeReader`, the step `AVCaptureMetadataOutput`
// runs on each analysed frame: lock the frame, read its luma in place with zxing-cpp, make the objects.
//
// Input: one 1920x1080 NV12 frame of the virtual back camera's scene with a QR code shown (a fifth of the frame
// high), and the same frame without one (what most frames of a scanner look like). Baseline, in the same process:
// copying the frame's NV12 planes, so each figure reads as a number of frame copies.
//
// Run: `swift package --allow-writing-to-package-directory benchmark --target CodeReadingBenchmarks` in Benchmarks/.

import Benchmark
import Foundation
import OpenAVCapture
import OpenAVCaptureTesting

let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal], warmupIterations: 5, maxDuration: .seconds(5),
        maxIterations: 400)
    // The budget: 10 ms of CPU a frame at the 90th percentile, one core.
    let budgeted = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal], warmupIterations: 5, maxDuration: .seconds(5),
        maxIterations: 400, thresholds: [.cpuTotal: .init(absolute: [.p90: 10_000_000])])

    func frame(showingCode: Bool) -> CVPixelBuffer {
        let source = VirtualFrameSource(width: 1920, height: 1080)
        if showingCode {
            source.showCode(
                "https://example.org/openavcapture", type: .qr, in: CGRect(x: 0.6, y: 0.3, width: 0.225, height: 0.4))
        }
        var created: CVPixelBuffer?
        CVPixelBufferCreate(nil, 1920, 1080, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &created)
        guard let frame = created else { fatalError("cannot make a 1920x1080 NV12 buffer") }
        source.render(frameIndex: 7, into: frame)
        return frame
    }
    let withCode = frame(showingCode: true)
    let withoutCode = frame(showingCode: false)

    Benchmark("NV12 1920x1080 frame copy (baseline)", configuration: configuration) { benchmark in
        var copy: CVPixelBuffer?
        CVPixelBufferCreate(nil, 1920, 1080, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &copy)
        guard let copy else { return }
        for _ in benchmark.scaledIterations {
            withCode.withLockedPlanes(.readOnly) { from in
                copy.withLockedPlanes { to in
                    for plane in 0..<2 {
                        to[plane].baseAddress.copyMemory(
                            from: from[plane].baseAddress, byteCount: from[plane].bytesPerRow * from[plane].height)
                    }
                }
            }
            blackHole(copy)
        }
    }

    let reader = MachineReadableCodeReader(types: [.qr])
    Benchmark("Read QR in 1920x1080 NV12, code present", configuration: budgeted) { benchmark in
        for _ in benchmark.scaledIterations {
            let codes = reader.read(withCode)
            precondition(codes.count == 1, "the code was not read")
            blackHole(codes)
        }
    }
    Benchmark("Read QR in 1920x1080 NV12, no code", configuration: budgeted) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(reader.read(withoutCode))
        }
    }
    // The passes as they were before they were chosen for the types and size (rotated and downscaled passes on
    // every frame): the before of the before/after ratio, measured in this run.
    let everyPass = MachineReadableCodeReader(types: [.qr], effort: .everyPass)
    Benchmark("Read QR in 1920x1080 NV12, code present, every pass (before)", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            let codes = everyPass.read(withCode)
            precondition(codes.count == 1, "the code was not read")
            blackHole(codes)
        }
    }
    Benchmark("Read QR in 1920x1080 NV12, no code, every pass (before)", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(everyPass.read(withoutCode))
        }
    }
    let everything = MachineReadableCodeReader(types: [
        .qr, .aztec, .dataMatrix, .pdf417, .ean8, .ean13, .upce, .code39, .code93, .code128, .interleaved2of5,
    ])
    Benchmark("Read every offered type in 1920x1080 NV12, QR present", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(everything.read(withCode))
        }
    }
}
