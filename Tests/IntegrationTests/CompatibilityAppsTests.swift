// The runnable compatibility suite: each program of `compat-apps` (Examples/CompatibilityApps, capture code written
// as apps write it) runs as its own process on the virtual devices, and what it leaves is judged by outside tools:
// ffprobe and ffmpeg read the movies (streams, lengths, every frame's index code), exiftool the photos, qrencode
// made the code the scanner must read. The programs pace themselves on the devices' media time (a maximum recorded
// duration, frame counts), not on the test's clock.

import Foundation
import OpenAVCaptureTesting
import TestSupport
import Testing

@Suite(
    "Compatibility apps: capture programs written as apps write them", .serialized,
    .enabled(if: compatAppsPath != nil, "compat-apps is not built beside the tests (swift build --build-tests)"))
struct CompatibilityAppsTests {
    @Test("qr-scanner reads the QR code qrencode drew into a clip played as the camera")
    func qrScanner() throws {
        let qrencode = "/usr/bin/qrencode"
        guard FileManager.default.isExecutableFile(atPath: qrencode), MediaTool.available(for: "qrScanner") else {
            return
        }
        let text = "https://example.org/compat-apps?scan=1"
        let image = try compatScratch("code.png")
        let made = try ToolResult.run(executable: qrencode, ["-o", image.path, "-s", "6", "-m", "4", text])
        try #require(made.status == 0, "\(made.error)")
        // Three seconds of the code at x 360...580, y 130...350 of a grey 640x480 picture.
        let clip = try compatScratch("code.mov")
        let encoded = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=gray:s=640x480:r=30:d=3", "-i", image.path,
            "-filter_complex", "[1:v]scale=220:220:flags=neighbor[code];[0:v][code]overlay=360:130", "-c:v", "libx264",
            "-pix_fmt", "yuv420p", "-t", "3", clip.path,
        ])
        try #require(encoded.status == 0, "\(encoded.error)")
        let report = try compatScratch("code.json")
        let result = try runCompatApp("qr-scanner", [report.path, "file:" + clip.path])
        try #require(result.status == 0, "\(result.error)")
        let code = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any])
        #expect(code["type"] as? String == "org.iso.QRCode")
        #expect(code["value"] as? String == text)
        #expect(code["corners"] as? Int == 4)
        // The bounds are fractions of the frame: inside the square the code was drawn in.
        let bounds = try #require(code["bounds"] as? [Double])
        #expect(bounds.count == 4)
        #expect(bounds[0] > 360.0 / 640 && bounds[0] + bounds[2] < 580.0 / 640, "\(bounds)")
        #expect(bounds[1] > 130.0 / 480 && bounds[1] + bounds[3] < 350.0 / 480, "\(bounds)")
    }

    @Test("movie-recorder stops at its maximum duration with a complete H.264 + AAC movie, frames in order")
    func movieRecorder() throws {
        guard MediaTool.available(for: "movieRecorder") else { return }
        let movie = try compatScratch("movie.mov")
        let result = try runCompatApp("movie-recorder", [movie.path, "2"])
        try #require(result.status == 0, "\(result.error)")
        #expect(result.outputText.contains("session running: true"), "\(result.outputText)")
        let report = try FFprobeReport(movie)
        let video = try #require(report.stream("video"))
        let audio = try #require(report.stream("audio"))
        #expect(video["codec_name"] as? String == "h264")
        #expect(video["width"] as? Int == 640 && video["height"] as? Int == 480)
        #expect(audio["codec_name"] as? String == "aac")
        let duration = try #require(FFprobeReport.number(report.format["duration"]))
        #expect(abs(duration - 2) < 0.15, "maxRecordedDuration 2 s, the file lasts \(duration) s")
        #expect(try ffmpegDecodeErrors(movie) == "")
        let frames = try virtualFrameIndices(movie).indices
        #expect((55...61).contains(frames.count), "\(frames.count) frames in 2 s at 30 fps")
        let read = frames.compactMap { $0 }
        #expect(read.count >= frames.count - 3, "only the whole seconds' flash frames lack a code: \(frames)")
        #expect(isIncreasing(read), "\(read)")
        #expect(abs(try dominantFrequency(of: movie) - 440) < 5, "the virtual microphone's 440 Hz tone")
    }

    @Test("frame-grabber saves the first frames, turned to portrait, each a later frame than the one before")
    func frameGrabber() throws {
        guard MediaTool.available(for: "frameGrabber") else { return }
        let directory = try compatScratch("frames")
        let result = try runCompatApp("frame-grabber", [directory.path, "6"])
        try #require(result.status == 0, "\(result.error)")
        var indices: [Int] = []
        for number in 0..<6 {
            let picture = directory.appendingPathComponent(String(format: "frame-%03d.ppm", number))
            // Portrait: taller than wide; turned back a quarter anticlockwise, the index code reads again.
            let (read, width, height) = try virtualFrameIndices(picture, filter: "transpose=2")
            #expect(width > height, "the saved frame is \(height) wide and \(width) high: not portrait")
            try #require(read.count == 1)
            if let index = read[0] { indices.append(index) }
        }
        #expect(indices.count >= 5, "at most one flash frame among six: \(indices)")
        #expect(isIncreasing(indices), "\(indices)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("frame-006.ppm").path))
    }

    @Test("writer-recorder writes an MPEG-4 file ffmpeg decodes cleanly: 720p H.264 from frame 0, AAC with the tone")
    func writerRecorder() throws {
        guard MediaTool.available(for: "writerRecorder") else { return }
        let movie = try compatScratch("writer.mp4")
        let result = try runCompatApp("writer-recorder", [movie.path, "2"])
        try #require(result.status == 0, "\(result.error)")
        let report = try FFprobeReport(movie)
        let video = try #require(report.stream("video"))
        #expect(video["codec_name"] as? String == "h264")
        #expect(video["width"] as? Int == 1280 && video["height"] as? Int == 720)
        #expect(report.stream("audio")?["codec_name"] as? String == "aac")
        #expect(report.format["format_name"] as? String == "mov,mp4,m4a,3gp,3g2,mj2")
        let duration = try #require(FFprobeReport.number(video["duration"]))
        #expect(abs(duration - 2) < 0.1, "two seconds of video from the first frame, got \(duration) s")
        #expect(try ffmpegDecodeErrors(movie) == "")
        let frames = try virtualFrameIndices(movie).indices
        let read = frames.compactMap { $0 }
        #expect(isIncreasing(read), "\(read)")
        #expect(read.first.map { $0 <= 2 } == true, "the writer starts at the camera's first frames: \(read.prefix(3))")
        // Every frame the app appended is in the file. How many it appended depends on the machine's load (the app
        // skips a frame the writer is not ready for, as apps do); the floor only catches a recorder that stalls.
        let appended = try #require(
            result.outputText.split(separator: "\n").last { $0.hasPrefix("appended ") }
                .flatMap { Int($0.split(separator: " ")[1]) }, "\(result.outputText)")
        #expect(frames.count == appended, "\(frames.count) frames in the file, \(appended) appended")
        #expect(appended >= 30, "\(appended) of 60 frames appended")
        #expect(abs(try dominantFrequency(of: movie) - 440) < 5)
    }

    @Test(
        "photo-taker writes a JPEG and a HEIF exiftool reads, with the location the app attached",
        arguments: ["jpg", "heic"])
    func photoTaker(_ fileExtension: String) throws {
        guard MediaTool.available([.exiftool], for: "photoTaker") else { return }
        let photo = try compatScratch("photo." + fileExtension)
        let result = try runCompatApp("photo-taker", [photo.path])
        try #require(result.status == 0, "\(result.error)")
        let exif = try ExifToolReport(photo)
        #expect(exif.warnings.isEmpty, "\(exif.warnings)")
        #expect(exif.string("File", "FileType") == (fileExtension == "jpg" ? "JPEG" : "HEIC"))
        let latitude = try #require(exif.number("Composite", "GPSLatitude"))
        let longitude = try #require(exif.number("Composite", "GPSLongitude"))
        #expect(abs(latitude - 48.8584) < 0.0001 && abs(longitude - 2.2945) < 0.0001)
        #expect(exif.string("IFD0", "Make") != nil, "the camera's make in the EXIF")
        let printed = try #require(result.outputText.split(separator: " ").dropFirst().first)
        let width = try #require(exif.number("File", "ImageWidth") ?? exif.number("Composite", "ImageWidth"))
        #expect(printed.hasPrefix("\(Int(width))x"), "resolved \(printed), the file is \(width) wide")
    }

    @Test("audio-recorder writes AAC at 44.1 kHz mono as long as its maximum duration, with the microphone's tone")
    func audioRecorder() throws {
        guard MediaTool.available(for: "audioRecorder") else { return }
        let file = try compatScratch("memo.m4a")
        let result = try runCompatApp("audio-recorder", [file.path, "2"])
        try #require(result.status == 0, "\(result.error)")
        let report = try FFprobeReport(file)
        let audio = try #require(report.stream("audio"))
        #expect(report.stream("video") == nil)
        #expect(audio["codec_name"] as? String == "aac")
        #expect(audio["sample_rate"] as? String == "44100" && audio["channels"] as? Int == 1)
        let duration = try #require(FFprobeReport.number(report.format["duration"]))
        #expect(abs(duration - 2) < 0.1, "\(duration) s")
        #expect(try ffmpegDecodeErrors(file) == "")
        #expect(abs(try dominantFrequency(of: file) - 440) < 5)
    }

    @Test("multicam-pip records both cameras picture-in-picture through AVAssetWriter: each one's frames in order")
    func multiCamPictureInPicture() throws {
        guard MediaTool.available(for: "multiCamPictureInPicture") else { return }
        let movie = try compatScratch("pip.mov")
        let result = try runCompatApp("multicam-pip", [movie.path, "2"])
        try #require(result.status == 0, "\(result.error)")
        let printed = try #require(try lastJSONLine(of: result) as? [String: Any])
        let cost = try #require(printed["hardwareCost"] as? Double)
        #expect(cost > 0 && cost <= 1, "hardwareCost \(cost)")
        let report = try FFprobeReport(movie)
        let video = try #require(report.stream("video"))
        #expect(video["codec_name"] as? String == "h264")
        #expect(video["width"] as? Int == 640 && video["height"] as? Int == 480)
        #expect(report.stream("audio")?["codec_name"] as? String == "aac")
        let duration = try #require(FFprobeReport.number(video["duration"]))
        // Two seconds of the back camera's time, less the last pictures when the writer was not ready for them (the
        // sample drops those; on a loaded machine they can be the last few hundred milliseconds).
        #expect(duration > 1 && duration < 2 + 0.05, "two seconds of the back camera's time at most, got \(duration) s")
        #expect(try ffmpegDecodeErrors(movie) == "")
        // The whole picture carries the back camera's code; its bottom-right quarter, scaled back up, the front's.
        let back = try virtualFrameIndices(movie).indices
        let front = try virtualFrameIndices(movie, filter: "crop=320:240:320:240,scale=640:480:flags=neighbor").indices
        let composed = try #require(printed["composed"] as? Int)
        #expect(back.count == composed && front.count == back.count, "\(back.count) pictures, \(composed) composed")
        let (backRead, frontRead) = (back.compactMap { $0 }, front.compactMap { $0 })
        // Each second's flash frame carries no code: the back one in one picture, the front one in each picture
        // drawn before the next front frame came (one or two).
        #expect(backRead.count >= back.count - 3 && frontRead.count >= front.count - 6, "\(back) \(front)")
        #expect(isIncreasing(backRead), "back \(backRead)")
        // The newest front picture goes into each one: never older than the one before, moving with the back
        // camera's (a front picture that froze would fall further behind with every picture). The program runs on
        // the devices' real time: on a loaded machine the cameras start a few frames apart and either one's frames
        // can stall a third of a second and catch up, so the offset between the two codes of a picture stays within
        // a third of a second of its median, and the median within a third of a second of none.
        #expect(zip(frontRead, frontRead.dropFirst()).allSatisfy { $0 <= $1 }, "front \(frontRead)")
        #expect((frontRead.last ?? 0) - (frontRead.first ?? 0) >= (backRead.last ?? 0) - (backRead.first ?? 0) - 10)
        let offsets = zip(back, front).compactMap { pair -> Int? in pair.0.flatMap { b in pair.1.map { b - $0 } } }
        let median = offsets.sorted()[offsets.count / 2]
        #expect(abs(median) <= 10, "back − front per picture: \(offsets)")
        #expect(offsets.allSatisfy { abs($0 - median) <= 10 }, "back − front per picture: \(offsets)")
    }
}
