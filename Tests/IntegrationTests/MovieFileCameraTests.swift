// The movie-file camera and microphone: files we wrote (AVAssetWriter, from the virtual camera and microphone) and
// ffmpeg wrote (y4m + wav), played as live devices through a session into data outputs.

import Dispatch
import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import OpenCoreMedia
import OpenCoreVideo
import Synchronization
import TestSupport
import Testing

/// What a video data output saw: frame indices read from the pixels, timestamps, formats, arrival times.
final class MovieFrameCollector: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    struct Frame: Sendable {
        var index: UInt32?
        var isFlash: Bool
        var time: CMTime
        var pixelFormat: OSType
        var width: Int
        var arrival: Int64
    }

    private let frames = Mutex<[Frame]>([])
    private let arrivals = DispatchSemaphore(value: 0)

    func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        guard let image = sampleBuffer.imageBuffer else { return }
        let frame = Frame(
            index: VirtualFrameReader.readFrameIndex(from: image), isFlash: VirtualFrameReader.isFlashFrame(image),
            time: sampleBuffer.presentationTimeStamp, pixelFormat: CVPixelBufferGetPixelFormatType(image),
            width: CVPixelBufferGetWidth(image), arrival: Int64(DispatchTime.now().uptimeNanoseconds))
        frames.withLock { $0.append(frame) }
        arrivals.signal()
    }

    var received: [Frame] { frames.withLock { $0 } }

    /// Waits until `count` frames arrived, up to `timeout` seconds.
    func wait(for count: Int, timeout: Double) -> Bool {
        wait(timeout: timeout) { $0 >= count }
    }

    /// Waits until `predicate` holds for the number of frames received, up to `timeout` seconds, waking at every
    /// frame and at least every 100 ms (drops are counted elsewhere).
    func wait(timeout: Double, until predicate: (Int) -> Bool) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while !predicate(frames.withLock { $0.count }) {
            guard DispatchTime.now() < deadline else { return false }
            _ = arrivals.wait(timeout: min(deadline, .now() + 0.1))
        }
        return true
    }
}

/// What an audio data output saw.
final class MovieSoundCollector: NSObject, AVCaptureAudioDataOutputSampleBufferDelegate, @unchecked Sendable {
    private let state = Mutex<(samples: [Float], rate: Double, times: [CMTime])>(([], 0, []))
    private let arrivals = DispatchSemaphore(value: 0)

    func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        guard let asbd = sampleBuffer.formatDescription?.audioStreamBasicDescription else { return }
        let left = leftChannel(of: sampleBuffer)
        state.withLock { state in
            state.samples += left
            state.rate = asbd.mSampleRate
            state.times.append(sampleBuffer.presentationTimeStamp)
        }
        arrivals.signal()
    }

    var samples: [Float] { state.withLock { $0.samples } }
    var times: [CMTime] { state.withLock { $0.times } }

    func wait(forSamples count: Int, timeout: Double) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while state.withLock({ $0.samples.count }) < count {
            if arrivals.wait(timeout: deadline) == .timedOut { return state.withLock { $0.samples.count } >= count }
        }
        return true
    }
}

/// The session's video data output.
private func output(_ session: AVCaptureSession) -> AVCaptureVideoDataOutput? {
    session.outputs.lazy.compactMap { $0 as? AVCaptureVideoDataOutput }.first
}

