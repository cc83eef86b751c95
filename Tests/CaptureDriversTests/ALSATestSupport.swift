import CaptureDrivers
import Dispatch
import Foundation
import OpenCoreMedia
import Synchronization

/// The ALSA configuration the tests add to the system's: a PCM `openav_test_file` that captures the bytes of the
/// file named by its `INFILE` argument (ALSA's `file` plugin with `infile`, over a `null` slave), listed in the name
/// hints as "OpenAVCapture test input".
///
/// `ALSA_CONFIG_PATH` is set once for the whole test process to the system's alsa.conf followed by this file
/// (libasound reloads its configuration when the list of files changes); every other PCM keeps its meaning.
enum ALSATestConfiguration {
    static let pcmName = "openav_test_file"
    static let hintDescription = "OpenAVCapture test input"

    /// Installs the configuration; nil (with the reason) when the system has no alsa.conf to extend.
    static let installed: String? = {
        let system = "/usr/share/alsa/alsa.conf"
        guard FileManager.default.fileExists(atPath: system) else { return "\(system) is missing" }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "openav-alsa-\(getpid())", isDirectory: true)
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("openav-test.conf")
        let text = """
            pcm.\(pcmName) {
                @args [ INFILE ]
                @args.INFILE { type string default "/dev/zero" }
                type file
                slave.pcm { type null }
                file "/dev/null"
                infile $INFILE
                format "raw"
                hint { show on description "\(hintDescription)" }
            }
            pcm.openav_test_unopenable {
                type hw
                card 99
                hint { show on description "A card that is not there" }
            }

            """
        do {
            try text.write(to: file, atomically: true, encoding: .utf8)
        } catch {
            return "cannot write \(file.path): \(error)"
        }
        setenv("ALSA_CONFIG_PATH", "\(system):\(file.path)", 1)
        return nil
    }()

    /// A file of `count` pseudo-random bytes (a fixed seed: a failure reproduces) in the test directory.
    static func randomInput(bytes count: Int, seed: UInt64) throws -> URL {
        var generator = seed
        var bytes = [UInt8](repeating: 0, count: count)
        for index in bytes.indices {
            // SplitMix64: cheap and well mixed.
            generator &+= 0x9E37_79B9_7F4A_7C15
            var z = generator
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            bytes[index] = UInt8(truncatingIfNeeded: z ^ (z >> 31))
        }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "openav-alsa-\(getpid())-\(seed).raw")
        try Data(bytes).write(to: url)
        return url
    }
}

/// A sink for ALSA streams, which may deliver thousands of periods a second (the `file` plugin has no pacing):
/// it keeps the bytes and timing of the first `keep` periods and only counts the rest.
final class ALSAStreamCollector: Sendable {
    struct Period: Sendable {
        var sequence: UInt64
        var presentationTime: CMTime
        var duration: CMTime
        var numSamples: Int
        var bytes: [UInt8]
        var deliveredAt: Int64
        var formatDescription: CMFormatDescription?
    }

    struct Drop: Sendable {
        var sequence: UInt64
        var presentationTime: CMTime
        var reason: DropReason
    }

    private struct State {
        var periods: [Period] = []
        var drops: [Drop] = []
        var faults: [DeviceFault] = []
        var eventCount = 0
        var sequences: [UInt64] = []
        var isClosed = false
        var eventsAfterClose = 0
    }

    private let keep: Int
    private let state = Mutex(State())
    private let arrivals = DispatchSemaphore(value: 0)
    /// Called on the capture thread for each output, before it is recorded (a test's fault injection).
    private let onOutput: (@Sendable (UInt64) -> Void)?

    init(keep: Int, onOutput: (@Sendable (UInt64) -> Void)? = nil) {
        self.keep = keep
        self.onOutput = onOutput
    }

    var sink: StreamSink {
        { [self] event in
            switch event {
            case .output(let sample, let sequence):
                onOutput?(sequence)
                let now = CMClock.hostNanosecondsNow()
                state.withLock { state in
                    if state.periods.count < keep {
                        var bytes: [UInt8] = []
                        sample.dataBuffer?.withUnsafeBytes { bytes = Array($0) }
                        state.periods.append(
                            Period(
                                sequence: sequence, presentationTime: sample.presentationTimeStamp,
                                duration: sample.duration, numSamples: sample.numSamples, bytes: bytes,
                                deliveredAt: now, formatDescription: sample.formatDescription))
                    }
                    state.sequences.append(sequence)
                }
            case .dropped(let sequence, let time, let reason):
                state.withLock { state in
                    state.drops.append(Drop(sequence: sequence, presentationTime: time, reason: reason))
                    state.sequences.append(sequence)
                }
            case .fault(let fault):
                state.withLock { $0.faults.append(fault) }
            }
            state.withLock { state in
                state.eventCount += 1
                if state.isClosed { state.eventsAfterClose += 1 }
            }
            arrivals.signal()
        }
    }

    var periods: [Period] { state.withLock { $0.periods } }
    var drops: [Drop] { state.withLock { $0.drops } }
    var faults: [DeviceFault] { state.withLock { $0.faults } }
    /// The sequence numbers of every output and drop, in delivery order.
    var sequences: [UInt64] { state.withLock { $0.sequences } }
    var eventsAfterClose: Int { state.withLock { $0.eventsAfterClose } }

    /// From now on, count events as arriving too late (after `stop()` returned).
    func close() {
        state.withLock { $0.isClosed = true }
    }

    /// Waits until `predicate` holds, up to `timeout` seconds; returns whether it held.
    @discardableResult
    func wait(timeout: Double = 10, until predicate: (_ periods: Int, _ drops: Int) -> Bool) -> Bool {
        let deadline = DispatchTime.now() + timeout
        func holds() -> Bool { state.withLock { predicate($0.periods.count, $0.drops.count) } }
        while true {
            if holds() { return true }
            if arrivals.wait(timeout: deadline) == .timedOut { return holds() }
        }
    }
}
