import OpenAVCaptureTesting
import Synchronization
import Testing

/// Records the device notifications posted for one device.
private final class NotificationRecorder {
    private let names = NameLog()
    private let tokens: [any NSObjectProtocol]

    private final class NameLog: Sendable {
        let names = Mutex<[String]>([])
    }

    init(for device: AVCaptureDevice) {
        let log = names
        tokens = [NSNotification.Name.AVCaptureDeviceWasConnected, .AVCaptureDeviceWasDisconnected].map { name in
            // Posted on the thread that unplugs or replugs: the test's own.
            NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { notification in
                guard (notification.object as? AVCaptureDevice) === device else { return }
                let kind = notification.name == .AVCaptureDeviceWasConnected ? "connected" : "disconnected"
                log.names.withLock { $0.append(kind) }
            }
        }
    }

    var posted: [String] { names.names.withLock { $0 } }

    func remove() {
        for token in tokens { NotificationCenter.default.removeObserver(token) }
    }
}

/// The next `.failed` event's error code, skipping samples and drops.
private func failure(from tap: CaptureDeviceTap) async throws -> AVError.Code? {
    while let event = try await tap.nextEvent() {
        if case .failed(let error) = event { return error.code }
    }
    return nil
}

/// The `AVError` code `body` throws, nil when it does not throw one.
private func errorCode(_ body: () throws -> Void) -> AVError.Code? {
    do {
        try body()
        return nil
    } catch {
        return (error as? AVError)?.code
    }
}

extension BackCameraTests {
    /// Faults on demand, seen through Apple's API and the tap.
    @Suite struct CameraFaults {
        @Test func unplugAndReplug() async throws {
            try await withStreamingBackCamera { camera, controller, tap in
                let notifications = NotificationRecorder(for: camera)
                defer { notifications.remove() }
                let connected = ValueHistory<Bool>()
                let token = camera.observe(\.isConnected, options: [.new]) { _, change in
                    connected.record(change.newValue!)
                }
                defer { token.invalidate() }
                _ = try await tap.nextSample()

                controller.unplug()
                #expect(notifications.posted == ["disconnected"])
                #expect(!camera.isConnected)
                #expect(connected.entries.map(\.value) == [false])
                #expect(try await failure(from: tap) == .deviceWasDisconnected)
                #expect(errorCode { try camera.lockForConfiguration() } == .deviceNotConnected)
                tap.stop()
                #expect(errorCode { try tap.start() } == .deviceNotConnected)

                controller.replug()
                #expect(notifications.posted == ["disconnected", "connected"])
                #expect(camera.isConnected)
                #expect(connected.entries.map(\.value) == [false, true])
                try tap.start()
                _ = try await tap.nextSample()
            }
        }

        @Test func busy() async throws {
            try await withStreamingBackCamera { camera, controller, tap in
                _ = try await tap.nextSample()
                controller.setBusy(true)
                #expect(camera.isInUseByAnotherApplication)
                #expect(controller.isBusy)
                #expect(try await failure(from: tap) == .deviceInUseByAnotherApplication)
                tap.stop()
                #expect(errorCode { try tap.start() } == .deviceInUseByAnotherApplication)
                #expect(errorCode { try camera.lockForConfiguration() } == .deviceInUseByAnotherApplication)

                controller.setBusy(false)
                #expect(!camera.isInUseByAnotherApplication)
                try tap.start()
                _ = try await tap.nextSample()
            }
        }

        @Test func aStallDropsTheFramesThatFellDueAndTheStreamGoesOn() async throws {
            try await withStreamingBackCamera(startTap: false) { _, controller, _ in
                let tap = CaptureDeviceTap(device: controller.device, bufferLimit: 64)
                try tap.start()
                defer { tap.stop() }
                _ = try await tap.nextSample()
                controller.stall(for: 0.2)
                var dropped: [UInt64] = []
                var resumedAt: UInt64?
                while resumedAt == nil {
                    switch try await tap.nextEvent() {
                    case .dropped(let sequence, _, let reason):
                        #expect(reason == .discontinuity)
                        dropped.append(sequence)
                    case .sample(_, let sequence) where !dropped.isEmpty:
                        resumedAt = sequence
                    case .failed(let error):
                        Issue.record("the stream failed: \(error)")
                        return
                    default:
                        continue
                    }
                }
                #expect(dropped.count >= 4, "0.2 s at 30 fps is about 6 frames; dropped \(dropped)")
                #expect(dropped == Array(dropped[0]...dropped[dropped.count - 1]))
                #expect(resumedAt == dropped.last.map { $0 + 1 })
            }
        }

        @Test func twoTapsShareADevice() async throws {
            try await withStreamingBackCamera { camera, _, first in
                let second = CaptureDeviceTap(device: camera)
                try second.start()
                defer { second.stop() }
                let fromSecond = try await second.nextSample()
                // The first tap sees the same frame (same time) among its next ones.
                var seen = false
                for _ in 0..<8 where !seen {
                    seen = try await first.nextSample().presentationTimeStamp >= fromSecond.presentationTimeStamp
                }
                #expect(seen)
            }
        }
    }
}

extension MicrophoneTests {
    @Suite struct MicrophoneFaults {
        @Test func busyStopsTheStreamAndRefusesAStart() async throws {
            let microphone = try microphone()
            let controller = try #require(microphone.virtualMicrophone)
            defer { controller.restoreDefaults() }
            let tap = CaptureDeviceTap(device: microphone, bufferLimit: 16)
            try tap.start()
            defer { tap.stop() }
            let period = try await tap.nextSample()
            #expect(period.numSamples == 480)
            controller.setBusy(true)
            #expect(microphone.isInUseByAnotherApplication)
            #expect(try await failure(from: tap) == .deviceInUseByAnotherApplication)
            tap.stop()
            #expect(errorCode { try tap.start() } == .deviceInUseByAnotherApplication)
            controller.setBusy(false)
            try tap.start()
            _ = try await tap.nextSample()
        }
    }
}