/// A delegate that keeps every frame it is given until told to let them go, as a slow consumer does.
private final class FrameHolder: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    private let state = Mutex<(held: [CMSampleBuffer], holding: Bool, count: Int, dropped: Int)>(([], true, 0, 0))
    private let arrived = DispatchSemaphore(value: 0)

    func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        state.withLock {
            $0.count += 1
            if $0.holding { $0.held.append(sampleBuffer) }
        }
        arrived.signal()
    }

    /// Late frames the output dropped (a delegate queue four frames behind while the file catches up).
    func captureOutput(
        _ output: AVCaptureOutput, didDrop sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        state.withLock { $0.dropped += 1 }
        arrived.signal()
    }

    /// Frames delivered.
    var count: Int { state.withLock { $0.count } }
    /// Frames delivered or dropped late.
    var accounted: Int { state.withLock { $0.count + $0.dropped } }

    /// The pixel buffers held now.
    var heldBuffers: [CVPixelBuffer] { state.withLock { $0.held.compactMap(\.imageBuffer) } }

    /// Drops every held frame and keeps none from now on.
    func letGo() {
        state.withLock {
            $0.held.removeAll(); $0.holding = false
        }
    }

    /// Waits until `count` frames have been delivered in all (or, with `orDropped`, delivered or dropped late);
    /// false when `timeout` seconds pass first.
    func wait(for count: Int, orDropped: Bool = false, timeout: Double) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while (orDropped ? accounted : self.count) < count {
            guard arrived.wait(timeout: deadline) == .success else { return false }
        }
        return true
    }
}

@Suite("Movie files as cameras and microphones", .serialized)
struct MovieFileCameraTests {
    /// A session from `camera` (and `microphone`) into data outputs; running when returned.
    private func run(
        camera: AVCaptureDevice?, microphone: AVCaptureDevice? = nil, frames: MovieFrameCollector,
        sound: MovieSoundCollector? = nil
    ) throws -> AVCaptureSession {
        let session = AVCaptureSession()
        session.beginConfiguration()
        // The file's own format, whatever its rate (a 25 fps file meets no 30 fps preset), as Apple's apps do.
        session.sessionPreset = .inputPriority
        if let camera {
            let input = try AVCaptureDeviceInput(device: camera)
            #expect(session.canAddInput(input))
            session.addInput(input)
            let output = AVCaptureVideoDataOutput()
            output.alwaysDiscardsLateVideoFrames = false
            output.setSampleBufferDelegate(frames, queue: DispatchQueue(label: "movie frames"))
            #expect(session.canAddOutput(output))
            session.addOutput(output)
        }
        if let microphone, let sound {
            let input = try AVCaptureDeviceInput(device: microphone)
            session.addInput(input)
            let output = AVCaptureAudioDataOutput()
            output.setSampleBufferDelegate(sound, queue: DispatchQueue(label: "movie sound"))
            session.addOutput(output)
        }
        session.commitConfiguration()
        session.startRunning()
        try #require(session.isRunning)
        return session
    }

    @Test("a movie recorded from the virtual camera replays in real time with the same frame indices and sound")
    func replaysRecording() async throws {
        let url = try writerScratchURL("movie-camera.mov")
        try await writeMovie(to: url, MovieRecipe(fileType: .mov, frames: 60, width: 640, height: 480))
        let movie = try MovieFileDevice(url: url)
        let camera = try #require(movie.camera)
        let microphone = try #require(movie.microphone)
        #expect(camera.hasMediaType(.video) && microphone.hasMediaType(.audio))
        #expect(camera.activeFormat.formatDescription.dimensions == CMVideoDimensions(width: 640, height: 480))
        let frames = MovieFrameCollector()
        let sound = MovieSoundCollector()
        let session = try run(camera: camera, microphone: microphone, frames: frames, sound: sound)
        let statistics = try #require(output(session))
        // Every frame is delivered or reported late (a loaded machine may be slower than the file for a moment).
        let accounted = frames.wait(timeout: 15) { _ in
            let counts = statistics.deliveryStatistics
            return counts.delivered + counts.droppedLate >= 60
        }
        _ = sound.wait(forSamples: 48_000, timeout: 5)
        session.stopRunning()
        let counts = statistics.deliveryStatistics
        try #require(accounted, "\(counts)")
        #expect(counts.delivered + counts.droppedLate == 60, "no loop: exactly the file's frames, \(counts)")
        #expect(counts.delivered >= 45, "\(counts)")

        // Each delivered frame shows the index its timestamp says: file frame k at base + k/30.
        let received = frames.received
        let source = VirtualFrameSource(width: 640, height: 480)
        let first = try #require(received.first { $0.index != nil })
        let base = first.time - CMTime(value: Int64(first.index!), timescale: 30)
        var positions: [Int] = []
        for frame in received {
            #expect(frame.pixelFormat == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange && frame.width == 640)
            let position = Int(((frame.time - base).seconds * 30).rounded())
            positions.append(position)
            #expect(abs((frame.time - base).seconds * 30 - Double(position)) < 1e-4, "timestamps on the 1/30 s grid")
            if source.isFlashFrame(UInt32(position)) {
                #expect(frame.isFlash, "frame \(position) is a flash frame")
            } else {
                #expect(frame.index == UInt32(position), "frame \(position) shows \(String(describing: frame.index))")
            }
        }
        #expect(zip(positions, positions.dropFirst()).allSatisfy { $0 < $1 } && (positions.last ?? 0) <= 59)
        // Real time: no frame arrives before its timestamp (host clock), which free running would do; how long
        // after is the machine's and not asserted.
        for frame in received {
            let early = frame.time.seconds - Double(frame.arrival) / 1e9
            #expect(early <= 0, "a frame arrived \(early) s before its time")
        }

        // The sound: the virtual microphone's 440 Hz tone at −30 dBFS peak, decoded from AAC.
        let samples = sound.samples
        try #require(samples.count >= 48_000, "\(samples.count) samples")
        let middle = samples[12_000..<36_000]
        let peak = middle.map { abs($0) }.max() ?? 0
        #expect(peak > 0.02 && peak < 0.06, "peak \(peak) (−30 dBFS is 0.0316)")
    }

