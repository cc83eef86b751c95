import Synchronization

/// The built-in virtual devices as a driver: "Virtual Back Camera", "Virtual Front Camera", "Virtual USB Webcam" and
/// "Virtual Microphone", always present unless a test unplugs them.
///
/// Threading: thread safe; the devices are created once and never replaced, so discovery always returns the same
/// backend objects.
package final class VirtualDeviceDriver: CaptureDriver {
    /// The driver `DeviceRegistry.shared` lists.
    package static let shared = VirtualDeviceDriver()

    package let backCamera: VirtualCamera
    package let frontCamera: VirtualCamera
    /// The external camera that behaves like a common UVC webcam (MJPEG, YUYV, H.264); its compressed formats
    /// stream once a compressor factory is installed (`VirtualCamera.installFrameCompressors(_:)`).
    package let usbWebcam: VirtualCamera
    package let microphone: VirtualMicrophone

    /// A driver with devices of its own that report to `registry` (nil: `DeviceRegistry.shared`); the webcam's
    /// compressed formats use `compressors` when given. Its devices keep `lockstep` when free-running, so a set of
    /// devices with a lockstep of its own never waits for another set's.
    package init(
        registry: DeviceRegistry? = nil, compressors: VirtualFrameCompressorFactory? = nil,
        lockstep: VirtualLockstep = .shared
    ) {
        backCamera = VirtualCamera(position: .back, registry: registry)
        frontCamera = VirtualCamera(position: .front, registry: registry)
        usbWebcam = VirtualCamera.usbWebcam(registry: registry, compressors: compressors)
        microphone = VirtualMicrophone(registry: registry)
        for device in devices { device.lifecycle.lockstep = lockstep }
    }

    package var origin: DeviceOrigin { .virtual }

    /// The connected virtual devices: back camera, front camera, USB webcam, microphone. The back camera comes
    /// first, so it stays the default camera.
    package func discoverDevices() -> [any CaptureBackend] {
        let devices: [any CaptureBackend] = [backCamera, frontCamera, usbWebcam, microphone]
        return devices.filter(\.isConnected)
    }

    /// Every virtual device, connected or not, for the test controls.
    package var devices: [any VirtualDevice] { [backCamera, frontCamera, usbWebcam, microphone] }
}

extension VirtualDeviceDriver {
    /// A driver with devices of its own and a lockstep of its own, and a registry that lists only it and hears its
    /// devices' connection events: a test's device set, apart from `DeviceRegistry.shared` and from other sets.
    /// The registry holds the driver weakly (the devices hold the registry): keep the driver.
    package static func makeSet() -> (driver: VirtualDeviceDriver, registry: DeviceRegistry) {
        let listing = WeakVirtualDriver()
        let registry = DeviceRegistry(drivers: [listing], selection: .all)
        let driver = VirtualDeviceDriver(registry: registry, lockstep: VirtualLockstep())
        listing.driver.withLock { $0.value = driver }
        return (driver, registry)
    }
}

/// Lists a set's virtual devices for its registry without keeping them alive (they keep the registry).
///
/// Threading: thread safe (a mutex).
private final class WeakVirtualDriver: CaptureDriver {
    struct Reference { weak var value: VirtualDeviceDriver? }
    let driver = Mutex(Reference())

    var origin: DeviceOrigin { .virtual }

    func discoverDevices() -> [any CaptureBackend] {
        driver.withLock { $0.value }?.discoverDevices() ?? []
    }
}
