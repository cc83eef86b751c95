import Foundation
import OpenAVCapture
import Synchronization
import Testing

/// Apple's members are overridable from another module (they are `open`), and the library's own calls go through the
/// overrides, as Objective-C's dynamic dispatch does on Apple's platforms. Serialized: the virtual devices are shared.
@Suite(.serialized) struct SubclassOverrideTests {
    /// A session that logs the members it overrides and refuses a second video output.
    final class LoggingSession: AVCaptureSession, @unchecked Sendable {
        let log = Mutex<[String]>([])

        override func startRunning() {
            log.withLock { $0.append("start") }
            super.startRunning()
        }

        override func stopRunning() {
            log.withLock { $0.append("stop") }
            super.stopRunning()
        }

        override func beginConfiguration() {
            log.withLock { $0.append("begin") }
            super.beginConfiguration()
        }

        override func commitConfiguration() {
            super.commitConfiguration()
            log.withLock { $0.append("commit") }
        }

        override func canAddOutput(_ output: AVCaptureOutput) -> Bool {
            !outputs.contains { $0 is AVCaptureVideoDataOutput } && super.canAddOutput(output)
        }

        override func addInput(_ input: AVCaptureInput) {
            log.withLock { $0.append("input") }
            super.addInput(input)
        }

        override func addOutput(_ output: AVCaptureOutput) {
            log.withLock { $0.append("output") }
            super.addOutput(output)
        }
    }

    @Test func sessionOverridesAreCalledThroughTheBaseClassAndSuperStillCaptures() throws {
        let subclass = LoggingSession()
        let session: AVCaptureSession = subclass
        let output = AVCaptureVideoDataOutput()
        session.beginConfiguration()
        session.sessionPreset = .qvga320x240
        session.addInput(try AVCaptureDeviceInput(device: VirtualDevices.back))
        #expect(session.canAddOutput(output))
        session.addOutput(output)
        #expect(!session.canAddOutput(AVCaptureVideoDataOutput()), "the override refuses a second video output")
        session.commitConfiguration()
        let delegate = RecordingDelegate()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "frames"))
        session.startRunning()
        #expect(session.isRunning)
        #expect(delegate.wait(for: 3), "super.startRunning() started the device")
        session.stopRunning()
        #expect(!session.isRunning)
        #expect(subclass.log.withLock { $0 } == ["begin", "input", "output", "commit", "start", "stop"])
    }

    /// A movie output whose overridden `startRecording(to:recordingDelegate:)` changes the file name.
    final class RenamingMovieOutput: AVCaptureMovieFileOutput, @unchecked Sendable {
        override func startRecording(
            to outputFileURL: URL, recordingDelegate delegate: any AVCaptureFileOutputRecordingDelegate
        ) {
            let renamed = outputFileURL.deletingLastPathComponent().appendingPathComponent("renamed.mov")
            super.startRecording(to: renamed, recordingDelegate: delegate)
        }

        override var movieFragmentInterval: CMTime {
            get { super.movieFragmentInterval }
            set { super.movieFragmentInterval = CMTime(value: 2, timescale: 1) }
        }
    }

    final class FinishDelegate: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
        let finished = DispatchSemaphore(value: 0)
        let url = Mutex<URL?>(nil)
        func fileOutput(
            _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL,
            from connections: [AVCaptureConnection],
            error: (any Error)?
        ) {
            url.withLock { $0 = outputFileURL }
            finished.signal()
        }
    }

    @Test func fileOutputOverrideDecidesWhereTheMovieGoes() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("subclass-override-\(getpid())")
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = RenamingMovieOutput()
        output.movieFragmentInterval = .invalid
        #expect(output.movieFragmentInterval == CMTime(value: 2, timescale: 1), "the setter override ran")
        let session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.back], outputs: [output])
        session.startRunning()
        defer { session.stopRunning() }
        let delegate = FinishDelegate()
        let base: AVCaptureFileOutput = output
        base.startRecording(to: directory.appendingPathComponent("asked.mov"), recordingDelegate: delegate)
        #expect(output.outputFileURL?.lastPathComponent == "renamed.mov")
        _ = waitUntil(timeout: 10) { output.recordedDuration.seconds >= 0.2 }
        #expect(output.recordedDuration.seconds >= 0.2, "frames reached the renamed movie")
        output.stopRecording()
        #expect(delegate.finished.wait(timeout: .now() + 10) == .success)
        #expect(delegate.url.withLock { $0 }?.lastPathComponent == "renamed.mov")
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("renamed.mov").path))
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("asked.mov").path))
    }

    /// A writer whose `finishWriting(completionHandler:)` override is reached from the async `finishWriting()`.
    final class CountingWriter: AVAssetWriter, @unchecked Sendable {
        let finishes = Atomic<Int>(0)
        override func finishWriting(completionHandler handler: @escaping @Sendable () -> Void) {
            finishes.add(1, ordering: .relaxed)
            super.finishWriting(completionHandler: handler)
        }
    }

    @Test func asyncFinishGoesThroughTheOverriddenCompletionHandlerForm() async throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("subclass-writer-\(getpid()).mov")
        try? FileManager.default.removeItem(at: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let writer = try CountingWriter(outputURL: url, fileType: .mov)
        let input = AVAssetWriterInput(
            mediaType: .video,
            outputSettings: [
                AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: 64, AVVideoHeightKey: 48,
            ])
        let adaptor = AVAssetWriterInputPixelBufferAdaptor(assetWriterInput: input, sourcePixelBufferAttributes: nil)
        writer.add(input)
        #expect(writer.startWriting())
        writer.startSession(atSourceTime: .zero)
        var buffer: CVPixelBuffer?
        #expect(CVPixelBufferCreate(nil, 64, 48, kCVPixelFormatType_32BGRA, nil, &buffer) == kCVReturnSuccess)
        #expect(adaptor.append(try #require(buffer), withPresentationTime: .zero))
        input.markAsFinished()
        await writer.finishWriting()
        #expect(writer.status == .completed)
        #expect(writer.finishes.load(ordering: .relaxed) == 1)
    }
}
