// Preferring a wide-colour format where the camera has one, sRGB otherwise.
import OpenAVCaptureShim

enum ColorSpacePicker {
    static func preferP3(_ device: AVCaptureDevice) throws {
        let wide = device.formats.first { $0.supportedColorSpaces.contains(.P3_D65) }
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        if let wide {
            device.activeFormat = wide
            device.activeColorSpace = .P3_D65
        } else if device.activeFormat.supportedColorSpaces.contains(.sRGB) {
            device.activeColorSpace = .sRGB
        }
    }

    static func name(_ space: AVCaptureColorSpace) -> String {
        switch space {
        case .sRGB: return "sRGB"
        case .P3_D65: return "Display P3"
        case .HLG_BT2020: return "HLG"
        case .appleLog: return "Apple Log"
        @unknown default: return "unknown"
        }
    }
}