    @Test("free running and looping: the file's frames again and again, timestamps running on one per frame")
    func loopsFreeRunning() async throws {
        let url = try writerScratchURL("movie-loop.mov")
        try await writeMovie(
            to: url, MovieRecipe(fileType: .mov, frames: 20, width: 320, height: 240, audioFormat: nil))
        let movie = try MovieFileDevice(url: url, loop: true, clock: .freeRunning)
        #expect(movie.microphone == nil, "no sound track, no microphone")
        let frames = MovieFrameCollector()
        let camera = try #require(movie.camera)
        let session = try run(camera: camera, frames: frames)
        let arrived = frames.wait(for: 70, timeout: 20)
        session.stopRunning()
        try #require(arrived)
        // Free running outpaces the delegate, so the output drops late frames: check each frame that arrived
        // against its own timestamp. File frame k of pass p is at base + (20p + k)/30.
        let received = frames.received
        let first = try #require(received.first { $0.index != nil })
        let base = first.time - CMTime(value: Int64(first.index!), timescale: 30)
        var positions: [Int] = []
        for frame in received {
            let position = Int(((frame.time - base).seconds * 30).rounded())
            positions.append(position)
            #expect(abs((frame.time - base).seconds * 30 - Double(position)) < 1e-4, "on the frame grid")
            if let index = frame.index { #expect(index == UInt32(position % 20), "position \(position)") }
        }
        #expect(zip(positions, positions.dropFirst()).allSatisfy { $0 < $1 }, "timestamps only go forward")
        #expect((positions.last ?? 0) >= 69, "at least three and a half passes: \(positions.last ?? 0)")
        let span = Double(received.last!.arrival - received.first!.arrival) / 1e9
        #expect(
            span < Double(positions.last! - positions.first!) / 30, "free running: faster than real time (\(span) s)")
    }

