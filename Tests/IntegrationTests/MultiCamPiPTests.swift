// Apple's AVMultiCamPiP flow on the virtual back and front cameras: each camera into its own video data output
// (BGRA, as the sample asks), the microphone's back port into an audio data output, the front picture composed
// into a corner of the back one, and the result written with AVAssetWriter. Read back with ffmpeg: the back
// camera's frame index in the picture, the front camera's in the corner, frame by frame.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing
import TestSupport

/// The sample's recorder, reduced to what a test needs: composes each back frame with the newest front frame
/// (halved, in the bottom-right quarter) and writes it, with the microphone, through AVAssetWriter.
private final class PiPRecorder: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate,
    AVCaptureAudioDataOutputSampleBufferDelegate, @unchecked Sendable
{
    let backOutput: AVCaptureVideoDataOutput
    let frontOutput: AVCaptureVideoDataOutput
    let audioOutput: AVCaptureAudioDataOutput
    private let writer: AVAssetWriter
    private let videoInput: AVAssetWriterInput
    private let audioInput: AVAssetWriterInput
    private let adaptor: AVAssetWriterInputPixelBufferAdaptor
    // Touched only on the outputs' one delegate queue, as in the sample.
    private var newestFront: CVPixelBuffer?
    private var sessionStart: CMTime?
    private let counts = Mutex((composed: 0, refused: 0))

    init(url: URL, back: AVCaptureVideoDataOutput, front: AVCaptureVideoDataOutput, audio: AVCaptureAudioDataOutput)
        throws
    {
        (backOutput, frontOutput, audioOutput) = (back, front, audio)
        writer = try AVAssetWriter(outputURL: url, fileType: .mov)
        let videoSettings = try #require(back.recommendedVideoSettingsForAssetWriter(writingTo: .mov))
        videoInput = AVAssetWriterInput(mediaType: .video, outputSettings: videoSettings)
        videoInput.expectsMediaDataInRealTime = true
        let audioSettings = try #require(audio.recommendedAudioSettingsForAssetWriter(writingTo: .mov) as? [String: Any])
        audioInput = AVAssetWriterInput(mediaType: .audio, outputSettings: audioSettings)
        audioInput.expectsMediaDataInRealTime = true
        adaptor = AVAssetWriterInputPixelBufferAdaptor(
            assetWriterInput: videoInput,
            sourcePixelBufferAttributes: [
                kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA,
                kCVPixelBufferWidthKey as String: 640, kCVPixelBufferHeightKey as String: 480,
            ])
        writer.add(videoInput)
        writer.add(audioInput)
        super.init()
        try #require(writer.startWriting(), "\(String(describing: writer.error))")
    }

    var composed: Int { counts.withLock { $0.composed } }
    var refused: Int { counts.withLock { $0.refused } }

    func captureOutput(_ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        if output === frontOutput {
            newestFront = sampleBuffer.imageBuffer
        } else if output === backOutput, let back = sampleBuffer.imageBuffer, let front = newestFront {
            write(back, front, at: sampleBuffer.presentationTimeStamp)
        } else if output === audioOutput, let start = sessionStart, sampleBuffer.presentationTimeStamp >= start,
            audioInput.isReadyForMoreMediaData
        {
            _ = audioInput.append(sampleBuffer)
        }
    }

    private func write(_ back: CVPixelBuffer, _ front: CVPixelBuffer, at time: CMTime) {
        if sessionStart == nil {
            writer.startSession(atSourceTime: time)
            sessionStart = time
        }
        // The sample drops a frame the writer is not ready for; a test on a loaded machine waits for the encoder's
        // thread instead (time must pass for it to catch up), so the file holds what a machine that keeps up writes.
        _ = waitUntil(timeout: 10, every: 0.001) { videoInput.isReadyForMoreMediaData }
        guard let pool = adaptor.pixelBufferPool, videoInput.isReadyForMoreMediaData else {
            counts.withLock { $0.refused += 1 }
            return
        }
        var made: CVPixelBuffer?
        CVPixelBufferPoolCreatePixelBuffer(nil, pool, &made)
        guard let picture = made else { return }
        Self.compose(back: back, front: front, into: picture)
        let appended = adaptor.append(picture, withPresentationTime: time)
        counts.withLock { appended ? ($0.composed += 1) : ($0.refused += 1) }
    }

    /// The back picture, and the front one halved into its bottom-right quarter (nearest pixel).
    private static func compose(back: CVPixelBuffer, front: CVPixelBuffer, into picture: CVPixelBuffer) {
        for buffer in [back, front] { CVPixelBufferLockBaseAddress(buffer, .readOnly) }
        CVPixelBufferLockBaseAddress(picture, [])
        defer {
            for buffer in [back, front] { CVPixelBufferUnlockBaseAddress(buffer, .readOnly) }
            CVPixelBufferUnlockBaseAddress(picture, [])
        }
        let (width, height) = (CVPixelBufferGetWidth(picture), CVPixelBufferGetHeight(picture))
        let target = CVPixelBufferGetBaseAddress(picture)!.assumingMemoryBound(to: UInt32.self)
        let source = CVPixelBufferGetBaseAddress(back)!.assumingMemoryBound(to: UInt32.self)
        let inset = CVPixelBufferGetBaseAddress(front)!.assumingMemoryBound(to: UInt32.self)
        let (targetRow, sourceRow, insetRow) = (
            CVPixelBufferGetBytesPerRow(picture) / 4, CVPixelBufferGetBytesPerRow(back) / 4,
            CVPixelBufferGetBytesPerRow(front) / 4
        )
        for y in 0..<height {
            for x in 0..<width {
                let inCorner = x >= width / 2 && y >= height / 2
                target[y * targetRow + x] =
                    inCorner
                    ? inset[(2 * (y - height / 2)) * insetRow + 2 * (x - width / 2)] : source[y * sourceRow + x]
            }
        }
    }

    func finish() async {
        videoInput.markAsFinished()
        audioInput.markAsFinished()
        await writer.finishWriting()
    }

    var status: AVAssetWriter.Status { writer.status }
}

