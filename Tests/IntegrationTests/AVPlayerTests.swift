// AVPlayer at rates 1, 0.5 and 2 on a file ffmpeg made (testsrc with its frame index as the grey level of a corner
// block, and a 440 Hz sine): the periodic observer's ticks, the frames shown in order, one end notification, exact
// seeks, the sound ALSA's file plugin received (its pitch kept or halved at 0.5), and the window under Xvfb.

import Foundation
import OpenAVCapture
import OpenAVCaptureUI
import OpenCoreMedia
import OpenCoreVideo
import Synchronization
import TestSupport
import Testing

/// The test movie: 2 s of 320x240 at 30 fps, frame N's top-left 64x64 block grey at luma 16 + 4N; 440 Hz mono sound.
enum PlayerMovie {
    static let frameRate = 30.0
    static let frames = 60
    private static let made = Mutex<URL?>(nil)

    static func url() throws -> URL {
        if let url = made.withLock({ $0 }) { return url }
        let url = try scratchURL("player-source.mov", suite: "avplayer-tests")
        try? FileManager.default.removeItem(at: url)
        let video =
            "testsrc=size=320x240:rate=30:duration=2,format=yuv420p,"
            + "geq=lum='if(lt(X\\,64)*lt(Y\\,64)\\,16+4*N\\,lum(X\\,Y))'"
            // Grey: the chroma planes are half size, so their block is 32x32.
            + ":cb='if(lt(X\\,32)*lt(Y\\,32)\\,128\\,cb(X\\,Y))':cr='if(lt(X\\,32)*lt(Y\\,32)\\,128\\,cr(X\\,Y))'"
        let result = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-f", "lavfi", "-i", video, "-f", "lavfi", "-i",
            "sine=frequency=440:sample_rate=48000:duration=2", "-c:v", "libx264", "-qp", "0", "-g", "15",
            "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "1", url.path,
        ])
        try #require(result.status == 0, "ffmpeg: \(result.error)")
        made.withLock { $0 = url }
        return url
    }

    /// The frame index written in a decoded picture's corner block (its mean luma).
    static func index(of picture: CVPixelBuffer) -> Int {
        CVPixelBufferLockBaseAddress(picture, .readOnly)
        defer { CVPixelBufferUnlockBaseAddress(picture, .readOnly) }
        let base = CVPixelBufferGetBaseAddressOfPlane(picture, 0)!.assumingMemoryBound(to: UInt8.self)
        let stride = CVPixelBufferGetBytesPerRowOfPlane(picture, 0)
        var sum = 0
        for y in 16..<48 {
            for x in 16..<48 { sum += Int(base[y * stride + x]) }
        }
        return Int(((Double(sum) / 1024 - 16) / 4).rounded())
    }
}

/// What a test saw of a player: observer times, end notifications.
final class PlayerWatch: @unchecked Sendable {
    let times = Mutex<[Double]>([])
    let ends = Mutex(0)
    let queue = DispatchQueue(label: "AVPlayerTests.observer")
    private var tokens: [any NSObjectProtocol] = []
    private var timeToken: Any?
    let player: AVPlayer

    init(_ player: AVPlayer, interval: CMTime) {
        self.player = player
        timeToken = player.addPeriodicTimeObserver(forInterval: interval, queue: queue) { [weak self] time in
            self?.times.withLock { $0.append(CMTimeGetSeconds(time)) }
        }
        tokens.append(
            NotificationCenter.default.addObserver(
                forName: AVPlayerItem.didPlayToEndTimeNotification, object: player.currentItem, queue: nil
            ) { [weak self] _ in self?.ends.withLock { $0 += 1 } })
    }

    var endCount: Int { ends.withLock { $0 } }

    /// The observer times so far, once every call queued has run.
    var observedTimes: [Double] {
        queue.sync {}
        return times.withLock { $0 }
    }

    func close() {
        if let timeToken { player.removeTimeObserver(timeToken) }
        for token in tokens { NotificationCenter.default.removeObserver(token) }
    }
}

