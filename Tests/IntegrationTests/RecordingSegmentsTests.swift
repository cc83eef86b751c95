// Gapless segments (beyond Apple), proven without tolerance on a movie file source: its frames carry their index
// (the virtual camera's code) and its sound is noise stored as PCM, so every frame and every sample is its own
// witness. Each segment is read back alone by ffprobe and ffmpeg.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing
import TestSupport

/// Hears every segment of a series; `waitForSeries` returns once the series is complete.
final class SegmentSeriesDelegate: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
    let segments: AVCaptureRecordingSegments
    private let log = Mutex<[(event: String, file: String, error: (any Error)?)]>([])
    private let complete = DispatchSemaphore(value: 0)

    init(_ segments: AVCaptureRecordingSegments) { self.segments = segments }

    var events: [(event: String, file: String, error: (any Error)?)] { log.withLock { $0 } }
    var finishErrors: [(any Error)?] { events.filter { $0.event == "didFinish" }.map(\.error) }

    func fileOutput(
        _ output: AVCaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [AVCaptureConnection]
    ) {
        log.withLock { $0.append(("didStart", fileURL.lastPathComponent, nil)) }
    }

    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?
    ) {
        log.withLock { $0.append(("didFinish", outputFileURL.lastPathComponent, error)) }
        if segments.isComplete { complete.signal() }
    }

    func waitForSeries(timeout: TimeInterval = 30) -> Bool { complete.wait(timeout: .now() + timeout) == .success }
}

/// Whether the first video frame ffprobe reads from `url` is a key frame.
func firstFrameIsKey(_ url: URL) throws -> Bool {
    let result = try MediaTool.ffprobe.run([
        "-v", "error", "-select_streams", "v:0", "-read_intervals", "%+#1", "-show_entries", "frame=key_frame",
        "-of", "csv=p=0", url.path,
    ])
    // "1," or "1,I,": the key_frame field first.
    return result.outputText.split(separator: "\n").first?.split(separator: ",").first == "1"
}

@Suite("Gapless segments: every frame and sample in exactly one file, each file playing alone", .serialized)
struct RecordingSegmentsTests {
    @Test("Cut every second: 30 frames each, consecutive across files, audio cut at the frame to the sample")
    func durationCuts() async throws {
        guard MediaTool.available(for: "RecordingSegmentsTests.durationCuts") else { return }
        let source = try await EdgeSource.make("segments-duration", frames: 120)
        let recording = try EdgeRecording(source, pcm: true)
        let directory = try scratchURL("duration-cuts", suite: "segments-tests")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let segments = AVCaptureRecordingSegments(
            pattern: directory.path + "/cam-%Y%m%d-%H%M%S.mov", duration: CMTime(value: 1, timescale: 1))
        let delegate = SegmentSeriesDelegate(segments)
        recording.output.startRecording(segments: segments, recordingDelegate: delegate)
        recording.session.startRunning()
        #expect(delegate.waitForSeries(), "the series never completed: \(delegate.events.map(\.event))")
        recording.session.stopRunning()

        let files = segments.finishedFiles
        #expect(files.count == 4, "\(files.map(\.lastPathComponent))")
        #expect(segments.keptFiles == files && segments.removedFiles.isEmpty)
        // Names: strftime filled in, unique (four segments within a few seconds share names: -2, -3 …).
        #expect(Set(files.map(\.path)).count == files.count)
        #expect(files.allSatisfy { $0.lastPathComponent.wholeMatch(of: /cam-\d{8}-\d{6}(-\d+)?\.mov/) != nil })
        // Each segment but the last ended normally; the last at the end of the input.
        let errors = delegate.finishErrors
        #expect(errors.dropLast().allSatisfy { $0 == nil }, "\(errors)")
        #expect((errors.last as? AVError)?.code == .deviceWasDisconnected, "\(String(describing: errors.last))")

        var nextFrame = 0
        var allSamples: [Int16] = []
        for (position, file) in files.enumerated() {
            let frames = try #require(try consecutiveFrames(file, file.lastPathComponent))
            #expect(frames.lowerBound == nextFrame, "\(file.lastPathComponent): \(frames), expected from \(nextFrame)")
            #expect(frames.count == 30, "\(file.lastPathComponent): \(frames.count) frames")
            nextFrame = frames.upperBound
            #expect(try firstFrameIsKey(file), "\(file.lastPathComponent) does not start on a key frame")
            #expect(try ffmpegDecodeErrors(file).isEmpty, "\(file.lastPathComponent) does not decode alone")
            let samples = try decodedSamples(file)
            // The sound of a segment is the sound of its frames: 1,600 samples (48 kHz / 30 fps) per frame.
            if position < files.count - 1 {
                #expect(samples.count == frames.count * 1600, "\(file.lastPathComponent): \(samples.count) samples")
            }
            allSamples += samples
        }
        #expect(nextFrame == source.frames, "the frames end at \(nextFrame) of \(source.frames)")
        let agreeing = matchingRun(allSamples[...], source.samples, from: 0)
        let statistics = recording.output.recordingStatistics
        #expect(
            agreeing == source.samples.count && allSamples.count == agreeing,
            "\(allSamples.count) samples in the segments, the first \(agreeing) agree, of \(source.samples.count); \(statistics)")
    }

    @Test("Cut by size, keeping the newest two: old files deleted, the kept ones consecutive and each over the size")
    func sizeCutsAndPruning() async throws {
        guard MediaTool.available(for: "RecordingSegmentsTests.sizeCutsAndPruning") else { return }
        let source = try await EdgeSource.make("segments-size", frames: 150)
        let recording = try EdgeRecording(source, pcm: true)
        let directory = try scratchURL("size-cuts", suite: "segments-tests")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let size: Int64 = 60_000
        let segments = AVCaptureRecordingSegments(pattern: directory.path + "/part.mov", maxFileSize: size, keepCount: 2)
        let delegate = SegmentSeriesDelegate(segments)
        recording.output.startRecording(segments: segments, recordingDelegate: delegate)
        recording.session.startRunning()
        #expect(delegate.waitForSeries(), "the series never completed: \(delegate.events.map(\.event))")
        recording.session.stopRunning()

        let files = segments.finishedFiles
        #expect(files.count >= 3, "\(files.map(\.lastPathComponent))")
        #expect(files.first?.lastPathComponent == "part.mov" && files.dropFirst().first?.lastPathComponent == "part-2.mov")
        #expect(segments.removedFiles == Array(files.dropLast(2)), "removed \(segments.removedFiles)")
        #expect(segments.keptFiles == Array(files.suffix(2)))
        for removed in segments.removedFiles {
            #expect(!FileManager.default.fileExists(atPath: removed.path), "\(removed.lastPathComponent) is still there")
        }
        let kept = segments.keptFiles
        try #require(kept.count == 2)
        let first = try #require(try consecutiveFrames(kept[0], "kept 1"))
        let second = try #require(try consecutiveFrames(kept[1], "kept 2"))
        #expect(second.lowerBound == first.upperBound, "\(first) then \(second)")
        #expect(second.upperBound == source.frames, "\(second)")
        let bytes = try FileManager.default.attributesOfItem(atPath: kept[0].path)[.size] as? Int64 ?? 0
        #expect(bytes >= size, "a segment cut by size holds \(bytes) bytes, less than \(size)")
        for file in kept { #expect(try firstFrameIsKey(file), "\(file.lastPathComponent) does not start on a key frame") }
        let together = try decodedSamples(kept[0]) + decodedSamples(kept[1])
        let start = try #require(exactOffset(of: together[...], in: source.samples), "the kept sound is not the source's")
        #expect(
            start + together.count == source.samples.count,
            "the sound does not run to the source's end: \(recording.output.recordingStatistics)")
        expectEndsTogether(samples: start, frames: first.lowerBound, "kept 1 start")
    }
}

