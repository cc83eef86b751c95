import CLinuxMedia
import Foundation
import OpenAVCapture
import Synchronization
import Testing

/// `AVCaptureEventInteraction` reading a real evdev node: a key device made through the kernel's uinput (in the
/// kernel-test VM, where `make test-kernel` loads the uinput module) presses the camera and volume keys, the kernel's
/// input layer hands the presses to the node `/dev/input/eventN`, and the interaction's handlers get Apple's phases.
/// Skipped, saying why, where /dev/uinput cannot be opened (this host's kernel has no uinput).
@Suite(.serialized) struct CaptureEventKernelTests {
    /// KEY_CAMERA, KEY_VOLUMEDOWN and KEY_VOLUMEUP (linux/input-event-codes.h), and KEY_A, which is no capture key.
    static let keys: [UInt16] = [212, 114, 115, 30]

    @Test("A uinput device's camera and volume keys reach the handlers as began and ended; other keys do not")
    func uinputKeysBecomeCaptureEvents() throws {
        let device = open("/dev/uinput", O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        guard device >= 0 else {
            return print(
                "Skipping CaptureEventKernelTests: /dev/uinput: \(String(cString: strerror(errno))) (make test-kernel"
                    + " runs it in a VM with the uinput module)")
        }
        defer { close(device) }
        let name = "OpenAVCapture test keys \(getpid())"
        let made = Self.keys.withUnsafeBufferPointer {
            CLinuxMedia_uinput_create_keyboard(device, name, $0.baseAddress, Int32($0.count))
        }
        try #require(made == 0, "uinput refused the device: \(String(cString: strerror(errno)))")
        defer { _ = CLinuxMedia_uinput_destroy(device) }
        // The kernel names the node after the device is registered; devtmpfs makes /dev/input/eventN (no udev).
        var node: String?
        _ = waitUntil(timeout: 10) {
            node = Self.eventNode(named: name)
            return node.map { FileManager.default.fileExists(atPath: $0) } ?? false
        }
        let path = try #require(node, "no /sys/class/input/event*/device/name says \(name)")

        let seen = Mutex<[String]>([])
        let interaction = AVCaptureEventInteraction(
            primary: { event in seen.withLock { $0.append("primary \(event.phase)") } },
            secondary: { event in seen.withLock { $0.append("secondary \(event.phase)") } })
        try interaction.start(readingEventsAt: path)
        defer { interaction.stop() }
        // evdev hands a reader only what happens after it opened the node, which start did before returning.
        for (code, value) in [(212, 1), (212, 0), (30, 1), (30, 0), (115, 1), (115, 0), (114, 1), (114, 0)] {
            try Self.send(to: device, type: 1, code: UInt16(code), value: Int32(value))  // EV_KEY
            try Self.send(to: device, type: 0, code: 0, value: 0)  // EV_SYN SYN_REPORT: the kernel delivers the key
        }
        let expected = [
            "primary began", "primary ended", "secondary began", "secondary ended", "primary began", "primary ended",
        ]
        #expect(waitUntil(timeout: 10) { seen.withLock { $0 } == expected }, "\(seen.withLock { $0 })")
    }

    /// The `/dev/input/eventN` whose device is named `name`, from sysfs.
    static func eventNode(named name: String) -> String? {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/input")) ?? []
        return entries.filter { $0.hasPrefix("event") }.first { entry in
            let text = try? String(contentsOfFile: "/sys/class/input/\(entry)/device/name", encoding: .utf8)
            return text?.trimmingCharacters(in: .whitespacesAndNewlines) == name
        }.map { "/dev/input/\($0)" }
    }

    /// Writes one `struct input_event` to the uinput device (the kernel sets its time).
    static func send(to device: Int32, type: UInt16, code: UInt16, value: Int32) throws {
        let bytes = CaptureEventInteractionTests.event(type: type, code: code, value: value)
        let written = bytes.withUnsafeBytes { write(device, $0.baseAddress, $0.count) }
        try #require(
            written == bytes.count,
            "uinput took \(written) of \(bytes.count) bytes: \(String(cString: strerror(errno)))")
    }
}
