// A lens information panel of a pro camera app.
import OpenAVCaptureShim

struct LensInfoPanel {
    let device: AVCaptureDevice

    var lines: [String] {
        var result: [String] = []
        result.append("f/\(device.lensAperture)")
        if device.minimumFocusDistance >= 0 {
            result.append("MFD \(device.minimumFocusDistance) mm")
        }
        switch device.activeFormat.autoFocusSystem {
        case .phaseDetection: result.append("PDAF")
        case .contrastDetection: result.append("CDAF")
        case .none: result.append("fixed focus")
        @unknown default: break
        }
        if device.isVirtualDevice {
            result.append("lenses: \(device.constituentDevices.map(\.localizedName))")
            result.append("switch at \(device.virtualDeviceSwitchOverVideoZoomFactors.map(\.doubleValue))")
        }
        result.append("FOV \(device.activeFormat.videoFieldOfView)")
        result.append("multicam \(device.activeFormat.isMultiCamSupported)")
        let largest = device.activeFormat.supportedMaxPhotoDimensions.max { $0.width * $0.height < $1.width * $1.height }
        if let largest { result.append("max photo \(largest.width)x\(largest.height)") }
        return result
    }
}
