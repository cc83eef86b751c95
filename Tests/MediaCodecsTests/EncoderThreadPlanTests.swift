import Testing

@testable import MediaCodecs

/// Threads by pixel rate, capped at the cores, and advice only when encoding would not fit beside capture.
@Suite struct EncoderThreadPlanTests {
    @Test func oneThreadFor1080p30AndTwoFor1080p60OnTwoCores() {
        let p30 = EncoderThreadPlan(codec: .h264, width: 1920, height: 1080, frameRate: 30, availableCores: 2)
        #expect(p30.threads == 1 && p30.keepsRealTime)
        let p60 = EncoderThreadPlan(codec: .h264, width: 1920, height: 1080, frameRate: 60, availableCores: 2)
        #expect(p60.threads == 2 && p60.keepsRealTime)
        #expect(p60.advice(codec: .h264, width: 1920, height: 1080, frameRate: 60) == nil)
    }

    @Test func uhdAt30FramesPerSecondOnTwoCoresSaysItCannotAndWhatWould() throws {
        let plan = EncoderThreadPlan(codec: .h264, width: 3840, height: 2160, frameRate: 30, availableCores: 2)
        #expect(plan.threads == 2)
        #expect(!plan.keepsRealTime)
        let advice = try #require(plan.advice(codec: .h264, width: 3840, height: 2160, frameRate: 30))
        #expect(advice.contains("3840x2160 at 30 fps") && advice.contains("2 are available"), "\(advice)")
        #expect(advice.contains("at 1920x1080"), "\(advice)")
        // The rate it names keeps up by the same model.
        let rate = try #require(Int(advice.split(separator: "at ").last { $0.contains("fps or less") }?.prefix { $0.isNumber } ?? ""))
        #expect(EncoderThreadPlan(codec: .h264, width: 3840, height: 2160, frameRate: rate, availableCores: 2).keepsRealTime)
        // With eight cores it keeps up, on four threads.
        let eight = EncoderThreadPlan(codec: .h264, width: 3840, height: 2160, frameRate: 30, availableCores: 8)
        #expect(eight.keepsRealTime && eight.threads == 4)
    }

    @Test func codecsThatDoNotSliceGetOneThreadAndNoAdvice() {
        let jpeg = EncoderThreadPlan(codec: .jpeg, width: 3840, height: 2160, frameRate: 60, availableCores: 2)
        #expect(jpeg.threads == 1 && jpeg.advice(codec: .jpeg, width: 3840, height: 2160, frameRate: 60) == nil)
        let hevc = EncoderThreadPlan(codec: .hevc, width: 1920, height: 1080, frameRate: 30, availableCores: 2)
        #expect(!hevc.keepsRealTime)
        #expect(hevc.advice(codec: .hevc, width: 1920, height: 1080, frameRate: 30)?.contains("in H.264") == true)
    }
}
