import CaptureDrivers
import Foundation
import OpenAVCapture

/// A V4L2 camera on the simulated kernel at a node of a fake sysfs tree, so with that node's USB attachment (bus,
/// port, speed, alternate settings), as an `AVCaptureDevice` of its own: the real driver, session and error path,
/// no hardware. A test scripts its kernel's failures (`kernel.fail("STREAMON", with: ENOSPC)`).
///
/// Threading: not synchronized; use from one thread.
package struct SimulatedUSBCamera {
    /// YUYV and MJPEG at 640x480 and 1280x720, at 30, 15 and 5 fps, as a webcam offers them.
    package static let webcamFormats: [SimulatedV4L2Kernel.Format] = [
        .discrete(.yuyv, [(640, 480), (1280, 720)]), .discrete(.mjpeg, [(640, 480), (1280, 720)]),
    ]

    package let kernel: SimulatedV4L2Kernel
    package let device: AVCaptureDevice

    /// The camera at `/dev/NODE`; its diagnosis reads `sysfs` for who shares the bus and `processRoot` for who holds
    /// their nodes.
    package init(node: String, sysfs: FakeUSBSysfs, processRoot: String = "/proc") throws {
        let path = "/dev/\(node)"
        kernel = SimulatedV4L2Kernel(
            path: path, card: "HD Pro Webcam C920 \(node)", busInfo: "usb-\(node)", formats: Self.webcamFormats)
        guard
            let description = try V4L2DeviceDescription.read(
                V4L2NodeLocation(name: node, path: path), system: kernel.system)
        else { throw AVError(.deviceNotConnected, userInfo: [NSLocalizedDescriptionKey: "no camera at \(path)"]) }
        let camera = V4L2Camera(
            path: path, description: description, system: kernel.system,
            diagnosis: DeviceNodeDiagnosis(processRoot: processRoot, videoNodeRoot: sysfs.videoNodeRoot),
            registry: DeviceRegistry(drivers: [], selection: .all),
            usb: USBTopology(videoNodeRoot: sysfs.videoNodeRoot).attachment(ofVideoNode: node))
        device = AVCaptureDevice(backend: camera)
    }

    /// Makes the format of this size and media subtype active, at 30 fps.
    package func select(_ width: Int32, _ height: Int32, _ subType: FourCharCode) throws {
        guard
            let format = device.formats.first(where: { format in
                let size = CMVideoFormatDescriptionGetDimensions(format.formatDescription)
                return size.width == width && size.height == height
                    && CMFormatDescriptionGetMediaSubType(format.formatDescription) == subType
            })
        else { throw AVError(.formatUnsupported, userInfo: [NSLocalizedDescriptionKey: "no \(width)x\(height)"]) }
        try device.lockForConfiguration()
        device.activeFormat = format
        device.activeVideoMinFrameDuration = CMTime(value: 1, timescale: 30)
        device.unlockForConfiguration()
    }
}