@Suite(
    "Gapless segments through avcapture record", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct RecordingSegmentsToolTests {
    @Test("record 'segs/cam-%H%M%S.mov' --segment-duration 1 --keep 3: the newest three files, consecutive, to the end")
    func segmentDurationAndKeep() async throws {
        guard MediaTool.available(for: "RecordingSegmentsToolTests.segmentDurationAndKeep") else { return }
        let source = try await EdgeSource.make("segments-cli", frames: 150)
        let directory = source.url.deletingLastPathComponent()
        let folder = directory.appendingPathComponent("segs-cli")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let result = try avcapture(
            [
                "record", "segs-cli/cam-%H%M%S.mov", "--video", "file:" + source.url.lastPathComponent,
                "--segment-duration", "1", "--keep", "3",
            ], in: directory, devices: nil)
        #expect(result.status == 0, "\(result.error)")
        #expect(result.outputText.contains("5 segments, 3 kept, 2 removed (--keep); stopped: end of input"), "\(result.outputText)")
        #expect(result.outputText.components(separatedBy: "Wrote ").count - 1 == 5, "\(result.outputText)")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".mov") }
        #expect(files.count == 3, "\(files)")
        // The kept files, in recording order (the names carry the time, -2, -3 … within a second: order by frames).
        var ranges: [Range<Int>] = []
        for name in files {
            let url = folder.appendingPathComponent(name)
            #expect(name.wholeMatch(of: /cam-\d{6}(-\d+)?\.mov/) != nil, "\(name)")
            #expect(try firstFrameIsKey(url), "\(name) does not start on a key frame")
            ranges.append(try #require(try consecutiveFrames(url, name)))
        }
        ranges.sort { $0.lowerBound < $1.lowerBound }
        #expect(ranges.map(\.count) == [30, 30, 30], "\(ranges)")
        #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound }, "\(ranges)")
        #expect(ranges.last?.upperBound == source.frames, "\(ranges)")
    }

    @Test("Segment options that make no sense are refused before any device opens")
    func badSegmentOptions() throws {
        let directory = try scratchURL("bad-options", suite: "segments-tests")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for arguments in [
            ["record", "a.mov", "--keep", "3"], ["record", "a.mov", "--segment-duration", "0"],
            ["record", "a.mov", "--segment-size", "lots"], ["record", "a.wav", "--video", "none", "--segment-duration", "5"],
            ["record", "a.mov", "--segment-duration", "5", "--keep", "-1"],
        ] {
            let result = try avcapture(arguments, in: directory)
            #expect(result.status == 64, "\(arguments): exit \(result.status) \(result.error)")
        }
    }
}
