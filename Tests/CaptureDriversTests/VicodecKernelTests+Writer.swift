import CaptureDrivers
import Foundation
import MediaCodecs
import OpenAVCapture
import OpenCoreMedia
import OpenCoreVideo
import Testing

/// The writer's V4L2 encoder (`V4L2VideoEncoder`, what `VideoEncoderSelection` gives an H.264/HEVC track on a
/// machine with a V4L2 encoder) against vicodec, told to code FWHT: the same opening (a first picture coded and
/// drained, the device restarted), GOP, time base and drain; packets decoded back by vicodec's decoder through
/// `v4l2-ctl`, and after a device failure injected mid-stream, libx264's packets decoded by `ffmpeg`.
extension VicodecKernelTests {
    private static let width = 640
    private static let height = 480

    private func writersEncoder(
        keyFrameInterval: Int = 30, system: SystemCalls = .live,
        replacement: @escaping V4L2VideoEncoder.Replacement = { reason throws(MediaCodecsError) in
            throw MediaCodecsError(.encoderNotFound, while: "replacing vicodec", message: reason)
        }
    ) throws -> V4L2VideoEncoder {
        var configuration = VideoEncoder.Configuration(
            codec: .h264, width: Self.width, height: Self.height, frameRate: 30,
            pixelFormat: kCVPixelFormatType_420YpCbCr8Planar)
        configuration.maxKeyFrameInterval = keyFrameInterval
        return try V4L2VideoEncoder(
            path: encoder.path, codedFormat: .fwht, offeredPictureFormats: encoder.pictureFormats,
            configuration: configuration, system: system, replacement: replacement)
    }

    @Test func theWritersEncoderCodesPicturesVicodecDecodesBack() throws {
        let encoding = try writersEncoder(keyFrameInterval: 4)
        #expect(encoding.extradata.isEmpty)  // FWHT has no parameter sets.
        #expect(encoding.devicePictureFormat == .yuv420 && !encoding.convertsPictures)
        #expect(encoding.appliedControls["gop_size"] == 4)
        let pictures = (0..<10).map { TestPicture(frame: $0, width: Self.width, height: Self.height) }
        for (index, picture) in pictures.enumerated() {
            try encoding.send(
                picture.pixelBuffer(), presentationTime: CMTime(value: Int64(index), timescale: 30),
                forcingKeyFrame: false)
        }
        try encoding.finish()
        let packets = try Self.receiveAll(encoding)
        #expect(packets.count == pictures.count)
        #expect(packets.map(\.presentationTime) == (0..<10).map { CMTime(value: Int64($0) * 3000, timescale: 90000) })
        #expect(packets.map(\.decodeTime) == packets.map(\.presentationTime))
        let bytes = packets.map(Self.bytes)
        #expect(packets.map(\.isKeyFrame) == bytes.map { FWHTHeader($0)?.isIntra ?? false })
        #expect(packets.first?.isKeyFrame == true)
        let decoded = try Vicodec.decode(bytes, width: Self.width, height: Self.height)
        #expect(decoded.count == pictures.count)
        for (picture, frame) in zip(pictures, decoded) { picture.expectMatches(frame) }
    }

    @Test func theWritersEncoderHonoursTheKeyFrameInterval() throws {
        // A textured picture that does not change, as in theKeyFrameIntervalAskedForIsHonoured: vicodec codes
        // inter frames only where the interval lets it.
        let encoding = try writersEncoder(keyFrameInterval: 4)
        let picture = try Self.noisePicture()
        for index in 0..<9 {
            try encoding.send(
                picture, presentationTime: CMTime(value: Int64(index), timescale: 30), forcingKeyFrame: false)
        }
        try encoding.finish()
        let packets = try Self.receiveAll(encoding)
        let expected = (0..<9).map { $0 % 4 == 0 }
        #expect(packets.map { FWHTHeader(Self.bytes($0))?.isIntra } == expected.map(Optional.some))
        #expect(packets.map(\.isKeyFrame) == expected)
    }

