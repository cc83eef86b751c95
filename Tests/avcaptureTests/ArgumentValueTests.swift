// avcapture's option values as a user types them: sizes and rates with ffmpeg's suffixes, camera formats by index
// or by size, rate and pixel format, kebab-case choices with their older spellings, and an optional --screen value.

import ArgumentParser
import Foundation
import OpenAVCapture
import Testing

@testable import avcapture

@Suite("avcapture's option values")
struct ArgumentValueTests {
    @Test(
        "Sizes and bit rates take ffmpeg's suffixes: k M G T decimal, Ki Mi Gi Ti binary, B allowed",
        arguments: [
            ("123", Int64(123)), ("6M", 6_000_000), ("500M", 500_000_000), ("2G", 2_000_000_000), ("1500k", 1_500_000),
            ("64K", 64_000), ("1.5G", 1_500_000_000), ("1T", 1_000_000_000_000), ("2Gi", 2_147_483_648),
            ("64Ki", 65_536), ("24Mi", 25_165_824), ("500MB", 500_000_000), ("2GiB", 2_147_483_648),
        ])
    func quantities(text: String, value: Int64) {
        #expect(Quantity(argument: text)?.value == value, "\(text)")
    }

    @Test(
        "Not sizes: words, signs, unknown units, nothing", arguments: ["lots", "-1", "6X", "", "M", "1e6", "2 G", "6m"])
    func notQuantities(text: String) {
        #expect(Quantity(argument: text) == nil, "\(text)")
    }

    @Test("--keep: a plain number counts files, one with a unit is a total size")
    func keep() {
        #expect(KeepLimit(argument: "10") == .files(10))
        #expect(KeepLimit(argument: "2G") == .bytes(2_000_000_000))
        #expect(KeepLimit(argument: "2Gi") == .bytes(2_147_483_648))
        #expect(KeepLimit(argument: "0") == nil)
        #expect(KeepLimit(argument: "-1") == nil)
    }

    @Test(
        "--format: an index, a size, a rate and a pixel format, each part but the first optional",
        arguments: [
            ("4", FormatSpecification.index(4, framesPerSecond: nil)),
            ("4@15", .index(4, framesPerSecond: 15)),
            ("1280x720", .size(width: 1280, height: 720, framesPerSecond: nil, pixelFormat: nil)),
            ("1280x720@30", .size(width: 1280, height: 720, framesPerSecond: 30, pixelFormat: nil)),
            ("1280x720@29.97", .size(width: 1280, height: 720, framesPerSecond: 29.97, pixelFormat: nil)),
            ("1280x720@30:mjpeg", .size(width: 1280, height: 720, framesPerSecond: 30, pixelFormat: .mjpeg)),
            ("640x480:yuyv", .size(width: 640, height: 480, framesPerSecond: nil, pixelFormat: .yuyv)),
            ("1920x1080@30:avc1", .size(width: 1920, height: 1080, framesPerSecond: 30, pixelFormat: .h264)),
            ("1280X720@30:420v", .size(width: 1280, height: 720, framesPerSecond: 30, pixelFormat: .nv12)),
        ])
    func formats(text: String, expected: FormatSpecification) {
        #expect(FormatSpecification(argument: text) == expected, "\(text)")
    }

    @Test(
        "--format refuses what is neither",
        arguments: ["abc", "1280x720@0", "1280x720:foo", "1280x", "x720", "4@", "0x0"])
    func notFormats(text: String) {
        #expect(FormatSpecification(argument: text) == nil, "\(text)")
    }

