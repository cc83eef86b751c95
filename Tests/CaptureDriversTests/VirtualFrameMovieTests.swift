import CaptureDrivers
import Foundation
import Testing

/// The system's ffmpeg, or nil when it is not installed (the tests below then skip, saying so).
private let ffmpegPath: String? = {
    let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/usr/local/bin").split(separator: ":")
    return directories.map { "\($0)/ffmpeg" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}()

/// Round trips through a tool nobody here wrote: frames rendered, encoded by libx264 at crf 23 (4:2:0), decoded
/// back to luma by ffmpeg, then read with the same readers tests use on movies.
@Suite("Virtual camera frames through H.264", .enabled(if: ffmpegPath != nil, "ffmpeg is not installed; skipping"))
struct VirtualFrameMovieTests {
    /// Runs ffmpeg with `arguments`; throws with its stderr when it fails.
    private func ffmpeg(_ arguments: [String], in directory: URL) throws {
        let log = directory.appendingPathComponent("ffmpeg-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let logHandle = try FileHandle(forWritingTo: log)
        defer { try? logHandle.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ffmpegPath!)
        process.arguments = ["-nostdin", "-v", "error", "-y"] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = logHandle
        try process.run()
        process.waitUntilExit()
        let message = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(process.terminationStatus == 0, "ffmpeg \(arguments.joined(separator: " ")) failed: \(message)")
        if process.terminationStatus != 0 { throw FFmpegFailed(message: message) }
    }

    private struct FFmpegFailed: Error {
        let message: String
    }

    /// Renders frames `indices` of a 30 fps stream at `width` × `height` to raw NV12, encodes them with libx264
    /// at crf 23 (scaled to `scaledTo` if given), decodes to `-pix_fmt gray`, and returns the decoded planes.
    private func roundTrip(
        width: Int,
        height: Int,
        indices: Range<UInt32>,
        scaledTo: (width: Int, height: Int)? = nil
    ) throws -> [TestPlane] {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("virtual-frames-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let renderer = VirtualFrameRenderer(width: width, height: height)
        var raw = [UInt8](repeating: 0, count: width * height * 3 / 2 * indices.count)
        raw.withUnsafeMutableBufferPointer { buffer in
            for (n, index) in indices.enumerated() {
                let luma = buffer.baseAddress! + n * width * height * 3 / 2
                renderer.renderNV12(
                    VirtualFrameParameters(index: index, frameDuration: 1, timescale: 30),
                    luma: luma,
                    lumaStride: width,
                    chroma: luma + width * height,
                    chromaStride: width
                )
            }
        }
        let input = directory.appendingPathComponent("frames.nv12")
        try Data(raw).write(to: input)
        let movie = directory.appendingPathComponent("frames.mp4")
        var encode = ["-f", "rawvideo", "-pix_fmt", "nv12", "-s", "\(width)x\(height)", "-r", "30", "-i", input.path]
        if let scaledTo { encode += ["-vf", "scale=\(scaledTo.width):\(scaledTo.height)"] }
        encode += ["-c:v", "libx264", "-crf", "23", "-pix_fmt", "yuv420p", movie.path]
        try ffmpeg(encode, in: directory)
        let decoded = directory.appendingPathComponent("frames.gray")
        try ffmpeg(["-i", movie.path, "-f", "rawvideo", "-pix_fmt", "gray", decoded.path], in: directory)

        let bytes = [UInt8](try Data(contentsOf: decoded))
        let outWidth = scaledTo?.width ?? width
        let outHeight = scaledTo?.height ?? height
        let frameSize = outWidth * outHeight
        #expect(bytes.count == frameSize * indices.count, "ffmpeg decoded \(bytes.count / frameSize) frames")
        return (0..<bytes.count / frameSize).map { n in
            TestPlane(width: outWidth, height: outHeight, pixels: Array(bytes[n * frameSize..<(n + 1) * frameSize]))
        }
    }

    private func isFlash(_ plane: TestPlane) -> Bool {
        VirtualLumaPlane.with(plane.pixels, width: plane.width, height: plane.height) {
            VirtualPictureReader.isFlashFrame($0)
        }
    }

    @Test("3 s of 640x480 at 30 fps through H.264: every index and every flash reads back")
    func h264RoundTrip() throws {
        let planes = try roundTrip(width: 640, height: 480, indices: 0..<90)
        var misread = [Int]()
        for (n, plane) in planes.enumerated() {
            let shouldFlash = n % 30 == 0
            #expect(isFlash(plane) == shouldFlash, "frame \(n) flash")
            if plane.frameIndex != (shouldFlash ? nil : UInt32(n)) { misread.append(n) }
        }
        #expect(misread.isEmpty, "frames whose index misread: \(misread)")
        #expect(planes.count == 90)
    }

    @Test("1920x1080 scaled to 320x240 in the encoder: indices and the flash still read")
    func scaledH264RoundTrip() throws {
        let planes = try roundTrip(width: 1920, height: 1080, indices: 26..<36, scaledTo: (320, 240))
        for (n, plane) in planes.enumerated() {
            let index = 26 + n
            #expect(isFlash(plane) == (index == 30), "frame \(index) flash")
            #expect(plane.frameIndex == (index == 30 ? nil : UInt32(index)), "frame \(index)")
        }
    }
}