    @Test func aDeviceFailingMidStreamIsReplacedAndEveryPictureComesBack() throws {
        let failing = FailingKernel(wrapping: SystemCalls.live.kernel, failing: "QBUF")
        var reasons: [String] = []
        let encoding = try writersEncoder(system: failing.system) { reason throws(MediaCodecsError) in
            reasons.append(reason)
            return try VideoEncoder(
                VideoEncoder.Configuration(
                    codec: .h264, width: Self.width, height: Self.height,
                    pixelFormat: kCVPixelFormatType_420YpCbCr8Planar))
        }
        failing.arm(failingCall: 9)  // Some pictures into the stream, whatever the device's pace.
        let pictures = (0..<10).map { TestPicture(frame: $0, width: Self.width, height: Self.height) }
        for (index, picture) in pictures.enumerated() {
            try encoding.send(
                picture.pixelBuffer(), presentationTime: CMTime(value: Int64(index), timescale: 30),
                forcingKeyFrame: false)
        }
        try encoding.finish()
        let packets = try Self.receiveAll(encoding)
        #expect(failing.failures == 1)
        #expect(reasons.count == 1 && reasons.first?.contains("QBUF") == true, "\(reasons)")
        #expect(packets.map(\.presentationTime) == (0..<10).map { CMTime(value: Int64($0) * 3000, timescale: 90000) })
        let bytes = packets.map(Self.bytes)
        let fwht = Array(bytes.prefix { FWHTHeader($0) != nil })
        let h264 = Array(bytes.dropFirst(fwht.count))
        #expect(!fwht.isEmpty && !h264.isEmpty, "\(fwht.count) FWHT packets, \(h264.count) H.264")
        #expect(packets[fwht.count...].first?.isKeyFrame == true)
        // vicodec decodes what it coded; ffmpeg decodes what libx264 coded in its place.
        let fromDevice = try Vicodec.decode(fwht, width: Self.width, height: Self.height)
        let fromReplacement = try Self.decodeH264(h264, width: Self.width, height: Self.height)
        #expect(fromDevice.count == fwht.count && fromReplacement.count == h264.count)
        for (picture, frame) in zip(pictures, fromDevice + fromReplacement) { picture.expectMatches(frame) }
    }

    @Test func aTrackWhoseCodecNoDeviceCodesFallsBackToSoftware() throws {
        // vicodec codes FWHT only: the writer's encoder refuses it for H.264, naming what it has...
        var configuration = VideoEncoder.Configuration(codec: .h264, width: Self.width, height: Self.height)
        do {
            _ = try V4L2VideoEncoder(
                path: encoder.path, codedFormat: .h264, offeredPictureFormats: encoder.pictureFormats,
                configuration: configuration,
                replacement: { reason throws(MediaCodecsError) in
                    throw MediaCodecsError(.encoderNotFound, while: "replacing", message: reason)
                })
            Issue.record("vicodec was taken for an H.264 encoder")
        } catch {
            #expect(error.kind == .unsupportedConfiguration && error.message.contains("FWHT"), "\(error)")
        }
        // ...and the selection passes it over for libx264 with Enable, or refuses with Require.
        configuration.hardwarePolicy = .preferHardware
        let chosen = try VideoEncoderSelection.makeEncoder(configuration)
        #expect(chosen is VideoEncoder)
        #expect(VideoEncoderSelection.loggedFallbacks.last?.contains("encoding with libx264") == true)
        configuration.hardwarePolicy = .requireHardware
        #expect(throws: MediaCodecsError.self) { _ = try VideoEncoderSelection.makeEncoder(configuration) }
    }

    // MARK: Helpers

    private static func receiveAll(_ encoder: V4L2VideoEncoder) throws -> [EncodedPacket] {
        var packets: [EncodedPacket] = []
        while case .packet(let packet) = try encoder.receivePacket() { packets.append(packet) }
        #expect(try encoder.receivePacket().isEndOfStream)
        return packets
    }

    private static func bytes(_ packet: EncodedPacket) -> [UInt8] {
        packet.data.withUnsafeBytes { Array($0.bindMemory(to: UInt8.self)) }
    }

    /// The YU12 pictures ffmpeg decodes from an H.264 Annex B stream.
    private static func decodeH264(_ packets: [[UInt8]], width: Int, height: Int) throws -> [[UInt8]] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("h264-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("in.h264").path
        let output = directory.appendingPathComponent("out.yuv").path
        try Data(packets.joined()).write(to: URL(fileURLWithPath: input))
        let result = try #require(
            spawn(
                "/usr/bin/ffmpeg",
                ["-v", "error", "-f", "h264", "-i", input, "-f", "rawvideo", "-pix_fmt", "yuv420p", output]))
        #expect(result.status == 0)
        let bytes = [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: output))) ?? Data())
        let frameBytes = width * height * 3 / 2
        return stride(from: 0, to: bytes.count - frameBytes + 1, by: frameBytes).map {
            Array(bytes[$0..<($0 + frameBytes)])
        }
    }

    /// A fixed pseudo-random luma texture (an LCG) on flat chroma, 640x480 planar 4:2:0.
    private static func noisePicture() throws -> CVPixelBuffer {
        var created: CVPixelBuffer?
        let status = CVPixelBufferCreate(nil, width, height, kCVPixelFormatType_420YpCbCr8Planar, nil, &created)
        #expect(status == kCVReturnSuccess)
        let picture = try #require(created)
        picture.withLockedPlanes([]) { planes in
            var noise: UInt32 = 12345
            for plane in 0..<3 {
                let bytes = planes[plane].bytes
                for index in 0..<bytes.count {
                    noise = noise &* 1_103_515_245 &+ 12345
                    bytes[index] = plane == 0 ? UInt8(truncatingIfNeeded: noise >> 16) : 128
                }
            }
        }
        return picture
    }
}

extension EncoderOutput {
    fileprivate var isEndOfStream: Bool {
        if case .endOfStream = self { return true }
        return false
    }
}