    @Test("an MJPEG movie (a USB camera's format) plays through TurboJPEG into full-range NV12 with the indices")
    func mjpegMovie() async throws {
        let url = try writerScratchURL("movie-mjpeg.mov")
        let writer = try AVAssetWriter(outputURL: url, fileType: .mov)
        let input = AVAssetWriterInput(
            mediaType: .video,
            outputSettings: [AVVideoCodecKey: AVVideoCodecType.jpeg, AVVideoWidthKey: 640, AVVideoHeightKey: 480])
        let adaptor = AVAssetWriterInputPixelBufferAdaptor(
            assetWriterInput: input,
            sourcePixelBufferAttributes: [
                kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
                kCVPixelBufferWidthKey: 640, kCVPixelBufferHeightKey: 480,
            ])
        writer.add(input)
        #expect(writer.startWriting())
        writer.startSession(atSourceTime: .zero)
        let source = VirtualFrameSource(width: 640, height: 480)
        let pool = try #require(adaptor.pixelBufferPool)
        for index in 0..<30 {
            var buffer: CVPixelBuffer?
            CVPixelBufferPoolCreatePixelBuffer(nil, pool, &buffer)
            let pixelBuffer = try #require(buffer)
            source.render(frameIndex: UInt32(index), into: pixelBuffer)
            waitUntilReady(input)
            #expect(adaptor.append(pixelBuffer, withPresentationTime: CMTime(value: Int64(index), timescale: 30)))
        }
        input.markAsFinished()
        await writer.finishWriting()
        try #require(writer.status == .completed, "\(String(describing: writer.error))")

        let movie = try MovieFileDevice(url: url)
        let camera = try #require(movie.camera)
        #expect(camera.activeFormat.formatDescription.mediaSubType == .jpeg, "the device delivers MJPEG")
        let frames = MovieFrameCollector()
        let session = try run(camera: camera, frames: frames)
        let statistics = try #require(output(session))
        let accounted = frames.wait(timeout: 10) { _ in
            statistics.deliveryStatistics.delivered + statistics.deliveryStatistics.droppedLate >= 30
        }
        session.stopRunning()
        try #require(accounted, "\(statistics.deliveryStatistics)")
        let received = frames.received
        #expect(received.count >= 20, "\(statistics.deliveryStatistics)")
        let base =
            try #require(received.first { $0.index != nil }).time
            - CMTime(value: Int64(received.first { $0.index != nil }!.index!), timescale: 30)
        for frame in received {
            #expect(frame.pixelFormat == kCVPixelFormatType_420YpCbCr8BiPlanarFullRange, "JPEG decodes to 420f")
            let position = Int(((frame.time - base).seconds * 30).rounded())
            if !source.isFlashFrame(UInt32(position)) {
                #expect(frame.index == UInt32(position), "frame \(position) shows \(String(describing: frame.index))")
            }
        }
    }

    @Test("file: unique IDs give the movie's camera and microphone, the same objects each time")
    func uniqueID() async throws {
        let url = try writerScratchURL("movie-id.mov")
        try await writeMovie(to: url, MovieRecipe(fileType: .mov, frames: 10, width: 320, height: 240))
        let camera = try #require(AVCaptureDevice(uniqueID: "file:" + url.path))
        #expect(camera.uniqueID == "file:" + url.path && camera.localizedName == url.lastPathComponent)
        #expect(AVCaptureDevice(uniqueID: "file:" + url.path) === camera)
        let microphone = try #require(AVCaptureDevice(uniqueID: "file:" + url.path + "#audio"))
        #expect(microphone.hasMediaType(.audio))
        #expect(AVCaptureDevice(uniqueID: "file:/no/such/movie.mov") == nil)
        let frames = MovieFrameCollector()
        let session = try run(camera: camera, frames: frames)
        let arrived = frames.wait(for: 10, timeout: 10)
        session.stopRunning()
        #expect(arrived)
        #expect(frames.received.compactMap(\.index).first == 1, "frame 0 is a flash, then 1, 2, …")
    }

