// The video settings that describe a stream rather than its pictures (H.264 profile and level, entropy coding,
// pixel aspect ratio, colour properties), and a composition track's preferredTransform, each read back from the
// file by ffprobe and mediainfo.

import Foundation
import OpenAVCapture
import OpenCoreMedia
import OpenCoreVideo
import TestSupport
import Testing

/// Writes `frames` mid-grey 640x480 NV12 pictures at 30 fps through an adaptor with `settings`; throws unless the
/// writer completes.
private func writeGrey(to url: URL, settings: [String: Any], frames: Int = 15) async throws {
    let writer = try AVAssetWriter(outputURL: url, fileType: .mov)
    let input = AVAssetWriterInput(mediaType: .video, outputSettings: settings)
    let adaptor = AVAssetWriterInputPixelBufferAdaptor(
        assetWriterInput: input,
        sourcePixelBufferAttributes: [
            kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
            kCVPixelBufferWidthKey: 640, kCVPixelBufferHeightKey: 480,
        ])
    writer.add(input)
    try #require(writer.startWriting(), "\(String(describing: writer.error))")
    writer.startSession(atSourceTime: .zero)
    for index in 0..<frames {
        try #require(await waitUntil(timeout: 20) { input.isReadyForMoreMediaData })
        let pool = try #require(adaptor.pixelBufferPool)
        var created: CVPixelBuffer?
        CVPixelBufferPoolCreatePixelBuffer(nil, pool, &created)
        let buffer = try #require(created)
        CVPixelBufferLockBaseAddress(buffer, [])
        for plane in 0..<CVPixelBufferGetPlaneCount(buffer) {
            let rows = CVPixelBufferGetHeightOfPlane(buffer, plane)
            let bytes = CVPixelBufferGetBytesPerRowOfPlane(buffer, plane) * rows
            CVPixelBufferGetBaseAddressOfPlane(buffer, plane)?.initializeMemory(as: UInt8.self, repeating: 128, count: bytes)
        }
        CVPixelBufferUnlockBaseAddress(buffer, [])
        try #require(adaptor.append(buffer, withPresentationTime: CMTime(value: Int64(index), timescale: 30)))
    }
    input.markAsFinished()
    await writer.finishWriting()
    try #require(writer.status == .completed, "\(String(describing: writer.error))")
}

private func h264(_ properties: [String: Any], extra: [String: Any] = [:]) -> [String: Any] {
    var settings: [String: Any] = [
        AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: 640, AVVideoHeightKey: 480,
        AVVideoCompressionPropertiesKey: properties,
    ]
    settings.merge(extra) { _, new in new }
    return settings
}

/// mediainfo's answer for one video field (`%Format_Settings_CABAC%` …).
private func mediaInfo(_ field: String, _ url: URL) throws -> String {
    try MediaTool.mediainfo.run(["--Inform=Video;%\(field)%", url.path]).outputText
        .trimmingCharacters(in: .whitespacesAndNewlines)
}

@Suite("Stream-describing writer settings, read back with ffprobe and mediainfo", .serialized)
struct WriterStreamTagsTests {
    @Test("AVVideoH264EntropyModeKey: CAVLC and CABAC, as mediainfo reads the stream")
    func entropyModes() async throws {
        guard MediaTool.available([.ffprobe, .mediainfo], for: "WriterStreamTagsTests.entropyModes") else { return }
        for (mode, expected) in [(AVVideoH264EntropyModeCAVLC, "No"), (AVVideoH264EntropyModeCABAC, "Yes")] {
            let url = try scratchURL("entropy-\(mode).mov", suite: "writer-stream-tags")
            try await writeGrey(to: url, settings: h264([AVVideoH264EntropyModeKey: mode]))
            #expect(try mediaInfo("Format_Settings_CABAC", url) == expected, "\(mode)")
        }
    }

    struct ProfileCase: Sendable {
        let value: String
        let profile: String
        let level: Int
    }

