// What a set of cameras' active formats cost together, as AVCaptureMultiCamSession's `hardwareCost` and
// `systemPressureCost` report it: 1.0 is the whole budget, and more than that cannot run.

import CaptureDrivers
import Foundation

/// Sums what each camera's active format needs (`HardwareDemand`, from its driver) into the two shares Apple's
/// multi-camera session reports.
///
/// - Hardware: USB cameras are grouped by bus; each bus's cost is the sum of the periodic bus time its cameras'
///   formats reserve, against what the bus may reserve. Cameras on no bus we can measure (virtual, movie file,
///   vivid, a capture card, PipeWire) share one pixel-rate budget, ``pixelRateBudget``. The cost is the fullest of
///   these.
/// - System pressure: what turning every camera's frames into pictures takes of the machine's cores, each encoding
///   at its own rate per core (``pixelsPerCoreSecond(for:)``), over the cores this process may run on.
///
/// Threading: stateless; safe from any thread. Reads each device's active format and sysfs (through the driver's
/// demand), so the answer follows the formats as they change.
enum CaptureHardwareCost {
    /// The pixel rate cameras outside USB share: 3840 × 2160 at 30 fps (about 249 million pixels a second), one 4K
    /// stream or four 1080p30 ones, what a laptop's or a single-board computer's capture path carries comfortably.
    static let pixelRateBudget: Double = 3840 * 2160 * 30

    /// The share of the hardware budget the cameras' active formats need together (1.0 = all of it).
    static func hardwareCost(of cameras: [AVCaptureDevice]) -> Float {
        Float(hardwareCost(of: cameras.compactMap(demand(of:))))
    }

    /// The share of the machine's decode/convert budget they need together.
    static func systemPressureCost(of cameras: [AVCaptureDevice]) -> Float {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        return Float(systemPressureCost(of: cameras.compactMap(demand(of:)), cores: cores))
    }

    /// The fullest budget: each USB bus's reserved share, and the pixel-rate share of every camera on none.
    static func hardwareCost(of demands: [HardwareDemand]) -> Double {
        var buses: [USBBusDemand.Bus: Double] = [:]
        var pixelRate = 0.0
        for demand in demands {
            if let usb = demand.usb {
                buses[usb.bus, default: 0] += usb.share
            } else {
                pixelRate += demand.pixelsPerSecond
            }
        }
        return max(buses.values.max() ?? 0, pixelRate / pixelRateBudget)
    }

    /// The core-seconds per second decoding or converting every camera's frames takes, over `cores`.
    static func systemPressureCost(of demands: [HardwareDemand], cores: Int) -> Double {
        let coreSeconds = demands.reduce(0) { $0 + $1.pixelsPerSecond / pixelsPerCoreSecond(for: $1.encoding) }
        return coreSeconds / Double(max(cores, 1))
    }

    /// How many pixels a second one core turns into NV12 pictures for an encoding. Measured with FFmpeg on one
    /// thread of this project's build machine on 1920x1080 frames (CPU time, so a busy machine does not skew it;
    /// docs/devices.md has the commands): YUYV to NV12 560 million a second, MJPEG (4:2:2, 117 kB a frame) decoded
    /// and converted 193 million, H.264 (6 Mb/s) 333 million. Rounded down; H.264 is counted at less than half its
    /// figure, since the measured picture was synthetic and a camera's busier picture at its bit rate decodes slower.
    static func pixelsPerCoreSecond(for encoding: HardwareDemand.Encoding) -> Double {
        switch encoding {
        case .raw: 500_000_000
        case .jpeg: 190_000_000
        case .interframe: 150_000_000
        }
    }

    /// The demand of a camera's active format at its fastest active rate; nil for a device that is no camera.
    private static func demand(of device: AVCaptureDevice) -> HardwareDemand? {
        guard device.hasMediaType(.video) else { return nil }
        return device.backend.hardwareDemand(for: device.streamConfiguration)
    }
}
