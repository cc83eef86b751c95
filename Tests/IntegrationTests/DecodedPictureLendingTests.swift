// A session decodes a camera's or a file's H.264 once; when only encoders read the pictures it lends them the
// decoder's own, which the decoder predicts later pictures from. These tests check that a consumer that may draw on
// its frames never gets one of those.

import Dispatch
import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import OpenCoreMedia
import OpenCoreVideo
import Synchronization
import TestSupport
import Testing

/// A video data output's delegate that keeps a copy of each frame's luma as it came, then draws black over it, as
/// an app that paints into the buffers it is given does.
private final class LumaScribbler: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    private let frames = Mutex<[(format: OSType, luma: [UInt8])]>([])
    private let arrived = DispatchSemaphore(value: 0)

    func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        guard let image = sampleBuffer.imageBuffer else { return }
        CVPixelBufferLockBaseAddress(image, [])
        let width = CVPixelBufferGetWidthOfPlane(image, 0)
        let height = CVPixelBufferGetHeightOfPlane(image, 0)
        let stride = CVPixelBufferGetBytesPerRowOfPlane(image, 0)
        let base = CVPixelBufferGetBaseAddressOfPlane(image, 0)!.assumingMemoryBound(to: UInt8.self)
        var luma: [UInt8] = []
        luma.reserveCapacity(width * height)
        for row in 0..<height {
            luma.append(contentsOf: UnsafeBufferPointer(start: base + row * stride, count: width))
            (base + row * stride).update(repeating: 0, count: width)
        }
        CVPixelBufferUnlockBaseAddress(image, [])
        frames.withLock { $0.append((CVPixelBufferGetPixelFormatType(image), luma)) }
        arrived.signal()
    }

    var received: [(format: OSType, luma: [UInt8])] { frames.withLock { $0 } }

    func wait(for count: Int, timeout: Double) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while frames.withLock({ $0.count }) < count {
            guard arrived.wait(timeout: deadline) == .success else { return false }
        }
        return true
    }
}

/// ffmpeg's moving test pattern as H.264 at 320x240, 30 fps, in a QuickTime movie at `url`: one key frame, then
/// P-frames each predicted from the one before (a picture drawn on inside the decoder would spoil every later one).
/// Returns each picture's luma plane as ffmpeg decodes it (video range; `gray` would be stretched to full range).
private func h264Source(at url: URL, frames: Int) throws -> [[UInt8]] {
    try testPattern(at: url, rate: 30, frames: frames, encoding: ["-c:v", "libx264", "-g", "\(frames)", "-bf", "0"])
    let decoded = try MediaTool.ffmpeg.run([
        "-nostdin", "-v", "error", "-i", url.path, "-f", "rawvideo", "-pix_fmt", "yuv420p", "-",
    ])
    guard decoded.status == 0 else { throw MediaToolFailure(description: decoded.error) }
    let lumaSize = 320 * 240
    return stride(from: 0, to: decoded.output.count, by: lumaSize * 3 / 2).map {
        [UInt8](decoded.output[$0..<min($0 + lumaSize, decoded.output.count)])
    }
}

/// A session (not running) that plays an H.264 movie made by ffmpeg as its camera into a movie file output that
/// encodes (asked for a bit rate, it does not write the file's packets as they are), with a video data output of
/// 4:2:0 planar frames (the decoder's own layout: a lent picture would reach the delegate as it is) whose delegate
/// draws on them, not yet added.
private struct LendingRig {
    /// The source's pictures' luma, as ffmpeg decodes them.
    let reference: [[UInt8]]
    let session = AVCaptureSession()
    let movie = AVCaptureMovieFileOutput()
    let data = AVCaptureVideoDataOutput()
    let scribbler = LumaScribbler()

