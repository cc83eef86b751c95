// Building photo settings: HEVC where available, flash when supported, quality prioritization within the limit.
import OpenAVCaptureShim

enum PhotoSettingsFactory {
    static func configure(_ output: AVCapturePhotoOutput) {
        output.isHighResolutionCaptureEnabled = true
        output.maxPhotoQualityPrioritization = .quality
    }

    static func settings(for output: AVCapturePhotoOutput, flash: AVCaptureDevice.FlashMode) -> AVCapturePhotoSettings {
        let settings: AVCapturePhotoSettings
        if output.availablePhotoCodecTypes.contains(.hevc) {
            settings = AVCapturePhotoSettings(format: [AVVideoCodecKey: AVVideoCodecType.hevc])
        } else {
            settings = AVCapturePhotoSettings()
        }
        if output.supportedFlashModes.contains(flash) {
            settings.flashMode = flash
        }
        settings.isHighResolutionPhotoEnabled = output.isHighResolutionCaptureEnabled
        settings.photoQualityPrioritization =
            output.maxPhotoQualityPrioritization.rawValue >= AVCapturePhotoOutput.QualityPrioritization.balanced.rawValue
            ? .balanced : .speed
        return settings
    }

    static func rawValueSummary(_ settings: AVCapturePhotoSettings) -> String {
        "id \(settings.uniqueID) flash \(settings.flashMode.rawValue) quality \(settings.photoQualityPrioritization.rawValue)"
    }
}
