import CaptureDrivers
import CaptureGraph
import Foundation
import MediaCodecs
import Synchronization

/// What one still capture asks for, after the public output has checked it.
///
/// `@unchecked Sendable`: the closures are called only on the engine's queue, the connection is thread safe.
struct StillRequest: @unchecked Sendable {
    enum Encoding: Sendable {
        /// A JPEG file, quality 0...1.
        case jpeg(quality: Double)
        /// A HEIC file, quality 0...1.
        case heic(quality: Double)
        /// The pixels, in this pixel format.
        case uncompressed(OSType)
    }

    var encoding: Encoding
    var flashMode: LightMode
    var location: StillImageMetadata.Location?
    var connection: AVCaptureConnection
    /// Take the still at the device's high-resolution still size, where the camera can.
    var highResolution = false
    /// Take the newest frame already delivered (zero shutter lag) instead of the next one, where the engine's
    /// `recentFrames` holds one and the flash does not fire.
    var zeroShutterLag = false
    /// Deliver a deferred proxy instead of the finished still: called on the engine's queue right after the frame
    /// is taken, with a quick preview and the pending still, which the engine then encodes on its processing queue.
    /// `finish` is then called only for failures before the frame.
    var deferred: ((CMTime, CVPixelBuffer?, PendingStill) -> Void)?
    /// The frame is about to be exposed (Apple's `willCapturePhoto`): on the engine's queue.
    var willCapture: () -> Void = {}
    /// The frame has been taken (Apple's `didCapturePhoto`): on the engine's queue.
    var didCapture: () -> Void = {}
    /// The still, or why there is none: on the engine's queue.
    var finish: (Result<StillImage, AVError>) -> Void
}

/// A finished still: the file (JPEG or HEIC) or the pixels, wrapped in a sample buffer with the frame's time and
/// ImageIO's properties attached.
///
/// `@unchecked Sendable`: immutable after creation; the buffers are thread safe classes.
struct StillImage: @unchecked Sendable {
    let sampleBuffer: CMSampleBuffer
    let fileData: Data?
    let pixelBuffer: CVPixelBuffer?
    let properties: [String: Any]
    let metadata: StillImageMetadata
    let timestamp: CMTime
}

