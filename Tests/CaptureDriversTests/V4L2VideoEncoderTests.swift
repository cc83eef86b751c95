import CaptureDrivers
import Foundation
import MediaCodecs
import OpenAVCapture
import OpenCoreMedia
import OpenCoreVideo
import Testing

/// The writer's V4L2 encoder (`V4L2VideoEncoder`) on the simulated H.264 VPU (`SimulatedV4L2Encoder`): the parameter
/// sets known before the first packet, times in the track's time base, the GOP, the drain, pictures converted to
/// what the device takes, and a device failing mid-stream replaced by libx264 without a picture lost (ffprobe counts
/// the replacement's frames). VicodecKernelTests drive the same encoder against the kernel's vicodec.
@Suite struct V4L2VideoEncoderTests {
    let kernel = SimulatedV4L2Encoder()

    private func configuration(
        pixelFormat: OSType = kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
    ) -> VideoEncoder.Configuration {
        var configuration = VideoEncoder.Configuration(
            codec: .h264, width: 320, height: 240, frameRate: 30, pixelFormat: pixelFormat)
        configuration.maxKeyFrameInterval = 3
        configuration.averageBitRate = 2_000_000
        return configuration
    }

    private func makeEncoder(
        _ configuration: VideoEncoder.Configuration, system: SystemCalls? = nil,
        replacement: @escaping V4L2VideoEncoder.Replacement = { reason throws(MediaCodecsError) in
            throw MediaCodecsError(.encoderNotFound, while: "replacing the device", message: reason)
        }
    ) throws -> V4L2VideoEncoder {
        try V4L2VideoEncoder(
            path: kernel.path, codedFormat: .h264, offeredPictureFormats: [.nv12, .yuv420],
            configuration: configuration, system: system ?? kernel.system, replacement: replacement)
    }

    @Test func parameterSetsAreKnownBeforeTheFirstPacketAndPacketsKeepTheirOrder() throws {
        let encoder = try makeEncoder(configuration())
        // The device coded one grey picture at opening, for its parameter sets; nothing of it reaches the track.
        #expect(encoder.extradata == SimulatedV4L2Encoder.parameterSets)
        #expect(kernel.pictures.first?.first == 128)
        #expect(encoder.appliedControls["gop_size"] == 3 && encoder.appliedControls["bitrate"] == 2_000_000)
        for index in 0..<7 {
            try encoder.send(
                flatPicture(luma: UInt8(10 + index)), presentationTime: CMTime(value: Int64(index), timescale: 30),
                forcingKeyFrame: false)
        }
        try encoder.finish()
        let packets = try receiveAll(encoder)
        #expect(packets.count == 7)
        #expect(packets.map(\.presentationTime) == (0..<7).map { CMTime(value: Int64($0) * 3000, timescale: 90000) })
        #expect(packets.map(\.decodeTime) == packets.map(\.presentationTime))
        #expect(packets.allSatisfy { $0.duration == CMTime(value: 3000, timescale: 90000) })
        #expect(packets.map(\.isKeyFrame) == [true, false, false, true, false, false, true])
        // The restarted device gives its parameter sets again with the first picture; each packet ends with the
        // first luma byte the device read: the pictures in order.
        let bytes = packets.map(Self.bytes)
        #expect(bytes.first?.starts(with: SimulatedV4L2Encoder.parameterSets) == true)
        #expect(bytes.map(\.last) == (0..<7).map { UInt8(10 + $0) })
        #expect(encoder.failure == nil && encoder.replacement == nil)
    }

    @Test func picturesTheDeviceDoesNotTakeAreConvertedFirst() throws {
        let encoder = try makeEncoder(configuration(pixelFormat: kCVPixelFormatType_32BGRA))
        #expect(encoder.convertsPictures && encoder.devicePictureFormat == .nv12)
        var created: CVPixelBuffer?
        #expect(CVPixelBufferCreate(nil, 320, 240, kCVPixelFormatType_32BGRA, nil, &created) == kCVReturnSuccess)
        let white = try #require(created)
        white.withLockedPlanes([]) { _ = $0[0].bytes.initializeMemory(as: UInt8.self, repeating: 255) }
        try encoder.send(white, presentationTime: .zero, forcingKeyFrame: false)
        try encoder.finish()
        #expect(try receiveAll(encoder).count == 1)
        // White in video range is luma 235 and chroma 128, whatever the matrix.
        let read = try #require(kernel.pictures.last)
        #expect(read.first.map { abs(Int($0) - 235) <= 1 } == true, "luma \(read.first ?? 0)")
        #expect(abs(Int(read[kernel.bytesPerLine * 240]) - 128) <= 1)
    }