@Suite("AVPlayer plays at rates, headless and in a window", .serialized)
struct AVPlayerTests {
    /// A player of the test movie whose sound goes to ALSA's `null` PCM (taken and thrown away), with a video
    /// output giving NV12.
    static func headlessPlayer() throws -> (AVPlayer, AVPlayerItemVideoOutput) {
        let item = AVPlayerItem(url: try PlayerMovie.url())
        let output = AVPlayerItemVideoOutput(pixelBufferAttributes: [
            kCVPixelBufferPixelFormatTypeKey as String: Int(kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
        ])
        item.add(output)
        let player = AVPlayer(playerItem: item)
        player.audioOutputDeviceUniqueID = "null"
        return (player, output)
    }

    /// Collects the frames the output gives while the player plays, until the end notification (or 60 s).
    static func framesUntilEnd(_ watch: PlayerWatch, _ output: AVPlayerItemVideoOutput) async throws -> [(Double, Int)]
    {
        var shown: [(Double, Int)] = []
        let deadline = Date().addingTimeInterval(60)
        while watch.endCount == 0, Date() < deadline {
            let now = watch.player.currentTime()
            if output.hasNewPixelBuffer(forItemTime: now) {
                var time = CMTime.invalid
                if let picture = output.copyPixelBuffer(forItemTime: now, itemTimeForDisplay: &time) {
                    shown.append((CMTimeGetSeconds(time), PlayerMovie.index(of: picture)))
                }
            }
            // Sampling, as a display's refresh would: the player plays in real time, so time must pass.
            try await Task.sleep(for: .milliseconds(3))
        }
        try #require(watch.endCount > 0, "the end notification never came")
        var time = CMTime.invalid
        if let picture = output.copyPixelBuffer(forItemTime: watch.player.currentTime(), itemTimeForDisplay: &time),
            shown.last?.0 != CMTimeGetSeconds(time)
        {
            shown.append((CMTimeGetSeconds(time), PlayerMovie.index(of: picture)))
        }
        return shown
    }

    @Test(
        "Plays to the end: observer ticks at every quarter second of item time, frames in order, one end",
        arguments: [Float(1), 0.5, 2])
    func playsToTheEnd(rate: Float) async throws {
        guard MediaTool.available(for: "AVPlayerTests.playsToTheEnd") else { return }
        let (player, output) = try Self.headlessPlayer()
        let item = try #require(player.currentItem)
        #expect(item.status == .readyToPlay && player.status == .readyToPlay)
        let duration = CMTimeGetSeconds(item.duration)
        #expect(abs(duration - 2) < 0.05, "duration \(duration) s")
        let watch = PlayerWatch(player, interval: CMTime(value: 1, timescale: 4))
        defer { watch.close() }
        #expect(player.timeControlStatus == .paused)
        let statuses = Mutex<[AVPlayer.TimeControlStatus]>([])
        let observation = player.observe(\.timeControlStatus, options: [.new]) { _, change in
            if let value = change.newValue { statuses.withLock { $0.append(value) } }
        }
        defer { observation.invalidate() }
        player.rate = rate
        #expect(player.rate == rate)
        #expect(player.timeControlStatus != .paused)
        let shown = try await Self.framesUntilEnd(watch, output)

        // The end: paused at exactly the duration, told once.
        #expect(player.currentTime() == item.duration)
        #expect(player.rate == 0 && player.timeControlStatus == .paused)
        #expect(watch.endCount == 1)
        // Key-value observers saw it play, then pause at the end.
        let seen = statuses.withLock { $0 }
        #expect(seen.contains(.playing) && seen.last == .paused, "\(seen)")

        // Ticks: every multiple of 0.25 s of item time, in order, whatever the rate, then the end time.
        let times = watch.observedTimes
        #expect(times == times.sorted(), "\(times)")
        var distinct: [Double] = []
        for time in times where distinct.last != time { distinct.append(time) }
        let ticks = stride(from: 0.0, to: duration, by: 0.25).map { $0 } + [duration]
        #expect(distinct == ticks, "observer times \(times)")

        // Frames: in order, each at its own time (its index code is its time × 30), from the first to the last.
        #expect(shown.count > 1)
        #expect(shown.map(\.1) == shown.map(\.1).sorted() && Set(shown.map(\.1)).count == shown.count, "\(shown)")
        for (time, index) in shown { #expect(index == Int((time * PlayerMovie.frameRate).rounded()), "\(shown)") }
        #expect(shown.first?.1 == 0)
        #expect(shown.last?.1 == PlayerMovie.frames - 1)
        print(
            "AVPlayerTests: rate \(rate): \(shown.count) of \(PlayerMovie.frames) frames polled, \(times.count) ticks")
    }

    @Test("Seeks are exact: the frame shown is the one at the time; the completion forms say finished")
    func seeksLandOnTheFrame() async throws {
        guard MediaTool.available(for: "AVPlayerTests.seeksLandOnTheFrame") else { return }
        let (player, output) = try Self.headlessPlayer()
        let watch = PlayerWatch(player, interval: CMTime(value: 1, timescale: 2))
        defer { watch.close() }
        func shownIndex() throws -> Int {
            var time = CMTime.invalid
            let picture = try #require(
                output.copyPixelBuffer(forItemTime: player.currentTime(), itemTimeForDisplay: &time))
            return PlayerMovie.index(of: picture)
        }
        // The async form, exact tolerances, a time inside frame 30 (1.0 … 1.033 s).
        let inside = CMTime(value: 101, timescale: 100)
        #expect(await player.seek(to: inside, toleranceBefore: .zero, toleranceAfter: .zero))
        #expect(player.currentTime() == inside)
        #expect(try shownIndex() == 30)
        // The completion-handler form, backwards.
        let half = CMTime(value: 15, timescale: 30)
        let finished = await withCheckedContinuation { continuation in
            player.seek(to: half) { continuation.resume(returning: $0) }
        }
        #expect(finished)
        #expect(try shownIndex() == 15)
        // Tolerances with a handler; past the end is clamped to the end (the last frame).
        let done = await withCheckedContinuation { continuation in
            player.seek(to: CMTime(value: 10, timescale: 1), toleranceBefore: .positiveInfinity, toleranceAfter: .zero)
            {
                continuation.resume(returning: $0)
            }
        }
        #expect(done)
        let duration = try #require(player.currentItem).duration
        #expect(player.currentTime() == duration)
        #expect(try shownIndex() == PlayerMovie.frames - 1)
        // Seeking while paused never moves the clock: still exactly there.
        #expect(await player.seek(to: CMTime(value: 45, timescale: 30)))
        #expect(player.currentTime() == CMTime(value: 45, timescale: 30))
        #expect(try shownIndex() == 45)
        // Playing on from a seek: the frames shown after it (45 was taken above) run on to the last; one end.
        player.play()
        let shown = try await Self.framesUntilEnd(watch, output)
        #expect(shown.first?.1 == 46 && shown.last?.1 == PlayerMovie.frames - 1, "\(shown)")
        #expect(watch.endCount == 1)
    }

    @Test(
        "At rate 0.5 the sound ALSA receives keeps the tone's pitch (timeDomain, spectral) or halves it (varispeed)",
        arguments: [AVAudioTimePitchAlgorithm.timeDomain, .spectral, .varispeed])
    func pitchAtHalfRate(algorithm: AVAudioTimePitchAlgorithm) async throws {
        guard MediaTool.available(for: "AVPlayerTests.pitchAtHalfRate") else { return }
        let sink = try scratchURL("player-sound-\(algorithm.rawValue).f32", suite: "avplayer-tests")
        try? FileManager.default.removeItem(at: sink)
        let item = AVPlayerItem(url: try PlayerMovie.url())
        item.audioTimePitchAlgorithm = algorithm
        let player = AVPlayer(playerItem: item)
        // ALSA's file plugin: the bytes written to the PCM land in the file (Float32, 48 kHz, mono, raw).
        player.audioOutputDeviceUniqueID = "file:FILE=\(sink.path),FORMAT=raw"
        let watch = PlayerWatch(player, interval: CMTime(value: 1, timescale: 1))
        defer { watch.close() }
        player.rate = 0.5
        _ = try await Self.framesUntilEnd(watch, AVPlayerItemVideoOutput(pixelBufferAttributes: nil))
        #expect(player.audioOutputUnavailableReason == nil, "\(player.audioOutputUnavailableReason ?? "")")
        // The device is written a little ahead of the clock, so by the end all but the last moments are in.
        let data = try Data(contentsOf: sink)
        let sound = data.withUnsafeBytes { $0.bindMemory(to: Float.self).map(Double.init) }
        let seconds = Double(sound.count) / 48_000
        #expect(seconds > 3.6 && seconds < 4.2, "\(seconds) s of sound for 2 s played at half speed")
        let middle = sound[48_000..<(48_000 * 3)]
        let frequency = zeroCrossingFrequency(middle, sampleRate: 48_000)
        let expected = algorithm == .varispeed ? 220.0 : 440.0
        #expect(abs(frequency - expected) < expected * 0.01, "\(algorithm.rawValue): \(frequency) Hz")
        print("AVPlayerTests: \(algorithm.rawValue) at 0.5: \(frequency) Hz over \(seconds) s")
    }

    @Test("An AVPlayerLayer in a PlayerWindow shows the player's frame (read back from the screen by xwd)")
    func windowShowsTheFrame() async throws {
        guard MediaTool.available(for: "AVPlayerTests.windowShowsTheFrame") else { return }
        guard let xvfb = XvfbServer.start(width: 320, height: 240, for: "AVPlayerTests.windowShowsTheFrame") else {
            return
        }
        guard FileManager.default.isExecutableFile(atPath: ScreenGrab.xwdPath) else {
            print("Skipping AVPlayerTests.windowShowsTheFrame: \(ScreenGrab.xwdPath) not installed")
            return
        }
        let (player, _) = try Self.headlessPlayer()
        let layer = AVPlayerLayer(player: player)
        let window = PlayerWindow(
            layer: layer, title: "AVPlayerTests", size: CGSize(width: 320, height: 240), position: .zero)
        let failure = Mutex<String?>(nil)
        let finished = DispatchSemaphore(value: 0)
        Thread {
            do { try window.run() } catch { failure.withLock { $0 = "\(error)" } }
            finished.signal()
        }.start()
        defer {
            window.stop()
            finished.wait()
        }
        let target = CMTime(value: 30, timescale: 30)
        #expect(await player.seek(to: target))
        // The window draws the sought frame once its event loop runs.
        _ = await waitUntil(timeout: 20) {
            window.statistics.lastFrameTime == target || failure.withLock({ $0 }) != nil
        }
        try #require(window.statistics.lastFrameTime == target, "\(failure.withLock { $0 } ?? "no frame drawn")")
        #expect(layer.isReadyForDisplay)
        #expect(layer.videoRect == CGRect(x: 0, y: 0, width: 320, height: 240))
        let grab = try ScreenGrab.take(display: xvfb.displayName)
        // The block's video-range luma on the screen: 16 + 4 × 30.
        let luma = grab.luma(x: 16..<48, y: 16..<48)
        let mean = Double(luma.reduce(0) { $0 + Int($1) }) / Double(luma.count)
        let index = ((mean - 16) / 4).rounded()
        #expect(index == 30, "the screen shows luma \(mean) in the block")
        // Playing on draws more frames, up to the last.
        let watch = PlayerWatch(player, interval: CMTime(value: 1, timescale: 1))
        defer { watch.close() }
        player.play()
        _ = await waitUntil(timeout: 30) { watch.endCount > 0 }
        let last = CMTime(value: CMTimeValue(PlayerMovie.frames - 1), timescale: 30)
        _ = await waitUntil(timeout: 10) { window.statistics.lastFrameTime == last }
        #expect(window.statistics.lastFrameTime == last)
        #expect(window.statistics.framesDrawn > 1)
    }
}

@Suite(
    "avcapture play", .serialized,
    .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests (swift build --build-tests)"))
struct PlayCommandTests {
    /// Runs avcapture with no display, so the player runs headless.
    static func run(_ arguments: [String]) throws -> ToolResult {
        var environment = ProcessInfo.processInfo.environment
        environment["DISPLAY"] = nil
        return try ToolResult.run(executable: toolPath!, arguments, environment: environment)
    }

    @Test("play --rate 2 without a display: headless, says so, plays to the end; the sound reaches ALSA at 440 Hz")
    func headlessAtDoubleRate() throws {
        guard MediaTool.available(for: "PlayCommandTests.headlessAtDoubleRate") else { return }
        let movie = try PlayerMovie.url()
        let sink = try scratchURL("play-command.f32", suite: "avplayer-tests")
        let result = try Self.run([
            "play", movie.path, "--rate", "2", "--audio-device", "file:FILE=\(sink.path),FORMAT=raw",
        ])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.outputText.contains("headless: no display"), "\(result.outputText)")
        #expect(result.outputText.contains("2.000 s at rate 2"), "\(result.outputText)")
        let sound = try Data(contentsOf: sink).withUnsafeBytes { $0.bindMemory(to: Float.self).map(Double.init) }
        let seconds = Double(sound.count) / 48_000
        #expect(seconds > 0.9 && seconds < 1.1, "\(seconds) s of sound for 2 s at double speed")
        let frequency = zeroCrossingFrequency(sound[9_600..<38_400], sampleRate: 48_000)
        #expect(abs(frequency - 440) < 4.4, "\(frequency) Hz")
    }

    @Test("play refuses a rate of 0 and a missing file, with the usage and no-input statuses")
    func refusals() throws {
        let movie = try PlayerMovie.url()
        #expect(try Self.run(["play", movie.path, "--rate", "0"]).status == 64)
        #expect(try Self.run(["play", "/nonexistent/movie.mov"]).status == 66)
    }
}