    @Test("AVVideoProfileLevelKey: Baseline 3.1, Main 3.0 and High 4.1 as ffprobe reads the stream", arguments: [
        ProfileCase(value: AVVideoProfileLevelH264Baseline31, profile: "Constrained Baseline", level: 31),
        ProfileCase(value: AVVideoProfileLevelH264Main30, profile: "Main", level: 30),
        ProfileCase(value: AVVideoProfileLevelH264High41, profile: "High", level: 41),
    ])
    func profileAndLevel(_ profileCase: ProfileCase) async throws {
        let (value, profile, level) = (profileCase.value, profileCase.profile, profileCase.level)
        guard MediaTool.available([.ffprobe, .mediainfo], for: "WriterStreamTagsTests.profileAndLevel") else { return }
        let url = try scratchURL("profile-\(value).mov", suite: "writer-stream-tags")
        try await writeGrey(to: url, settings: h264([AVVideoProfileLevelKey: value]))
        let video = try #require(try FFprobeReport(url).stream("video"))
        #expect(video["profile"] as? String == profile)
        #expect(video["level"] as? Int == level)
        if value == AVVideoProfileLevelH264Baseline31 { #expect(try mediaInfo("Format_Settings_CABAC", url) == "No") }
    }

    @Test("AVVideoColorPropertiesKey: BT.2020 primaries, HLG transfer and the BT.2020 matrix in the stream")
    func colourProperties() async throws {
        guard MediaTool.available(for: "WriterStreamTagsTests.colourProperties") else { return }
        let url = try scratchURL("colour.mov", suite: "writer-stream-tags")
        let colour: [String: Any] = [
            AVVideoColorPrimariesKey: AVVideoColorPrimaries_ITU_R_2020,
            AVVideoTransferFunctionKey: AVVideoTransferFunction_ITU_R_2100_HLG,
            AVVideoYCbCrMatrixKey: AVVideoYCbCrMatrix_ITU_R_2020,
        ]
        try await writeGrey(to: url, settings: h264([:], extra: [AVVideoColorPropertiesKey: colour]))
        let video = try #require(try FFprobeReport(url).stream("video"))
        #expect(video["color_primaries"] as? String == "bt2020")
        #expect(video["color_transfer"] as? String == "arib-std-b67")
        #expect(video["color_space"] as? String == "bt2020nc")
        let p3 = try scratchURL("colour-p3.mov", suite: "writer-stream-tags")
        let displayP3: [String: Any] = [
            AVVideoColorPrimariesKey: AVVideoColorPrimaries_P3_D65,
            AVVideoTransferFunctionKey: AVVideoTransferFunction_ITU_R_709_2,
            AVVideoYCbCrMatrixKey: AVVideoYCbCrMatrix_ITU_R_709_2,
        ]
        try await writeGrey(to: p3, settings: h264([:], extra: [AVVideoColorPropertiesKey: displayP3]))
        let p3Video = try #require(try FFprobeReport(p3).stream("video"))
        #expect(p3Video["color_primaries"] as? String == "smpte432")
        #expect(p3Video["color_transfer"] as? String == "bt709" && p3Video["color_space"] as? String == "bt709")
    }

    @Test("AVVideoPixelAspectRatioKey: 4:3 pixels give ffprobe's sample_aspect_ratio and a 16:9 display")
    func pixelAspectRatio() async throws {
        guard MediaTool.available(for: "WriterStreamTagsTests.pixelAspectRatio") else { return }
        let url = try scratchURL("anamorphic.mov", suite: "writer-stream-tags")
        let ratio: [String: Any] = [
            AVVideoPixelAspectRatioHorizontalSpacingKey: 4, AVVideoPixelAspectRatioVerticalSpacingKey: 3,
        ]
        try await writeGrey(to: url, settings: h264([:], extra: [AVVideoPixelAspectRatioKey: ratio]))
        let video = try #require(try FFprobeReport(url).stream("video"))
        #expect(video["sample_aspect_ratio"] as? String == "4:3")
        #expect(video["display_aspect_ratio"] as? String == "16:9")
    }

    @Test("AVVideoCleanApertureKey: H.264 frame cropping, so decoders show 600x400 of the 640x480 picture")
    func cleanAperture() async throws {
        guard MediaTool.available(for: "WriterStreamTagsTests.cleanAperture") else { return }
        let url = try scratchURL("aperture.mov", suite: "writer-stream-tags")
        let aperture: [String: Any] = [
            AVVideoCleanApertureWidthKey: 600, AVVideoCleanApertureHeightKey: 400,
            AVVideoCleanApertureHorizontalOffsetKey: 10, AVVideoCleanApertureVerticalOffsetKey: -20,
        ]
        try await writeGrey(to: url, settings: h264([:], extra: [AVVideoCleanApertureKey: aperture]))
        let video = try #require(try FFprobeReport(url).stream("video"))
        #expect(video["width"] as? Int == 600 && video["height"] as? Int == 400, "\(video)")
        #expect(video["coded_width"] as? Int == 640 && video["coded_height"] as? Int == 480)
        // "-flags unaligned": libavcodec otherwise keeps a left crop that is not a multiple of its alignment (here
        // the aperture's 30 left pixels), so the picture would be 630 wide.
        let frame = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-flags", "unaligned", "-i", url.path, "-frames:v", "1", "-f", "rawvideo",
            "-pix_fmt", "gray", "-",
        ])
        #expect(frame.output.count == 600 * 400, "ffmpeg decodes the aperture only: \(frame.output.count) bytes")
    }

    @Test("AVMutableCompositionTrack.preferredTransform set to a quarter turn reaches the exported track header")
    func compositionRotation() async throws {
        guard MediaTool.available(for: "WriterStreamTagsTests.compositionRotation") else { return }
        let source = try scratchURL("upright.mov", suite: "writer-stream-tags")
        try await writeGrey(to: source, settings: h264([:]), frames: 30)
        let asset = AVURLAsset(url: source)
        let composition = AVMutableComposition()
        let sourceTrack = try #require(try await asset.loadTracks(withMediaType: .video).first)
        let track = try #require(
            composition.addMutableTrack(withMediaType: .video, preferredTrackID: kCMPersistentTrackID_Invalid))
        try track.insertTimeRange(CMTimeRange(start: .zero, duration: try await asset.load(.duration)), of: sourceTrack, at: .zero)
        track.preferredTransform = CGAffineTransform(rotationAngle: .pi / 2)
        #expect(track.preferredTransform == CGAffineTransform(rotationAngle: .pi / 2))
        for preset in [AVAssetExportPresetPassthrough, AVAssetExportPreset640x480] {
            let url = try scratchURL("turned-\(preset).mov", suite: "writer-stream-tags")
            let session = try #require(AVAssetExportSession(asset: composition, presetName: preset))
            session.outputURL = url
            session.outputFileType = .mov
            await session.export()
            try #require(session.status == .completed, "\(preset): \(String(describing: session.error))")
            let video = try #require(try FFprobeReport(url).stream("video"))
            let sideData = video["side_data_list"] as? [[String: Any]] ?? []
            #expect(sideData.compactMap { $0["rotation"] as? Int }.first == -90, "\(preset): \(sideData)")
        }
    }
}
