import OpenAVCaptureTesting
import Synchronization
import Testing

/// Whether the interval `[start, start + duration)` holds a whole second: the flash rule.
private func holdsWholeSecond(start: CMTime, duration: CMTime) -> Bool {
    let end = start + duration
    let firstWholeSecond = CMTime(value: Int64(start.seconds.rounded(.up)), timescale: 1)
    // `rounded(.up)` on the Double can land one second late for a start exactly on a second; check that one too.
    let onSecond = CMTime(value: Int64(start.seconds.rounded(.down)), timescale: 1)
    return onSecond == start || (firstWholeSecond >= start && firstWholeSecond < end)
}

extension FrontCameraTests {
    /// The frame index and the flash frames, read back exactly from tapped frames. The front camera's controls
    /// and format are not touched here (the OpenAVCaptureTests target changes them), so the test holds for
    /// whatever format it streams.
    @Suite struct FrameMarkers {
        /// A handler tap sees every frame on the capture thread, in sequence, with the index the picture carries;
        /// its queue stays empty.
        @Test func aHandlerTapGetsEveryFrameInOrder() async throws {
            let camera = try frontCamera()
            let seen = Mutex<[(sequence: UInt64, index: UInt32?)]>([])
            let dropped = Mutex<[UInt64]>([])
            let enough = AsyncStream<Void>.makeStream()
            let tap = CaptureDeviceTap(device: camera) { event in
                switch event {
                case .sample(let sample, let sequence):
                    guard let image = sample.imageBuffer else { return }
                    let count = seen.withLock { seen in
                        // Flash frames carry no index code.
                        let index = VirtualFrameReader.isFlashFrame(image) ? UInt32(truncatingIfNeeded: sequence)
                            : VirtualFrameReader.readFrameIndex(from: image)
                        seen.append((sequence, index))
                        return seen.count
                    }
                    if count == 10 { enough.continuation.finish() }
                case .dropped(let sequence, _, _):
                    // A loaded machine makes a real-time camera skip frames; each one is reported.
                    dropped.withLock { $0.append(sequence) }
                case .failed:
                    enough.continuation.finish()
                }
            }
            try tap.start()
            for await _ in enough.stream {}
            tap.stop()
            let frames = seen.withLock { $0 }
            let drops = Set(dropped.withLock { $0 })
            #expect(frames.count >= 10)
            // In order, and every sequence number in the span either delivered or reported dropped.
            let delivered = frames.map(\.sequence)
            #expect(zip(delivered, delivered.dropFirst()).allSatisfy { $0 < $1 }, "\(delivered)")
            if let first = delivered.first, let last = delivered.last {
                let missing = (first...last).filter { !delivered.contains($0) && !drops.contains($0) }
                #expect(missing.isEmpty, "neither delivered nor reported dropped: \(missing)")
            }
            #expect(frames.allSatisfy { $0.index == UInt32(truncatingIfNeeded: $0.sequence) })
            // Nothing was queued: the stopped tap's queue is empty at once.
            #expect(try await tap.nextEvent(timeout: .milliseconds(50)) == nil)
        }

        @Test func theFrameIndexAndTheFlashReadBackExactly() async throws {
            let camera = try frontCamera()
            // Stepped a frame at a time: every frame comes, so a whole second (the flash) falls within the first
            // 31, however loaded the machine is.
            let controller = try #require(VirtualCameraController(camera))
            let clock = VirtualDeviceClock()
            controller.clockMode = .manual(clock)
            defer { controller.clockMode = .realTime }
            let tap = CaptureDeviceTap(device: camera)
            try tap.start()
            defer { tap.stop() }
            var frames = 0
            var flashes = 0
            var framesAfterFlash = 0
            while flashes == 0 || framesAfterFlash < 3, frames < 45 {
                if frames > 0 { #expect(clock.advance(by: CMTime(value: 1, timescale: 30))) }
                guard case .sample(let sample, let sequence) = try await tap.nextEvent() else {
                    Issue.record("frame \(frames + 1) did not come")
                    break
                }
                let image = try #require(sample.imageBuffer)
                let isFlash = VirtualFrameReader.isFlashFrame(image)
                let time = sample.presentationTimeStamp
                #expect(isFlash == holdsWholeSecond(start: time, duration: sample.duration), "frame at \(time.seconds)")
                let index = VirtualFrameReader.readFrameIndex(from: image)
                #expect(
                    index == (isFlash ? nil : UInt32(sequence)), "frame \(sequence) reads \(String(describing: index))")
                frames += 1
                if isFlash { flashes += 1 } else if flashes > 0 { framesAfterFlash += 1 }
            }
            #expect(flashes >= 1, "no flash in \(frames) frames")
            #expect(framesAfterFlash >= 3)
        }

