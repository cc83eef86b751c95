import Foundation
import OpenAVCapture
import OpenAVCaptureTesting

/// A raw NV12 clip of the virtual camera's frames (frame index codes, flash frames at whole seconds), frames one
/// after another with rows exactly `width` bytes long, for programs that play files as cameras (GStreamer's
/// `rawvideoparse ! pipewiresink`): what they publish can be read back frame by frame with `VirtualFrameReader`.
public func writeVirtualClipNV12(to url: URL, width: Int, height: Int, frameRate: Int32, frames: Int) throws {
    let source = VirtualFrameSource(width: width, height: height, frameRate: frameRate)
    var made: CVPixelBuffer?
    CVPixelBufferCreate(nil, width, height, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &made)
    guard let picture = made else { throw MediaToolFailure(description: "no \(width)x\(height) NV12 buffer") }
    var data = Data(capacity: frames * width * height * 3 / 2)
    for index in 0..<frames {
        source.render(frameIndex: UInt32(index), into: picture)
        CVPixelBufferLockBaseAddress(picture, .readOnly)
        for (plane, rows) in [(0, height), (1, height / 2)] {
            let base = CVPixelBufferGetBaseAddressOfPlane(picture, plane)!.assumingMemoryBound(to: UInt8.self)
            let bytesPerRow = CVPixelBufferGetBytesPerRowOfPlane(picture, plane)
            for row in 0..<rows { data.append(base + row * bytesPerRow, count: width) }
        }
        CVPixelBufferUnlockBaseAddress(picture, .readOnly)
    }
    try data.write(to: url)
}

/// The main frequency of a file's first audio track, from the zero crossings of its first channel as ffmpeg
/// decodes it (`from` seconds on, for `seconds`).
public func dominantFrequency(of url: URL, from start: Double = 0.5, seconds: Double = 1) throws -> Double {
    let result = try MediaTool.ffmpeg.run([
        "-nostdin", "-v", "error", "-ss", String(start), "-t", String(seconds), "-i", url.path, "-map", "0:a:0",
        "-ac", "1", "-f", "f32le", "-acodec", "pcm_f32le", "-ar", "48000", "-",
    ])
    guard result.status == 0 else { throw MediaToolFailure(description: "ffmpeg: \(result.error)") }
    let samples = result.output.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    guard samples.count > 4800 else { throw MediaToolFailure(description: "only \(samples.count) samples decoded") }
    var crossings = 0
    for index in 1..<samples.count where (samples[index - 1] < 0) != (samples[index] < 0) { crossings += 1 }
    return Double(crossings) / 2 / (Double(samples.count) / 48_000)
}
