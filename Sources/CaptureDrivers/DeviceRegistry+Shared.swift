extension DeviceRegistry {
    /// The registry of the process: every driver, filtered by `OPENAV_DEVICES` (read once, at first use). Real
    /// drivers join the list as they are written; the virtual devices are always there.
    ///
    /// Threading: thread safe, as every `DeviceRegistry`.
    package static let shared = DeviceRegistry(
        drivers: [
            PipeWireDeviceDriver.shared, V4L2CameraDriver.shared, ALSADeviceDriver.shared, VirtualDeviceDriver.shared,
        ],
        selection: .fromEnvironment(), backendPreference: .fromEnvironment())
}
