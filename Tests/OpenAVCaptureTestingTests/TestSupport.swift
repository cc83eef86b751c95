import OpenAVCaptureTesting
import Synchronization
import Testing

// The virtual devices are shared by the process (and by the other test targets, which run in it too). Each suite
// below owns one device: tests of one device run one at a time, suites of different devices in parallel. Every
// test restores what it changed.

/// Tests that stream from and change "Virtual Back Camera": optics, torch, completion handlers, faults.
@Suite(.serialized, .timeLimit(.minutes(1))) enum BackCameraTests {}

/// Tests that stream from "Virtual Front Camera" without changing its controls (the OpenAVCaptureTests target
/// changes them): the frame-index and flash markers.
@Suite(.serialized, .timeLimit(.minutes(1))) enum FrontCameraTests {}

/// Tests that stream from and change "Virtual Microphone".
@Suite(.serialized, .timeLimit(.minutes(1))) enum MicrophoneTests {}

func backCamera() throws -> AVCaptureDevice {
    try #require(AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back))
}

func frontCamera() throws -> AVCaptureDevice {
    try #require(AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .front))
}

func microphone() throws -> AVCaptureDevice {
    try #require(AVCaptureDevice.default(.microphone, for: .audio, position: .unspecified))
}

/// The host clock now: the clock every sample is stamped on.
func hostNow() -> CMTime { CMClockGetTime(CMClockGetHostTimeClock()) }

extension AVCaptureDevice {
    /// Runs `change` between `lockForConfiguration()` and `unlockForConfiguration()`.
    func configure(_ change: (AVCaptureDevice) throws -> Void) throws {
        try lockForConfiguration()
        defer { unlockForConfiguration() }
        try change(self)
    }

    /// The first NV12 format of `width` by `height` that streams at 30 fps.
    func nv12Format(width: Int32, height: Int32) throws -> Format {
        try #require(
            formats.first { format in
                format.formatDescription.dimensions.width == width
                    && format.formatDescription.dimensions.height == height
                    && format.formatDescription.mediaSubType.rawValue == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
                    && format.videoSupportedFrameRateRanges.contains { $0.maxFrameRate == 30 }
            })
    }
}

extension CaptureDeviceTap {
    /// The first non-flash frame stamped at or after `time`, discarding earlier ones.
    func frame(after time: CMTime, timeout: Duration = .seconds(5)) async throws -> CMSampleBuffer {
        while true {
            let sample = try await nextSample(timeout: timeout)
            guard sample.presentationTimeStamp >= time, let image = sample.imageBuffer else { continue }
            if !VirtualFrameReader.isFlashFrame(image) { return sample }
        }
    }

    /// Frames until `condition` holds for the device, then the first non-flash frame started after that moment
    /// (so it was rendered in the state the condition saw). Fails after `timeout` in all.
    func frame(
        once condition: () -> Bool, timeout: Double = 3
    ) async throws -> CMSampleBuffer {
        let deadline = hostNow() + CMTime(seconds: timeout, preferredTimescale: 1_000_000_000)
        while !condition() {
            guard hostNow() < deadline else { throw Timeout(description: "the condition did not hold in \(timeout) s") }
            _ = try await nextSample()
        }
        return try await frame(after: hostNow())
    }
}

/// Records the changes of one key-value observable property with the host time of each, and lets a test wait
/// for a sequence of values (without blocking a thread).
final class ValueHistory<Value: Equatable & Sendable>: Sendable {
    typealias Entry = (value: Value, time: CMTime)
    private let values = Mutex<[Entry]>([])
    private let changes: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (changes, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Called from the observer, on whichever thread changed the property.
    func record(_ value: Value) {
        values.withLock { $0.append((value, hostNow())) }
        continuation.yield()
    }

    var entries: [Entry] { values.withLock { $0 } }

    /// Waits until the recorded values contain `pattern` in order (not necessarily adjacent), up to `timeout`
    /// seconds; returns the entries that matched, or nil on timeout. One waiter at a time.
    func wait(for pattern: [Value], timeout: Double) async -> [Entry]? {
        if let match = match(pattern) { return match }
        return await withTaskGroup(of: [Entry]?.self) { group in
            group.addTask { [self] in
                for await _ in changes {
                    if let match = match(pattern) { return match }
                }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(timeout))  // the deadline, not a synchronization
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? match(pattern)
        }
    }

    private func match(_ pattern: [Value]) -> [Entry]? {
        var matched: [Entry] = []
        for entry in entries where matched.count < pattern.count && entry.value == pattern[matched.count] {
            matched.append(entry)
        }
        return matched.count == pattern.count ? matched : nil
    }
}

/// The frame of a video sample buffer.
func image(of sample: CMSampleBuffer) throws -> CVPixelBuffer {
    try #require(sample.imageBuffer)
}
