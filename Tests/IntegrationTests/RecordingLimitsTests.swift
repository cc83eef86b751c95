// maxRecordedFileSize and minFreeDiskSpaceLimit hold on the finished file, close to the limit, at a low and a high
// bit rate; and a recording that fails leaves no debris: no file before any media, the playable part after.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import TestSupport
import Testing

/// A 30 fps Motion JPEG clip of moving noise (4 s, 640x480 unless asked smaller), made once per process and size with
/// ffmpeg: a webcam's stream.
/// Encoded, it spends whatever bit rate it is given, as a busy camera's picture does; the virtual camera's picture
/// compresses to a fraction of a megabit whatever the setting. (Not H.264: a camera's H.264 goes into the movie as
/// it comes, at the camera's own rate.)
func noisyClip(width: Int = 640, height: Int = 480) throws -> URL {
    let directory = NSTemporaryDirectory() + "recording-limits-\(getpid())"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let url = URL(fileURLWithPath: directory + "/noise-\(width)x\(height).mov")
    if FileManager.default.fileExists(atPath: url.path) { return url }
    let result = try MediaTool.ffmpeg.run([
        "-nostdin", "-v", "error", "-f", "lavfi", "-i",
        "testsrc2=size=\(width)x\(height):rate=30,noise=alls=40:allf=t+u",
        "-t", "4", "-c:v", "mjpeg", "-q:v", "3", "-pix_fmt", "yuvj422p", url.path + ".part.mov",
    ])
    try #require(result.status == 0, "ffmpeg could not make the clip: \(result.error)")
    try FileManager.default.moveItem(atPath: url.path + ".part.mov", toPath: url.path)
    return url
}

/// The files in `directory` whose names start with `name` or `.name` (a hidden sibling of the movie's).
func siblings(of url: URL) -> [String] {
    let name = url.lastPathComponent
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)) ?? []
    return entries.filter { $0 != name && ($0.hasPrefix(name) || $0.hasPrefix("." + name)) }
}

