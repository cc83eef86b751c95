import CaptureDrivers
import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Testing

@Suite("Virtual cameras as capture backends")
struct VirtualCameraStreamTests {
    // MARK: Identity and formats

    @Test("the driver lists the back camera, the front camera, the USB webcam and the microphone, with identities")
    func driverDevices() {
        let driver = VirtualDeviceDriver(registry: DeviceRegistry(drivers: [], selection: .all))
        let devices = driver.discoverDevices()
        #expect(
            devices.map(\.identity.uniqueID) == [
                "virtual:back-camera", "virtual:front-camera", "virtual:usb-webcam", "virtual:microphone",
            ])
        #expect(
            devices.map(\.identity.localizedName) == [
                "Virtual Back Camera", "Virtual Front Camera", "Virtual USB Webcam", "Virtual Microphone",
            ])
        #expect(devices.map(\.identity.position) == [.back, .front, .unspecified, .unspecified])
        #expect(
            devices.map(\.identity.kind) == [.builtInWideAngleCamera, .builtInWideAngleCamera, .external, .microphone])
        #expect(devices.allSatisfy { $0.identity.origin == .virtual && $0.identity.manufacturer == "OpenAVCapture" })
        #expect(driver.origin == .virtual)
        #expect(VirtualDeviceDriver.shared.discoverDevices().count == 4)
        #expect(DeviceRegistry.shared.devices().contains { $0 === VirtualDeviceDriver.shared.backCamera })
        driver.backCamera.simulateUnplug()
        #expect(
            driver.discoverDevices().map(\.identity.uniqueID) == [
                "virtual:front-camera", "virtual:usb-webcam", "virtual:microphone",
            ])
    }

    @Test("formats: every preset size ascending, high frame rates after their 30 fps sibling, YUYV last per size")
    func formats() {
        func describe(_ format: DeviceFormat) -> String {
            guard case .video(let video) = format else { return "audio" }
            let kind = video.mediaSubType == kCVPixelFormatType_422YpCbCr8_yuvs ? "yuyv" : "nv12"
            let photo = video.isPhotoFormat ? " photo" : ""
            return "\(video.width)x\(video.height) \(kind) \(Int(video.maxFrameRate))\(photo)"
        }
        let back = VirtualCamera(position: .back)
        let front = VirtualCamera(position: .front)
        let expected = [
            "320x240 nv12 30", "320x240 yuyv 30", "352x288 nv12 30", "352x288 yuyv 30", "640x480 nv12 30",
            "640x480 nv12 240", "640x480 yuyv 30", "960x540 nv12 30", "960x540 yuyv 30", "1280x720 nv12 30",
            "1280x720 nv12 120", "1280x720 yuyv 30", "1920x1080 nv12 30", "1920x1080 nv12 60", "1920x1080 yuyv 30",
            "3840x2160 nv12 30", "3840x2160 yuyv 30",
        ]
        #expect(back.formats.map(describe) == expected + ["4032x3024 nv12 30 photo"])
        #expect(front.formats.map(describe) == expected)
        for format in back.formats {
            guard case .video(let video) = format else { continue }
            #expect(video.maxZoomFactor == 16 && video.fieldOfView == 70)
            #expect(video.highResolutionStillDimensions == CMVideoDimensions(width: 4032, height: 3024))
            #expect(video.frameDurationRanges.allSatisfy { $0.maxFrameDuration == CMTime(value: 1, timescale: 1) })
        }
        for format in front.formats {
            guard case .video(let video) = format else { continue }
            #expect(video.maxZoomFactor == 4 && video.fieldOfView == 60)
            #expect(video.highResolutionStillDimensions == CMVideoDimensions(width: video.width, height: video.height))
        }
        #expect(back.controls?.capabilities.hasFlash == true && back.controls?.capabilities.hasTorch == true)
        #expect(front.controls?.capabilities.hasFlash == false && front.controls?.capabilities.hasTorch == false)
        #expect(back.clock === CMClock.hostTimeClock && back.isAccessible && back.isConnected)
    }

    @Test("validate: a foreign format is invalid, an out-of-range duration adjusted to the nearest, else valid")
    func validate() {
        let camera = VirtualCamera(position: .front)
        let photo = VirtualCamera(position: .back).format(4032, 3024)
        #expect(
            camera.validate(StreamConfiguration(format: photo, frameDuration: CMTime(value: 1, timescale: 30)))
                .isInvalid)
        #expect(camera.validate(camera.configuration(fps: 30)) == .valid)
        #expect(camera.validate(camera.configuration(fps: 7)) == .valid)
        var fast = camera.configuration(fps: 30)
        fast.frameDuration = CMTime(value: 1, timescale: 60)
        #expect(camera.validate(fast) == .adjusted(camera.configuration(fps: 30)))
        fast.frameDuration = CMTime(value: 2, timescale: 1)
        #expect(camera.validate(fast) == .adjusted(camera.configuration(fps: 1)))
        fast.frameDuration = .invalid
        #expect(camera.validate(fast) == .adjusted(camera.configuration(fps: 30)))
        #expect(camera.validate(camera.configuration(640, 480, fps: 240)) == .valid)
    }

    // MARK: Streaming

    @Test("real time: exact consecutive timestamps on the host clock, the index in the pixels equals the sequence")
    func realTimeFrames() throws {
        let camera = VirtualCamera(position: .back)
        let recorder = StreamRecorder()
        let configuration = camera.configuration(fps: 30)
        try camera.start(configuration, sink: recorder.sink)
        let arrived = recorder.wait(forEvents: 8)
        camera.stop()
        #expect(arrived)
        let frames = recorder.frames
        try #require(frames.count >= 8)
        let first = frames[0].presentationTime
        #expect(first.timescale == 30)
        #expect(abs(secondsSince(0) - first.seconds) < 5, "timestamps are host time")
        for (n, frame) in frames.enumerated() {
            #expect(frame.sequence == UInt64(n))
            #expect(frame.presentationTime == CMTime(value: first.value + Int64(n), timescale: 30))
            #expect(frame.presentationTime.timescale == 30)
            #expect(frame.duration == CMTime(value: 1, timescale: 30))
            #expect(frame.pixelFormat == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
            #expect(frame.width == 320 && frame.height == 240)
            // Real time: delivered at its time, never before (how long after is the machine's, not asserted).
            let lateness = Double(frame.deliveredAt) / 1e9 - frame.presentationTime.seconds
            #expect(lateness >= 0, "frame \(n) delivered \(-lateness) s before its time")
            if !frame.isFlash { #expect(frame.frameIndex == UInt32(n)) }
        }
        #expect(recorder.events.allSatisfy { if case .frame = $0 { true } else { false } })
    }

    @Test("free-running: frames come before their time, timestamps still exact, flash frames exactly at whole seconds")
    func freeRunning() throws {
        let camera = VirtualCamera(position: .back)
        camera.clockMode = .freeRunning
        let recorder = StreamRecorder()
        try camera.start(camera.configuration(fps: 30), sink: recorder.sink)
        let arrived = recorder.wait(forEvents: 75)
        camera.stop()
        #expect(arrived)
        let frames = recorder.frames
        try #require(frames.count >= 75)
        // It does not wait for the clock: frames come before their time, which a real-time camera never does.
        #expect(
            frames.contains { Double($0.deliveredAt) / 1e9 < $0.presentationTime.seconds },
            "every frame came at or after its time, as in real time")
        let first = frames[0].presentationTime.value
        var flashes = 0
        for (n, frame) in frames.enumerated() {
            #expect(frame.sequence == UInt64(n))
            #expect(frame.presentationTime == CMTime(value: first + Int64(n), timescale: 30))
            // Frame [k/30, (k+1)/30) holds a whole second exactly when k is a multiple of 30.
            let shouldFlash = frame.presentationTime.value % 30 == 0
            #expect(frame.isFlash == shouldFlash, "frame \(n) at \(frame.presentationTime.value)/30")
            if shouldFlash {
                flashes += 1
                #expect(frame.frameIndex == nil)
            } else {
                #expect(frame.frameIndex == UInt32(n))
            }
        }
        #expect(flashes >= 2)
    }

    @Test("YUYV streams carry the same picture and index")
    func yuyv() throws {
        let camera = VirtualCamera(position: .front)
        camera.clockMode = .freeRunning
        let recorder = StreamRecorder()
        try camera.start(
            camera.configuration(352, 288, fps: 25, kCVPixelFormatType_422YpCbCr8_yuvs), sink: recorder.sink)
        recorder.wait(forEvents: 5)
        camera.stop()
        let frames = recorder.frames
        try #require(frames.count >= 5)
        for frame in frames where !frame.isFlash {
            #expect(frame.pixelFormat == kCVPixelFormatType_422YpCbCr8_yuvs)
            #expect(frame.width == 352 && frame.height == 288)
            #expect(frame.frameIndex == UInt32(frame.sequence))
            #expect(frame.presentationTime.timescale == 25)
        }
    }

    @Test("a consumer holding every buffer causes .outOfBuffers drops; releasing them resumes output")
    func outOfBuffers() throws {
        let camera = VirtualCamera(position: .back)
        let recorder = StreamRecorder(holdsSamples: true)
        try camera.start(camera.configuration(fps: 30), sink: recorder.sink)
        func drops(_ events: [RecordedEvent]) -> Int {
            events.filter { if case .dropped(_, _, .outOfBuffers) = $0 { true } else { false } }.count
        }
        let dropped = recorder.wait { drops($0) >= 2 }
        recorder.releaseSamples()
        let countAtRelease = recorder.events.count
        let resumed = recorder.wait { events in
            events.count > countAtRelease + 1
                && events.dropFirst(countAtRelease).contains { if case .frame = $0 { true } else { false } }
        }
        camera.stop()
        recorder.releaseSamples()
        #expect(dropped && resumed)
        let events = recorder.events
        let firstDrop = try #require(events.firstIndex { if case .dropped = $0 { true } else { false } })
        #expect(firstDrop == VirtualCamera.poolAllocationThreshold, "the pool gives exactly its threshold")
        #expect(events.enumerated().allSatisfy { $0.element.sequence == UInt64($0.offset) })
        for case .dropped(let sequence, let time, let reason) in events {
            #expect(reason == .outOfBuffers)
            #expect(time.value - events[0].presentationTimeValue == Int64(sequence))
        }
    }

    @Test("stop() returns without waiting for the next frame, even mid-sleep at 1 fps, and no event follows it")
    func stopIsPrompt() throws {
        let camera = VirtualCamera(position: .back)
        let recorder = StreamRecorder()
        try camera.start(camera.configuration(fps: 30), sink: recorder.sink)
        recorder.wait(forEvents: 3)
        camera.stop()
        recorder.close()
        #expect(!camera.isStreaming)

        let slow = StreamRecorder()
        try camera.start(camera.configuration(fps: 1), sink: slow.sink)
        #expect(camera.isStreaming)
        #expect(slow.wait(forEvents: 1))
        let next = try #require(slow.frames.first).presentationTime + CMTime(value: 1, timescale: 1)
        camera.stop()
        slow.close()
        // The capture thread was asleep until the next frame's time: stop() woke it rather than waiting.
        #expect(Double(CMClock.hostNanosecondsNow()) / 1e9 < next.seconds, "stop() waited for the next frame")
        // No window of time: the capture threads' own exit, after which nothing can deliver a late event.
        let threads = [recorder.deliveringThread, slow.deliveringThread].compactMap { $0 }
        #expect(threads.count == 2)
        #expect(eventually { threads.allSatisfy(\.isFinished) }, "a capture thread outlived stop()")
        #expect(recorder.eventsAfterClose == 0 && slow.eventsAfterClose == 0)
    }

    // MARK: Faults

    @Test("unplug: a fault ends the stream, the registry hears it, start throws until replugged")
    func unplug() throws {
        let connections = ConnectionRecorder()
        let camera = VirtualCamera(position: .back, registry: connections.registry)
        let recorder = StreamRecorder()
        try camera.start(camera.configuration(fps: 30), sink: recorder.sink)
        recorder.wait(forEvents: 2)
        camera.simulateUnplug()
        // simulateUnplug returns after the last event.
        guard case .fault(.disconnected) = recorder.events.last else {
            Issue.record("the last event is \(String(describing: recorder.events.last)), not a disconnection")
            return
        }
        #expect(!camera.isConnected && !camera.isStreaming)
        #expect(connections.kinds(for: camera) == ["disconnected"])
        #expect(throws: DeviceFault.disconnected) { try camera.start(camera.configuration(), sink: recorder.sink) }
        camera.stop()
        camera.simulateReplug()
        #expect(camera.isConnected)
        #expect(connections.kinds(for: camera) == ["disconnected", "connected"])
        let again = StreamRecorder()
        try camera.start(camera.configuration(), sink: again.sink)
        #expect(again.wait(forEvents: 1))
        camera.stop()
    }

    @Test("busy: a fault ends the stream, start throws while busy, the registry hears each change")
    func busy() throws {
        let connections = ConnectionRecorder()
        let camera = VirtualCamera(position: .front, registry: connections.registry)
        let recorder = StreamRecorder()
        try camera.start(camera.configuration(fps: 30), sink: recorder.sink)
        recorder.wait(forEvents: 1)
        camera.simulateBusy(true)
        guard case .fault(.busy) = recorder.events.last else {
            Issue.record("the last event is \(String(describing: recorder.events.last)), not busy")
            return
        }
        #expect(camera.isInUseByAnotherApplication && camera.isConnected && !camera.isStreaming)
        #expect(throws: DeviceFault.busy) { try camera.start(camera.configuration(), sink: recorder.sink) }
        camera.simulateBusy(false)
        #expect(!camera.isInUseByAnotherApplication)
        #expect(connections.kinds(for: camera) == ["availabilityChanged", "availabilityChanged"])
        try camera.start(camera.configuration(), sink: recorder.sink)
        camera.stop()
    }

    @Test("a registry listener may call back into the camera while it is told of an unplug")
    func listenerCallsBack() throws {
        let registry = DeviceRegistry(drivers: [], selection: .all)
        let camera = VirtualCamera(position: .back, registry: registry)
        let seen = StreamRecorder()
        _ = registry.addListener { event in
            // What a public layer would do: look at the device and stop it.
            _ = event.backend.isConnected
            _ = event.backend.controls?.state
            event.backend.stop()
            seen.sink(.fault(.disconnected))
        }
        try camera.start(camera.configuration(), sink: StreamRecorder().sink)
        camera.simulateUnplug()
        #expect(seen.events.count == 1)
    }

    @Test("stall: nothing for the stall, then its frames dropped as .discontinuity in sequence, then frames again")
    func stall() throws {
        let camera = VirtualCamera(position: .back)
        let recorder = StreamRecorder()
        try camera.start(camera.configuration(fps: 30), sink: recorder.sink)
        recorder.wait(forEvents: 3)
        camera.simulateStall(for: 0.3)
        let resumed = recorder.wait { events in
            guard let drop = events.lastIndex(where: { if case .dropped = $0 { true } else { false } }) else {
                return false
            }
            return events.count > drop + 2
        }
        camera.stop()
        #expect(resumed)
        let events = recorder.events
        #expect(events.enumerated().allSatisfy { $0.element.sequence == UInt64($0.offset) }, "sequences continue")
        let first = events[0].presentationTimeValue
        var drops = 0
        for case .dropped(let sequence, let time, let reason) in events {
            drops += 1
            #expect(reason == .discontinuity)
            #expect(time == CMTime(value: first + Int64(sequence), timescale: 30))
        }
        // 0.3 s at 30 fps, less the frame the stall began on, give or take a frame.
        #expect((7...11).contains(drops), "\(drops) frames dropped")
        for case .frame(let frame) in events where !frame.isFlash {
            #expect(frame.frameIndex == UInt32(frame.sequence))
            #expect(frame.presentationTime.value == first + Int64(frame.sequence))
        }
    }
}

extension ConfigurationValidity {
    var isInvalid: Bool { if case .invalid = self { true } else { false } }
}

extension RecordedEvent {
    /// The presentation time's value of a frame or a drop (at the stream's timescale).
    var presentationTimeValue: Int64 {
        switch self {
        case .frame(let frame): frame.presentationTime.value
        case .period(let period): period.presentationTime.value
        case .dropped(_, let time, _): time.value
        case .fault: 0
        }
    }
}
