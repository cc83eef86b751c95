// The graph's MJPEG decode (issue 7, "Performance": 1920x1080 in ≤ 8 ms a frame): TurboJPEG, the session's path,
// against FFmpeg's mjpeg decoder, in the same run, both through `CompressedFrameDecoder` (the session's decode
// stage: decode into a pool buffer of full-range NV12, wrap in a sample buffer).
//
// Input: one frame of the virtual back camera's scene at 1920x1080 compressed as a camera's MJPEG (4:2:0, quality
// 0.75, about 150 kB). Baseline, in the same process: copying that frame's NV12 planes into a buffer of their own
// (what the cheapest possible "decoder" would cost), so each decoder's figure reads as a number of frame copies.
//
// Run: `swift package --allow-writing-to-package-directory benchmark --target DecodeBenchmarks` in Benchmarks/.

import Benchmark
import Foundation
import OpenAVCapture
import OpenAVCaptureTesting

let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal], warmupIterations: 5, maxDuration: .seconds(5),
        maxIterations: 400)
    // The budget, on the path sessions take: 8 ms a frame at the 90th percentile (wall clock, one core).
    let budgeted = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal], warmupIterations: 5, maxDuration: .seconds(5),
        maxIterations: 400, thresholds: [.wallClock: .init(absolute: [.p90: 8_000_000])])

    let source = VirtualFrameSource(width: 1920, height: 1080)
    var created: CVPixelBuffer?
    CVPixelBufferCreate(nil, 1920, 1080, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &created)
    guard let frame = created else { fatalError("cannot make a 1920x1080 NV12 buffer") }
    source.render(frameIndex: 37, into: frame)
    let jpeg: CMSampleBuffer
    do {
        jpeg = try CompressedFrameDecoder.mjpegSample(of: frame, at: CMTime(value: 37, timescale: 30))
    } catch {
        fatalError("cannot compress the frame: \(error)")
    }

    Benchmark("NV12 1920x1080 frame copy (baseline)", configuration: configuration) { benchmark in
        var copy: CVPixelBuffer?
        CVPixelBufferCreate(nil, 1920, 1080, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &copy)
        guard let copy else { return }
        for _ in benchmark.scaledIterations {
            frame.withLockedPlanes(.readOnly) { from in
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

    for (name, path) in [("TurboJPEG", CompressedFrameDecoder.MJPEGDecoder.turboJPEG), ("FFmpeg mjpeg", .ffmpeg)] {
        let decoder = CompressedFrameDecoder(mjpeg: path)
        Benchmark(
            "MJPEG 1920x1080 decode to NV12, \(name)", configuration: path == .turboJPEG ? budgeted : configuration
        ) { benchmark in
            for _ in benchmark.scaledIterations {
                let frames = decoder.decode(jpeg)
                precondition(frames.count == 1 && frames[0].imageBuffer != nil, "\(name) did not decode the frame")
                blackHole(frames)
            }
        }
    }
}