/// The machinery both still outputs share: picks the frame a capture is for out of the output's connection
/// (the next frame, the one the flash lit, or with zero shutter lag the newest one already delivered, which
/// `recentFrames` keeps), and encodes it with its EXIF on a serial queue of its own.
///
/// The frame is the stream's own: the session keeps streaming and a recording keeps every frame; the still only
/// holds one device buffer while it is encoded. Stills are never taken by pausing, reconfiguring or copying on the
/// capture thread: `receive` only notes the frame and queues the work.
///
/// Flash: `.on` with a flash, or `.auto` in a scene the device calls dark (`isFlashScene`), asks the device to fire
/// for its next frame (`ControlRequest.fireFlash`). The device names that frame's time, on its capture thread,
/// right after delivering it; until then `receive` keeps the latest frame of the connection, which is the lit one
/// when the name arrives.
///
/// Threading: thread safe. Requests are guarded by a mutex; the encoders and converters are used only on `queue`.
package final class StillCaptureEngine: @unchecked Sendable {
    private struct Waiting {
        let id: Int
        let request: StillRequest
        /// True until the device says which frame the flash lit.
        var awaitsFlash: Bool
        var firesFlash: Bool
        /// The latest frame of the connection, while the flash frame is awaited.
        var candidate: CMSampleBuffer?
    }

    private struct State {
        var waiting: [Waiting] = []
        var nextID = 0
    }

    private let state = Mutex(State())
    /// Whether anything waits for a frame: the capture thread's check on every frame, without the mutex.
    private let isWaiting = Atomic<Bool>(false)
    let queue: DispatchQueue
    /// The newest frames of the connections, for zero-shutter-lag captures; off (holding nothing) until enabled.
    let recentFrames = RecentFrameRing()
    /// Used on `queue` only.
    private let work = UncheckedSendable(Work())
    /// Where deferred stills are encoded, after their proxies went out; with encoders of its own.
    private let processingQueue: DispatchQueue
    /// Used on `processingQueue` only.
    private let deferredWork = UncheckedSendable(Work())

    /// The encoders and converters, made on first use and kept.
    ///
    /// Threading: thread-bound (the engine's queue, or the one thread of a `PhotoFileEncoder`).
    package final class Work {
        var jpeg: JPEGEncoder?
        var converters = FrameConverterCache()
        package init() {}
    }

    init(label: String) {
        queue = DispatchQueue(label: label)
        processingQueue = DispatchQueue(label: label + ".deferred", qos: .utility)
    }

    // MARK: Asking

    /// Starts a capture: fails at once (on the queue) when the session is not running; otherwise waits for the
    /// right frame of `request.connection`.
    func capture(_ request: StillRequest, session: AVCaptureSession?) {
        guard let session, session.isRunning, !session.isInterrupted else {
            let error =
                session?.isInterrupted == true
                ? AVError(.sessionWasInterrupted, "the session is interrupted; no still can be taken")
                : AVError(.sessionNotRunning, "the session is not running; call startRunning() before taking a still")
            queue.async { request.finish(.failure(error)) }
            return
        }
        let device = (request.connection.inputPorts.first?.input as? AVCaptureDeviceInput)?.device
        let firesFlash = Self.firesFlash(request.flashMode, device: device)
        if let device, let size = Self.highResolutionSize(for: request, device: device),
            let camera = device.backend as? any HighResolutionStillCapturing
        {
            queue.async { request.willCapture() }
            let waiting = Waiting(id: -1, request: request, awaitsFlash: false, firesFlash: firesFlash)
            camera.captureHighResolutionStill(size: size, firingFlash: firesFlash) { [weak self] image, time in
                self?.highResolutionStillArrived(waiting, image: image, time: time)
            }
            return
        }
        if request.zeroShutterLag, !firesFlash, let frame = recentFrames.newest(of: request.connection) {
            // Zero shutter lag: the frame that was current when the shutter was pressed.
            queue.async { request.willCapture() }
            process(Waiting(id: -1, request: request, awaitsFlash: false, firesFlash: false), frame: frame)
            return
        }
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            state.waiting.append(
                Waiting(id: state.nextID, request: request, awaitsFlash: firesFlash, firesFlash: firesFlash))
            return state.nextID
        }
        isWaiting.store(true, ordering: .releasing)
        queue.async { request.willCapture() }
        if firesFlash, let device {
            device.apply(.fireFlash) { [weak self] time in self?.flashLit(id, at: time) }
        }
    }

    /// The size of a high-resolution still for `request`, when it asks for one, the camera can take one, and it
    /// is larger than the stream's frames; nil otherwise (the still is a stream frame).
    static func highResolutionSize(for request: StillRequest, device: AVCaptureDevice) -> CMVideoDimensions? {
        highResolutionSize(highResolution: request.highResolution, device: device)
    }

    private static func highResolutionSize(highResolution: Bool, device: AVCaptureDevice) -> CMVideoDimensions? {
        guard highResolution, device.backend is any HighResolutionStillCapturing else { return nil }
        let still = device.activeFormat.highResolutionStillImageDimensions
        let stream = device.activeFormat.formatDescription.dimensions
        return Int(still.width) * Int(still.height) > Int(stream.width) * Int(stream.height) ? still : nil
    }

    /// The size a still from `connection` will have.
    static func dimensions(of connection: AVCaptureConnection, highResolution: Bool) -> CMVideoDimensions {
        let device = (connection.inputPorts.first?.input as? AVCaptureDeviceInput)?.device
        if let device, let size = highResolutionSize(highResolution: highResolution, device: device) { return size }
        return connection.inputPorts.first?.formatDescription?.dimensions ?? CMVideoDimensions()
    }

    /// A high-resolution still from the camera (on its still queue): wrapped like a stream frame and encoded.
    private func highResolutionStillArrived(_ waiting: Waiting, image: CVPixelBuffer?, time: CMTime) {
        guard let image, time.isValid, let description = try? CMFormatDescription(imageBuffer: image),
            let frame = try? CMSampleBuffer(
                imageBuffer: image, formatDescription: description,
                sampleTiming: CMSampleTimingInfo(
                    duration: .invalid, presentationTimeStamp: time, decodeTimeStamp: .invalid))
        else {
            queue.async {
                waiting.request.finish(.failure(Self.cameraStopped))
            }
            return
        }
        process(waiting, frame: frame)
    }

    /// Whether the flash fires for a still in `mode`: `.on` with a flash, `.auto` when the device says the scene
    /// needs it.
    static func firesFlash(_ mode: LightMode, device: AVCaptureDevice?) -> Bool {
        guard let device, device.hasFlash, device.isConnected else { return false }
        switch mode {
        case .off: return false
        case .on: return true
        case .auto: return device.controlState.isFlashScene
        }
    }

    // MARK: The capture thread's side

    /// A frame of one of the output's connections. Must not block: notes the frame and queues the work.
    func receive(_ sample: CMSampleBuffer, from connection: AVCaptureConnection) {
        guard sample.imageBuffer != nil else { return }
        recentFrames.keep(sample, of: connection)
        guard isWaiting.load(ordering: .acquiring) else { return }
        let taken = state.withLock { state -> [Waiting] in
            var taken: [Waiting] = []
            state.waiting.removeAll { waiting in
                guard waiting.request.connection === connection else { return false }
                if waiting.awaitsFlash { return false }
                taken.append(waiting)
                return true
            }
            for index in state.waiting.indices where state.waiting[index].request.connection === connection {
                state.waiting[index].candidate = sample
            }
            if state.waiting.isEmpty { isWaiting.store(false, ordering: .releasing) }
            return taken
        }
        for waiting in taken { process(waiting, frame: sample) }
    }

    /// The device names the frame its flash lit: right after delivering it, on its capture thread.
    private func flashLit(_ id: Int, at time: CMTime) {
        let found = state.withLock { state -> Waiting? in
            guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
            if time.isValid, state.waiting[index].candidate?.presentationTimeStamp != time {
                // The lit frame has not reached this output (its connection was off): take the next frame unlit.
                state.waiting[index].awaitsFlash = false
                state.waiting[index].firesFlash = false
                return nil
            }
            let waiting = state.waiting.remove(at: index)
            if state.waiting.isEmpty { isWaiting.store(false, ordering: .releasing) }
            return waiting
        }
        guard let found else { return }
        if let frame = found.candidate, time.isValid {
            process(found, frame: frame)
        } else {
            queue.async {
                found.request.finish(.failure(Self.cameraStopped))
            }
        }
    }

    /// The session stopped or the device failed: every waiting capture ends with `error`.
    func failAll(_ error: AVError) {
        recentFrames.removeAll()
        let failed = state.withLock { state in
            defer { state.waiting.removeAll() }
            return state.waiting
        }
        isWaiting.store(false, ordering: .releasing)
        for waiting in failed { queue.async { waiting.request.finish(.failure(error)) } }
    }

    // MARK: The queue's side

    private func process(_ waiting: Waiting, frame: CMSampleBuffer) {
        let request = waiting.request
        let device = (request.connection.inputPorts.first?.input as? AVCaptureDeviceInput)?.device
        // Read now, on the capture thread: the exposure the frame was taken with.
        let controls = device?.controlState
        let settings = request.connection.currentSettings
        let flash = Self.flashRecord(request.flashMode, fired: waiting.firesFlash, device: device)
        let taken = UncheckedSendable(frame)
        let orientation = Self.exifOrientation(rotation: Int(settings.rotationAngle), mirrored: settings.isVideoMirrored)
        queue.async {
            request.didCapture()
            if let deliverProxy = request.deferred {
                let pending = PendingStill()
                deliverProxy(
                    taken.value.presentationTimeStamp, Self.preview(of: taken.value, work: self.work.value), pending)
                self.processingQueue.async {
                    pending.fulfil(
                        Result { () throws(AVError) -> StillImage in
                            try self.encode(
                                taken.value, request: request, device: device, controls: controls, flash: flash,
                                orientation: orientation, work: self.deferredWork.value)
                        })
                }
                return
            }
            let result = Result { () throws(AVError) -> StillImage in
                try self.encode(
                    taken.value, request: request, device: device, controls: controls, flash: flash,
                    orientation: orientation, work: self.work.value)
            }
            request.finish(result)
        }
    }

    private func encode(
        _ frame: CMSampleBuffer, request: StillRequest, device: AVCaptureDevice?, controls: CameraControlState?,
        flash: StillImageMetadata.Flash, orientation: Int, work: Work
    ) throws(AVError) -> StillImage {
        guard let image = frame.imageBuffer else { throw AVError(.unknown, "the frame has no pixels") }
        let width = CVPixelBufferGetWidth(image)
        let height = CVPixelBufferGetHeight(image)
        let metadata = StillImageMetadata(
            make: device?.manufacturer ?? "OpenAVCapture", model: device?.localizedName ?? "Camera",
            software: "OpenAVCapture", dateTimeOriginal: Self.wallClockDate(of: frame.presentationTimeStamp),
            exposureTime: controls?.exposureDuration ?? 0,
            iso: Int((controls?.iso ?? 0).rounded()), flash: flash, orientation: orientation, pixelWidth: width,
            pixelHeight: height, location: request.location)
        let properties = metadata.imageProperties
        let timing = CMSampleTimingInfo(
            duration: frame.duration, presentationTimeStamp: frame.presentationTimeStamp, decodeTimeStamp: .invalid)
        let sample: CMSampleBuffer
        var fileData: Data?
        var pixels: CVPixelBuffer?
        do {
            switch request.encoding {
            case .jpeg(let quality), .heic(let quality):
                let isJPEG = if case .jpeg = request.encoding { true } else { false }
                let data = try Self.file(
                    of: image, metadata: metadata, heic: !isJPEG, quality: quality, orientation: orientation,
                    work: work)
                let description = try? CMFormatDescription(
                    videoCodecType: .init(rawValue: isJPEG ? kCMVideoCodecType_JPEG : kCMVideoCodecType_HEVC),
                    width: width, height: height)
                sample = try makeSample(CMBlockBuffer(copying: data), description, timing, size: data.count)
                fileData = data
            case .uncompressed(let pixelFormat):
                let converted = try Self.convert(image, to: pixelFormat, work: work)
                let description = try CMFormatDescription(imageBuffer: converted)
                sample = try CMSampleBuffer(
                    imageBuffer: converted, formatDescription: description, sampleTiming: timing)
                pixels = converted
            }
        } catch let error as AVError {
            throw error
        } catch {
            throw AVError(.unknown, "encoding the still failed: \(error)")
        }
        for (key, value) in properties {
            CMSetAttachment(sample, key: key, value: value, attachmentMode: kCMAttachmentMode_ShouldPropagate)
        }
        return StillImage(
            sampleBuffer: sample, fileData: fileData, pixelBuffer: pixels, properties: properties, metadata: metadata,
            timestamp: frame.presentationTimeStamp)
    }

    private func makeSample(
        _ block: CMBlockBuffer, _ description: CMFormatDescription?, _ timing: CMSampleTimingInfo, size: Int
    ) throws -> CMSampleBuffer {
        try CMSampleBuffer(
            dataBuffer: block, formatDescription: description, numSamples: 1, sampleTimings: [timing],
            sampleSizes: [size])
    }

    /// A still's file: `image` (converted to NV12 when it is not) as JPEG or HEIC, `metadata` as its EXIF. What
    /// both still outputs deliver, and what `PhotoFileEncoder` (OpenAVCaptureTesting) makes for the still fuzz
    /// target.
    ///
    /// - Throws: `AVError` when the conversion fails, or `MediaCodecsError` when EXIF or the encoder fails.
    package static func file(
        of image: CVPixelBuffer, metadata: StillImageMetadata, heic: Bool, quality: Double, orientation: Int,
        work: Work
    ) throws -> Data {
        let nv12 = try nativeForEncoding(image, work: work)
        let exif = try ExifWriter.app1Payload(for: metadata)
        if heic { return try HEICEncoder.encode(nv12, quality: quality, orientation: orientation, exif: exif) }
        if work.jpeg == nil { work.jpeg = try JPEGEncoder() }
        return try work.jpeg!.encode(nv12, quality: quality, matrix: YCbCrMatrix.of(nv12), exif: exif)
    }

    /// The frame as the encoders take it: NV12 as is, anything else converted to video-range NV12.
    private static func nativeForEncoding(_ image: CVPixelBuffer, work: Work) throws(AVError) -> CVPixelBuffer {
        let format = CVPixelBufferGetPixelFormatType(image)
        if format == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
            || format == kCVPixelFormatType_420YpCbCr8BiPlanarFullRange
        {
            return image
        }
        return try convert(image, to: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, work: work)
    }

    /// The error of a still whose camera stopped streaming before the frame came.
    static var cameraStopped: AVError { AVError(.sessionNotRunning, "the camera stopped before the still was taken") }
}
