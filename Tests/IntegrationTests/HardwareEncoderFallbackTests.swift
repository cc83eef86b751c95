// AVVideoEncoderSpecificationKey: hardware refused, preferred with a device that is there but cannot start, and
// required where none works. This machine has no VA-API, NVENC or V4L2 H.264 encoder, so the hardware paths are
// met as they fail; the files are read back with ffprobe.

import Foundation
import OpenAVCapture
import OpenCoreMedia
import OpenCoreVideo
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Hardware encoder choice and fallback (AVVideoEncoderSpecificationKey)", .serialized)
struct HardwareEncoderFallbackTests {
    /// H.264 640x480 settings with `specification` as the encoder specification.
    private func settings(_ specification: [String: Any]) -> [String: Any] {
        [
            AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: 640, AVVideoHeightKey: 480,
            AVVideoEncoderSpecificationKey: specification,
        ]
    }

    /// Runs `body` with `OPENAV_VAAPI_DEVICE` pointing at `/dev/null`: a node that opens but is no VA-API device, so
    /// `av_hwdevice_ctx_create` fails as it does on a render node without a working driver.
    private func withFailingVAAPIDevice<Result>(_ body: () async throws -> Result) async rethrows -> Result {
        setenv("OPENAV_VAAPI_DEVICE", "/dev/null", 1)
        defer { unsetenv("OPENAV_VAAPI_DEVICE") }
        return try await body()
    }

    /// Writes 15 grey 640x480 NV12 pictures at 30 fps; the writer, which the caller checks.
    private func write(_ url: URL, settings: [String: Any]) async throws -> AVAssetWriter {
        let writer = try AVAssetWriter(outputURL: url, fileType: .mov)
        let input = AVAssetWriterInput(mediaType: .video, outputSettings: settings)
        let adaptor = AVAssetWriterInputPixelBufferAdaptor(
            assetWriterInput: input,
            sourcePixelBufferAttributes: [
                kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
                kCVPixelBufferWidthKey: 640, kCVPixelBufferHeightKey: 480,
            ])
        writer.add(input)
        guard writer.startWriting() else { return writer }
        writer.startSession(atSourceTime: .zero)
        for index in 0..<15 {
            try #require(await waitUntil(timeout: 20) { input.isReadyForMoreMediaData })
            let pool = try #require(adaptor.pixelBufferPool)
            var created: CVPixelBuffer?
            CVPixelBufferPoolCreatePixelBuffer(nil, pool, &created)
            let buffer = try #require(created)
            CVPixelBufferLockBaseAddress(buffer, [])
            for plane in 0..<CVPixelBufferGetPlaneCount(buffer) {
                let bytes =
                    CVPixelBufferGetBytesPerRowOfPlane(buffer, plane) * CVPixelBufferGetHeightOfPlane(buffer, plane)
                CVPixelBufferGetBaseAddressOfPlane(buffer, plane)?.initializeMemory(
                    as: UInt8.self, repeating: UInt8(60 + index * 8), count: bytes)
            }
            CVPixelBufferUnlockBaseAddress(buffer, [])
            try #require(adaptor.append(buffer, withPresentationTime: CMTime(value: Int64(index), timescale: 30)))
        }
        input.markAsFinished()
        await writer.finishWriting()
        return writer
    }

    /// ffprobe's codec and frame count of the file's video, and whether libx264 wrote it (its SEI names it).
    private func probe(_ url: URL) throws -> (codec: String?, frames: Int?, isX264: Bool) {
        let result = try MediaTool.ffprobe.run([
            "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
            "stream=codec_name,nb_read_frames",
            "-of", "default=noprint_wrappers=1", url.path,
        ])
        let fields = Dictionary(
            result.outputText.split(separator: "\n").compactMap { line -> (String, String)? in
                let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
                return parts.count == 2 ? (parts[0], parts[1]) : nil
            }, uniquingKeysWith: { first, _ in first })
        let bytes = try Data(contentsOf: url)
        return (
            fields["codec_name"], fields["nb_read_frames"].flatMap(Int.init), bytes.range(of: Data("x264".utf8)) != nil
        )
    }

