// Setting a fixed frame rate where the active format allows it.
import OpenAVCaptureShim

enum FrameRateConfigurator {
    static func setFrameRate(_ framesPerSecond: Int32, on device: AVCaptureDevice) -> Bool {
        let supported = device.activeFormat.videoSupportedFrameRateRanges.contains { range in
            range.minFrameRate <= Double(framesPerSecond) && Double(framesPerSecond) <= range.maxFrameRate
        }
        guard supported else { return false }
        do {
            try device.lockForConfiguration()
        } catch {
            return false
        }
        let duration = CMTimeMake(value: 1, timescale: framesPerSecond)
        device.activeVideoMinFrameDuration = duration
        device.activeVideoMaxFrameDuration = duration
        device.unlockForConfiguration()
        return true
    }

    static func currentFrameRate(of device: AVCaptureDevice) -> Double {
        let duration = device.activeVideoMinFrameDuration
        return duration.seconds > 0 ? 1 / duration.seconds : 0
    }
}
