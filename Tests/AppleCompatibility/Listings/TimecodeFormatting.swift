// CMTime arithmetic for a recording timer label.
import OpenAVCaptureShim

enum TimecodeFormatting {
    static func label(for time: CMTime) -> String {
        guard time.isValid, time.isNumeric else { return "--:--" }
        let totalSeconds = Int(CMTimeGetSeconds(time))
        return String(format: "%02d:%02d", totalSeconds / 60, totalSeconds % 60)
    }

    static func frames(in duration: CMTime, frameRate: Int32) -> Int64 {
        let converted = CMTimeConvertScale(duration, timescale: frameRate, method: .roundHalfAwayFromZero)
        return converted.value
    }

    static func remaining(limit: CMTime, recorded: CMTime) -> CMTime {
        CMTimeMaximum(.zero, limit - recorded)
    }

    static func isWithin(_ time: CMTime, start: CMTime, duration: CMTime) -> Bool {
        CMTimeRange(start: start, duration: duration).containsTime(time)
    }
}
