import CLinuxMedia
import CaptureDrivers
import OpenCoreMedia
import Testing

/// What a broken driver or a lying kernel answers, read by the V4L2 driver: what makes no sense is left out, never
/// trapped on. Found by the V4L2 fuzz target (Fuzz/Corpus/v4l2), whose simulated kernel rewrites its answers.
@Suite struct V4L2LyingKernelTests {
    @Test("Frame sizes of 0 or 2³²−1 and upside-down stepwise ranges are left out; a step of 0 reads as continuous")
    func impossibleSizesAreLeftOut() throws {
        let thirty = [CMTime(value: 1, timescale: 30)]
        let kernel = SimulatedV4L2Kernel(
            formats: [
                SimulatedV4L2Kernel.Format(
                    pixelFormat: .yuyv, sizes: [.discrete(width: .max, height: 480), .discrete(width: 640, height: 0)],
                    durations: thirty),
                SimulatedV4L2Kernel.Format(
                    pixelFormat: .nv12,
                    sizes: [
                        .stepwise(
                            minWidth: 640, maxWidth: 320, widthStep: 1, minHeight: 480, maxHeight: 240, heightStep: 1)
                    ], durations: thirty),
                SimulatedV4L2Kernel.Format(
                    pixelFormat: .mjpeg,
                    sizes: [
                        .stepwise(
                            minWidth: 160, maxWidth: 640, widthStep: 0, minHeight: 120, maxHeight: 480, heightStep: 0)
                    ], durations: thirty),
            ])
        let location = V4L2NodeLocation(name: "video0", path: kernel.path)
        let description = try #require(try V4L2DeviceDescription.read(location, system: kernel.system))
        let sizes = description.formats.map { "\($0.video.width)x\($0.video.height)" }
        #expect(sizes == ["160x120", "320x240", "352x288", "640x360", "640x480"])
    }

    @Test("A control whose minimum is above its maximum, or beyond 32 bits, is left out (the exposure range trapped)")
    func impossibleControlRangesAreLeftOut() throws {
        let kernel = SimulatedV4L2Kernel(
            formats: [.discrete(.yuyv, [(640, 480)])],
            controls: [
                V4L2ControlTests.control(V4L2_CID_EXPOSURE_ABSOLUTE, V4L2_CTRL_TYPE_INTEGER, 2047, 3, 250),
                V4L2ControlTests.control(V4L2_CID_GAIN, V4L2_CTRL_TYPE_INTEGER, .min, .max, 0),
                V4L2ControlTests.control(V4L2_CID_FOCUS_ABSOLUTE, V4L2_CTRL_TYPE_INTEGER, 0, 250, 0),
            ])
        let capabilities = try makeCamera(kernel).cameraControls.capabilities
        #expect(capabilities.exposureDurationRange == nil)
        #expect(capabilities.isoRange == 100...100, "no gain control: the default")
        #expect(capabilities.isLensPositionSupported)
    }

    @Test("A frame stamped 2⁶³−1 seconds after boot is stamped now instead (the capture thread trapped)")
    func impossibleTimestampIsReplaced() throws {
        let kernel = SimulatedV4L2Kernel(formats: [.discrete(.yuyv, [(640, 480)])]) { request, answer in
            guard request == CLinuxMedia_VIDIOC_DQBUF else { return }
            answer.baseAddress!.assumingMemoryBound(to: v4l2_buffer.self).pointee.timestamp.tv_sec = .max
        }
        let camera = try makeCamera(kernel)
        let recorder = V4L2Recorder()
        let before = CMClock.hostTimeNow
        try camera.start(try configuration(camera, 640, 480, V4L2TraceTests.yuyv), sink: recorder.sink)
        #expect(recorder.wait(forFrames: 2))
        camera.stop()
        let after = CMClock.hostTimeNow
        for case .frame(_, let time, _, _, _) in recorder.events {
            #expect(time >= before && time <= after, "\(time.seconds) not within \(before.seconds)…\(after.seconds)")
        }
    }
}
