import CaptureDrivers
import CaptureGraph
import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Synchronization
import Testing

/// A backend that, like the ALSA and V4L2 drivers, may be started only when stopped: it records every start,
/// stop and start-while-started instead of trapping, and ends its stream with a fault on demand.
private final class StrictBackend: CaptureBackend, @unchecked Sendable {
    struct Log {
        var starts = 0
        var stops = 0
        var startsWhileStarted = 0
        var sink: StreamSink?
    }
    let log = Mutex(Log())
    let identity = DeviceIdentity(
        uniqueID: "strict", modelID: "strict", localizedName: "Strict Microphone", manufacturer: "Tests",
        kind: .microphone, position: .unspecified, media: .audio, origin: .virtual)
    let formats = [DeviceFormat.audio(AudioFormat(sampleRate: 48_000, channels: 1, sampleFormat: .int16))]
    var controls: (any CameraControlling)? { nil }
    var clock: CMClock { .hostTimeClock }
    var isConnected: Bool { true }
    var isInUseByAnotherApplication: Bool { false }
    var isAccessible: Bool { true }

    func validate(_ configuration: StreamConfiguration) -> ConfigurationValidity { .valid }

    func start(_ configuration: StreamConfiguration, sink: @escaping StreamSink) throws(DeviceFault) {
        log.withLock { log in
            if log.sink != nil { log.startsWhileStarted += 1 }
            log.starts += 1
            log.sink = sink
        }
    }

    func stop() {
        log.withLock {
            $0.stops += 1; $0.sink = nil
        }
    }

    /// The device goes away: its stream ends with a fault, and the driver keeps its hold until stopped.
    func unplug() { log.withLock { $0.sink }?(.fault(.disconnected)) }
}

@Suite("A device's stream shared by its subscribers")
struct DeviceStreamHubTests {
    @Test("A stream a fault ended is stopped before it starts again (a USB microphone unplugged and replugged)")
    func resumeAfterAFaultStopsFirst() throws {
        let backend = StrictBackend()
        let hub = DeviceStreamHub.hub(for: backend)
        let faults = Mutex(0)
        let token = try hub.subscribe(StreamConfiguration(format: backend.formats[0], frameDuration: .invalid)) {
            if case .fault = $0 { faults.withLock { $0 += 1 } }
        }
        #expect(hub.isStreaming)
        backend.unplug()
        #expect(faults.withLock { $0 } == 1)
        #expect(!hub.isStreaming)
        try hub.resume()
        #expect(hub.isStreaming)
        let log = backend.log.withLock { $0 }
        #expect(log.starts == 2 && log.stops == 1, "\(log.starts) starts, \(log.stops) stops")
        #expect(log.startsWhileStarted == 0, "started again while the faulted stream was still held")
        hub.unsubscribe(token)
        #expect(backend.log.withLock { $0.stops } == 2 && !hub.isStreaming)
    }
}
