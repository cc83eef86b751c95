// AVCaptureFileOutputDelegate: every buffer shown to the delegate, and sample-accurate starts and stops.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing
import TestSupport

/// Starts recording at the first video frame whose index is `first` and stops at the one indexed `first + count`,
/// from inside the buffer callback.
final class FrameAccurateRecorder: NSObject, AVCaptureFileOutputDelegate, @unchecked Sendable {
    let sampleAccurate: Bool
    let url: URL
    let first: UInt32
    let count: UInt32
    let recording = MovieRecordingDelegate()
    let seen = Mutex<(video: Int, audio: Int)>((0, 0))

    init(sampleAccurate: Bool, url: URL, first: UInt32, count: UInt32) {
        self.sampleAccurate = sampleAccurate
        self.url = url
        self.first = first
        self.count = count
    }

    func fileOutputShouldProvideSampleAccurateRecordingStart(_ output: AVCaptureFileOutput) -> Bool { sampleAccurate }

    func fileOutput(
        _ output: AVCaptureOutput, didOutputSampleBuffer sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        guard let image = sampleBuffer.imageBuffer else {
            seen.withLock { $0.audio += 1 }
            return
        }
        seen.withLock { $0.video += 1 }
        guard let fileOutput = output as? AVCaptureMovieFileOutput,
            let index = VirtualFrameReader.readFrameIndex(from: image)
        else { return }
        if index == first { fileOutput.startRecording(to: url, recordingDelegate: recording) }
        if index == first + count { fileOutput.stopRecording() }
    }
}

@Suite("AVCaptureFileOutputDelegate", .serialized)
struct FileOutputDelegateTests {
    @Test("A sample-accurate delegate starts and stops a movie at the exact frames it chose")
    func sampleAccurateStartAndStop() throws {
        guard MediaTool.available(for: "FileOutputDelegateTests") else { return }
        let url = try scratchURL("frames-40-to-64.mov", suite: "file-output-delegate")
        let output = AVCaptureMovieFileOutput()
        let recorder = FrameAccurateRecorder(sampleAccurate: true, url: url, first: 40, count: 25)
        output.delegate = recorder
        let session = try makeMovieSession(output)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(recorder.recording.waitForFinish(), "didFinish never came")
        #expect(recorder.recording.error == nil, "\(String(describing: recorder.recording.error))")
        let indices = try decodedFrameIndices(url)
        #expect(indices.count == 25, "\(indices)")
        #expect(indices.first == 40, "\(indices)")
        #expect(indices.compactMap { $0 }.last == 64, "\(indices)")
        #expect(recorder.seen.withLock { $0.audio } > 0)
    }

    @Test("Without sample accuracy the delegate still sees every buffer, and requests apply after it")
    func buffersWithoutSampleAccuracy() throws {
        guard MediaTool.available(for: "FileOutputDelegateTests") else { return }
        let url = try scratchURL("after-40.mov", suite: "file-output-delegate")
        let output = AVCaptureMovieFileOutput()
        let recorder = FrameAccurateRecorder(sampleAccurate: false, url: url, first: 40, count: 20)
        output.delegate = recorder
        let session = try makeMovieSession(output)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(recorder.recording.waitForFinish(), "didFinish never came")
        let indices = try decodedFrameIndices(url).compactMap { $0 }
        // The request made while frame 40 is shown is handled after it: the movie starts at 41 or later.
        #expect((indices.first ?? 0) > 40, "\(indices)")
        #expect(recorder.seen.withLock { $0.video } >= 60)
    }
}
