// AVAssetExportSession: passthrough and encoding presets, the seeds' slow-motion flow, checked with ffprobe and full
// ffmpeg decodes (frame indices, timestamps, the tone's pitch).

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import OpenCoreMedia
import OpenCoreVideo
import TestSupport
import Testing

/// Every decoded frame of `url`'s video as ffmpeg gives it: its presentation time in seconds and its marker (the
/// virtual camera's frame index, -1 for a flash frame, nil when unreadable).
func decodedFrames(_ url: URL) throws -> [(time: Double, marker: Int?)] {
    let probe = try FFprobeReport(url)
    let video = try #require(probe.stream("video"))
    let width = try #require(video["width"] as? Int)
    let height = try #require(video["height"] as? Int)
    // Exact times: the integer pts in the stream's time base (pts_time is printed to the microsecond only).
    let timeBase = try #require(video["time_base"] as? String).split(separator: "/").compactMap { Double($0) }
    try #require(timeBase.count == 2)
    let times = try MediaTool.ffprobe.run([
        "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts", "-of", "csv=p=0", url.path,
    ]).outputText.split(whereSeparator: \.isNewline).compactMap { line in
        line.split(separator: ",").first.flatMap { Double($0) }.map { $0 * timeBase[0] / timeBase[1] }
    }
    let decoded = try MediaTool.ffmpeg.run([
        "-nostdin", "-v", "error", "-i", url.path, "-map", "0:v:0", "-fps_mode", "passthrough", "-enc_time_base", "-1",
        "-f", "rawvideo", "-pix_fmt", "gray", "-",
    ])
    try #require(decoded.status == 0 && decoded.error.isEmpty, "ffmpeg: \(decoded.error)")
    let bytes = [UInt8](decoded.output)
    let size = width * height
    try #require(bytes.count == times.count * size, "\(bytes.count / size) frames decoded, \(times.count) timed")
    return times.indices.map { index in
        let luma = Array(bytes[index * size..<(index + 1) * size])
        if VirtualFrameReader.isFlashFrame(luma: luma, width: width, height: height) { return (times[index], -1) }
        return (
            times[index],
            VirtualFrameReader.readFrameIndex(fromLuma: luma, width: width, height: height).map(Int.init)
        )
    }
}

/// What a full decode of every stream of `url` by ffmpeg reports ("" when clean). Each frame keeps its own time
/// (`-fps_mode passthrough -enc_time_base -1`): a slow-motion file's frame rate changes mid-file, and ffmpeg's
/// default output clock at the average rate would merge its 240 fps frames and complain.
func variableRateDecodeErrors(_ url: URL) throws -> String {
    let result = try MediaTool.ffmpeg.run([
        "-nostdin", "-v", "error", "-i", url.path, "-fps_mode", "passthrough", "-enc_time_base", "-1", "-f", "null",
        "-",
    ])
    return result.status == 0 ? result.error : "exit \(result.status): \(result.error)"
}

/// The first channel of `url`'s sound, decoded by ffmpeg at 48 kHz.
func decodedSound(_ url: URL) throws -> [Double] {
    let decoded = try MediaTool.ffmpeg.run([
        "-nostdin", "-v", "error", "-i", url.path, "-map", "0:a:0", "-ac", "1", "-ar", "48000", "-f", "f32le", "-",
    ])
    try #require(decoded.status == 0, "ffmpeg: \(decoded.error)")
    return decoded.output.withUnsafeBytes { $0.bindMemory(to: Float.self).map(Double.init) }
}

/// Exports `asset` with `preset` to a fresh .mov; returns the URL after checking the export completed.
func export(
    _ asset: AVAsset, preset: String, name: String, configure: (AVAssetExportSession) -> Void = { _ in }
) async throws -> URL {
    let url = try scratchURL(name, suite: "avassetexport-tests")
    let session = try #require(AVAssetExportSession(asset: asset, presetName: preset))
    session.outputURL = url
    session.outputFileType = .mov
    configure(session)
    await session.export()
    #expect(session.status == .completed, "\(preset): \(String(describing: session.error))")
    #expect(session.progress == 1)
    return url
}

