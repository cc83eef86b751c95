// Movie files as sources, as a user meets them: every container and codec FFmpeg writes (raw video included) plays
// with the frames' own indices, the end of the input ends the stream and a recording with success, real-time pacing
// loses no frame, and files that cannot play say why.

import Dispatch
import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import OpenCoreMedia
import OpenCoreVideo
import Synchronization
import Testing
import TestSupport

/// The runtime errors a session posts, and a wait for the first.
private final class RuntimeErrors: @unchecked Sendable {
    private let errors = Mutex<[AVError]>([])
    private let arrived = DispatchSemaphore(value: 0)
    private var token: (any NSObjectProtocol)?

    init(_ session: AVCaptureSession) {
        token = NotificationCenter.default.addObserver(
            forName: .AVCaptureSessionRuntimeError, object: session, queue: nil
        ) { [weak self] note in
            guard let self else { return }
            if let error = note.userInfo?[AVCaptureSessionErrorKey] as? AVError {
                self.errors.withLock { $0.append(error) }
            }
            self.arrived.signal()
        }
    }

    deinit { token.map(NotificationCenter.default.removeObserver) }

    var received: [AVError] { errors.withLock { $0 } }

    /// Waits for an error about `device`.
    func wait(for device: AVCaptureDevice, timeout: Double) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while !received.contains(where: { $0.userInfo[AVErrorDeviceKey] as? AVCaptureDevice === device }) {
            guard arrived.wait(timeout: deadline) == .success else { return false }
        }
        return true
    }
}

/// A clip of `frames` virtual-camera frames (index k at k/30 s, 320x240, H.264 + AAC), shared by the tests.
private func virtualClip(_ name: String, frames: Int, audio: Bool = true) async throws -> URL {
    let url = try writerScratchURL(name)
    try await writeMovie(
        to: url,
        MovieRecipe(
            fileType: .mov, frames: frames, width: 320, height: 240, audioFormat: audio ? kAudioFormatMPEG4AAC : nil))
    return url
}

/// `source` converted by ffmpeg with `arguments` into scratch file `name`.
private func transcode(_ source: URL, to name: String, _ arguments: [String]) throws -> URL {
    let url = try writerScratchURL(name)
    let result = try MediaTool.ffmpeg.run(["-nostdin", "-v", "error", "-y", "-i", source.path] + arguments + [url.path])
    try #require(result.status == 0, "ffmpeg \(arguments): \(result.error)")
    return url
}

/// Records `devices` (a movie file's camera and microphone) with a movie file output until the input ends; the
/// recording is asked for before the file starts playing, so its first frame is in it.
private func recordToTheEnd(of devices: [AVCaptureDevice], to url: URL) throws -> MovieRecordingDelegate {
    let session = AVCaptureSession()
    session.beginConfiguration()
    session.sessionPreset = .inputPriority
    for device in devices { session.addInput(try AVCaptureDeviceInput(device: device)) }
    let output = AVCaptureMovieFileOutput()
    session.addOutput(output)
    session.commitConfiguration()
    try? FileManager.default.removeItem(at: url)
    let delegate = MovieRecordingDelegate()
    output.startRecording(to: url, recordingDelegate: delegate)
    session.startRunning()
    let finished = delegate.waitForFinish(timeout: 20)
    session.stopRunning()
    try #require(finished, "the recording did not end with the input")
    return delegate
}

/// Plays `camera` into a data output until the session reports the end of the input; returns the frames and the
/// output's statistics.
private func playToEnd(
    _ camera: AVCaptureDevice, microphone: AVCaptureDevice? = nil, expecting count: Int, timeout: Double = 20
) throws -> (frames: [MovieFrameCollector.Frame], statistics: VideoDeliveryStatistics, errors: [AVError]) {
    let session = AVCaptureSession()
    session.beginConfiguration()
    session.sessionPreset = .inputPriority
    session.addInput(try AVCaptureDeviceInput(device: camera))
    if let microphone { session.addInput(try AVCaptureDeviceInput(device: microphone)) }
    let output = AVCaptureVideoDataOutput()
    output.alwaysDiscardsLateVideoFrames = false
    // NV12, whatever the file holds (RGB, 4:2:2), so the frame reader finds luma.
    output.videoSettings = [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange]
    let collector = MovieFrameCollector()
    output.setSampleBufferDelegate(collector, queue: DispatchQueue(label: "movie source frames"))
    session.addOutput(output)
    session.commitConfiguration()
    let errors = RuntimeErrors(session)
    session.startRunning()
    let ended = errors.wait(for: camera, timeout: timeout)
    // The last frames may still be on their way: wait until every frame of the file is delivered or counted late,
    // and every delivered one was seen.
    _ = collector.wait(timeout: 10) { seen in
        let counts = output.deliveryStatistics
        return counts.delivered + counts.droppedLate + counts.droppedOutOfBuffers + counts.droppedDiscontinuity >= count
            && seen >= counts.delivered
    }
    session.stopRunning()
    try #require(ended, "no end of input within \(timeout) s: \(output.deliveryStatistics)")
    return (collector.received, output.deliveryStatistics, errors.received)
}