        @Test func theFrameIndexReadsFromARawLumaPlane() async throws {
            let camera = try frontCamera()
            let tap = CaptureDeviceTap(device: camera)
            try tap.start()
            defer { tap.stop() }
            while true {
                guard case .sample(let sample, let sequence) = try await tap.nextEvent() else { continue }
                let image = try #require(sample.imageBuffer)
                if VirtualFrameReader.isFlashFrame(image) { continue }
                // As a decoder would hand it over: a tightly packed grey plane.
                let width = CVPixelBufferGetWidth(image)
                let height = CVPixelBufferGetHeight(image)
                var luma = [UInt8](repeating: 0, count: width * height)
                image.withUnsafePlane(0) { bytes, bytesPerRow in
                    for y in 0..<height {
                        for x in 0..<width { luma[y * width + x] = bytes[y * bytesPerRow + x] }
                    }
                }
                #expect(
                    VirtualFrameReader.readFrameIndex(fromLuma: luma, width: width, height: height) == UInt32(sequence))
                #expect(!VirtualFrameReader.isFlashFrame(luma: luma, width: width, height: height))
                return
            }
        }
    }
}

extension MicrophoneTests {
    /// The beeps, read back from tapped microphone samples, and the microphone's clock error.
    @Suite struct SoundMarkers {
        /// Taps the real-time microphone until its samples hold a whole second of sample time and the 50 ms beep
        /// there (at most 1.1 s). Real time, because a free-running microphone produces periods far faster than a
        /// test consumes them.
        private func tapOneBeep(ppm: Double = 0) async throws -> [CMSampleBuffer] {
            let microphone = try microphone()
            let controller = try #require(microphone.virtualMicrophone)
            defer { controller.restoreDefaults() }
            controller.clockErrorPPM = ppm
            // Room for 2.5 s of periods, so a test task starved by a loaded machine loses none of them.
            let tap = CaptureDeviceTap(device: microphone, bufferLimit: 256)
            try tap.start()
            defer { tap.stop() }
            func sampleSeconds(_ time: CMTime) -> Double { time.seconds * (1 + ppm * 1e-6) }
            var samples = [try await tap.nextSample()]
            let beepEnd = sampleSeconds(samples[0].presentationTimeStamp).rounded(.up) + 0.07
            while sampleSeconds(samples[samples.count - 1].presentationTimeStamp) < beepEnd {
                samples.append(try await tap.nextSample())
            }
            #expect(tap.discardedEventCount == 0)
            return samples
        }

        @Test func beepsStartAtWholeSeconds() async throws {
            let samples = try await tapOneBeep()
            // Contiguous 10 ms periods.
            for (previous, next) in zip(samples, samples.dropFirst()) {
                #expect(
                    next.presentationTimeStamp == previous.presentationTimeStamp + CMTime(value: 480, timescale: 48000))
            }
            let beeps = VirtualAudioReader.findBeeps(in: samples)
            #expect(beeps.count == 1)
            for beep in beeps {
                let seconds = beep.seconds
                #expect(abs(seconds - seconds.rounded()) < 0.000_1, "a beep at \(seconds) s")
            }
        }

        @Test func aClockErrorMovesTheBeepsOffTheHostSeconds() async throws {
            let ppm = 250.0
            let samples = try await tapOneBeep(ppm: ppm)
            let beeps = VirtualAudioReader.findBeeps(in: samples)
            #expect(beeps.count == 1)
            for beep in beeps {
                // Beeps are at whole seconds of sample time: host time × (1 + ppm·10⁻⁶).
                let sampleSeconds = beep.seconds * (1 + ppm * 1e-6)
                #expect(abs(sampleSeconds - sampleSeconds.rounded()) < 0.000_1, "a beep at \(beep.seconds) s")
            }
        }
    }
}
