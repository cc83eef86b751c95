import CaptureDrivers
import CaptureGraph
import Foundation
import Synchronization

/// Receives a video data output's frames, on the queue given to `setSampleBufferDelegate(_:queue:)`.
public protocol AVCaptureVideoDataOutputSampleBufferDelegate: NSObjectProtocol {
    /// A frame, in order. Return quickly: while this runs, later frames may be dropped
    /// (`alwaysDiscardsLateVideoFrames`).
    func captureOutput(_ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection)
    /// A frame that was dropped: no image, its time, and why in the `kCMSampleBufferAttachmentKey_DroppedFrameReason`
    /// attachment (`FrameWasLate`, `OutOfBuffers`, `Discontinuity`).
    func captureOutput(_ output: AVCaptureOutput, didDrop sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection)
}

extension AVCaptureVideoDataOutputSampleBufferDelegate {
    public func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {}
    public func captureOutput(
        _ output: AVCaptureOutput, didDrop sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {}
}

/// Delivers video frames to a delegate on a serial queue: in order, in the pixel format and size asked for,
/// rotated and mirrored as the connection says.
///
/// The device's own format goes through without a copy (NV12 from the virtual cameras); another pixel format or
/// size is converted with libswscale by the session's conversion stage, on the device's capture thread, once per
/// frame for every output asking the same; rotation and mirroring run on the delegate's queue. With
/// `alwaysDiscardsLateVideoFrames` (the default) a frame that arrives while the delegate is still busy is dropped
/// and reported through `captureOutput(_:didDrop:from:)` with reason `FrameWasLate`; without it up to four frames
/// wait, and the device drops with `OutOfBuffers` when the delegate holds its buffers.
///
/// Threading: thread safe. Settings are guarded by a mutex; delegate calls run on the delegate's queue.
open class AVCaptureVideoDataOutput: AVCaptureOutput, @unchecked Sendable {
    /// `@unchecked Sendable`: the delegate is only called on its queue, and settings values are plist-like
    /// values that are never mutated in place.
    private struct Settings: @unchecked Sendable {
        var weakDelegate = WeakDelegate()
        var queue: DispatchQueue?
        var videoSettings: [String: Any] = [:]
        /// `videoSettings` parsed once when set, so the per-frame path does no dictionary lookups or casts.
        var request = VideoOutputPipeline.Request()
        var alwaysDiscardsLateVideoFrames = true
        var lastDelivered: [ObjectIdentifier: CMTime] = [:]
        var mailboxes: Mailboxes?
    }

    /// Holds the delegate weakly, as Apple's does.
    /// Typed, so the per-frame path reads the delegate without a dynamic protocol cast. `@unchecked Sendable`: a
    /// weak reference, read under the settings lock and used on the delegate's queue.
    private struct WeakDelegate: @unchecked Sendable {
        weak var object: (any AVCaptureVideoDataOutputSampleBufferDelegate)?
    }

    /// What waits for the delegate: a frame, or the notice of a dropped one. `@unchecked Sendable`: the
    /// connection and buffers are thread safe classes; the tuple just carries them.
    private enum Pending: @unchecked Sendable {
        case frame(CMSampleBuffer, AVCaptureConnection)
        case drop(CMTime, DropReason, CMFormatDescription?, AVCaptureConnection)
    }

    /// The delegate queue's mailboxes: frames (1 in flight, or 4 without `alwaysDiscardsLateVideoFrames`) and
    /// drop notices (up to 64 waiting; beyond that a notice is lost, though `deliveryStatistics` counts it).
    private struct Mailboxes: @unchecked Sendable {
        let frames: SampleBufferMailbox<Pending>
        let drops: SampleBufferMailbox<Pending>
    }

    private let settings = Mutex(Settings())
    /// Conversion state, used only on the delegate queue (serial), hence not locked.
    private let pipeline = UncheckedSendable(VideoOutputPipeline())
    private let counters = DeliveryCounters()
    /// The `sampleBuffers` sequences being iterated, and their own conversion path (ours, beyond Apple).
    private let streams: SampleBufferStreams
    private let streamPipeline = UncheckedSendable(VideoOutputPipeline())

