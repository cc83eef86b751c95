import CaptureDrivers
import Dispatch
import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// What a test keeps of one video frame: read on the capture thread, so the pixel buffer can go back to its pool.
struct RecordedFrame: Sendable {
    var sequence: UInt64
    var presentationTime: CMTime
    var duration: CMTime
    /// Host nanoseconds when the sink received the frame.
    var deliveredAt: Int64
    var pixelFormat: OSType
    var width: Int
    var height: Int
    /// The index read from the pixels; nil for flash frames (and damaged codes).
    var frameIndex: UInt32?
    var isFlash: Bool
    /// The linear brightness of the grey patch at zoom 1.
    var grayBrightness: Double?
}

/// What a test keeps of one audio period.
struct RecordedPeriod: Sendable {
    var sequence: UInt64
    var presentationTime: CMTime
    var sampleDuration: CMTime
    var numSamples: Int
    var deliveredAt: Int64
    var formatDescription: CMFormatDescription?
    /// Channel 0 as floats (Int16 scaled by 1/32767).
    var samples: [Float]
}

/// One recorded stream event.
enum RecordedEvent: Sendable {
    case frame(RecordedFrame)
    case period(RecordedPeriod)
    case dropped(sequence: UInt64, presentationTime: CMTime, reason: DropReason)
    case fault(DeviceFault)

    var sequence: UInt64? {
        switch self {
        case .frame(let frame): frame.sequence
        case .period(let period): period.sequence
        case .dropped(let sequence, _, _): sequence
        case .fault: nil
        }
    }
}

/// A capture thread, kept to ask whether it has exited.
///
/// `@unchecked Sendable`: only `Thread.isFinished` is read from other threads, and Foundation makes that safe.
final class CaptureThreadReference: @unchecked Sendable {
    let thread: Thread
    init(_ thread: Thread) { self.thread = thread }
}

/// A sink that records events, and lets a test wait for them: a mutex guards the list, a semaphore wakes waiters.
///
/// Thread safe. With `holdsSamples`, every sample buffer is kept (so a camera's pool runs dry) until
/// `releaseSamples()`.
final class StreamRecorder: Sendable {
    private struct State {
        var events: [RecordedEvent] = []
        var held: [CMSampleBuffer] = []
        var isClosed = false
        var eventsAfterClose = 0
        /// The thread that delivered the last event: the device's capture thread.
        var deliveringThread: CaptureThreadReference?
    }

    private let state = Mutex(State())
    private let arrivals = DispatchSemaphore(value: 0)
    private let holdsSamples: Bool

    init(holdsSamples: Bool = false) {
        self.holdsSamples = holdsSamples
    }

    var sink: StreamSink {
        { [self] event in
            let now = CMClock.hostNanosecondsNow()
            let recorded: RecordedEvent
            switch event {
            case .output(let sample, let sequence):
                if sample.imageBuffer != nil {
                    recorded = .frame(Self.frame(sample, sequence: sequence, deliveredAt: now))
                } else {
                    recorded = .period(Self.period(sample, sequence: sequence, deliveredAt: now))
                }
                if holdsSamples { state.withLock { $0.held.append(sample) } }
            case .dropped(let sequence, let time, let reason):
                recorded = .dropped(sequence: sequence, presentationTime: time, reason: reason)
            case .fault(let fault):
                recorded = .fault(fault)
            }
            let thread = CaptureThreadReference(Thread.current)
            state.withLock { state in
                state.events.append(recorded)
                state.deliveringThread = thread
                if state.isClosed { state.eventsAfterClose += 1 }
            }
            arrivals.signal()
        }
    }

    var events: [RecordedEvent] { state.withLock { $0.events } }
    var frames: [RecordedFrame] {
        events.compactMap { if case .frame(let frame) = $0 { frame } else { nil } }
    }
    var periods: [RecordedPeriod] {
        events.compactMap { if case .period(let period) = $0 { period } else { nil } }
    }

    /// Lets go of the held sample buffers, so their pixel buffers return to the pool.
    func releaseSamples() {
        let held = state.withLock { state in
            defer { state.held = [] }
            return state.held
        }
        _ = held.count
    }

    /// From now on, count events as arriving too late (after `stop()` returned).
    func close() {
        state.withLock { $0.isClosed = true }
    }

    var eventsAfterClose: Int { state.withLock { $0.eventsAfterClose } }

    /// The thread that delivered the last event (the device's capture thread), nil before any.
    var deliveringThread: Thread? { state.withLock { $0.deliveringThread?.thread } }