/// Checks that every frame shows the index its timestamp says (file frame k at base + k/30, flash frames aside),
/// and that timestamps only go forward from the first frame. Late drops (a delegate more than four
/// frames behind on a starved machine) are the output's, counted by the caller, not the source's.
private func expectOwnIndices(_ frames: [MovieFrameCollector.Frame], count: Int, _ label: String) {
    let source = VirtualFrameSource(width: 320, height: 240)
    guard let first = frames.first(where: { $0.index != nil }) else {
        Issue.record("\(label): no readable frame index in \(frames.count) frames")
        return
    }
    let base = first.time - CMTime(value: Int64(first.index!), timescale: 30)
    let positions = frames.map { Int((($0.time - base).seconds * 30).rounded()) }
    #expect(zip(positions, positions.dropFirst()).allSatisfy { $0 < $1 }, "\(label): \(positions)")
    #expect(positions.first == 0 && positions.allSatisfy { $0 < count }, "\(label): \(positions)")
    for (frame, position) in zip(frames, positions) where !source.isFlashFrame(UInt32(position)) {
        #expect(frame.index == UInt32(position), "\(label): frame \(position) shows \(String(describing: frame.index))")
    }
}

/// Checks that no frame was lost before the output (the source, the decoder) and every one is accounted for.
private func expectNoneLostAtTheSource(_ statistics: VideoDeliveryStatistics, count: Int, _ label: String) {
    #expect(statistics.droppedOutOfBuffers == 0 && statistics.droppedDiscontinuity == 0, "\(label): \(statistics)")
    #expect(statistics.delivered + statistics.droppedLate == count, "\(label): \(statistics)")
}

@Suite("Movie files as sources: containers, the end of the input, pacing, errors", .serialized)
struct MovieFileSourceTests {
    /// (file name, ffmpeg arguments): every container and codec family a user brings.
    static let containers: [(String, [String])] = [
        ("clip.y4m", ["-pix_fmt", "yuv420p"]),
        ("raw.nut", ["-c:v", "rawvideo", "-pix_fmt", "yuv420p", "-an"]),
        ("raw.mkv", ["-c:v", "rawvideo", "-pix_fmt", "yuv420p", "-an"]),
        ("raw.avi", ["-c:v", "rawvideo", "-pix_fmt", "yuv420p", "-an"]),
        ("yuyv.nut", ["-c:v", "rawvideo", "-pix_fmt", "yuyv422", "-an"]),
        ("bgr.avi", ["-c:v", "rawvideo", "-pix_fmt", "bgr24", "-an"]),
        ("h264.ts", ["-c:v", "libx264", "-preset", "ultrafast", "-qp", "10", "-c:a", "aac"]),
        ("h264.mp4", ["-c:v", "libx264", "-preset", "ultrafast", "-qp", "10", "-bf", "2", "-c:a", "aac"]),
        ("vp8.webm", ["-c:v", "libvpx", "-b:v", "4M", "-c:a", "libopus"]),
        ("vp9.webm", ["-c:v", "libvpx-vp9", "-b:v", "4M", "-deadline", "realtime", "-cpu-used", "8", "-an"]),
        ("mjpeg.mov", ["-c:v", "mjpeg", "-q:v", "2", "-an"]),
        ("mjpeg.avi", ["-c:v", "mjpeg", "-q:v", "2", "-pix_fmt", "yuvj422p", "-an"]),
        ("h264.mkv", ["-c:v", "libx264", "-preset", "ultrafast", "-qp", "10", "-c:a", "flac"]),
        // What a DVB stick writes (MPEG-2 with B-frames and MP2 sound in a transport stream), and a camcorder's or a
        // VCD's MPEG-1 program stream.
        ("mpeg2.ts", ["-c:v", "mpeg2video", "-q:v", "2", "-bf", "2", "-c:a", "mp2"]),
        ("mpeg1.mpg", ["-c:v", "mpeg1video", "-q:v", "2", "-c:a", "mp2", "-f", "mpeg"]),
        // Codecs QuickTime has no code for, decoded by whatever decoder FFmpeg has (FFV1 needs the container's size).
        ("ffv1.mkv", ["-c:v", "ffv1", "-an"]),
        ("huffyuv.avi", ["-c:v", "huffyuv", "-an"]),
    ]