    public override init() {
        // Whether a sequence is iterated is part of the demand: the sequences tell the output's generation.
        let generation = DemandGeneration()
        streams = SampleBufferStreams(bufferSize: 1, changes: generation)
        super.init(demandGeneration: generation)
    }

    override package var hasWorkInFlight: Bool {
        guard let mailboxes = settings.withLock({ $0.mailboxes }) else { return false }
        return !mailboxes.frames.isIdle || !mailboxes.drops.isIdle
    }

    // MARK: Delegate

    /// Sets the delegate (held weakly) and the serial queue its methods run on. A nil delegate stops delivery.
    open func setSampleBufferDelegate(
        _ sampleBufferDelegate: (any AVCaptureVideoDataOutputSampleBufferDelegate)?, queue sampleBufferCallbackQueue: DispatchQueue?
    ) {
        precondition(
            sampleBufferDelegate == nil || sampleBufferCallbackQueue != nil,
            "AVCaptureVideoDataOutput: a delegate needs a serial queue (Apple raises NSInvalidArgumentException)")
        let queue = sampleBufferDelegate == nil ? nil : sampleBufferCallbackQueue
        let mailboxes = queue.map { queue in
            Mailboxes(
                frames: SampleBufferMailbox(queue: queue, capacity: 4, limit: alwaysDiscardsLateVideoFrames ? 1 : 4) {
                    [weak self] in self?.handle($0)
                },
                drops: SampleBufferMailbox(queue: queue, capacity: 64, limit: 64) { [weak self] in self?.handle($0) })
        }
        settings.withLock { settings in
            settings.weakDelegate.object = sampleBufferDelegate
            settings.queue = queue
            settings.mailboxes = mailboxes
        }
        demandsChanged()
    }

    /// The delegate, if it is still alive.
    open var sampleBufferDelegate: (any AVCaptureVideoDataOutputSampleBufferDelegate)? {
        settings.withLock { $0.weakDelegate }.object
    }

    /// The queue the delegate's methods run on.
    open var sampleBufferCallbackQueue: DispatchQueue? { settings.withLock { $0.queue } }

    // MARK: Settings

    /// Whether frames that arrive while the delegate is busy are dropped (true, the default) or queued.
    open var alwaysDiscardsLateVideoFrames: Bool {
        get { settings.withLock { $0.alwaysDiscardsLateVideoFrames } }
        set {
            let mailboxes = settings.withLock { settings in
                settings.alwaysDiscardsLateVideoFrames = newValue
                return settings.mailboxes
            }
            mailboxes?.frames.limit = newValue ? 1 : 4
        }
    }

    /// The pixel formats this output can deliver, the device's native NV12 first.
    open var availableVideoPixelFormatTypes: [OSType] { VideoOutputPipeline.supportedPixelFormats }

    /// The same, as numbers (Apple's older spelling).
    open var availableVideoCVPixelFormatTypes: [Any] { availableVideoPixelFormatTypes.map { NSNumber(value: $0) } }

    /// Codecs the output can deliver compressed frames in: none (deliver pixels; encode with AVAssetWriter).
    open var availableVideoCodecTypes: [AVVideoCodecType] { [] }

