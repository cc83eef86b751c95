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
    let made = try MediaTool.ffmpeg.run([
        "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-frames:v", "\(frames)",
        "-c:v", "libx264", "-g", "\(frames)", "-bf", "0", "-pix_fmt", "yuv420p", url.path,
    ])
    guard made.status == 0 else { throw MediaToolFailure(description: made.error) }
    let decoded = try MediaTool.ffmpeg.run([
        "-nostdin", "-v", "error", "-i", url.path, "-f", "rawvideo", "-pix_fmt", "yuv420p", "-",
    ])
    guard decoded.status == 0 else { throw MediaToolFailure(description: decoded.error) }
    let lumaSize = 320 * 240
    return stride(from: 0, to: decoded.output.count, by: lumaSize * 3 / 2).map {
        [UInt8](decoded.output[$0..<min($0 + lumaSize, decoded.output.count)])
    }
}

/// A movie file output that encodes (asked for a bit rate, it does not write the file's H.264 packets as they
/// are), and a video data output of 4:2:0 planar frames (the decoder's own layout: a lent picture would reach
/// the delegate as it is) whose delegate draws on them.
private func outputs(
    session: AVCaptureSession, scribbler: LumaScribbler
) throws
    -> (movie: AVCaptureMovieFileOutput, data: AVCaptureVideoDataOutput)
{
    let movie = AVCaptureMovieFileOutput()
    session.addOutput(movie)
    let connection = try #require(movie.connection(with: .video))
    movie.setOutputSettings(
        [
            AVVideoCodecKey: AVVideoCodecType.h264,
            AVVideoCompressionPropertiesKey: [AVVideoAverageBitRateKey: 1_000_000],
        ], for: connection)
    let data = AVCaptureVideoDataOutput()
    data.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_420YpCbCr8Planar]
    data.alwaysDiscardsLateVideoFrames = false
    data.setSampleBufferDelegate(scribbler, queue: DispatchQueue(label: "scribbler"))
    return (movie, data)
}

/// Checks that every frame the scribbler got is one of `reference`'s pictures, exactly, in order (a late frame may
/// have been dropped, so each is looked for from where the last was found).
private func expectSourcePictures(_ scribbler: LumaScribbler, _ reference: [[UInt8]]) {
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

@Suite("Decoded pictures lent to encoders only", .serialized)
struct DecodedPictureLendingTests {
    @Test("recording H.264 while a data output draws on its planar frames: it gets ffmpeg's decode, exactly")
    func drawingOnFramesDoesNotReachTheDecoder() throws {
        guard MediaTool.available(for: "DecodedPictureLendingTests.drawingOnFramesDoesNotReachTheDecoder") else {
            return
        }
        let source = try writerScratchURL("lending-source.mov")
        let reference = try h264Source(at: source, frames: 60)
        try #require(reference.count == 60)
        let camera = try #require(try MovieFileDevice(url: source).camera)
        let session = AVCaptureSession()
        session.beginConfiguration()
        session.sessionPreset = .inputPriority
        session.addInput(try AVCaptureDeviceInput(device: camera))
        let scribbler = LumaScribbler()
        let (movieOutput, dataOutput) = try outputs(session: session, scribbler: scribbler)
        session.addOutput(dataOutput)
        session.commitConfiguration()
        let recording = try writerScratchURL("lending-recorded.mov")
        let delegate = MovieRecordingDelegate()
        session.startRunning()
        movieOutput.startRecording(to: recording, recordingDelegate: delegate)
        let arrived = scribbler.wait(for: 50, timeout: 20)
        movieOutput.stopRecording()
        let finished = delegate.waitForFinish()
        session.stopRunning()
        try #require(arrived, "\(scribbler.received.count) frames: \(dataOutput.deliveryStatistics)")
        try #require(finished && delegate.error == nil, "\(String(describing: delegate.error))")
        expectSourcePictures(scribbler, reference)
        #expect(try ffmpegDecodeErrors(recording).isEmpty)
        #expect(try videoFrameTimes(recording).count >= 20)
    }

    @Test("a data output joins and leaves mid-recording: the movie goes on across both switches, no frame missing")
    func consumersChangeMidRecording() throws {
        guard MediaTool.available(for: "DecodedPictureLendingTests.consumersChangeMidRecording") else { return }
        let source = try writerScratchURL("switching-source.mov")
        let reference = try h264Source(at: source, frames: 120)
        try #require(reference.count == 120)
        let camera = try #require(try MovieFileDevice(url: source).camera)
        let session = AVCaptureSession()
        session.beginConfiguration()
        session.sessionPreset = .inputPriority
        session.addInput(try AVCaptureDeviceInput(device: camera))
        let scribbler = LumaScribbler()
        let (movieOutput, dataOutput) = try outputs(session: session, scribbler: scribbler)
        session.commitConfiguration()
        let recording = try writerScratchURL("switching-recorded.mov")
        let delegate = MovieRecordingDelegate()
        session.startRunning()
        defer { session.stopRunning() }
        movieOutput.startRecording(to: recording, recordingDelegate: delegate)
        try #require(delegate.waitForStart())
        /// Waits until the movie holds `seconds`, up to 10 s.
        func recorded(_ seconds: Double) -> Bool {
            let deadline = Date().addingTimeInterval(10)
            while movieOutput.recordedDuration.seconds < seconds {
                guard Date() < deadline else { return false }
                usleep(10_000)
            }
            return true
        }
        // Lent pictures first (only the movie reads them), then copies while the data output draws on its own,
        // then lent again.
        try #require(recorded(0.5), "\(movieOutput.recordedDuration.seconds) s recorded")
        session.beginConfiguration()
        session.addOutput(dataOutput)
        session.commitConfiguration()
        let drawn = scribbler.wait(for: 15, timeout: 10)
        session.beginConfiguration()
        session.removeOutput(dataOutput)
        session.commitConfiguration()
        let before = movieOutput.recordedDuration.seconds
        let goesOn = recorded(before + 0.5)
        movieOutput.stopRecording()
        try #require(delegate.waitForFinish())
        try #require(drawn, "\(scribbler.received.count) frames: \(dataOutput.deliveryStatistics)")
        try #require(goesOn, "the movie stopped at \(movieOutput.recordedDuration.seconds) s")
        #expect(delegate.error == nil, "\(String(describing: delegate.error))")
        expectSourcePictures(scribbler, reference)
        #expect(try ffmpegDecodeErrors(recording).isEmpty)
        let times = try videoFrameTimes(recording)
        #expect(times.count >= 45, "\(times.count) frames")
        let gaps = zip(times, times.dropFirst()).map { $1 - $0 }.filter { $0 > 1.5 / 30 }
        #expect(gaps.isEmpty, "frames missing: gaps of \(gaps) s")
    }
}
