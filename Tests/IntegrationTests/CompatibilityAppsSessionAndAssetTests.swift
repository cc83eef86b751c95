// The runnable compatibility suite, continued: the programs that reconfigure a running session (a format picker, a
// camera switcher, a pause button) and the ones that work on finished files (an exporter, a thumbnail strip), judged
// by ffprobe and by the frame-index codes ffmpeg decodes.

import Foundation
import OpenAVCaptureTesting
import TestSupport
import Testing

@Suite(
    "Compatibility apps: session changes and asset programs", .serialized,
    .enabled(if: compatAppsPath != nil, "compat-apps is not built beside the tests (swift build --build-tests)"))
struct CompatibilityAppsSessionAndAssetTests {
    @Test("format-picker lists the virtual cameras and records a second in the 640x480 15 fps format it locked")
    func formatPicker() throws {
        guard MediaTool.available(for: "formatPicker") else { return }
        let movie = try compatScratch("picked.mov")
        let result = try runCompatApp("format-picker", [movie.path, "640", "480", "15"])
        try #require(result.status == 0, "\(result.error)")
        let cameras = try #require(
            try JSONSerialization.jsonObject(with: Data(result.outputText.split(separator: "\n")[0].utf8))
                as? [[String: Any]])
        #expect(
            Set(cameras.compactMap { $0["name"] as? String })
                == ["Virtual Back Camera", "Virtual Front Camera", "Virtual USB Webcam"])
        #expect(cameras.allSatisfy { ($0["formats"] as? [String])?.isEmpty == false })
        let report = try FFprobeReport(movie)
        let video = try #require(report.stream("video"))
        #expect(video["width"] as? Int == 640 && video["height"] as? Int == 480)
        #expect(video["avg_frame_rate"] as? String == "15/1", "\(video["avg_frame_rate"] ?? "none")")
        let frames = try virtualFrameIndices(movie).indices
        #expect((14...16).contains(frames.count), "\(frames.count) frames in 1 s at 15 fps")
        #expect(isIncreasing(frames.compactMap { $0 }))
    }

    @Test("camera-switcher swaps the back camera for the front one mid-recording: one file, the index restarting once")
    func cameraSwitcher() throws {
        guard MediaTool.available(for: "cameraSwitcher") else { return }
        let movie = try compatScratch("switched.mov")
        let result = try runCompatApp("camera-switcher", [movie.path, "20"])
        try #require(result.status == 0, "\(result.error)")
        let counts = try #require(try lastJSONLine(of: result) as? [String: Int])
        let back = try #require(counts["Virtual Back Camera"])
        let front = try #require(counts["Virtual Front Camera"])
        #expect(back >= 20 && front == 20, "\(counts)")
        #expect(try ffmpegDecodeErrors(movie) == "")
        let frames = try virtualFrameIndices(movie).indices
        #expect(frames.count == back + front, "the file holds every frame the app appended")
        // Each camera counts its frames from 0 when it starts streaming: the front camera's first frame reads lower
        // than the back camera's last, exactly once.
        let read = frames.compactMap { $0 }
        let restarts = zip(read, read.dropFirst()).filter { $0 >= $1 }
        #expect(restarts.count == 1, "\(read)")
        #expect(read.first.map { $0 <= 2 } == true && restarts.first.map { $0.1 <= 2 } == true, "\(read)")
    }

    @Test("pause-resume-recorder leaves two seconds of movie with a second of frames missing in the middle")
    func pauseResumeRecorder() throws {
        guard MediaTool.available(for: "pauseResumeRecorder") else { return }
        let movie = try compatScratch("paused.mov")
        let result = try runCompatApp("pause-resume-recorder", [movie.path])
        try #require(result.status == 0, "\(result.error)")
        #expect(result.outputText.contains("started paused resumed finished"), "\(result.outputText)")
        let report = try FFprobeReport(movie)
        let duration = try #require(FFprobeReport.number(report.format["duration"]))
        #expect(duration > 1.8 && duration < 2.4, "two seconds recorded around a pause, the file lasts \(duration) s")
        #expect(try ffmpegDecodeErrors(movie) == "")
        let read = try virtualFrameIndices(movie).indices.compactMap { $0 }
        #expect(isIncreasing(read), "\(read)")
        // The pause: the camera ran on for about a second (30 frames) that the file does not hold.
        let gaps = zip(read, read.dropFirst()).map { $1 - $0 }
        let longest = try #require(gaps.max())
        #expect(longest >= 20, "no pause in the frame indices: \(read)")
        #expect(gaps.filter { $0 >= 20 }.count == 1, "\(read)")
    }

    @Test("asset-exporter's inspection matches ffprobe's, and its 640x480 export of the first second is 640x360")
    func assetExporter() throws {
        guard MediaTool.available(for: "assetExporter") else { return }
        let clip = try compatScratch("source.mov")
        let made = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-f", "lavfi", "-i",
            "sine=frequency=440:sample_rate=48000", "-t", "2", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac",
            clip.path,
        ])
        try #require(made.status == 0, "\(made.error)")
        let source = try FFprobeReport(clip)
        let export = try compatScratch("export.mp4")
        let result = try runCompatApp("asset-exporter", [clip.path, export.path])
        try #require(result.status == 0, "\(result.error)")
        let inspection = try #require(try lastJSONLine(of: result) as? [String: Any])
        #expect(inspection["trackCount"] as? Int == 2)
        #expect(inspection["width"] as? Double == 1280 && inspection["height"] as? Double == 720)
        #expect(inspection["nominalFrameRate"] as? Double == 30)
        #expect(inspection["codec"] as? String == "avc1")
        let videoFrames = try #require(FFprobeReport.number(source.stream("video")?["nb_read_frames"]))
        #expect(inspection["videoFrames"] as? Int == Int(videoFrames))
        let sourceDuration = try #require(FFprobeReport.number(source.format["duration"]))
        #expect(
            abs((inspection["duration"] as? Double ?? 0) - sourceDuration) < 0.03, "\(inspection) vs \(sourceDuration)")
        // ffprobe counts AAC frames (1024 samples); the reader gives decoded sample frames, priming trimmed.
        let audioFrames = try #require(FFprobeReport.number(source.stream("audio")?["nb_read_frames"]))
        let samples = try #require(inspection["audioSamples"] as? Int)
        #expect(abs(Double(samples) - 96_000) <= 1024 && Double(samples) <= audioFrames * 1024, "\(samples)")

        let exported = try FFprobeReport(export)
        let video = try #require(exported.stream("video"))
        #expect(video["width"] as? Int == 640 && video["height"] as? Int == 360, "scaled to fit 640x480, aspect kept")
        #expect(FFprobeReport.number(video["nb_read_frames"]) == 30)
        #expect(exported.stream("audio")?["codec_name"] as? String == "aac")
        let duration = try #require(FFprobeReport.number(exported.format["duration"]))
        #expect(abs(duration - 1) < 0.05, "\(duration) s")
        #expect(try ffmpegDecodeErrors(export) == "")
    }

    @Test("thumbnail-generator gives the exact frames at even times of a clip of the virtual camera's frames")
    func thumbnailGenerator() throws {
        guard MediaTool.available(for: "thumbnailGenerator") else { return }
        // 60 frames of the virtual camera's pictures (index codes, a flash at each whole second) as H.264.
        let raw = try compatScratch("clip.nv12")
        try writeVirtualClipNV12(to: raw, width: 640, height: 360, frameRate: 30, frames: 60)
        let clip = try compatScratch("clip.mov")
        let made = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "nv12", "-s", "640x360", "-r", "30", "-i",
            raw.path, "-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "30", clip.path,
        ])
        try #require(made.status == 0, "\(made.error)")
        let directory = try compatScratch("thumbnails")
        let result = try runCompatApp("thumbnail-generator", [clip.path, directory.path, "4"])
        try #require(result.status == 0, "\(result.error)")
        let times = try #require(try lastJSONLine(of: result) as? [Double])
        #expect(times.map { ($0 * 30).rounded() } == [0, 15, 30, 45], "\(times)")
        for (number, time) in times.enumerated() {
            let picture = directory.appendingPathComponent("thumbnail-\(number).ppm")
            let (read, width, height) = try virtualFrameIndices(picture)
            #expect(width == 320 && height == 180, "fits 320x320 with the clip's aspect: \(width)x\(height)")
            let frame = Int((time * 30).rounded())
            // The frame at each whole second (frame 0 too) is the white flash frame, which carries no code.
            #expect(read == [frame % 30 == 0 ? nil : frame], "thumbnail \(number) at \(time) s")
        }
    }
}