    /// Waits until `predicate` holds for the events, up to `timeout` seconds; returns whether it held.
    @discardableResult
    func wait(timeout: Double = 10, until predicate: ([RecordedEvent]) -> Bool) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while true {
            if state.withLock({ predicate($0.events) }) { return true }
            if arrivals.wait(timeout: deadline) == .timedOut { return state.withLock { predicate($0.events) } }
        }
    }

    /// Waits for `count` events of any kind.
    @discardableResult
    func wait(forEvents count: Int, timeout: Double = 10) -> Bool {
        wait(timeout: timeout) { $0.count >= count }
    }

    private static func frame(_ sample: CMSampleBuffer, sequence: UInt64, deliveredAt: Int64) -> RecordedFrame {
        let buffer = sample.imageBuffer!
        let width = CVPixelBufferGetWidth(buffer)
        let height = CVPixelBufferGetHeight(buffer)
        let format = CVPixelBufferGetPixelFormatType(buffer)
        var luma: [UInt8] = []
        luma.reserveCapacity(width * height)
        buffer.withUnsafePlane(0) { bytes, bytesPerRow in
            let step = format == kCVPixelFormatType_422YpCbCr8_yuvs ? 2 : 1
            for row in 0..<height {
                for x in 0..<width { luma.append(bytes[row * bytesPerRow + x * step]) }
            }
        }
        let gray = VirtualFrameLayout(width: width, height: height).grayPatchRect
        return VirtualLumaPlane.with(luma, width: width, height: height) { plane in
            RecordedFrame(
                sequence: sequence, presentationTime: sample.presentationTimeStamp, duration: sample.duration,
                deliveredAt: deliveredAt, pixelFormat: format, width: width, height: height,
                frameIndex: VirtualPictureReader.readFrameIndex(plane),
                isFlash: VirtualPictureReader.isFlashFrame(plane),
                grayBrightness: gray.flatMap { VirtualPictureReader.measureLinearBrightness(plane, in: $0) })
        }
    }

    private static func period(_ sample: CMSampleBuffer, sequence: UInt64, deliveredAt: Int64) -> RecordedPeriod {
        let description = sample.formatDescription
        let asbd = description?.audioStreamBasicDescription
        let channels = Int(asbd?.mChannelsPerFrame ?? 1)
        let isFloat = (asbd?.mBitsPerChannel ?? 32) == 32
        var samples: [Float] = []
        sample.dataBuffer?.withUnsafeBytes { bytes in
            if isFloat {
                let floats = bytes.bindMemory(to: Float.self)
                samples = stride(from: 0, to: floats.count, by: channels).map { floats[$0] }
            } else {
                let ints = bytes.bindMemory(to: Int16.self)
                samples = stride(from: 0, to: ints.count, by: channels).map { Float(ints[$0]) / 32767 }
            }
        }
        let timing = try? sample.sampleTimingInfo(at: 0)
        return RecordedPeriod(
            sequence: sequence, presentationTime: sample.presentationTimeStamp,
            sampleDuration: timing?.duration ?? .invalid, numSamples: sample.numSamples, deliveredAt: deliveredAt,
            formatDescription: description, samples: samples)
    }
}

/// Records a registry's connection events.
final class ConnectionRecorder: Sendable {
    let registry = DeviceRegistry(drivers: [], selection: .all)
    private let events = Mutex<[(kind: String, backend: any CaptureBackend)]>([])

    init() {
        _ = registry.addListener { [weak self] event in
            let kind =
                switch event {
                case .connected: "connected"
                case .disconnected: "disconnected"
                case .availabilityChanged: "availabilityChanged"
                }
            self?.events.withLock { $0.append((kind, event.backend)) }
        }
    }

    /// The kinds of event heard about `backend`, in order.
    func kinds(for backend: any CaptureBackend) -> [String] {
        events.withLock { $0.filter { $0.backend === backend }.map(\.kind) }
    }
}

extension VirtualCamera {
    /// The first format of `width`x`height` and `subType` that streams at `fps` (any of that size if none does).
    func format(
        _ width: Int32, _ height: Int32, _ subType: OSType = kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
        fps: Int32 = 30
    ) -> DeviceFormat {
        let matching = formats.filter { format in
            guard case .video(let video) = format else { return false }
            return video.width == width && video.height == height && video.mediaSubType == subType
        }
        return matching.first { format in
            guard case .video(let video) = format else { return false }
            return video.supports(frameDuration: CMTime(value: 1, timescale: fps))
        } ?? matching[0]
    }

    /// A configuration of `width`x`height` NV12 (or `subType`) at `fps`.
    func configuration(
        _ width: Int32 = 320, _ height: Int32 = 240, fps: Int32 = 30,
        _ subType: OSType = kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
    ) -> StreamConfiguration {
        StreamConfiguration(
            format: format(width, height, subType, fps: fps), frameDuration: CMTime(value: 1, timescale: fps))
    }
}

/// Seconds of host time since `start` (host nanoseconds).
func secondsSince(_ start: Int64) -> Double {
    Double(CMClock.hostNanosecondsNow() - start) / 1e9
}
