// Picking the format with the highest frame rate at a given size, as slow-motion recorders do.
import OpenAVCaptureShim

struct HighFrameRateFormatPicker {
    let minimumWidth: Int32

    func bestFormat(for device: AVCaptureDevice) -> (AVCaptureDevice.Format, AVFrameRateRange)? {
        var best: (AVCaptureDevice.Format, AVFrameRateRange)?
        for format in device.formats {
            let dimensions = CMVideoFormatDescriptionGetDimensions(format.formatDescription)
            guard dimensions.width >= minimumWidth else { continue }
            for range in format.videoSupportedFrameRateRanges {
                if range.maxFrameRate > best?.1.maxFrameRate ?? 0 {
                    best = (format, range)
                }
            }
        }
        return best
    }

    func apply(to device: AVCaptureDevice) throws {
        guard let (format, range) = bestFormat(for: device) else { return }
        try device.lockForConfiguration()
        device.activeFormat = format
        device.activeVideoMinFrameDuration = range.minFrameDuration
        device.activeVideoMaxFrameDuration = range.minFrameDuration
        device.unlockForConfiguration()
    }
}