    /// The format frames are delivered in: `kCVPixelBufferPixelFormatTypeKey` (one of
    /// `availableVideoPixelFormatTypes`), and optionally `kCVPixelBufferWidthKey` / `kCVPixelBufferHeightKey` to
    /// scale. Empty (or nil) delivers the device's format. Reading it gives the settings in effect, with the
    /// pixel format and size filled in. An unsupported key or format traps, as Apple's raises.
    open var videoSettings: [String: Any]! {
        get {
            let requested = settings.withLock { $0 }.videoSettings
            var effective = requested
            let native = nativeVideoFormat
            effective[kCVPixelBufferPixelFormatTypeKey] =
                requested[kCVPixelBufferPixelFormatTypeKey] ?? NSNumber(value: native?.pixelFormat ?? kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
            if let native {
                effective[kCVPixelBufferWidthKey] = requested[kCVPixelBufferWidthKey] ?? native.width
                effective[kCVPixelBufferHeightKey] = requested[kCVPixelBufferHeightKey] ?? native.height
            }
            return effective
        }
        set {
            let requested = newValue ?? [:]
            let known: Set<String> = [kCVPixelBufferPixelFormatTypeKey, kCVPixelBufferWidthKey, kCVPixelBufferHeightKey]
            for key in requested.keys {
                precondition(
                    known.contains(key),
                    "AVCaptureVideoDataOutput: videoSettings key \(key) is not supported; use"
                        + " kCVPixelBufferPixelFormatTypeKey, kCVPixelBufferWidthKey, kCVPixelBufferHeightKey"
                        + " (Apple raises NSInvalidArgumentException)")
            }
            if let format = requested[kCVPixelBufferPixelFormatTypeKey] {
                let code = integerSetting(format).map { OSType(truncatingIfNeeded: $0) }
                precondition(
                    code.map(availableVideoPixelFormatTypes.contains) ?? false,
                    "AVCaptureVideoDataOutput: pixel format \(format) is not one of availableVideoPixelFormatTypes"
                        + " (Apple raises NSInvalidArgumentException)")
            }
            for key in [kCVPixelBufferWidthKey, kCVPixelBufferHeightKey] where requested[key] != nil {
                precondition(
                    (integerSetting(requested[key]) ?? 0) > 0,
                    "AVCaptureVideoDataOutput: \(key) must be a positive integer (Apple raises"
                        + " NSInvalidArgumentException)")
            }
            let parsed = VideoOutputPipeline.Request(
                pixelFormat: integerSetting(requested[kCVPixelBufferPixelFormatTypeKey]).map { OSType(truncatingIfNeeded: $0) },
                width: integerSetting(requested[kCVPixelBufferWidthKey]),
                height: integerSetting(requested[kCVPixelBufferHeightKey]))
            settings.withLock { settings in
                settings.videoSettings = requested
                settings.request = parsed
            }
            demandsChanged()
        }
    }

    /// The cap on frame rate, Apple's older spelling of the video connection's `videoMinFrameDuration`.
    open var minFrameDuration: CMTime {
        get { connection(with: .video)?.videoMinFrameDuration ?? .invalid }
        set { connection(with: .video)?.videoMinFrameDuration = newValue }
    }

    /// Settings for an `AVAssetWriterInput` that records these frames into `outputFileType`: H.264 at the
    /// delivered size with a bit rate like Apple's for that size (about 0.1 bit per pixel per frame at 30 fps).
    open func recommendedVideoSettingsForAssetWriter(writingTo outputFileType: AVFileType) -> [String: Any]? {
        recommendedVideoSettings(forVideoCodecType: .h264, assetWriterOutputFileType: outputFileType)
    }

    /// Settings for an `AVAssetWriterInput` with a chosen codec.
    open func recommendedVideoSettings(
        forVideoCodecType videoCodecType: AVVideoCodecType, assetWriterOutputFileType outputFileType: AVFileType
    ) -> [String: Any]? {
        guard let effective = videoSettings, let width = integerSetting(effective[kCVPixelBufferWidthKey]),
            let height = integerSetting(effective[kCVPixelBufferHeightKey])
        else { return nil }
        let quarterTurn = (connection(with: .video)?.videoRotationAngle ?? 0).truncatingRemainder(dividingBy: 180) != 0
        let (outWidth, outHeight) = quarterTurn ? (height, width) : (width, height)
        let bitsPerPixelPerFrame = videoCodecType == .hevc ? 0.06 : 0.1
        let bitRate = Int(Double(outWidth * outHeight) * 30 * bitsPerPixelPerFrame)
        return [
            AVVideoCodecKey: videoCodecType, AVVideoWidthKey: outWidth, AVVideoHeightKey: outHeight,
            AVVideoCompressionPropertiesKey: [
                AVVideoAverageBitRateKey: bitRate, AVVideoMaxKeyFrameIntervalKey: 30,
                AVVideoExpectedSourceFrameRateKey: 30, AVVideoAllowFrameReorderingKey: false,
            ] as [String: Any],
        ]
    }

    /// The format the device delivers on the video connection now.
    private var nativeVideoFormat: (pixelFormat: OSType, width: Int, height: Int)? {
        guard let description = connection(with: .video)?.inputPorts.first?.formatDescription else { return nil }
        // A compressed camera (MJPEG, H.264) or movie file delivers what the session decodes it to; a format the
        // output cannot deliver is converted to the first it can.
        let subType = description.mediaSubType.rawValue
        var pixelFormat = SampleDecodeStage.decodedPixelFormat(forCodec: subType) ?? subType
        if !availableVideoPixelFormatTypes.contains(pixelFormat) { pixelFormat = availableVideoPixelFormatTypes[0] }
        return (pixelFormat, Int(description.dimensions.width), Int(description.dimensions.height))
    }

    /// The format the settings ask for.
    private var request: VideoOutputPipeline.Request { settings.withLock { $0.request } }

    // MARK: Beyond Apple

    /// The output's frames as an asynchronous sequence (ours): `for await frame in output.sampleBuffers { … }`.
    ///
    /// Each iteration gets the same frames a delegate would, converted and rotated the same way, with the same
    /// policy for a slow consumer: while one frame waits to be taken, newer ones are dropped and counted in
    /// `deliveryStatistics`. Works with or without a delegate; the sequence ends when its task is cancelled or
    /// the loop is left.
    open var sampleBuffers: AsyncStream<CMSampleBuffer> { streams.makeStream() }

    // MARK: Counters (ours)

    /// Frames delivered to the delegate and frames dropped, by reason, since the output was made: the figures
    /// Apple leaves you to count yourself.
    open var deliveryStatistics: VideoDeliveryStatistics { counters.snapshot }

    // MARK: Graph hooks

    override package func accepts(_ mediaType: AVMediaType) -> Bool { mediaType == .video }

    override package func receive(_ sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        if streams.isActive && shouldDeliver(sampleBuffer.presentationTimeStamp, on: connection, forStream: true) {
            let handOff = UncheckedSendable((sampleBuffer, connection))
            let accepted = streams.submit { [self] in
                streamPipeline.value.process(handOff.value.0, request: self.request, connection: handOff.value.1)
                    .map { [$0] } ?? []
            }
            if !accepted { counters.dropped(.frameWasLate) }
        }
        // Mailboxes exist only while a delegate is set; whether it is still alive is checked once, on its queue.
        guard let mailboxes = settings.withLock({ $0.mailboxes }) else { return }
        guard shouldDeliver(sampleBuffer.presentationTimeStamp, on: connection) else { return }
        if !mailboxes.frames.post(.frame(sampleBuffer, connection)) {
            report(.drop(sampleBuffer.presentationTimeStamp, .frameWasLate, sampleBuffer.formatDescription, connection))
        }
    }

    /// Frames are used while a delegate is set or a `sampleBuffers` sequence is iterated.
    override package func wantsVideoFrames(from connection: AVCaptureConnection) -> Bool {
        settings.withLock { $0.mailboxes != nil } || streams.isActive
    }

    /// The pixel format and size the settings ask for (every available format when none is asked, so a device
    /// format outside `availableVideoPixelFormatTypes` is converted to `'420v'`), before the connection's rotation;
    /// nil while nobody takes frames, or when the pipeline must do the conversion itself (packed 4:2:2 turned).
    override package func videoDemand(for connection: AVCaptureConnection) -> VideoFormatDemand? {
        let (request, hasDelegate) = settings.withLock { ($0.request, $0.mailboxes != nil) }
        guard hasDelegate || streams.isActive else { return nil }
        let current = connection.currentSettings
        let turned = current.rotationAngle != 0 || current.isVideoMirrored
        if turned, let format = request.pixelFormat, !PixelTransform.canTurn(format) { return nil }
        let quarterTurn = Int(current.rotationAngle) % 180 != 0
        return VideoFormatDemand(
            pixelFormats: request.pixelFormat.map { [$0] } ?? VideoOutputPipeline.supportedPixelFormats,
            width: quarterTurn ? request.height : request.width, height: quarterTurn ? request.width : request.height)
    }

    override package func receiveDrop(
        presentationTime: CMTime, reason: DropReason, format: CMFormatDescription?, from connection: AVCaptureConnection
    ) {
        report(.drop(presentationTime, reason, format, connection))
    }

    /// Counts a drop and queues its notice for the delegate.
    private func report(_ drop: Pending) {
        guard case .drop(_, let reason, _, _) = drop else { return }
        counters.dropped(reason)
        _ = settings.withLock { $0 }.mailboxes?.drops.post(drop)
    }

    /// Delivers one frame or drop notice, on the delegate's queue.
    private func handle(_ pending: Pending) {
        guard let delegate = settings.withLock({ $0.weakDelegate }).object else { return }
        switch pending {
        case .frame(let sample, let connection):
            if let output = pipeline.value.process(sample, request: request, connection: connection) {
                counters.delivered()
                delegate.captureOutput(self, didOutput: output, from: connection)
            } else {
                counters.dropped(.outOfBuffers)
                let notice = Self.dropNotice(for: sample.presentationTimeStamp, format: sample.formatDescription, reason: .outOfBuffers)
                delegate.captureOutput(self, didDrop: notice, from: connection)
            }
        case .drop(let time, let reason, let format, let connection):
            delegate.captureOutput(self, didDrop: Self.dropNotice(for: time, format: format, reason: reason), from: connection)
        }
    }

    /// The frame-rate cap of the connection: skip frames closer than `videoMinFrameDuration` to the last one
    /// delivered (half a millisecond of slack absorbs clock rounding).
    private func shouldDeliver(_ time: CMTime, on connection: AVCaptureConnection, forStream: Bool = false) -> Bool {
        let cap = connection.videoMinFrameDuration
        guard cap.isNumeric, cap > .zero else { return true }
        // The stream path keeps its own last time (the key's low bit), so both paths see the same frames.
        let key = ObjectIdentifier(forStream ? streams : connection)
        return settings.withLock { settings in
            if let last = settings.lastDelivered[key], (time - last).seconds < cap.seconds - 0.0005 { return false }
            settings.lastDelivered[key] = time
            return true
        }
    }

    override package func sessionDidStartRunning() {
        settings.withLock { $0.lastDelivered.removeAll() }
    }

    /// The sample buffer `didDrop` gets: no image, the frame's time and format, and the reason attached.
    static func dropNotice(for time: CMTime, format: CMFormatDescription?, reason: DropReason) -> CMSampleBuffer {
        let timing = CMSampleTimingInfo(duration: .invalid, presentationTimeStamp: time, decodeTimeStamp: .invalid)
        let notice =
            (try? CMSampleBuffer(
                dataBuffer: nil, formatDescription: format ?? CMFormatDescription(mediaType: .video, mediaSubType: .init(rawValue: 0)),
                numSamples: 1, sampleTimings: [timing], sampleSizes: []))!
        CMSetAttachment(
            notice, key: kCMSampleBufferAttachmentKey_DroppedFrameReason, value: reason.rawValue,
            attachmentMode: kCMAttachmentMode_ShouldPropagate)
        return notice
    }
}

/// How many frames a video data output delivered and dropped, by reason (ours; Apple has no such counters).
public struct VideoDeliveryStatistics: Sendable, Hashable {
    /// Frames the delegate received.
    public var delivered: Int
    /// Frames dropped because the delegate was still busy.
    public var droppedLate: Int
    /// Frames dropped because every buffer was held.
    public var droppedOutOfBuffers: Int
    /// Frames the device skipped.
    public var droppedDiscontinuity: Int
}

/// Lock-free counters behind `deliveryStatistics`.
private final class DeliveryCounters: Sendable {
    private let delivered = Atomic<Int>(0)
    private let late = Atomic<Int>(0)
    private let outOfBuffers = Atomic<Int>(0)
    private let discontinuity = Atomic<Int>(0)

    func delivered(_ count: Int = 1) { delivered.add(count, ordering: .relaxed) }

    func dropped(_ reason: DropReason) {
        switch reason {
        case .frameWasLate: late.add(1, ordering: .relaxed)
        case .outOfBuffers: outOfBuffers.add(1, ordering: .relaxed)
        case .discontinuity: discontinuity.add(1, ordering: .relaxed)
        }
    }

    var snapshot: VideoDeliveryStatistics {
        VideoDeliveryStatistics(
            delivered: delivered.load(ordering: .relaxed), droppedLate: late.load(ordering: .relaxed),
            droppedOutOfBuffers: outOfBuffers.load(ordering: .relaxed),
            droppedDiscontinuity: discontinuity.load(ordering: .relaxed))
    }
}