    @Test("a consumer that keeps a raw file's frames makes the file wait at 8 of them, losing none")
    func heldRawFramesMakeTheFileWait() throws {
        guard MediaTool.available(for: "MovieFileCameraTests.heldRawFramesMakeTheFileWait") else { return }
        let video = try writerScratchURL("held.y4m")
        try testPatternY4M(at: video, rate: 30, frames: 24)
        let movie = try MovieFileDevice(url: video)
        let camera = try #require(movie.camera)
        let session = AVCaptureSession()
        session.beginConfiguration()
        session.sessionPreset = .inputPriority
        session.addInput(try AVCaptureDeviceInput(device: camera))
        let output = AVCaptureVideoDataOutput()
        output.alwaysDiscardsLateVideoFrames = false
        let holder = FrameHolder()
        output.setSampleBufferDelegate(holder, queue: DispatchQueue(label: "held frames"))
        session.addOutput(output)
        session.commitConfiguration()
        session.startRunning()
        defer { session.stopRunning() }

        try #require(holder.wait(for: 8, timeout: 10), "\(holder.count) frames: \(output.deliveryStatistics)")
        // 24 frames take 0.8 s at the file's rate; in 1.5 s a device that did not wait would have sent them all.
        #expect(!holder.wait(for: 9, timeout: 1.5), "a 9th frame while 8 are held: \(output.deliveryStatistics)")
        #expect(holder.heldBuffers.count == 8)
        holder.letGo()
        // The file catches up at once: the output may drop some late (a delegate queue four frames behind on a busy
        // machine), but the source loses none.
        try #require(
            holder.wait(for: 24, orDropped: true, timeout: 10),
            "\(holder.accounted) frames: \(output.deliveryStatistics)")
        let statistics = output.deliveryStatistics
        #expect(statistics.droppedOutOfBuffers == 0 && statistics.droppedDiscontinuity == 0, "\(statistics)")
        #expect(statistics.delivered + statistics.droppedLate == 24, "\(statistics)")
    }

    @Test("y4m and wav written by ffmpeg: raw frames and PCM played as they are")
    func rawFiles() throws {
        guard MediaTool.available(for: "MovieFileCameraTests.rawFiles") else { return }
        let video = try writerScratchURL("testsrc.y4m")
        let audio = try writerScratchURL("sine.wav")
        try testPatternY4M(at: video, rate: 25, frames: 25)
        let tone = try MediaTool.ffmpeg.run([
            "-v", "error", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=44100:duration=1", "-c:a", "pcm_s16le",
            audio.path,
        ])
        try #require(tone.status == 0, "\(tone.error)")

        let frames = MovieFrameCollector()
        // Stepped a frame at a time, the output caught up before the next: every frame comes, a 25th of a second
        // apart on the host clock, however loaded the machine is.
        let clock = VirtualDeviceClock()
        let movie = try MovieFileDevice(url: video, clock: .manual(clock))
        let camera = try #require(movie.camera)
        let session = try run(camera: camera, frames: frames)
        let frameTime = CMTime(value: 1, timescale: 25)
        #expect(clock.advance(by: CMTimeMultiply(frameTime, multiplier: 24), step: frameTime, settling: session.outputs))
        let arrived = frames.wait(for: 25, timeout: 10)
        session.stopRunning()
        try #require(arrived, "\(frames.received.count) frames: \(output(session)?.deliveryStatistics as Any)")
        let received = frames.received
        #expect(received.count == 25)
        #expect(received.allSatisfy { $0.pixelFormat == kCVPixelFormatType_420YpCbCr8Planar && $0.width == 320 })
        for (earlier, later) in zip(received, received.dropFirst()) {
            #expect(abs((later.time - earlier.time).seconds - 1.0 / 25) < 1e-6)
        }

        let sound = MovieSoundCollector()
        let wav = try MovieFileDevice(url: audio, clock: .freeRunning)
        #expect(wav.camera == nil)
        let microphone = try #require(wav.microphone)
        let soundSession = try run(camera: nil, microphone: microphone, frames: frames, sound: sound)
        let heard = sound.wait(forSamples: 44_100, timeout: 10)
        soundSession.stopRunning()
        try #require(heard)
        let samples = Array(sound.samples.prefix(44_100))
        var crossings = 0
        for index in 1..<samples.count where samples[index - 1] < 0 && samples[index] >= 0 { crossings += 1 }
        #expect(abs(crossings - 1000) <= 2, "\(crossings) cycles in one second of a 1 kHz sine")
    }
}
