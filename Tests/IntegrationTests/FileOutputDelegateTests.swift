// AVCaptureFileOutputDelegate: every buffer shown to the delegate, and sample-accurate starts and stops.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing
import TestSupport

/// Starts recording at the first video frame it sees whose index is at least `first` and stops at the first at
/// least `first + count`, from inside the buffer callback; notes the indices it saw from the start on. (A loaded
/// machine can make the output drop a frame, so it does not wait for one exact index.)
final class FrameAccurateRecorder: NSObject, AVCaptureFileOutputDelegate, @unchecked Sendable {
    struct Seen {
        var video = 0
        var audio = 0
        var startIndex: UInt32?
        var stopIndex: UInt32?
        /// The readable indices seen from the start buffer up to, not including, the stop buffer.
        var whileRecording: [UInt32] = []
    }

    let sampleAccurate: Bool
    let url: URL
    let first: UInt32
    let count: UInt32
    let recording = MovieRecordingDelegate()
    let seen = Mutex(Seen())

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
        guard let fileOutput = output as? AVCaptureMovieFileOutput else { return }
        let index = VirtualFrameReader.readFrameIndex(from: image)
        let action: (start: Bool, stop: Bool) = seen.withLock { seen in
            seen.video += 1
            guard let index else { return (false, false) }
            if seen.startIndex == nil, index >= first {
                seen.startIndex = index
                seen.whileRecording.append(index)
                return (true, false)
            }
            if seen.startIndex != nil, seen.stopIndex == nil {
                if index >= first + count {
                    seen.stopIndex = index
                    return (false, true)
                }
                seen.whileRecording.append(index)
            }
            return (false, false)
        }
        if action.start { fileOutput.startRecording(to: url, recordingDelegate: recording) }
        if action.stop { fileOutput.stopRecording() }
    }
}

@Suite("AVCaptureFileOutputDelegate", .serialized)
struct FileOutputDelegateTests {
    @Test("A sample-accurate delegate starts and stops a movie at the exact frames it chose")
    func sampleAccurateStartAndStop() throws {
        guard MediaTool.available(for: "FileOutputDelegateTests") else { return }
        let url = try scratchURL("frames-from-40.mov", suite: "file-output-delegate")
        let output = AVCaptureMovieFileOutput()
        let recorder = FrameAccurateRecorder(sampleAccurate: true, url: url, first: 40, count: 25)
        output.delegate = recorder
        let session = try makeMovieSession(output)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(recorder.recording.waitForFinish(), "didFinish never came")
        #expect(recorder.recording.error == nil, "\(String(describing: recorder.recording.error))")
        // The movie holds exactly the frames the delegate was shown from its start buffer to its stop buffer.
        let seen = recorder.seen.withLock { $0 }
        let indices = try decodedFrameIndices(url).compactMap { $0 }
        #expect(indices == seen.whileRecording, "file \(indices), seen \(seen.whileRecording)")
        #expect(indices.first == seen.startIndex)
        #expect(seen.audio > 0)
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
        // The request made while the start frame is shown is handled after it: the movie starts later.
        let seen = recorder.seen.withLock { $0 }
        #expect((indices.first ?? 0) > (seen.startIndex ?? .max), "\(indices), started at \(String(describing: seen.startIndex))")
        #expect(seen.video >= 60)
    }
}
