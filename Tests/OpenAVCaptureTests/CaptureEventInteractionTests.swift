import Foundation
import OpenAVCapture
import Synchronization
import Testing

/// `AVCaptureEventInteraction` fed a stream of Linux input events through a FIFO, as an evdev node delivers them
/// (this host has no /dev/uinput to make a real one).
@Suite(.serialized) struct CaptureEventInteractionTests {
    /// One `struct input_event` (64-bit layout) with a zero time.
    static func event(type: UInt16, code: UInt16, value: Int32) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 16)
        for part in [UInt32(type), UInt32(code)] { bytes += [UInt8(part & 0xFF), UInt8(part >> 8)] }
        let raw = UInt32(bitPattern: value)
        bytes += [0, 8, 16, 24].map { UInt8((raw >> $0) & 0xFF) }
        return bytes
    }

    @Test("Camera and volume-down keys are primary, volume-up secondary; repeats and other keys are not presses")
    func keysBecomeCaptureEvents() throws {
        let path = NSTemporaryDirectory() + "capture-events-\(getpid()).fifo"
        unlink(path)
        #expect(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        let seen = Mutex<[String]>([])
        let interaction = AVCaptureEventInteraction(
            primary: { event in seen.withLock { $0.append("primary \(event.phase)") } },
            secondary: { event in seen.withLock { $0.append("secondary \(event.phase)") } })
        try interaction.start(readingEventsAt: path)
        // Opened after the reader: a FIFO's writer waits for a reader; the reader's non-blocking open does not.
        let writer = try #require(FileHandle(forWritingAtPath: path))
        var stream: [UInt8] = []
        stream += Self.event(type: 1, code: 212, value: 1)  // KEY_CAMERA down
        stream += Self.event(type: 1, code: 212, value: 2)  // auto-repeat: not a press
        stream += Self.event(type: 0, code: 0, value: 0)  // EV_SYN
        stream += Self.event(type: 1, code: 212, value: 0)  // KEY_CAMERA up
        stream += Self.event(type: 1, code: 115, value: 1)  // KEY_VOLUMEUP down
        stream += Self.event(type: 1, code: 30, value: 1)  // KEY_A: not a capture key
        stream += Self.event(type: 1, code: 115, value: 0)
        // Split mid-event: the reader keeps the partial event for the next read.
        writer.write(Data(stream.prefix(100)))
        writer.write(Data(stream.dropFirst(100)))
        writer.write(Data(Self.event(type: 1, code: 114, value: 1)))  // KEY_VOLUMEDOWN down
        try writer.close()
        let expected = ["primary began", "primary ended", "secondary began", "secondary ended", "primary began"]
        #expect(waitUntil(timeout: 10) { seen.withLock { $0 } == expected }, "\(seen.withLock { $0 })")
        interaction.stop()
    }

    @Test("A node that does not exist is deviceNotConnected")
    func missingNode() throws {
        let interaction = AVCaptureEventInteraction { _ in Issue.record("no event expected") }
        #expect(interaction.isEnabled)
        do {
            try interaction.start(readingEventsAt: "/nonexistent/event99")
        } catch let error as AVError {
            #expect(error.code == .deviceNotConnected)
        }
    }
}
