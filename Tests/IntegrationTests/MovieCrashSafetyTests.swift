import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import TestSupport
import Testing

/// Whether the long versions run (`make soak` sets `OPENAV_SOAK=1`).
let isSoak = ProcessInfo.processInfo.environment["OPENAV_SOAK"] == "1"

/// Crash safety of `AVCaptureMovieFileOutput`: a recording process killed with SIGKILL at a random instant leaves
/// a movie that decodes cleanly and holds at least (recorded time − one fragment interval − one key frame
/// interval). Five kills between 1.5 and 3 s of recording in `make test`; twenty between 1.5 and 20 s in `make soak`.
/// (Before 1.5 s the first fragment, cut at the first key frame after 1 s, may not be on disk yet: a file with no
/// fragment holds nothing to play, which the promise allows.)
@Suite(.serialized) struct MovieCrashSafetyTests {
    static let directory = NSTemporaryDirectory() + "openav-crash-safety"

    @Test(arguments: 0..<(isSoak ? 20 : 5))
    func aKilledRecordingLeavesADecodableMovie(run: Int) async throws {
        guard MediaTool.available(for: "aKilledRecordingLeavesADecodableMovie") else { return }
        let directory = Self.directory + "-\(getpid())-\(run)"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let movie = directory + "/killed.mov"
        let elapsed = directory + "/elapsed"
        let latest = isSoak ? 20.0 : 3.0
        await #expect(processExitsWith: .signal(SIGKILL)) {
            [movie = movie as String, elapsed = elapsed as String, latest = latest as Double] in
            try? CrashingRecorder.recordThenDie(
                to: URL(fileURLWithPath: movie), elapsedFile: elapsed, at: Double.random(in: 1.5...latest))
        }
        let recorded = try #require(Double(String(contentsOfFile: elapsed, encoding: .utf8)))
        let url = URL(fileURLWithPath: movie)
        let report = try FFprobeReport(url)
        let video = try #require(report.stream("video"))
        let duration = try #require(
            FFprobeReport.number(video["duration"]) ?? FFprobeReport.number(report.format["duration"]))
        // Measured against what the recording had taken when it died (its own progress, not the wall clock, which
        // a loaded machine outruns): one fragment interval (1 s) plus one key frame interval (1 s) may be lost, and
        // the frames still waiting for the encoder (at most 8).
        print("kill \(run): \(recorded) s recorded, \(duration) s in the file")
        #expect(
            duration >= recorded - 2.0 - 8.0 / 30,
            "\(recorded) s were recorded before the kill; the file holds \(duration) s")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
    }

    @Test("SIGKILL during the final fast-start rewrite leaves the complete fragmented movie")
    func aKillDuringTheRewriteKeepsTheFragmentedMovie() async throws {
        guard MediaTool.available(for: "aKillDuringTheRewriteKeepsTheFragmentedMovie") else { return }
        let directory = Self.directory + "-\(getpid())-rewrite"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let movie = directory + "/rewritten.mov"
        let elapsed = directory + "/elapsed"
        await #expect(processExitsWith: .signal(SIGKILL)) { [movie = movie as String, elapsed = elapsed as String] in
            try? CrashingRecorder.recordThenDieInTheRewrite(to: URL(fileURLWithPath: movie), elapsedFile: elapsed)
        }
        let recorded = try #require(Double(String(contentsOfFile: elapsed, encoding: .utf8)))
        let url = URL(fileURLWithPath: movie)
        #expect(try isFragmentedMovie(url), "the file at the URL is not the fragmented movie")
        let duration = try #require(FFprobeReport.number(try FFprobeReport(url).format["duration"]))
        // The trailer was written and synced before the rewrite began: nothing is lost.
        #expect(duration >= recorded - 0.1, "\(recorded) s were recorded; the file holds \(duration) s")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
    }
}

/// The child process's side: record with 1 s fragments for 2.5 s and a random part of 1.5 s more, note how much was
/// recorded, then die.
enum CrashingRecorder {
    final class StartWatcher: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
        let started = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        func fileOutput(
            _ output: AVCaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [AVCaptureConnection]
        ) {
            started.signal()
        }
        func fileOutput(
            _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL,
            from connections: [AVCaptureConnection],
            error: (any Error)?
        ) {
            finished.signal()
        }
    }

    /// Records to `url` until `seconds` of the recording's own progress, notes them in `elapsedFile`, and dies.
    static func recordThenDie(to url: URL, elapsedFile: String, at seconds: Double) throws {
        let output = try startRecording(to: url)
        _ = waitUntil(timeout: seconds * 3 + 30) { output.recordedDuration.seconds >= seconds }
        try String(output.recordedDuration.seconds).write(toFile: elapsedFile, atomically: true, encoding: .utf8)
        raise(SIGKILL)
    }

    /// Records 2 s to `url`, stops, and dies after the rewrite has copied a random number of packets.
    static func recordThenDieInTheRewrite(to url: URL, elapsedFile: String) throws {
        let output = try startRecording(to: url)
        _ = waitUntil(timeout: 60) { output.recordedDuration.seconds >= 2 }
        let victim = Int.random(in: 1...60)
        WriterStorageFaults.duringRewrite { _, packets in
            if packets == victim { raise(SIGKILL) }
        }
        try String(output.recordedDuration.seconds).write(toFile: elapsedFile, atomically: true, encoding: .utf8)
        output.stopRecording()
        // The rewrite kills the process before the recording can finish; a finish (or none in 30 s) is a failure.
        _ = (kept.last as? StartWatcher)?.finished.wait(timeout: .now() + 30)
        exit(4)
    }

    /// The child's session and delegate, alive until the process dies.
    nonisolated(unsafe) private static var kept: [AnyObject] = []

    /// A session on the virtual camera and microphone recording to `url` with 1 s fragments, once it started.
    private static func startRecording(to url: URL) throws -> AVCaptureMovieFileOutput {
        let session = AVCaptureSession()
        session.beginConfiguration()
        session.sessionPreset = .qvga320x240
        session.addInput(try AVCaptureDeviceInput(device: AVCaptureDevice.default(for: .video)!))
        session.addInput(try AVCaptureDeviceInput(device: AVCaptureDevice.default(for: .audio)!))
        let output = AVCaptureMovieFileOutput()
        output.movieFragmentInterval = CMTime(value: 1, timescale: 1)
        session.addOutput(output)
        session.commitConfiguration()
        session.startRunning()
        let watcher = StartWatcher()
        output.startRecording(to: url, recordingDelegate: watcher)
        guard watcher.started.wait(timeout: .now() + 5) == .success else { exit(3) }
        kept = [session, watcher]
        return output
    }
}