    init(source name: String, frames: Int) throws {
        let source = try writerScratchURL(name)
        reference = try h264Source(at: source, frames: frames)
        try #require(reference.count == frames)
        let camera = try #require(try MovieFileDevice(url: source).camera)
        session.beginConfiguration()
        session.sessionPreset = .inputPriority
        session.addInput(try AVCaptureDeviceInput(device: camera))
        session.addOutput(movie)
        let connection = try #require(movie.connection(with: .video))
        movie.setOutputSettings(
            [
                AVVideoCodecKey: AVVideoCodecType.h264,
                AVVideoCompressionPropertiesKey: [AVVideoAverageBitRateKey: 1_000_000],
            ], for: connection)
        session.commitConfiguration()
        data.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_420YpCbCr8Planar]
        data.alwaysDiscardsLateVideoFrames = false
        data.setSampleBufferDelegate(scribbler, queue: DispatchQueue(label: "scribbler"))
    }

    /// Adds or removes the data output.
    func showFrames(_ shown: Bool) {
        session.beginConfiguration()
        if shown { session.addOutput(data) } else { session.removeOutput(data) }
        session.commitConfiguration()
    }

    /// Checks that every frame the scribbler got is one of the source's pictures, exactly, in order (a late frame
    /// may have been dropped, so each is looked for from where the last was found).
    func expectSourcePictures() {
        var next = 0
        for (position, frame) in scribbler.received.enumerated() {
            #expect(frame.format == kCVPixelFormatType_420YpCbCr8Planar)
            guard let found = reference[next...].firstIndex(of: frame.luma) else {
                Issue.record("frame \(position) is none of the source's pictures from \(next) on")
                return
            }
            next = found + 1
        }
    }
}

@Suite("Decoded pictures lent to encoders only", .serialized)
struct DecodedPictureLendingTests {
    @Test("recording H.264 while a data output draws on its planar frames: it gets ffmpeg's decode, exactly")
    func drawingOnFramesDoesNotReachTheDecoder() throws {
        guard MediaTool.available(for: "DecodedPictureLendingTests.drawingOnFramesDoesNotReachTheDecoder") else {
            return
        }
        let rig = try LendingRig(source: "lending-source.mov", frames: 60)
        rig.showFrames(true)
        let recording = try writerScratchURL("lending-recorded.mov")
        let delegate = MovieRecordingDelegate()
        rig.session.startRunning()
        rig.movie.startRecording(to: recording, recordingDelegate: delegate)
        let arrived = rig.scribbler.wait(for: 50, timeout: 20)
        rig.movie.stopRecording()
        let finished = delegate.waitForFinish()
        rig.session.stopRunning()
        try #require(arrived, "\(rig.scribbler.received.count) frames: \(rig.data.deliveryStatistics)")
        try #require(finished && delegate.error == nil, "\(String(describing: delegate.error))")
        rig.expectSourcePictures()
        #expect(try ffmpegDecodeErrors(recording).isEmpty)
        #expect(try videoFrameTimes(recording).count >= 20)
    }

    @Test("a data output joins and leaves mid-recording: the movie goes on across both switches, no frame missing")
    func consumersChangeMidRecording() throws {
        guard MediaTool.available(for: "DecodedPictureLendingTests.consumersChangeMidRecording") else { return }
        let rig = try LendingRig(source: "switching-source.mov", frames: 120)
        let recording = try writerScratchURL("switching-recorded.mov")
        let delegate = MovieRecordingDelegate()
        rig.session.startRunning()
        defer { rig.session.stopRunning() }
        rig.movie.startRecording(to: recording, recordingDelegate: delegate)
        try #require(delegate.waitForStart())
        /// Waits until the movie holds `seconds`, up to 10 s.
        func recorded(_ seconds: Double) -> Bool {
            waitUntil(timeout: 10) { rig.movie.recordedDuration.seconds >= seconds }
        }
        // Lent pictures first (only the movie reads them), then copies while the data output draws on its own,
        // then lent again.
        try #require(recorded(0.5), "\(rig.movie.recordedDuration.seconds) s recorded")
        rig.showFrames(true)
        let drawn = rig.scribbler.wait(for: 15, timeout: 10)
        rig.showFrames(false)
        let goesOn = recorded(rig.movie.recordedDuration.seconds + 0.5)
        rig.movie.stopRecording()
        try #require(delegate.waitForFinish())
        try #require(drawn, "\(rig.scribbler.received.count) frames: \(rig.data.deliveryStatistics)")
        try #require(goesOn, "the movie stopped at \(rig.movie.recordedDuration.seconds) s")
        #expect(delegate.error == nil, "\(String(describing: delegate.error))")
        rig.expectSourcePictures()
        #expect(try ffmpegDecodeErrors(recording).isEmpty)
        let times = try videoFrameTimes(recording)
        #expect(times.count >= 45, "\(times.count) frames")
        let gaps = zip(times, times.dropFirst()).map { $1 - $0 }.filter { $0 > 1.5 / 30 }
        #expect(gaps.isEmpty, "frames missing: gaps of \(gaps) s")
    }
}
