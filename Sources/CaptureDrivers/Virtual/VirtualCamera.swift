import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Synchronization
import SystemPackage

/// The test controls both virtual devices have: clock mode and faults on demand. `OpenAVCaptureTesting` drives the
/// virtual devices through this.
///
/// Threading: thread safe, like every `CaptureBackend`.
package protocol VirtualDevice: CaptureBackend {
    /// Connection, busy state, clock mode and the capture thread: what every virtual device shares.
    var lifecycle: VirtualDeviceLifecycle { get }
    /// Where the device reports connection events; nil for `DeviceRegistry.shared`.
    var registry: DeviceRegistry? { get }
    /// The device goes away: `isConnected` turns false, a streaming device sends `.fault(.disconnected)` and stops
    /// (this returns after its last event), `start` throws `.disconnected`, and the registry reports
    /// `.disconnected`.
    func simulateUnplug()
    /// The device comes back: `isConnected` turns true and the registry reports `.connected`.
    func simulateReplug()
    /// Another process takes (true) or releases (false) the device: `isInUseByAnotherApplication` follows, a
    /// streaming device sends `.fault(.busy)` and stops, `start` throws `.busy` while busy, and the registry reports
    /// `.availabilityChanged`.
    func simulateBusy(_ busy: Bool)
    /// Nothing arrives for `seconds`; then every frame (period) that fell due meanwhile is reported as
    /// `.dropped(…, reason: .discontinuity)` with its sequence number, and the stream resumes with sequence numbers
    /// continuing. Does nothing when the device is not streaming.
    func simulateStall(for seconds: Double)
}

/// The fault controls and state every virtual device shares, written once.
extension VirtualDevice {
    /// How the device paces its stream; takes effect at the next `start`.
    package var clockMode: VirtualClockMode {
        get { lifecycle.clockMode }
        set { lifecycle.clockMode = newValue }
    }

    /// Whether a capture thread is running.
    package var isStreaming: Bool { lifecycle.isStreaming }

    package var isConnected: Bool { lifecycle.isConnected }
    package var isInUseByAnotherApplication: Bool { lifecycle.isBusy }

    package func simulateUnplug() {
        if lifecycle.unplug() { report(.disconnected(self)) }
    }

    package func simulateReplug() {
        if lifecycle.replug() { report(.connected(self)) }
    }

    package func simulateBusy(_ busy: Bool) {
        if lifecycle.setBusy(busy) { report(.availabilityChanged(self)) }
    }

    package func simulateStall(for seconds: Double) {
        lifecycle.stall(seconds: seconds)
    }

    /// Tells the registry, with no lock held, so a listener may call back into the device.
    private func report(_ event: ConnectionEvent) {
        (registry ?? DeviceRegistry.shared).report(event)
    }
}

