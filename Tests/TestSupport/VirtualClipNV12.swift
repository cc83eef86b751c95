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

/// The main frequency of a file's first audio track, from the median distance between zero crossings of its
/// channels mixed to one as ffmpeg decodes them (`from` seconds on, for `seconds`): the tone's pitch, which a few
/// dropped periods under load (a phase jump each) do not move.
public func dominantFrequency(of url: URL, from start: Double = 0.5, seconds: Double = 1) throws -> Double {
    let result = try MediaTool.ffmpeg.run([
        "-nostdin", "-v", "error", "-ss", String(start), "-t", String(seconds), "-i", url.path, "-map", "0:a:0",
        "-ac", "1", "-f", "f32le", "-acodec", "pcm_f32le", "-ar", "48000", "-",
    ])
    guard result.status == 0 else { throw MediaToolFailure(description: "ffmpeg: \(result.error)") }
    let samples = result.output.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    guard samples.count > 4800 else { throw MediaToolFailure(description: "only \(samples.count) samples decoded") }
    let crossings = (1..<samples.count).filter { (samples[$0 - 1] < 0) != (samples[$0] < 0) }
    let halfPeriods = zip(crossings, crossings.dropFirst()).map { $1 - $0 }.sorted()
    guard !halfPeriods.isEmpty else { throw MediaToolFailure(description: "no tone: the sound never crosses zero") }
    // The mean of the half periods near the median: whole samples are too coarse by themselves (24 at 1 kHz, 25 at
    // 960 Hz), and the few short or long ones around a phase jump are left out.
    let median = Double(halfPeriods[halfPeriods.count / 2])
    let near = halfPeriods.map(Double.init).filter { $0 >= median * 0.8 && $0 <= median * 1.2 }
    return 48_000 / (2 * near.reduce(0, +) / Double(near.count))
}
