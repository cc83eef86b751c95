// Virtual devices put on one manual clock for the length of a test: the test steps time instead of waiting for it.

import OpenAVCapture
import OpenAVCaptureTesting
import Testing

/// What a test needs to put its virtual devices on a manual clock and back.
private struct ManualClockAssignment {
    let clock = VirtualDeviceClock()
    private var restores: [() -> Void] = []

    /// Puts `devices` (virtual cameras and microphones) on the clock; fails the test for a device that is not virtual.
    init(_ devices: [AVCaptureDevice]) throws {
        for device in devices {
            if let camera = VirtualCameraController(device) {
                camera.clockMode = .manual(clock)
                restores.append { camera.clockMode = .realTime }
            } else {
                let microphone = try #require(
                    VirtualMicrophoneController(device), "\(device.localizedName) is not a virtual device")
                microphone.clockMode = .manual(clock)
                restores.append { microphone.clockMode = .realTime }
            }
        }
    }

    /// Puts every device back on the real-time clock.
    func restore() { restores.forEach { $0() } }
}

/// Runs `body` with `devices` (virtual cameras and microphones) paced by one new manual clock, then puts them back
/// on the real-time clock. Call it before the devices start: a device takes its clock as it starts.
public func withManualClock<Result>(
    _ devices: [AVCaptureDevice], _ body: (VirtualDeviceClock) throws -> Result
) throws -> Result {
    let assignment = try ManualClockAssignment(devices)
    defer { assignment.restore() }
    return try body(assignment.clock)
}

/// The same for a test written with Swift concurrency: `body` may suspend.
public func withManualClock<Result>(
    _ devices: [AVCaptureDevice], _ body: (VirtualDeviceClock) async throws -> Result
) async throws -> Result {
    let assignment = try ManualClockAssignment(devices)
    defer { assignment.restore() }
    return try await body(assignment.clock)
}
