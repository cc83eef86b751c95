// Writer settings of an HDR-aware recorder: colour tags, profile, entropy and pixel shape, as camera apps set them.
import OpenAVCaptureShim

enum HDRRecorderSettings {
    static func videoSettings(width: Int, height: Int, hlg: Bool) -> [String: Any] {
        let colour: [String: Any] =
            hlg
            ? [
                AVVideoColorPrimariesKey: AVVideoColorPrimaries_ITU_R_2020,
                AVVideoTransferFunctionKey: AVVideoTransferFunction_ITU_R_2100_HLG,
                AVVideoYCbCrMatrixKey: AVVideoYCbCrMatrix_ITU_R_2020,
            ]
            : [
                AVVideoColorPrimariesKey: AVVideoColorPrimaries_ITU_R_709_2,
                AVVideoTransferFunctionKey: AVVideoTransferFunction_ITU_R_709_2,
                AVVideoYCbCrMatrixKey: AVVideoYCbCrMatrix_ITU_R_709_2,
            ]
        return [
            AVVideoCodecKey: AVVideoCodecType.h264,
            AVVideoWidthKey: width,
            AVVideoHeightKey: height,
            AVVideoColorPropertiesKey: colour,
            AVVideoPixelAspectRatioKey: [
                AVVideoPixelAspectRatioHorizontalSpacingKey: 1, AVVideoPixelAspectRatioVerticalSpacingKey: 1,
            ],
            AVVideoCleanApertureKey: [
                AVVideoCleanApertureWidthKey: width, AVVideoCleanApertureHeightKey: height,
                AVVideoCleanApertureHorizontalOffsetKey: 0, AVVideoCleanApertureVerticalOffsetKey: 0,
            ],
            AVVideoCompressionPropertiesKey: [
                AVVideoAverageBitRateKey: 6_000_000,
                AVVideoProfileLevelKey: AVVideoProfileLevelH264Main41,
                AVVideoH264EntropyModeKey: AVVideoH264EntropyModeCABAC,
                AVVideoAverageNonDroppableFrameRateKey: 30,
            ],
        ]
    }

    static func preciseAsset(_ url: URL) -> AVURLAsset {
        AVURLAsset(url: url, options: [AVURLAssetPreferPreciseDurationAndTimingKey: true])
    }

    static func describe(_ device: AVCaptureDevice) -> String {
        var features: [String] = []
        if device.activeFormat.isVideoHDRSupported { features.append("HDR") }
        if device.isVideoHDREnabled { features.append("HDR on") }
        if device.isCenterStageActive { features.append("Center Stage") }
        if device.isPortraitEffectActive { features.append("Portrait") }
        if AVCaptureDevice.isCenterStageEnabled { features.append("Center Stage enabled") }
        return features.joined(separator: ", ")
    }

    static func enableCenterStage() {
        AVCaptureDevice.centerStageControlMode = .cooperative
        AVCaptureDevice.isCenterStageEnabled = true
    }

    static func wantsDataBar(_ output: AVCaptureMetadataOutput) -> Bool {
        output.availableMetadataObjectTypes.contains(.gs1DataBarExpanded)
            || output.availableMetadataObjectTypes.contains(.gs1DataBarLimited)
    }
}
