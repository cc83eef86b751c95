import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Testing

import TestSupport

/// A movie recorded from the virtual USB webcam's MJPEG, the path most real webcams take (compressed 4:2:2 frames,
/// decoded to full-range NV12, encoded to H.264), read back by ffprobe and ffmpeg.
@Suite(.serialized) struct VirtualWebcamRecordingTests {
    /// The virtual USB webcam in its MJPEG 1280x720 format at 15 fps, its other rate: room for a debug build to
    /// render, compress, decode and encode each frame. Restore its defaults after (`virtualCamera`).
    static func webcamAt720pMJPEG() throws -> AVCaptureDevice {
        let webcam = try #require(AVCaptureDevice.default(.external, for: .video, position: .unspecified))
        let mjpeg = try #require(
            webcam.formats.first {
                $0.formatDescription.mediaSubType.rawValue == kCMVideoCodecType_JPEG
                    && $0.formatDescription.dimensions == CMVideoDimensions(width: 1280, height: 720)
            })
        try webcam.lockForConfiguration()
        webcam.activeFormat = mjpeg
        webcam.activeVideoMinFrameDuration = CMTime(value: 1, timescale: 15)
        webcam.activeVideoMaxFrameDuration = CMTime(value: 1, timescale: 15)
        webcam.unlockForConfiguration()
        return webcam
    }

    @Test func aMovieFromTheWebcamsMJPEGPlaysWithEveryFrameIndexInOrder() throws {
        guard MediaTool.available([.ffmpeg, .ffprobe], for: "webcam recording") else { return }
        let webcam = try Self.webcamAt720pMJPEG()
        defer { webcam.virtualCamera?.restoreDefaults() }
        let movie = AVCaptureMovieFileOutput()
        let session = try makeSession(preset: .inputPriority, devices: [webcam], outputs: [movie])

        session.startRunning()
        defer { session.stopRunning() }
        let url = try scratchURL("webcam-mjpeg-720p.mov")
        let recording = MovieRecordingDelegate()
        movie.startRecording(to: url, recordingDelegate: recording)
        #expect(recording.waitForStart())
        // Two seconds of movie: wait for the output to have recorded them.
        _ = waitUntil(timeout: 60, every: 0.05) { movie.recordedDuration.seconds >= 2 }
        movie.stopRecording()
        #expect(recording.waitForFinish(timeout: 60), "the movie did not finish")
        #expect(recording.error == nil, "\(String(describing: recording.error))")
        session.stopRunning()

        let probe = try FFprobeReport(url)
        let video = try #require(probe.stream("video"))
        #expect(video["codec_name"] as? String == "h264")
        #expect(video["width"] as? Int == 1280 && video["height"] as? Int == 720)
        // The webcam's JPEG is full range; the movie keeps it so (no range squeeze on the way).
        #expect(video["color_range"] as? String == "pc")
        #expect(try ffmpegDecodeErrors(url).isEmpty, "ffmpeg found decode errors")

        // Every frame's index, from the decoded luma: strictly increasing, and every index the movie lacks counted
        // as dropped by the output.
        let gray = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-i", url.path, "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "rawvideo",
            "-pix_fmt", "gray", "-",
        ])
        try #require(gray.status == 0, "ffmpeg failed: \(gray.error)")
        let frameSize = 1280 * 720
        let bytes = [UInt8](gray.output)
        let frames = stride(from: 0, to: bytes.count - frameSize + 1, by: frameSize).map {
            Array(bytes[$0..<$0 + frameSize])
        }
        #expect(frames.count >= 10, "only \(frames.count) frames in two seconds of movie")
        // Each frame's index; nil for the flash of a whole second, which carries none.
        var sequence: [UInt32?] = []
        for (n, luma) in frames.enumerated() {
            let index = VirtualFrameReader.readFrameIndex(fromLuma: luma, width: 1280, height: 720)
            if index == nil {
                #expect(
                    VirtualFrameReader.isFlashFrame(luma: luma, width: 1280, height: 720),
                    "frame \(n) has neither an index nor the flash")
            }
            sequence.append(index)
        }
        let indices = sequence.compactMap { $0 }
        #expect(zip(indices, indices.dropFirst()).allSatisfy { $0 < $1 }, "indices out of order: \(indices)")
        let firstAt = try #require(sequence.firstIndex { $0 != nil })
        let lastAt = try #require(sequence.lastIndex { $0 != nil })
        // Between the first and the last indexed frame, flash frames are in the movie too.
        let present = lastAt - firstAt + 1
        let missing = Int(sequence[lastAt]! - sequence[firstAt]! + 1) - present
        let dropped = movie.recordingStatistics.totalDroppedVideoFrames
        #expect(missing <= dropped, "\(missing) frames missing from the movie, \(dropped) reported dropped")
    }

    @Test("Recorded as Motion JPEG, the webcam's JPEG frames go into the movie as they come, while a data output gets them decoded")
    func motionJPEGIsWrittenAsItComes() throws {
        guard MediaTool.available([.ffmpeg, .ffprobe], for: "webcam Motion JPEG passthrough") else { return }
        let webcam = try Self.webcamAt720pMJPEG()
        defer { webcam.virtualCamera?.restoreDefaults() }
        // Free running, and a data output that waits rather than drops: every one of the 2 s's 30 frames reaches
        // both outputs however loaded the machine (in real time a loaded machine's webcam drops late frames).
        webcam.virtualCamera?.clockMode = .freeRunning
        let movie = AVCaptureMovieFileOutput()
        let data = AVCaptureVideoDataOutput()
        data.alwaysDiscardsLateVideoFrames = false
        let frames = MovieFrameCollector()
        data.setSampleBufferDelegate(frames, queue: DispatchQueue(label: "webcam frames"))
        let session = try makeSession(preset: .inputPriority, devices: [webcam], outputs: [movie, data])
        movie.setOutputSettings([AVVideoCodecKey: AVVideoCodecType.jpeg], for: try #require(movie.connection(with: .video)))
        movie.maxRecordedDuration = CMTime(value: 2, timescale: 1)

        session.startRunning()
        defer { session.stopRunning() }
        let url = try scratchURL("webcam-mjpeg-as-it-comes.mov")
        let recording = MovieRecordingDelegate()
        movie.startRecording(to: url, recordingDelegate: recording)
        #expect(recording.waitForFinish(timeout: 60), "the movie did not finish")
        #expect(recording.avError?.code == .maximumDurationReached, "\(String(describing: recording.error))")
        session.stopRunning()

        let video = try #require(try FFprobeReport(url).stream("video"))
        #expect(video["codec_name"] as? String == "mjpeg")
        #expect(try ffmpegDecodeErrors(url).isEmpty, "ffmpeg found decode errors")
        // The camera's frames are 4:2:2, as USB webcams send; our Motion JPEG encoder writes 4:2:0. So a frame of
        // the movie in 4:2:2 is the camera's own, not decoded and encoded again.
        let formats = try MediaTool.ffprobe.run([
            "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pix_fmt", "-of", "csv=p=0", url.path,
        ])
        let pixelFormats = String(decoding: formats.output, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(pixelFormats.count >= 20, "\(pixelFormats.count) frames in 2 s at 15 fps")
        #expect(Set(pixelFormats) == ["yuvj422p"], "frame formats \(Set(pixelFormats))")
        let indices = try decodedFrameIndices(url).compactMap { $0 }
        #expect(zip(indices, indices.dropFirst()).allSatisfy { $0 < $1 }, "indices out of order: \(indices)")
        // The data output still got decoded pictures of the same frames.
        #expect(frames.received.count >= 20 && frames.received.allSatisfy { $0.index != nil || $0.isFlash },
                "\(frames.received.count) decoded frames")
    }
}
