/// The built-in virtual devices as a driver: "Virtual Back Camera", "Virtual Front Camera" and "Virtual Microphone",
/// always present unless a test unplugs them.
///
/// Threading: thread safe; the devices are created once and never replaced, so discovery always returns the same
/// backend objects.
package final class VirtualDeviceDriver: CaptureDriver {
    /// The driver `DeviceRegistry.shared` lists.
    package static let shared = VirtualDeviceDriver()

    package let backCamera: VirtualCamera
    package let frontCamera: VirtualCamera
    package let microphone: VirtualMicrophone

    /// A driver with devices of its own that report to `registry` (nil: `DeviceRegistry.shared`).
    package init(registry: DeviceRegistry? = nil) {
        backCamera = VirtualCamera(position: .back, registry: registry)
        frontCamera = VirtualCamera(position: .front, registry: registry)
        microphone = VirtualMicrophone(registry: registry)
    }

    package var origin: DeviceOrigin { .virtual }

    /// The connected virtual devices: back camera, front camera, microphone.
    package func discoverDevices() -> [any CaptureBackend] {
        let devices: [any CaptureBackend] = [backCamera, frontCamera, microphone]
        return devices.filter(\.isConnected)
    }

    /// Every virtual device, connected or not, for the test controls.
    package var devices: [any VirtualDevice] { [backCamera, frontCamera, microphone] }
}