    @Test("Pixel formats: ffmpeg's names and the FourCCs 'formats' prints, any case")
    func pixelFormats() {
        let names: [(String, PixelFormatChoice)] = [
            ("mjpeg", .mjpeg), ("MJPEG", .mjpeg), ("jpeg", .mjpeg), ("mjpg", .mjpeg), ("yuyv", .yuyv),
            ("yuyv422", .yuyv), ("yuvs", .yuyv), ("yuy2", .yuyv), ("nv12", .nv12), ("420v", .nv12), ("420f", .nv12),
            ("2vuy", .uyvy), ("y420", .i420), ("yuv420p", .i420), ("h264", .h264), ("avc1", .h264), ("hvc1", .hevc),
        ]
        for (name, expected) in names { #expect(PixelFormatChoice(argument: name) == expected, "\(name)") }
        #expect(PixelFormatChoice(argument: "theora") == nil)
        // What 'formats' prints beside each FourCC is the name --format takes.
        #expect(PixelFormatChoice.named(kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange) == .nv12)
        #expect(PixelFormatChoice.named(kCMVideoCodecType_JPEG) == .mjpeg)
        #expect(PixelFormatChoice.named(kCVPixelFormatType_422YpCbCr8_yuvs) == .yuyv)
    }

    @Test("Choices are kebab-case, list themselves for help, and still read the older camelCase spellings")
    func choices() {
        #expect(
            OrientationChoice.allValueStrings == [
                "portrait", "portrait-upside-down", "landscape-left", "landscape-right",
            ])
        for spelling in ["landscape-right", "landscapeRight", "LANDSCAPE_RIGHT", "landscaperight"] {
            #expect(OrientationChoice(argument: spelling) == .landscapeRight, "\(spelling)")
        }
        #expect(OrientationChoice(argument: "portraitUpsideDown") == .portraitUpsideDown)
        #expect(OrientationChoice(argument: "sideways") == nil)
        #expect(PitchChoice(argument: "timeDomain") == .timeDomain)
        #expect(PitchChoice(argument: "time-domain") == .timeDomain)
        #expect(PresetChoice(argument: "1280x720") == .hd720)
        #expect(PresetChoice(argument: "High") == .high)
        #expect(PhotoCommand.Encoding(argument: "jpg") == .jpeg)
        #expect(GravityChoice.allValueStrings == ["aspect", "fill", "resize"])
        #expect(VideoCodecChoice(argument: "av1") == nil)
        #expect(ExportCommand.Preset(argument: "hevc-1920x1080")?.presetName == AVAssetExportPresetHEVC1920x1080)
        #expect(
            ExportCommand.Preset(argument: "AVAssetExportPresetLowQuality")?.presetName == AVAssetExportPresetLowQuality
        )
        #expect(ExportCommand.Preset(argument: "tiny") == nil)
    }

    @Test("--screen takes N or main, and stands alone before an option, before OUTPUT, or at the end")
    func screen() throws {
        #expect(try RecordCommand.parse(["out.mov", "--screen"]).screen == .main)
        #expect(try RecordCommand.parse(["out.mov", "--screen", "2"]).screen == .index(2))
        #expect(try RecordCommand.parse(["out.mov", "--screen", "main"]).screen == .main)
        #expect(try RecordCommand.parse(["out.mov", "--screen=1"]).screen == .index(1))
        let beforeOption = try RecordCommand.parse(["out.mov", "--screen", "--audio", "none"])
        #expect(beforeOption.screen == .main && beforeOption.microphone.audio == "none")
        let beforeOutput = try RecordCommand.parse(["--screen", "out.mov"])
        #expect(beforeOutput.screen == .main && beforeOutput.output == "out.mov")
        let indexThenOutput = try RecordCommand.parse(["--screen", "1", "out.mov"])
        #expect(indexThenOutput.screen == .index(1) && indexThenOutput.output == "out.mov")
        #expect(try RecordCommand.parse(["out.mov"]).screen == nil)
    }

    @Test("The format options: --pixel-format goes with a size; --preset and --format conflict")
    func formatOptions() throws {
        let both = try RecordCommand.parse(["out.mov", "--format", "1280x720@30", "--pixel-format", "mjpeg"])
        guard case .exact(1280, 720, 30, .mjpeg)? = both.formatOptions.choice else {
            Issue.record("\(String(describing: both.formatOptions.choice))")
            return
        }
        guard case .index(3, nil)? = try RecordCommand.parse(["out.mov", "--format", "3"]).formatOptions.choice else {
            Issue.record("--format 3 is not index 3")
            return
        }
        for arguments in [
            ["out.mov", "--preset", "high", "--format", "1"],
            ["out.mov", "--pixel-format", "mjpeg"],
            ["out.mov", "--format", "2", "--pixel-format", "mjpeg"],
            ["out.mov", "--format", "1280x720:yuyv", "--pixel-format", "mjpeg"],
            ["out.mov", "--bitrate", "lots"],
            ["out.mov", "--orientation", "sideways"],
        ] {
            #expect(throws: (any Error).self, "\(arguments)") { try RecordCommand.parse(arguments) }
        }
        let sizes = try RecordCommand.parse([
            "cam-%H%M%S.mov", "--bitrate", "6M", "--max-size", "500M", "--min-free", "2G", "--segment-size", "50M",
            "--keep", "2G",
        ])
        #expect(sizes.bitrate?.value == 6_000_000)
        #expect(sizes.maxSize?.value == 500_000_000)
        #expect(sizes.minFree?.value == 2_000_000_000)
        #expect(sizes.segmentSize?.value == 50_000_000)
        #expect(sizes.keep == .bytes(2_000_000_000))
    }

    @Test("preview and serve take several --video, --inset-corner and --inset-width (5 ... 50 percent)")
    func pictureInPicture() throws {
        let preview = try PreviewCommand.parse(
            ["--video", "back", "--video", "front", "--inset-corner", "top-left", "--inset-width", "30"])
        #expect(preview.camera.videos == ["back", "front"] && preview.camera.isPictureInPicture)
        #expect(preview.camera.layout == PictureInPictureLayout(corner: .topLeft, insetWidthFraction: 0.3))
        let serve = try ServeCommand.parse(["--video", "back"])
        #expect(!serve.camera.isPictureInPicture && serve.camera.layout == PictureInPictureLayout())
        #expect(throws: (any Error).self) { try PreviewCommand.parse(["--video", "back", "--inset-width", "60"]) }
        #expect(throws: (any Error).self) { try ServeCommand.parse(["--inset-corner", "middle"]) }
    }
}