func fileSize(_ url: URL) -> Int64? {
    (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value
}

/// Records the noisy clip, looped, into `output` (video only, H.264 at `bitRate`, a key frame a second) until the
/// recording ends by itself; returns the delegate after `didFinish`. Free running (the default) reads the clip as
/// fast as it decodes: the output drops the frames the encoder cannot take, and the frames after a gap are larger.
func recordNoise(
    _ output: AVCaptureMovieFileOutput, bitRate: Int, to url: URL, clock: VirtualDeviceClockMode = .freeRunning,
    timeout: TimeInterval = 120, width: Int = 640, height: Int = 480
) throws -> MovieRecordingDelegate {
    let movie = try MovieFileDevice(url: try noisyClip(width: width, height: height), loop: true, clock: clock)
    let session = AVCaptureSession()
    session.beginConfiguration()
    session.sessionPreset = .inputPriority
    session.addInput(try AVCaptureDeviceInput(device: try #require(movie.camera)))
    try #require(session.canAddOutput(output))
    session.addOutput(output)
    session.commitConfiguration()
    let connection = try #require(output.connection(with: .video))
    output.setOutputSettings(
        [
            AVVideoCodecKey: AVVideoCodecType.h264,
            AVVideoCompressionPropertiesKey: [AVVideoAverageBitRateKey: bitRate, AVVideoMaxKeyFrameIntervalKey: 30],
        ], for: connection)
    session.startRunning()
    defer { session.stopRunning() }
    let delegate = MovieRecordingDelegate()
    output.startRecording(to: url, recordingDelegate: delegate)
    try #require(delegate.waitForFinish(timeout: timeout), "didFinish never came")
    return delegate
}

/// The video's bit rate as ffprobe reads it from the file.
func probedVideoBitRate(_ url: URL) throws -> Double {
    let video = try #require(try FFprobeReport(url).stream("video"))
    return try #require(FFprobeReport.number(video["bit_rate"]))
}

@Suite("Recording limits hold on the finished file", .serialized)
struct RecordingLimitsTests {
    @Test(
        "maxRecordedFileSize: the finished file is within the limit and at least 90 % of it",
        arguments: [500_000, 10_000_000], [300_000, 1_000_000, 5_000_000] as [Int64])
    func maxFileSize(bitRate: Int, limit: Int64) throws {
        guard MediaTool.available(for: "RecordingLimitsTests.maxFileSize") else { return }
        let url = try scratchURL("limit-\(bitRate)-\(limit).mov", suite: "recording-limits")
        let output = AVCaptureMovieFileOutput()
        output.maxRecordedFileSize = limit
        // At 10 Mb/s a frame is 40 kB, a large share of the 10 % margin: in real time no frame is dropped, so none
        // grows to cover a gap. At 0.5 Mb/s frames are small whatever happens, and free running saves 80 s.
        // Noise at 320x240 still takes 0.5 Mb/s, and is a quarter of the work: 5 MB is 80 s of media, which took
        // 156 s at 640x480 on a loaded machine. The wait only bounds a failure: three times the media the limit holds
        // and never under two minutes.
        let isLow = bitRate <= 1_000_000
        let delegate = try recordNoise(
            output, bitRate: bitRate, to: url, clock: isLow ? .freeRunning : .realTime,
            timeout: max(120, 3 * Double(limit) * 8 / Double(bitRate)), width: isLow ? 320 : 640,
            height: isLow ? 240 : 480)
        #expect(delegate.avError?.code == .maximumFileSizeReached, "\(String(describing: delegate.error))")
        #expect(delegate.successfullyFinished == true)
        let size = try #require(fileSize(url))
        let rate = try probedVideoBitRate(url)
        print(
            "maxRecordedFileSize \(limit) at \(bitRate) b/s: \(size) B (\(size * 100 / limit) %), video \(Int(rate)) b/s"
        )
        #expect(size <= limit, "\(size) B is over the limit of \(limit)")
        let duration = try #require(FFprobeReport.number(try FFprobeReport(url).format["duration"]))
        if duration >= 2 {
            // The content really is at the rate (x264 keeps its average within a few tens of percent once its
            // first frames, which take more, are a small part), counted over the frames the file holds: free
            // running, the output drops what the encoder cannot take, and on a loaded machine that left half the
            // timeline empty (236 kb/s over the duration).
            let video = try #require(try FFprobeReport(url).stream("video"))
            let frames = try #require(FFprobeReport.number(video["nb_frames"]))
            let videoDuration = try #require(FFprobeReport.number(video["duration"]))
            let perFrame = rate * videoDuration / (frames / 30)
            #expect(
                perFrame > Double(bitRate) * 0.6 && perFrame < Double(bitRate) * 1.5,
                "the video runs at \(perFrame) b/s over its \(Int(frames)) frames (\(rate) b/s over its duration)")
        }
        // Even a limit of less than a second of the rate (300 kB at 10 Mb/s): the encoder's rate control starts with
        // a nearly empty buffer, so the first frames are near the average and the file fills the limit.
        #expect(size * 10 >= limit * 9, "\(size) B is under 90 % of \(limit)")
        #expect(output.recordedFileSize <= limit)
        #expect(try ffmpegDecodeErrors(url) == "")
        #expect(siblings(of: url).isEmpty, "left beside the movie: \(siblings(of: url))")
    }

    @Test(
        "minFreeDiskSpaceLimit: the recording stops with the volume still holding the limit, the file near all that fits"
    )
    func minFreeDiskSpace() throws {
        guard MediaTool.available(for: "RecordingLimitsTests.minFreeDiskSpace"),
            let disk = SmallFileSystem(megabytes: 16, for: "RecordingLimitsTests.minFreeDiskSpace")
        else { return }
        defer { disk.unmount() }
        let keep: Int64 = 6 << 20
        let url = URL(fileURLWithPath: disk.path + "/kept-free.mov")
        let fits = disk.freeBytes - keep
        let output = AVCaptureMovieFileOutput()
        output.minFreeDiskSpaceLimit = keep
        output.movieFragmentInterval = CMTime(value: 1, timescale: 1)
        let delegate = try recordNoise(output, bitRate: 10_000_000, to: url)
        #expect(delegate.avError?.code == .diskFull, "\(String(describing: delegate.error))")
        #expect(delegate.successfullyFinished == true)
        let size = try #require(fileSize(url))
        print(
            "minFreeDiskSpaceLimit \(keep) on \(fits + keep) B free: \(size) B of the \(fits) that fit, \(disk.freeBytes) B free after"
        )
        #expect(disk.freeBytes >= keep, "the volume kept \(disk.freeBytes) B, less than the limit")
        #expect(size <= fits && size * 10 >= fits * 9, "\(size) B of the \(fits) that fit")
        #expect(try ffmpegDecodeErrors(url) == "")
        #expect(siblings(of: url).isEmpty, "left beside the movie: \(siblings(of: url))")
    }
}

@Suite("A failed recording leaves no debris", .serialized)
struct RecordingDebrisTests {
    @Test("AVAssetWriter on a full disk: the first fragment cannot be written, the writer fails, no file is left")
    func writerFailsBeforeMedia() throws {
        guard let disk = SmallFileSystem(megabytes: 4, for: "RecordingDebrisTests.writerFailsBeforeMedia") else {
            return
        }
        defer { disk.unmount() }
        try disk.fill(leaving: 0)
        let url = URL(fileURLWithPath: disk.path + "/no-room.mov")
        let status = try writeNoise(to: url, seconds: 3)
        #expect(status == .failed)
        #expect(!FileManager.default.fileExists(atPath: url.path), "a file with no media was left")
        #expect(siblings(of: url).isEmpty, "left beside the movie: \(siblings(of: url))")
    }

    @Test("AVAssetWriter whose disk fills up mid-movie fails, leaving its complete fragments, readable to the end")
    func writerFailsLater() throws {
        guard MediaTool.available(for: "RecordingDebrisTests.writerFailsLater"),
            let disk = SmallFileSystem(megabytes: 4, for: "RecordingDebrisTests.writerFailsLater")
        else { return }
        defer { disk.unmount() }
        // Room for two or three 1 s fragments at 2 Mb/s (about 250 kB each), not for 6 s.
        try disk.fill(leaving: 700 << 10)
        let url = URL(fileURLWithPath: disk.path + "/filled-up.mov")
        let status = try writeNoise(to: url, seconds: 6)
        #expect(status == .failed)
        #expect(try ffmpegDecodeErrors(url) == "", "the file is not cut at a fragment's end")
        let duration = try #require(FFprobeReport.number(try FFprobeReport(url).format["duration"]))
        #expect(duration >= 1 && duration < 6, "the file holds \(duration) s")
        #expect(siblings(of: url).isEmpty, "left beside the movie: \(siblings(of: url))")
    }

    @Test("A recording on a full disk ends before any media: diskFull, not finished, no file")
    func fullDiskBeforeMedia() throws {
        guard MediaTool.available(for: "RecordingDebrisTests.fullDiskBeforeMedia"),
            let disk = SmallFileSystem(megabytes: 4, for: "RecordingDebrisTests.fullDiskBeforeMedia")
        else { return }
        defer { disk.unmount() }
        try disk.fill(leaving: 64 << 10)
        let url = URL(fileURLWithPath: disk.path + "/full.mov")
        let output = AVCaptureMovieFileOutput()
        let delegate = try recordNoise(output, bitRate: 1_000_000, to: url, timeout: 30)
        #expect(delegate.avError?.code == .diskFull, "\(String(describing: delegate.error))")
        #expect(delegate.successfullyFinished == false)
        #expect(!FileManager.default.fileExists(atPath: url.path), "a file with no media was left")
        #expect(siblings(of: url).isEmpty, "left beside the movie: \(siblings(of: url))")
    }

    /// Writes `seconds` of 320x240 noise at 30 fps as H.264 at 2 Mb/s with 1 s fragments through AVAssetWriter
    /// until done or the writer fails; returns its status after finishing.
    private func writeNoise(to url: URL, seconds: Int) throws -> AVAssetWriter.Status {
        let writer = try AVAssetWriter(outputURL: url, fileType: .mov)
        writer.movieFragmentInterval = CMTime(value: 1, timescale: 1)
        let input = AVAssetWriterInput(
            mediaType: .video,
            outputSettings: [
                AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: 320, AVVideoHeightKey: 240,
                AVVideoCompressionPropertiesKey: [
                    AVVideoAverageBitRateKey: 2_000_000, AVVideoMaxKeyFrameIntervalKey: 30,
                ],
            ])
        let adaptor = AVAssetWriterInputPixelBufferAdaptor(assetWriterInput: input, sourcePixelBufferAttributes: nil)
        writer.add(input)
        try #require(writer.startWriting())
        writer.startSession(atSourceTime: .zero)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for index in 0..<seconds * 30 {
            var created: CVPixelBuffer?
            CVPixelBufferCreate(nil, 320, 240, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &created)
            let frame = try #require(created)
            frame.withLockedPlanes { planes in
                for plane in planes {
                    let words = plane.bytes.bindMemory(to: UInt64.self)
                    for word in words.indices {
                        state ^= state << 13
                        state ^= state >> 7
                        state ^= state << 17
                        words[word] = state
                    }
                }
            }
            #expect(waitUntil { input.isReadyForMoreMediaData || writer.status != .writing })
            guard writer.status == .writing,
                adaptor.append(frame, withPresentationTime: CMTime(value: Int64(index), timescale: 30))
            else { break }
        }
        if writer.status == .writing { input.markAsFinished() }
        let finished = DispatchSemaphore(value: 0)
        writer.finishWriting { finished.signal() }
        #expect(finished.wait(timeout: .now() + 30) == .success)
        return writer.status
    }
}

@Suite(
    "avcapture record within limits and without debris", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests"))
struct RecordingLimitsToolTests {
    private func avcapture(_ arguments: [String]) throws -> ToolResult {
        var environment = ProcessInfo.processInfo.environment
        environment["OPENAV_DEVICES"] = "virtual"
        return try ToolResult.run(executable: toolPath!, arguments, environment: environment)
    }

    @Test("--max-size 300000 on a file source: exit 0, stopped at the limit, the movie within it and near it")
    func maxSize() throws {
        guard MediaTool.available(for: "RecordingLimitsToolTests.maxSize") else { return }
        let url = try scratchURL("tool-limit.mov", suite: "recording-limits")
        let result = try avcapture([
            "record", url.path, "--video", "file:" + (try noisyClip()).path, "--audio", "none", "--max-size", "300000",
        ])
        #expect(result.status == 0, "\(result.error)")
        #expect(String(decoding: result.output, as: UTF8.self).contains("stopped: reached --max-size"))
        let size = try #require(fileSize(url))
        #expect(size <= 300_000 && size >= 270_000, "\(size) B")
        #expect(try ffmpegDecodeErrors(url) == "")
        #expect(siblings(of: url).isEmpty, "left beside the movie: \(siblings(of: url))")
    }

    @Test("On a full disk: the recording fails before any media, exit 74, no file and no sibling")
    func fullDisk() throws {
        guard let disk = SmallFileSystem(megabytes: 4, for: "RecordingLimitsToolTests.fullDisk") else { return }
        defer { disk.unmount() }
        try disk.fill(leaving: 64 << 10)
        let url = URL(fileURLWithPath: disk.path + "/full.mov")
        let result = try avcapture(["record", url.path, "--video", "virtual", "--audio", "none", "--duration", "5"])
        #expect(result.status == 74, "exit \(result.status): \(result.error)")
        #expect(result.error.contains("disk"), "\(result.error)")
        #expect(!FileManager.default.fileExists(atPath: url.path), "a file with no media was left")
        #expect(siblings(of: url).isEmpty, "left beside the movie: \(siblings(of: url))")
    }
}