/// The frame index in each decoded frame of `url` within the area `crop` (ffmpeg's w:h:x:y), nil where none reads.
private func decodedFrameIndices(_ url: URL, crop: String) throws -> [UInt32?] {
    let (width, height) = (320, 240)
    let result = try MediaTool.ffmpeg.run([
        "-nostdin", "-v", "error", "-i", url.path, "-map", "0:v:0", "-fps_mode", "passthrough", "-vf", "crop=\(crop)",
        "-f", "rawvideo", "-pix_fmt", "gray", "-",
    ])
    try #require(result.status == 0, "ffmpeg failed: \(result.error)")
    let bytes = [UInt8](result.output)
    let size = width * height
    return stride(from: 0, to: bytes.count - size + 1, by: size).map { start in
        VirtualFrameReader.readFrameIndex(fromLuma: Array(bytes[start..<start + size]), width: width, height: height)
    }
}

@Suite("AVMultiCamPiP's flow", .serialized)
struct MultiCamPiPTests {
    @Test("back and front composed picture-in-picture and written with AVAssetWriter, both cameras frame by frame")
    func pictureInPicture() async throws {
        guard MediaTool.available(for: "MultiCamPiPTests.pictureInPicture") else { return }
        let (back, front, microphone) = (VirtualDevices.back, VirtualDevices.front, VirtualDevices.microphone)
        let restores = try [useFormat(back, width: 640, height: 480), useFormat(front, width: 640, height: 480)]
        defer { restores.reversed().forEach { $0() } }
        let url = try movieScratchURL("pip.mov")
        try #require(AVCaptureMultiCamSession.isMultiCamSupported)
        let session = AVCaptureMultiCamSession()
        session.beginConfiguration()
        let outputs = (back: AVCaptureVideoDataOutput(), front: AVCaptureVideoDataOutput(), audio: AVCaptureAudioDataOutput())
        for (camera, output) in [(back, outputs.back), (front, outputs.front)] {
            let input = try AVCaptureDeviceInput(device: camera)
            try #require(session.canAddInput(input))
            session.addInputWithNoConnections(input)
            try #require(session.canAddOutput(output))
            session.addOutputWithNoConnections(output)
            output.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: Int(kCVPixelFormatType_32BGRA)]
            // Stepped a frame at a time, a frame may come while the one before is handed over: it waits.
            output.alwaysDiscardsLateVideoFrames = false
            try connectCamera(input, to: output, in: session)
        }
        let microphoneInput = try AVCaptureDeviceInput(device: microphone)
        session.addInputWithNoConnections(microphoneInput)
        let backMicrophonePort = try #require(
            microphoneInput.ports(for: .audio, sourceDeviceType: microphone.deviceType, sourceDevicePosition: .back).first)
        session.addOutputWithNoConnections(outputs.audio)
        let sound = AVCaptureConnection(inputPorts: [backMicrophonePort], output: outputs.audio)
        try #require(session.canAddConnection(sound))
        session.addConnection(sound)
        session.commitConfiguration()
        #expect(session.hardwareCost > 0 && session.hardwareCost <= 1)

        let recorder = try PiPRecorder(url: url, back: outputs.back, front: outputs.front, audio: outputs.audio)
        let queue = DispatchQueue(label: "pip-data-outputs")
        for output in [outputs.back, outputs.front] { output.setSampleBufferDelegate(recorder, queue: queue) }
        outputs.audio.setSampleBufferDelegate(recorder, queue: queue)
        let frameTime = CMTime(value: 1, timescale: 30)
        try withManualClock([back, front, microphone]) { clock in
            session.startRunning()
            defer { session.stopRunning() }
            #expect(clock.advance(by: CMTime(value: 2, timescale: 1), step: frameTime, settling: [outputs.back, outputs.front, outputs.audio]))
        }
        queue.sync {}
        await recorder.finish()
        #expect(recorder.status == .completed)
        #expect(recorder.refused == 0 && recorder.composed >= 58, "composed \(recorder.composed), refused \(recorder.refused)")

        let probe = try FFprobeReport(url)
        #expect(probe.stream("audio") != nil)
        #expect(try ffmpegDecodeErrors(url).isEmpty)
        let backIndices = try decodedFrameIndices(url)
        let frontIndices = try decodedFrameIndices(url, crop: "320:240:320:240")
        #expect(backIndices.count == recorder.composed && frontIndices.count == backIndices.count)
        #expect(indexSteps(backIndices).isEmpty, "back camera frames missing or repeated")
        // The newest front frame: never an older one than the picture before had.
        let fronts = frontIndices.compactMap { $0 }
        #expect(zip(fronts, fronts.dropFirst()).allSatisfy { $0 <= $1 }, "front indices \(fronts)")
        // Each picture holds the newest front frame, as the sample's does: the one of the same moment, or the one
        // before when the back camera's frame was handed over first. The cameras started together (their indices
        // at most one apart), so the two indices of a picture are at most two apart and move together.
        let offsets = zip(backIndices, frontIndices).compactMap { pair -> Int? in
            guard let back = pair.0, let front = pair.1 else { return nil }
            return Int(back) - Int(front)
        }
        #expect(offsets.count >= backIndices.count - 4, "indices read in \(offsets.count) of \(backIndices.count)")
        #expect(offsets.allSatisfy { abs($0) <= 2 } && (offsets.max() ?? 0) - (offsets.min() ?? 0) <= 1, "\(offsets)")
    }
}
