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
}