@Suite("AVAssetExportSession, checked with ffprobe and ffmpeg", .serialized)
struct AVAssetExportSessionTests {
    @Test("Presets: names, compatibility, file types; an unknown preset gives nil")
    func presets() async throws {
        let asset = AVURLAsset(url: try await ReaderMovies.shared.movie())
        let all = AVAssetExportSession.allExportPresets()
        #expect(all.contains(AVAssetExportPresetPassthrough) && all.contains(AVAssetExportPreset1920x1080))
        let compatible = AVAssetExportSession.exportPresets(compatibleWith: asset)
        #expect(
            compatible.contains(AVAssetExportPresetHighestQuality) && compatible.contains(AVAssetExportPresetAppleM4A))
        #expect(AVAssetExportSession(asset: asset, presetName: "NoSuchPreset") == nil)
        let m4a = try #require(AVAssetExportSession(asset: asset, presetName: AVAssetExportPresetAppleM4A))
        #expect(m4a.supportedFileTypes == [.m4a])
        #expect(
            await AVAssetExportSession.determineCompatibility(
                ofExportPreset: AVAssetExportPresetPassthrough, with: asset, outputFileType: .mp4))
        #expect(
            !(await AVAssetExportSession.determineCompatibility(
                ofExportPreset: AVAssetExportPresetAppleM4A, with: asset, outputFileType: .mov)))
    }

    @Test("Passthrough of a time range: the stored frames from the key frame, no re-encoding, ffmpeg decodes all")
    func passthroughRange() async throws {
        guard MediaTool.available(for: "AVAssetExportSessionTests.passthroughRange") else { return }
        let source = try await ReaderMovies.shared.movie()
        let url = try await export(AVURLAsset(url: source), preset: AVAssetExportPresetPassthrough, name: "range.mov") {
            $0.timeRange = CMTimeRange(start: CMTime(value: 1, timescale: 1), duration: CMTime(value: 1, timescale: 2))
            $0.shouldOptimizeForNetworkUse = true
            let title = AVMutableMetadataItem()
            title.identifier = .commonIdentifierTitle
            title.value = NSString(string: "Slow and steady")
            $0.metadata = [title]
        }
        #expect(try ffmpegDecodeErrors(url).isEmpty)
        let frames = try decodedFrames(url)
        // Frame 30 is a key frame (one a second): the range 1 s … 1.5 s is frames 30 … 44.
        #expect(frames.map(\.marker) == expectedMarkers(30..<45, frameRate: 30).map(Optional.some))
        #expect(abs(frames[0].time) < 0.001 && abs(frames[14].time - 14.0 / 30) < 0.001)
        // The same bytes as the source's packets: compare the video streams' sizes.
        let probe = try FFprobeReport(url)
        #expect(probe.stream("video")?["codec_name"] as? String == "h264")
        #expect(probe.stream("audio")?["codec_name"] as? String == "aac")
        #expect(probe.tags["title"] == "Slow and steady", "tags: \(probe.tags)")
    }

    @Test("Encoding presets scale: LowQuality fits 320x240; AppleM4A writes sound only")
    func encodingPresets() async throws {
        guard MediaTool.available(for: "AVAssetExportSessionTests.encodingPresets") else { return }
        let asset = AVURLAsset(url: try await ReaderMovies.shared.movie())
        let low = try await export(asset, preset: AVAssetExportPresetLowQuality, name: "low.mov")
        let probe = try FFprobeReport(low)
        #expect(probe.stream("video")?["width"] as? Int == 320 && probe.stream("video")?["height"] as? Int == 240)
        #expect(try ffmpegDecodeErrors(low).isEmpty)
        let frames = try decodedFrames(low)
        #expect(frames.count == 60)
        #expect(
            frames.map(\.marker).filter { $0 != nil }.count >= 58,
            "indices readable at 320x240: \(frames.map(\.marker))")

        if AVAssetExportSession.allExportPresets().contains(AVAssetExportPresetHEVCHighestQuality) {
            let hevc = try await export(asset, preset: AVAssetExportPresetHEVCHighestQuality, name: "hevc.mov")
            let hevcVideo = try FFprobeReport(hevc).stream("video")
            #expect(
                hevcVideo?["codec_name"] as? String == "hevc" && hevcVideo?["codec_tag_string"] as? String == "hvc1")
            #expect(try decodedFrames(hevc).map(\.marker) == expectedMarkers(0..<60, frameRate: 30).map(Optional.some))
        }

        let m4aURL = try scratchURL("sound.m4a", suite: "avassetexport-tests")
        let session = try #require(AVAssetExportSession(asset: asset, presetName: AVAssetExportPresetAppleM4A))
        try await session.export(to: m4aURL, as: .m4a)
        let sound = try FFprobeReport(m4aURL)
        #expect(sound.stream("video") == nil)
        #expect(sound.stream("audio")?["codec_name"] as? String == "aac")
        let samples = try decodedSound(m4aURL)
        #expect(abs(Double(samples.count) / 48_000 - 2) < 0.03, "\(Double(samples.count) / 48_000) s")
    }

    @Test("An existing file is not overwritten; cancelExport leaves no file")
    func refusalsAndCancel() async throws {
        let asset = AVURLAsset(url: try await ReaderMovies.shared.movie())
        let existing = try scratchURL("existing.mov", suite: "avassetexport-tests")
        try Data("keep".utf8).write(to: existing)
        let session = try #require(AVAssetExportSession(asset: asset, presetName: AVAssetExportPresetPassthrough))
        session.outputURL = existing
        session.outputFileType = .mov
        await session.export()
        #expect(session.status == .failed)
        #expect((session.error as? AVError)?.code == .fileAlreadyExists)
        #expect(try Data(contentsOf: existing) == Data("keep".utf8))

        let cancelled = try scratchURL("cancelled.mov", suite: "avassetexport-tests")
        let slow = try #require(AVAssetExportSession(asset: asset, presetName: AVAssetExportPresetHighestQuality))
        slow.outputURL = cancelled
        slow.outputFileType = .mov
        slow.cancelExport()
        await slow.export()
        #expect(slow.status == .cancelled)
        #expect(!FileManager.default.fileExists(atPath: cancelled.path))
    }

    @Test("Passthrough of a cut composition: a cut at a key frame copies; one between key frames is refused")
    func passthroughCuts() async throws {
        guard MediaTool.available(for: "AVAssetExportSessionTests.passthroughCuts") else { return }
        let asset = AVURLAsset(url: try await ReaderMovies.shared.movie())
        let atKeyFrame = AVMutableComposition()
        try await atKeyFrame.insertTimeRange(range(0, 2), of: asset, at: .zero)
        atKeyFrame.removeTimeRange(range(0.5, 1))
        let url = try await export(atKeyFrame, preset: AVAssetExportPresetPassthrough, name: "cut.mov")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
        let frames = try decodedFrames(url)
        #expect(
            frames.map(\.marker) == expectedMarkers(Array(0..<15) + Array(30..<60), frameRate: 30).map(Optional.some))
        #expect(abs(frames[15].time - 0.5) < 0.001, "the frame after the cut plays at \(frames[15].time) s")

        let between = AVMutableComposition()
        try await between.insertTimeRange(range(0, 2), of: asset, at: .zero)
        between.removeTimeRange(range(0.4, 0.6))
        let refusedURL = try scratchURL("cut-between.mov", suite: "avassetexport-tests")
        let session = try #require(AVAssetExportSession(asset: between, presetName: AVAssetExportPresetPassthrough))
        session.outputURL = refusedURL
        session.outputFileType = .mov
        await session.export()
        #expect(session.status == .failed)
        #expect(
            (session.error as? AVError)?.code == .operationNotSupportedForAsset, "\(String(describing: session.error))")
        #expect(!FileManager.default.fileExists(atPath: refusedURL.path))
    }
}
