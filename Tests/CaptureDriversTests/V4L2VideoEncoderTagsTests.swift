import CaptureDrivers
import Foundation
import MediaCodecs
import OpenAVCapture
import OpenCoreMedia
import OpenCoreVideo
import Testing

/// A track a V4L2 device codes carries the colour tags and pixel aspect ratio the same configuration gives a
/// libx264 track: the asked ones (an asset writer's colour properties and pixel aspect ratio), else the defaults by
/// picture size. exiftool reads both movies' `colr` and `pasp` boxes (the container's tags, not the bitstream's).
@Suite struct V4L2VideoEncoderTagsTests {
    @Test(arguments: [false, true])
    func aDeviceCodedTrackIsTaggedAsALibx264TrackIs(askedForTags: Bool) throws {
        var configuration = VideoEncoder.Configuration(codec: .h264, width: 320, height: 240, frameRate: 30)
        configuration.averageBitRate = 1_000_000
        if askedForTags {
            configuration.tags.colorPrimaries = .bt2020
            configuration.tags.transferFunction = .pq
            configuration.tags.pixelAspectRatio = (horizontal: 4, vertical: 3)
            configuration.matrix = .itu2020
        }
        // The simulated device codes real H.264 (libx264 behind it, with its own default colour in the bitstream:
        // a device's VUI is its own), so only the container says what was asked.
        let coder = try X264PictureCoder(width: 320, height: 240)
        let kernel = SimulatedV4L2Encoder(parameterSets: coder.parameterSets) {
            coder.code($0, bytesPerLine: $1, key: $2)
        }
        let device = try V4L2VideoEncoder(
            path: kernel.path, codedFormat: .h264, offeredPictureFormats: [.nv12], configuration: configuration,
            system: kernel.system
        ) { reason throws(MediaCodecsError) in
            throw MediaCodecsError(.encoderNotFound, while: "replacing the device", message: reason)
        }
        let fromDevice = try tags(ofMovieFrom: device)
        let fromLibx264 = try tags(ofMovieFrom: VideoEncoder(configuration))
        #expect(fromDevice == fromLibx264)
        let expected =
            askedForTags
            ? [
                "BT.2020, BT.2100", "SMPTE ST 2084, ITU BT.2100 PQ", "BT.2020 non-constant luminance, BT.2100 YCbCr",
                "4:3",
            ]
            : ["BT.601", "BT.601", "BT.601", "1:1"]
        #expect(fromDevice == expected)
    }

    /// Codes ten pictures with `encoder` into a movie; exiftool's primaries, transfer, matrix and pixel aspect ratio
    /// of its video track.
    private func tags(ofMovieFrom encoder: any VideoPacketEncoder) throws -> [String] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tags-\(UUID()).mov")
        defer { try? FileManager.default.removeItem(at: file) }
        try writeMovie(file, from: encoder, count: 10) { _ in try flatPicture(luma: 90) }
        let tags = ["ColorPrimaries", "TransferCharacteristics", "MatrixCoefficients", "PixelAspectRatio"]
        let read = try #require(spawn("/usr/bin/exiftool", ["-s3", "-f"] + tags.map { "-" + $0 } + [file.path]))
        return read.output.split(separator: "\n").map(String.init)
    }
}