    @Test(
        "Each container and codec plays every frame with its index, in order, then reports the end of the input",
        arguments: containers.map(\.0))
    func everyContainer(name: String) async throws {
        guard MediaTool.available(for: "MovieFileSourceTests.everyContainer") else { return }
        let arguments = try #require(Self.containers.first { $0.0 == name }?.1)
        let clip = try await virtualClip("container-source-\(name).mov", frames: 24)
        let file = try transcode(clip, to: name, arguments)
        let movie = try MovieFileDevice(url: file)
        let camera = try #require(movie.camera, "\(name) gives a camera")
        let (frames, statistics, errors) = try playToEnd(camera, microphone: movie.microphone, expecting: 24)
        expectNoneLostAtTheSource(statistics, count: 24, name)
        expectOwnIndices(frames, count: 24, name)
        #expect(errors.allSatisfy { $0.code == .deviceWasDisconnected } && !errors.isEmpty, "\(name): \(errors)")
        let suggestion = errors.first?.userInfo[NSLocalizedRecoverySuggestionErrorKey] as? String
        #expect(suggestion?.contains("end of its input") == true, "\(String(describing: suggestion))")
        #expect(!camera.isConnected, "a played-out file is a camera gone")
    }

    @Test("A 720p H.264 clip in real time: no frame lost at the source (no OutOfBuffers), each shows its own index")
    func noDropAtStart() async throws {
        let url = try writerScratchURL("pacing-720p.mov")
        try await writeMovie(to: url, MovieRecipe(fileType: .mov, frames: 45, width: 1280, height: 720))
        let movie = try MovieFileDevice(url: url)
        let (frames, statistics, _) = try playToEnd(
            try #require(movie.camera), microphone: movie.microphone, expecting: 45)
        // The source and the decoder lose nothing; only a delegate more than four frames behind (a starved machine)
        // may see late drops, and those are counted.
        expectNoneLostAtTheSource(statistics, count: 45, "720p")
        let source = VirtualFrameSource(width: 1280, height: 720)
        let first = try #require(frames.first { $0.index != nil })
        let base = first.time - CMTime(value: Int64(first.index!), timescale: 30)
        for frame in frames {
            let position = Int(((frame.time - base).seconds * 30).rounded())
            if !source.isFlashFrame(UInt32(position)) {
                #expect(frame.index == UInt32(position), "frame \(position) shows \(String(describing: frame.index))")
            }
        }
    }

    @Test("The end of the input finishes a movie file output's recording with success, every frame in the file")
    func endOfInputFinishesRecording() async throws {
        guard MediaTool.available(for: "MovieFileSourceTests.endOfInputFinishesRecording") else { return }
        let clip = try await virtualClip("end-source.mov", frames: 45)
        let movie = try MovieFileDevice(url: clip)
        let url = try writerScratchURL("end-recorded.mov")
        let delegate = try recordToTheEnd(of: [try #require(movie.camera), try #require(movie.microphone)], to: url)
        #expect(delegate.avError?.code == .deviceWasDisconnected, "\(String(describing: delegate.error))")
        #expect(delegate.successfullyFinished == true)
        #expect(try ffmpegDecodeErrors(url).isEmpty)
        let indices = try decodedFrameIndices(url)
        #expect(indices.count == 45, "\(indices)")
        #expect(indexSteps(indices).isEmpty, "\(indices)")
        #expect(try FFprobeReport(url).stream("audio") != nil)
    }

    @Test("An odd-sized source (321x241) records: the movie output's frames are brought down to an even size")
    func oddSizedSourceRecords() async throws {
        guard MediaTool.available(for: "MovieFileSourceTests.oddSizedSourceRecords") else { return }
        let clip = try await virtualClip("odd-base.mov", frames: 20, audio: false)
        let odd = try transcode(clip, to: "odd-source.nut", ["-vf", "scale=321:241", "-c:v", "rawvideo", "-pix_fmt", "yuv420p"])
        let movie = try MovieFileDevice(url: odd)
        let url = try writerScratchURL("odd-recorded.mov")
        let delegate = try recordToTheEnd(of: [try #require(movie.camera)], to: url)
        #expect(delegate.successfullyFinished == true, "\(String(describing: delegate.error))")
        let video = try #require(try FFprobeReport(url).stream("video"))
        #expect(video["width"] as? Int == 320)
        #expect(video["height"] as? Int == 240)
        #expect(try ffmpegDecodeErrors(url).isEmpty)
        #expect(try decodedFrameIndices(url).count == 20)
    }

    @Test("Files that cannot play say why: missing (the OS's reason), not media, an unsupported codec (named)")
    func errorsNameTheCause() throws {
        guard MediaTool.available(for: "MovieFileSourceTests.errorsNameTheCause") else { return }
        #expect(throws: (any Error).self) { try MovieFileDevice(url: URL(fileURLWithPath: "/no/such/file.mov")) }
        do {
            _ = try MovieFileDevice(url: URL(fileURLWithPath: "/no/such/file.mov"))
        } catch let error as NSError {
            #expect(error.domain == NSPOSIXErrorDomain && error.code == Int(ENOENT), "\(error)")
            #expect(error.localizedDescription.contains("/no/such/file.mov"), "\(error.localizedDescription)")
            #expect(error.localizedDescription.contains("No such file or directory"), "\(error.localizedDescription)")
        }
        let text = try writerScratchURL("notes.txt")
        try Data("not a movie\n".utf8).write(to: text)
        do {
            _ = try MovieFileDevice(url: text)
            Issue.record("a text file opened as a movie")
        } catch let error as AVError {
            #expect(error.code == .fileFormatNotRecognized, "\(error)")
            #expect(error.localizedDescription.contains("notes.txt"), "\(error.localizedDescription)")
        }
        // Raw video in a pixel format OpenCoreVideo has no buffer for (every compressed codec FFmpeg decodes plays).
        let raw444 = try writerScratchURL("yuv444.nut")
        let made = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=10", "-frames:v", "5",
            "-c:v", "rawvideo", "-pix_fmt", "yuv444p", raw444.path,
        ])
        try #require(made.status == 0, "\(made.error)")
        do {
            _ = try MovieFileDevice(url: raw444)
            Issue.record("raw yuv444p opened")
        } catch let error as AVError {
            #expect(error.code == .decoderNotFound, "\(error)")
            #expect(error.localizedDescription.contains("yuv444p"), "\(error.localizedDescription)")
        }
        // AVCaptureDevice(uniqueID:) gives nil, as Apple's; movieFileDevice(uniqueID:) says why.
        #expect(AVCaptureDevice(uniqueID: "file:/no/such/file.mov") == nil)
        #expect(throws: (any Error).self) { try AVCaptureDevice.movieFileDevice(uniqueID: "file:/no/such/file.mov") }
    }

    @Test("A file: unique ID that played to its end is opened afresh: the next device plays the file again")
    func uniqueIDAfterTheEnd() async throws {
        let clip = try await virtualClip("replay-source.mov", frames: 12, audio: false)
        let first = try AVCaptureDevice.movieFileDevice(uniqueID: "file:" + clip.path)
        _ = try playToEnd(first, expecting: 12)
        #expect(!first.isConnected)
        let second = try #require(AVCaptureDevice(uniqueID: "file:" + clip.path))
        #expect(second !== first && second.isConnected)
        let (frames, statistics, _) = try playToEnd(second, expecting: 12)
        expectNoneLostAtTheSource(statistics, count: 12, "second play")
        expectOwnIndices(frames, count: 12, "second play")
    }
}