/// "Virtual Back Camera", "Virtual Front Camera" and "Virtual USB Webcam": a `CaptureBackend` that renders
/// `VirtualFrameRenderer`'s deterministic picture on the host clock, with simulated 3A (`VirtualCameraControls`) and
/// faults on demand.
///
/// The webcam behaves like a common UVC webcam: `.external`, no position, no flash or torch, YUYV at 320x240 and
/// 640x480, MJPEG (baseline JFIF 4:2:2) at 1280x720 and 1920x1080 and H.264 (Annex B) at 1920x1080, each at 30 and
/// 15 fps. Its compressed formats are delivered compressed, as the V4L2 driver delivers a webcam's: a sample buffer
/// with the bitstream in a `CMBlockBuffer`, a `'jpeg'`/`'avc1'` format description and no image buffer, for the
/// session's decode stage. Each frame is rendered (YUYV for MJPEG, NV12 for H.264) and compressed on the capture
/// thread by a `VirtualFrameCompressor` from the factory installed with `installFrameCompressors(_:)`, into
/// `VirtualBitstreamSlots` reused from frame to frame.
///
/// Streaming: one capture thread, named after the camera. Frame k of the device clock (the host clock) is at
/// exactly `k × frameDuration`; the first frame is the first such time at or after `start`, so presentation times
/// are exact multiples of the frame duration at its timescale, and `sequence` (also the frame index drawn in the
/// picture) counts from 0. Frames are rendered into a `CVPixelBufferPool` of the format's size and pixel format
/// (NV12 or YUYV); when consumers hold `poolAllocationThreshold` buffers, the frame is dropped with
/// `.outOfBuffers`. In `.freeRunning` mode frames are rendered as fast as the sink takes them (waiting up to a
/// frame's duration for a buffer to come back before dropping), their timestamps still a frame duration apart; on
/// a `.manual` clock, when a test's clock reaches their time (waiting up to a second for a buffer).
///
/// Threading: thread safe (`Sendable`; every mutable part is behind a mutex). `start` and `stop` are serialized by
/// the caller; the sink and completion handlers run on the capture thread.
package final class VirtualCamera: VirtualDevice, HighResolutionStillCapturing {
    /// How many pixel buffers consumers may hold before frames are dropped with `.outOfBuffers`.
    package static let poolAllocationThreshold = 8

    package let identity: DeviceIdentity
    package let formats: [DeviceFormat]
    /// The camera's controls, with the scene it looks at.
    package let cameraControls: VirtualCameraControls
    package let lifecycle = VirtualDeviceLifecycle()
    package let registry: DeviceRegistry?
    /// Makes the compressors of the compressed formats (the webcam's); nil until installed.
    private let compressorFactory: Mutex<VirtualFrameCompressorFactory?>

    private init(
        identity: DeviceIdentity, formats: [DeviceFormat], controls: VirtualCameraControls, registry: DeviceRegistry?,
        compressors: VirtualFrameCompressorFactory?
    ) {
        self.identity = identity
        self.formats = formats
        self.cameraControls = controls
        self.registry = registry
        self.compressorFactory = Mutex(compressors)
    }

    /// A virtual camera at `position` (`.back` or `.front`). Discovery uses `VirtualDeviceDriver.shared`'s; tests
    /// make their own and pass a `registry` of their own so their faults stay out of `DeviceRegistry.shared`
    /// (nil: report to `DeviceRegistry.shared`).
    package convenience init(position: VirtualCameraPosition, registry: DeviceRegistry? = nil) {
        let isBack = position == .back
        self.init(
            identity: DeviceIdentity(
                uniqueID: isBack ? "virtual:back-camera" : "virtual:front-camera",
                modelID: "OpenAVCapture Virtual Camera",
                localizedName: isBack ? "Virtual Back Camera" : "Virtual Front Camera",
                manufacturer: "OpenAVCapture",
                kind: .builtInWideAngleCamera,
                position: isBack ? .back : .front,
                media: .video,
                origin: .virtual),
            formats: Self.formats(position: position),
            controls: VirtualCameraControls(position: position, maxZoomFactor: isBack ? 16 : 4),
            registry: registry, compressors: nil)
    }

    /// "Virtual USB Webcam": sees the scene as the back camera does (unmirrored), is `.external` with no position,
    /// has exposure, focus, white balance and zoom up to 4x but no flash or torch, and streams `usbWebcamFormats`.
    /// Its compressed formats need `compressors` (or `installFrameCompressors(_:)` later); `registry` as for the
    /// other cameras.
    package static func usbWebcam(
        registry: DeviceRegistry? = nil, compressors: VirtualFrameCompressorFactory? = nil
    ) -> VirtualCamera {
        var capabilities = VirtualCameraControls.capabilities(position: .back)
        capabilities.flashModes = [.off]
        capabilities.torchModes = [.off]
        return VirtualCamera(
            identity: DeviceIdentity(
                uniqueID: "virtual:usb-webcam",
                modelID: "OpenAVCapture Virtual USB Webcam",
                localizedName: "Virtual USB Webcam",
                manufacturer: "OpenAVCapture",
                kind: .external,
                position: .unspecified,
                media: .video,
                origin: .virtual),
            formats: usbWebcamFormats(),
            controls: VirtualCameraControls(position: .back, maxZoomFactor: 4, capabilities: capabilities),
            registry: registry, compressors: compressors)
    }

    /// Sets the factory the compressed formats' compressors come from; takes effect at the next `start`.
    /// OpenAVCapture installs its MediaCodecs-based one on the shared driver's webcam before listing devices.
    package func installFrameCompressors(_ factory: @escaping VirtualFrameCompressorFactory) {
        compressorFactory.withLock { $0 = factory }
    }

    /// Whether a compressor factory is installed.
    package var hasFrameCompressors: Bool { compressorFactory.withLock { $0 != nil } }

    /// The webcam's formats, in `AVCaptureDevice.formats` order (by size; at each size the raw format before the
    /// compressed ones, as the V4L2 driver lists a webcam's): YUYV 320x240 and 640x480, MJPEG 1280x720 and
    /// 1920x1080, H.264 1920x1080. Each offers 30 and 15 fps as two fixed rates, as a UVC camera's discrete frame
    /// intervals become two ranges.
    package static func usbWebcamFormats() -> [DeviceFormat] {
        let rates = [Int32(30), 15].map { FrameDurationRange(minFrameRate: $0, maxFrameRate: $0) }
        let formats: [(Int32, Int32, FourCharCode)] = [
            (320, 240, kCVPixelFormatType_422YpCbCr8_yuvs), (640, 480, kCVPixelFormatType_422YpCbCr8_yuvs),
            (1280, 720, VirtualCompressedFormat.mjpeg), (1920, 1080, VirtualCompressedFormat.mjpeg),
            (1920, 1080, VirtualCompressedFormat.h264),
        ]
        return formats.map { width, height, subType in
            .video(
                VideoFormat(
                    width: width, height: height, mediaSubType: subType, frameDurationRanges: rates,
                    fieldOfView: 78, maxZoomFactor: 4))
        }
    }

    /// Every format of a virtual camera, in `AVCaptureDevice.formats` order: for each size, ascending, NV12 at 1–30
    /// fps, then NV12 at high frame rates where offered, then YUYV at 1–30 fps; the back camera ends with a
    /// 4032x3024 NV12 photo format.
    package static func formats(position: VirtualCameraPosition) -> [DeviceFormat] {
        let isBack = position == .back
        let sizes: [(width: Int32, height: Int32, highFrameRate: Int32?)] = [
            (320, 240, nil), (352, 288, nil), (640, 480, 240), (960, 540, nil), (1280, 720, 120),
            (1920, 1080, 60), (3840, 2160, nil),
        ]
        func format(
            _ width: Int32, _ height: Int32, _ subType: FourCharCode, maxRate: Int32, photo: Bool = false
        )
            -> DeviceFormat
        {
            .video(
                VideoFormat(
                    width: width, height: height, mediaSubType: subType,
                    frameDurationRanges: [FrameDurationRange(minFrameRate: 1, maxFrameRate: maxRate)],
                    fieldOfView: isBack ? 70 : 60, maxZoomFactor: isBack ? 16 : 4,
                    highResolutionStillDimensions: isBack
                        ? CMVideoDimensions(width: 4032, height: 3024)
                        : CMVideoDimensions(width: width, height: height),
                    isPhotoFormat: photo))
        }
        let nv12 = kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
        let yuyv = kCVPixelFormatType_422YpCbCr8_yuvs
        var formats: [DeviceFormat] = []
        for size in sizes {
            formats.append(format(size.width, size.height, nv12, maxRate: 30))
            if let high = size.highFrameRate { formats.append(format(size.width, size.height, nv12, maxRate: high)) }
            formats.append(format(size.width, size.height, yuyv, maxRate: 30))
        }
        if isBack { formats.append(format(4032, 3024, nv12, maxRate: 30, photo: true)) }
        return formats
    }

    // MARK: CaptureBackend

    package var controls: (any CameraControlling)? { cameraControls }
    package var clock: CMClock { .hostTimeClock }
    package var isAccessible: Bool { true }

    /// Invalid for a format the camera lacks; adjusted to the nearest allowed duration when the frame duration is
    /// out of the format's ranges (or not a number); valid otherwise.
    package func validate(_ configuration: StreamConfiguration) -> ConfigurationValidity {
        validateCameraConfiguration(configuration)
    }

    /// Starts streaming `configuration` (or what `validate` adjusts it to). Throws `.disconnected` after an unplug
    /// and `.busy` while busy; traps for a format the camera lacks, which `validate` reports first.
    package func start(_ configuration: StreamConfiguration, sink: @escaping StreamSink) throws(DeviceFault) {
        let configuration = configurationToStart(configuration, caller: "VirtualCamera")
        guard case .video(let format) = configuration.format else { preconditionFailure("a camera streams video") }
        // An unplugged or taken camera says so before an encoder is set up (`lifecycle.start` checks again,
        // atomically).
        guard isConnected else { throw .disconnected }
        guard !isInUseByAnotherApplication else { throw .busy }
        let compression = try makeCompression(format, frameDuration: configuration.frameDuration)
        let pool: CVPixelBufferPool
        let formatDescription: CMFormatDescription
        do {
            pool = try CVPixelBufferPool(
                width: Int(format.width), height: Int(format.height),
                pixelFormatType: compression?.format.renderedPixelFormat ?? format.mediaSubType)
            formatDescription = try CMFormatDescription(
                videoCodecType: .init(rawValue: format.mediaSubType), width: Int(format.width),
                height: Int(format.height))
        } catch {
            // Every format in `formats` has a valid size and pixel format; failing here is a bug in the list.
            preconditionFailure("VirtualCamera: cannot make buffers for \(format): \(error)")
        }
        let clockMode = lifecycle.clockMode
        let stream = VirtualCameraStream(
            format: format, frameDuration: configuration.frameDuration, clockMode: clockMode, pool: pool,
            formatDescription: formatDescription, controls: cameraControls, compression: compression, sink: sink)
        try lifecycle.start(
            name: "OpenAVCapture \(identity.localizedName)", pacedBy: clockMode.manualClock,
            prepare: { cameraControls.streamWillStart(isFreeRunning: clockMode.isDetachedFromHostClock) },
            body: { thread in stream.run(on: thread) })
        VirtualUnplugSchedule.streamDidStart(self)
    }

    package func stop() {
        lifecycle.stop()
    }

    /// The compressor of a compressed format, made on the caller's thread so that a codec that cannot be set up
    /// fails `start`; nil for a pixel format.
    private func makeCompression(_ format: VideoFormat, frameDuration: CMTime) throws(DeviceFault)
        -> VirtualStreamCompression?
    {
        let codec = format.mediaSubType
        guard codec == VirtualCompressedFormat.mjpeg || codec == VirtualCompressedFormat.h264 else { return nil }
        let compressed = VirtualCompressedFormat(
            codec: codec, width: Int(format.width), height: Int(format.height),
            frameRate: max(1, Int((1 / frameDuration.seconds).rounded())))
        guard let factory = compressorFactory.withLock({ $0 }) else {
            throw .explained(
                .io(.notSupported),
                advice: "\(identity.localizedName) has no frame compressor installed for its compressed formats "
                    + "(OpenAVCapture installs one when it lists devices)")
        }
        do {
            return VirtualStreamCompression(format: compressed, compressor: try factory(compressed))
        } catch {
            throw .explained(
                .io(.notSupported),
                advice: "\(identity.localizedName) cannot compress \(format.width)x\(format.height) frames: \(error)")
        }
    }

    package func captureHighResolutionStill(
        size: CMVideoDimensions, firingFlash: Bool, completion: @escaping @Sendable (CVPixelBuffer?, CMTime) -> Void
    ) {
        let request = VirtualStillRequest(size: size, completion: completion)
        if !cameraControls.requestStill(request, firingFlash: firingFlash) { completion(nil, .invalid) }
    }

    // MARK: High-resolution stills

    /// Renders a frame's parameters again at the still's size on a queue of its own (never the capture thread, so
    /// the stream keeps its pace) into a buffer of its own.
    static func renderStill(_ parameters: VirtualFrameParameters, at time: CMTime, _ request: VirtualStillRequest) {
        stillQueue.async {
            let width = Int(request.size.width)
            let height = Int(request.size.height)
            var made: CVPixelBuffer?
            guard
                CVPixelBufferCreate(nil, width, height, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &made)
                    == kCVReturnSuccess, let buffer = made
            else {
                request.completion(nil, .invalid)
                return
            }
            let renderer = VirtualFrameRenderer(width: width, height: height)
            buffer.withLockedPlanes { planes in
                renderer.renderNV12(
                    parameters,
                    luma: planes[0].baseAddress.bindMemory(to: UInt8.self, capacity: planes[0].bytesPerRow * height),
                    lumaStride: planes[0].bytesPerRow,
                    chroma: planes[1].baseAddress.bindMemory(
                        to: UInt8.self, capacity: planes[1].bytesPerRow * planes[1].height),
                    chromaStride: planes[1].bytesPerRow)
            }
            request.completion(buffer, time)
        }
    }

    private static let stillQueue = DispatchQueue(label: "OpenAVCapture.VirtualCamera.stills")

    // MARK: Test controls

    /// What the camera looks at: light, illuminant, focus target. Changes show from the next frame.
    package var scene: VirtualScene {
        get { cameraControls.scene }
        set { cameraControls.scene = newValue }
    }

}