    @Test func aDeviceFailingMidStreamIsReplacedAndNoPictureIsLost() throws {
        let failing = FailingKernel(wrapping: kernel, failing: "QBUF")
        var reasons: [String] = []
        let encoder = try makeEncoder(configuration(), system: failing.system) { reason throws(MediaCodecsError) in
            reasons.append(reason)
            var software = VideoEncoder.Configuration(codec: .h264, width: 320, height: 240, frameRate: 30)
            software.maxKeyFrameInterval = 3
            return try VideoEncoder(software)
        }
        // Each picture is two or three QBUFs on this device (its OUTPUT buffer, then each CAPTURE buffer given
        // back): the seventh fails, in the third picture.
        failing.arm(failingCall: 7)
        for index in 0..<8 {
            try encoder.send(
                flatPicture(luma: UInt8(10 + index)), presentationTime: CMTime(value: Int64(index), timescale: 30),
                forcingKeyFrame: false)
        }
        try encoder.finish()
        let packets = try receiveAll(encoder)
        let replacement = try #require(encoder.replacement)
        #expect(reasons.count == 1 && reasons.first?.contains("QBUF") == true, "\(reasons)")
        #expect(encoder.failure == reasons.first)
        // Every picture once, in order: the device's packets, then libx264's from a key frame that carries its
        // own parameter sets.
        #expect(packets.map(\.presentationTime) == (0..<8).map { CMTime(value: Int64($0) * 3000, timescale: 90000) })
        // The device's packets are its six bytes (after the parameter sets, on the first).
        let fromDevice = packets.prefix {
            [6, 6 + SimulatedV4L2Encoder.parameterSets.count].contains(Self.bytes($0).count)
        }
        let software = Array(packets.dropFirst(fromDevice.count))
        #expect(!fromDevice.isEmpty && !software.isEmpty && fromDevice.count + software.count == 8)
        #expect(software.first?.isKeyFrame == true)
        #expect(software.first.map(Self.bytes)?.starts(with: replacement.extradata) == true)
        // ffprobe reads the replacement's packets alone as an H.264 stream of as many frames.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("replacement-\(UUID()).h264")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(software.flatMap(Self.bytes)).write(to: file)
        let probe = try #require(
            spawn(
                "/usr/bin/ffprobe",
                [
                    "-v", "error", "-count_frames", "-select_streams", "v", "-show_entries",
                    "stream=codec_name,nb_read_frames,width,height", "-of", "csv=p=0", file.path,
                ]))
        #expect(
            probe.output.trimmingCharacters(in: .whitespacesAndNewlines) == "h264,320,240,\(software.count)",
            "\(probe)")
    }

    @Test func withRequireADeviceFailingMidStreamFailsTheEncoder() throws {
        let failing = FailingKernel(wrapping: kernel, failing: "QBUF")
        let encoder = try makeEncoder(configuration(), system: failing.system)
        failing.arm(failingCall: 1)
        #expect(throws: MediaCodecsError.self) {
            try encoder.send(try flatPicture(luma: 10), presentationTime: .zero, forcingKeyFrame: false)
        }
        #expect(encoder.failure?.contains("QBUF") == true)
    }

    @Test func aDeviceThatCannotCodeItsFirstPictureIsRefusedAtOpening() throws {
        // Opening codes a picture for the parameter sets: a device that opens but fails there is refused while the
        // writer can still choose another encoder, before the file has anything.
        let failing = FailingKernel(wrapping: kernel, failing: "QBUF")
        failing.arm(failingCall: 5)  // After the CAPTURE buffers, at the first picture.
        do {
            _ = try makeEncoder(configuration(), system: failing.system)
            Issue.record("a device that fails its first picture was taken")
        } catch let error as MediaCodecsError {
            #expect(error.kind == .unsupportedConfiguration && error.message.contains("QBUF"), "\(error)")
        }
        #expect(failing.failures == 1)
    }

    @Test func aDeviceThatTakesNeitherNV12NorYU12IsRefusedAtOpening() throws {
        #expect(throws: MediaCodecsError.self) {
            _ = try V4L2VideoEncoder(
                path: kernel.path, codedFormat: .h264, offeredPictureFormats: [.yuyv], configuration: configuration(),
                system: kernel.system,
                replacement: { reason throws(MediaCodecsError) in
                    throw MediaCodecsError(.encoderNotFound, while: "replacing", message: reason)
                })
        }
    }

    @Test(arguments: [false, true])
    func aMovieFromTheDevicePlaysEveryFrame(deviceFailsMidStream: Bool) throws {
        // The simulated device codes real H.264 (libx264 behind it, key frames where the device's GOP says), so the
        // movie the muxer writes from this encoder's packets and avcC can be played back by ffmpeg.
        let coder = try X264PictureCoder(width: 320, height: 240)
        let kernel = SimulatedV4L2Encoder(parameterSets: coder.parameterSets) {
            coder.code($0, bytesPerLine: $1, key: $2)
        }
        let failing = FailingKernel(wrapping: kernel, failing: "QBUF")
        var configuration = configuration()
        configuration.maxKeyFrameInterval = 10
        let encoder = try V4L2VideoEncoder(
            path: kernel.path, codedFormat: .h264, offeredPictureFormats: [.nv12], configuration: configuration,
            system: failing.system
        ) { _ throws(MediaCodecsError) in
            try VideoEncoder(VideoEncoder.Configuration(codec: .h264, width: 320, height: 240))
        }
        #expect(encoder.extradata == coder.parameterSets)
        if deviceFailsMidStream { failing.arm(failingCall: 31) }  // About the fifteenth picture.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("v4l2-\(UUID()).mov")
        defer { try? FileManager.default.removeItem(at: file) }
        try writeMovie(file, from: encoder, count: 40, picture: movingPicture)
        #expect((encoder.replacement != nil) == deviceFailsMidStream)
        let probe = try #require(
            spawn(
                "/usr/bin/ffprobe",
                [
                    "-v", "error", "-count_frames", "-select_streams", "v", "-show_entries",
                    "stream=codec_name,width,height,nb_read_frames", "-of", "csv=p=0", file.path,
                ]))
        #expect(probe.output.trimmingCharacters(in: .whitespacesAndNewlines) == "h264,320,240,40", "\(probe)")
        // ffmpeg decodes every frame without a complaint (standard error kept this time).
        let decode = try #require(
            spawn("/bin/sh", ["-c", "exec ffmpeg -v error -i \"$0\" -f null - 2>&1", file.path]))
        #expect(decode.status == 0 && decode.output.isEmpty, "\(decode.output)")
    }

    // MARK: Helpers

    /// A picture whose bright bar moves with `index`, so every frame codes differently.
    private func movingPicture(_ index: Int) throws -> CVPixelBuffer {
        let buffer = try flatPicture(luma: 60)
        buffer.withLockedPlanes([]) { planes in
            for y in 0..<240 {
                let row = planes[0].row(y)
                for x in (index * 6)..<min(index * 6 + 24, 320) { row[x] = 200 }
            }
        }
        return buffer
    }

    private func receiveAll(_ encoder: V4L2VideoEncoder) throws -> [EncodedPacket] {
        var packets: [EncodedPacket] = []
        while true {
            switch try encoder.receivePacket() {
            case .packet(let packet): packets.append(packet)
            case .endOfStream: return packets
            case .needsInput:
                Issue.record("needsInput after finish")
                return packets
            }
        }
    }

    static func bytes(_ packet: EncodedPacket) -> [UInt8] {
        packet.data.withUnsafeBytes { Array($0.bindMemory(to: UInt8.self)) }
    }
}