    @Test("Enable = false: software, and nothing is tried or logged")
    func refusedHardwareEncodesInSoftware() async throws {
        guard MediaTool.available([.ffprobe], for: "HardwareEncoderFallbackTests.refused") else { return }
        let url = try scratchURL("refused.mov", suite: "hardware-encoder")
        let before = VideoEncoderSelection.loggedFallbacks.count
        let writer = try await withFailingVAAPIDevice {
            try await write(
                url, settings: settings([kVTVideoEncoderSpecification_EnableHardwareAcceleratedVideoEncoder: false]))
        }
        #expect(writer.status == .completed, "\(String(describing: writer.error))")
        #expect(VideoEncoderSelection.loggedFallbacks.count == before)
        let probed = try probe(url)
        #expect(probed.codec == "h264" && probed.frames == 15 && probed.isX264, "\(probed)")
    }

    @Test("Enable = true with a VA-API device that cannot start: libx264, one warning, every frame written")
    func preferredHardwareFallsBackWhenTheDeviceFails() async throws {
        guard MediaTool.available([.ffprobe], for: "HardwareEncoderFallbackTests.preferred") else { return }
        let url = try scratchURL("preferred.mov", suite: "hardware-encoder")
        let before = VideoEncoderSelection.loggedFallbacks
        let writer = try await withFailingVAAPIDevice {
            try await write(
                url, settings: settings([kVTVideoEncoderSpecification_EnableHardwareAcceleratedVideoEncoder: true]))
        }
        #expect(writer.status == .completed, "\(String(describing: writer.error))")
        let logged = Array(VideoEncoderSelection.loggedFallbacks.dropFirst(before.count))
        #expect(logged.count == 1, "\(logged)")
        #expect(logged.first?.contains("VA-API on /dev/null") == true, "\(logged)")
        #expect(logged.first?.hasSuffix("encoding with libx264") == true, "\(logged)")
        let probed = try probe(url)
        #expect(probed.codec == "h264" && probed.frames == 15 && probed.isX264, "\(probed)")
    }

    @Test("Require = true where no hardware encoder works: startWriting fails with AVError.encoderNotFound")
    func requiredHardwareFailsTheWriter() async throws {
        let url = try scratchURL("required.mov", suite: "hardware-encoder")
        let writer = try await withFailingVAAPIDevice {
            try await write(
                url,
                settings: settings([
                    kVTVideoEncoderSpecification_RequireHardwareAcceleratedVideoEncoder: true,
                    kVTVideoEncoderSpecification_EnableHardwareAcceleratedVideoEncoder: true,
                ]))
        }
        #expect(writer.status == .failed)
        let error = try #require(writer.error as? AVError)
        #expect(error.code == .encoderNotFound)
        #expect("\(error)".contains("VA-API on /dev/null"), "\(error)")
        let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
        #expect(underlying?.code == -12908)
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test("The movie file output: Enable falls back to libx264 and records; Require fails the recording")
    func movieFileOutputChoosesByTheSpecification() async throws {
        guard MediaTool.available([.ffprobe], for: "HardwareEncoderFallbackTests.movieFileOutput") else { return }
        try await withFailingVAAPIDevice {
            for require in [false, true] {
                let movie = AVCaptureMovieFileOutput()
                let session = try makeSession(preset: .vga640x480, devices: [VirtualDevices.back], outputs: [movie])
                let key =
                    require
                    ? kVTVideoEncoderSpecification_RequireHardwareAcceleratedVideoEncoder
                    : kVTVideoEncoderSpecification_EnableHardwareAcceleratedVideoEncoder
                let connection = try #require(movie.connection(with: .video))
                movie.setOutputSettings(
                    [AVVideoCodecKey: AVVideoCodecType.h264, AVVideoEncoderSpecificationKey: [key: true]],
                    for: connection)
                #expect(movie.outputSettings(for: connection)[AVVideoEncoderSpecificationKey] != nil)
                movie.maxRecordedDuration = CMTime(value: 1, timescale: 1)
                session.startRunning()
                let url = try scratchURL("movie-\(require ? "required" : "preferred").mov", suite: "hardware-encoder")
                let recording = MovieRecordingDelegate()
                movie.startRecording(to: url, recordingDelegate: recording)
                #expect(recording.waitForFinish(timeout: 60), "the movie did not finish")
                session.stopRunning()
                if require {
                    #expect(recording.avError?.code == .encoderNotFound, "\(String(describing: recording.error))")
                } else {
                    #expect(recording.avError?.code == .maximumDurationReached, "\(String(describing: recording.error))")
                    let probed = try probe(url)
                    #expect(probed.codec == "h264" && (probed.frames ?? 0) > 0 && probed.isX264, "\(probed)")
                }
            }
        }
    }
}