/// One run of a virtual camera's stream: everything the capture thread needs, made on the caller's thread by
/// `start`.
///
/// Threading: `Sendable` parts only; `run` is the capture thread's body and makes the (thread-bound) renderer there.
private struct VirtualCameraStream: Sendable {
    let format: VideoFormat
    let frameDuration: CMTime
    let clockMode: VirtualClockMode
    let pool: CVPixelBufferPool
    let formatDescription: CMFormatDescription
    let controls: VirtualCameraControls
    /// For a compressed format: what compresses each rendered frame.
    let compression: VirtualStreamCompression?
    let sink: StreamSink

    func run(on thread: VirtualCaptureThread) {
        let renderer = VirtualFrameRenderer(width: Int(format.width), height: Int(format.height))
        let value = frameDuration.value
        let timescale = frameDuration.timescale
        let aspect = Double(format.width) / Double(format.height)
        let isNV12 =
            (compression?.format.renderedPixelFormat ?? format.mediaSubType)
            == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
        let frameNanoseconds = Int64((Int128(value) * 1_000_000_000 + Int128(timescale) - 1) / Int128(timescale))
        // The first frame: the first k with k · duration at or after now, so every timestamp is exact.
        let now = Int128(CMClock.hostNanosecondsNow())
        let perFrame = Int128(value) * 1_000_000_000
        let firstIndex = Int64((now * Int128(timescale) + perFrame - 1) / perFrame)

        func time(_ index: Int64) -> CMTime { CMTime(value: index * value, timescale: timescale) }
        func due(_ index: Int64) -> Int64 {
            Int64((Int128(index) * perFrame + Int128(timescale) - 1) / Int128(timescale))
        }

        // Sample buffer objects are recycled too: with the pool, a frame allocates nothing after warm-up.
        let samples = CMSampleBufferRecycler(capacity: VirtualCamera.poolAllocationThreshold + 2)

        /// A buffer from the pool; free-running waits up to a frame's duration for one to come back, on a manual
        /// clock up to a second (a test stepping time expects its frames, not drops, from a consumer that keeps up).
        let bufferWait: Int64 =
            switch clockMode {
            case .realTime, .freeRunning: frameNanoseconds
            case .manual: max(frameNanoseconds, 1_000_000_000)
            }
        func buffer() -> CVPixelBuffer? {
            let deadline = CMClock.hostNanosecondsNow() + bufferWait
            while true {
                samples.releaseIdleImages()
                if case .success(let buffer) = pool.pixelBuffer(
                    allocationThreshold: VirtualCamera.poolAllocationThreshold)
                {
                    // The renderer encodes BT.709 at every size; say so once per pool buffer (it stays on reuse).
                    if CVBufferCopyAttachment(buffer, kCVImageBufferYCbCrMatrixKey, nil) == nil {
                        CVBufferSetAttachment(
                            buffer, kCVImageBufferYCbCrMatrixKey, kCVImageBufferYCbCrMatrix_ITU_R_709_2, .shouldPropagate)
                    }
                    return buffer
                }
                guard clockMode.isDetachedFromHostClock, CMClock.hostNanosecondsNow() < deadline else { return nil }
                let retry = min(deadline, CMClock.hostNanosecondsNow() + 1_000_000)
                guard thread.sleep(untilHostNanoseconds: retry) else { return nil }
            }
        }

        func deliver(_ index: Int64, _ sequence: UInt64) {
            let presentationTime = time(index)
            guard let buffer = buffer() else {
                // The 3A still sees the frame go by, so its pace does not depend on the consumer.
                _ = controls.advance(time: presentationTime, frameDuration: frameDuration, aspect: aspect)
                sink(.dropped(sequence: sequence, presentationTime: presentationTime, reason: .outOfBuffers))
                return
            }
            let (completions, firesFlash, stills) = controls.takeFrameRequests()
            let (state, scene, revision) = controls.advance(
                time: presentationTime, frameDuration: frameDuration, aspect: aspect)
            let parameters = VirtualFrameParameters(
                time: VirtualClockTime(value: index * value, timescale: timescale),
                duration: VirtualClockTime(value: value, timescale: timescale),
                index: UInt32(truncatingIfNeeded: sequence),
                scene: scene,
                optics: VirtualAutoControls.optics(for: state, flashFired: firesFlash))
            for still in stills { VirtualCamera.renderStill(parameters, at: presentationTime, still) }
            buffer.withLockedPlanes { planes in
                if isNV12 {
                    let luma = planes[0]
                    let chroma = planes[1]
                    renderer.renderNV12(
                        parameters,
                        luma: luma.baseAddress.bindMemory(to: UInt8.self, capacity: luma.bytesPerRow * luma.height),
                        lumaStride: luma.bytesPerRow,
                        chroma: chroma.baseAddress.bindMemory(
                            to: UInt8.self, capacity: chroma.bytesPerRow * chroma.height),
                        chromaStride: chroma.bytesPerRow)
                } else {
                    let plane = planes[0]
                    renderer.renderYUYV(
                        parameters,
                        pixels: plane.baseAddress.bindMemory(
                            to: UInt8.self, capacity: plane.bytesPerRow * plane.height),
                        stride: plane.bytesPerRow)
                }
            }
            let timing = CMSampleTimingInfo(
                duration: frameDuration, presentationTimeStamp: presentationTime, decodeTimeStamp: .invalid)
            if let compression {
                // The rendered buffer goes back to the pool when this returns; only the bitstream leaves.
                switch compression.compress(buffer, presentationTime: presentationTime) {
                case .compressed(let block):
                    let sample: CMSampleBuffer
                    do {
                        sample = try CMSampleBuffer(
                            dataBuffer: block, formatDescription: formatDescription, numSamples: 1,
                            sampleTimings: [timing], sampleSizes: [block.dataLength])
                    } catch {
                        preconditionFailure("a one-sample compressed buffer with one timing and one size is consistent")
                    }
                    CompressedFrameSync.mark(sample)
                    sink(.output(sample, sequence: sequence))
                case .dropped(let reason):
                    sink(.dropped(sequence: sequence, presentationTime: presentationTime, reason: reason))
                }
            } else {
                // The description was made from the pool's size and format, so it matches every buffer.
                let sample = samples.sampleBuffer(
                    imageBuffer: buffer, formatDescription: formatDescription, timing: timing)
                sink(.output(sample, sequence: sequence))
            }
            let changesShown = controls.frameWasDelivered(revision: revision, time: presentationTime)
            for completion in completions + changesShown { completion(presentationTime) }
        }

        let pacer = VirtualStreamPacer(
            firstIndex: firstIndex, clockMode: clockMode, itemNanoseconds: frameNanoseconds, due: due,
            deliver: deliver,
            drop: { index, sequence, reason in
                sink(.dropped(sequence: sequence, presentationTime: time(index), reason: reason))
            })
        let fault = pacer.run(on: thread)
        controls.streamDidStop()
        if let fault { sink(.fault(fault)) }
    }
}

/// A compressed stream's compressor and the slots its bitstream is delivered in.
///
/// `@unchecked Sendable`: made by `start` on the caller's thread and handed to the capture thread, which is then the
/// only one to use the (thread-bound) compressor.
final class VirtualStreamCompression: @unchecked Sendable {
    let format: VirtualCompressedFormat
    private let compressor: any VirtualFrameCompressor
    /// As many slots as consumers may hold pixel buffers of a raw format.
    private let slots = VirtualBitstreamSlots(count: VirtualCamera.poolAllocationThreshold)

    init(format: VirtualCompressedFormat, compressor: any VirtualFrameCompressor) {
        self.format = format
        self.compressor = compressor
    }

    /// What became of one frame.
    enum Outcome {
        /// The bitstream, in a lent slot.
        case compressed(CMBlockBuffer)
        /// Lost: `.outOfBuffers` when consumers hold every slot, `.discontinuity` when the encoder fails (as a
        /// camera's damaged frame is lost).
        case dropped(DropReason)
    }

    /// Compresses `frame` into a free slot.
    func compress(_ frame: CVPixelBuffer, presentationTime: CMTime) -> Outcome {
        guard let slot = slots.reserve() else { return .dropped(.outOfBuffers) }
        var block: CMBlockBuffer?
        do {
            try compressor.compress(frame, presentationTime: presentationTime) { bytes in
                block = slots.fill(slot, with: bytes)
            }
        } catch {
            block = nil
        }
        guard let block else {
            slots.cancel(slot)
            return .dropped(.discontinuity)
        }
        return .compressed(block)
    }
}
