import CLinuxMedia
import Foundation
import OpenCoreMedia
import Synchronization
import SystemPackage

/// A V4L2 video capture node (`/dev/videoN`) as a `CaptureBackend`: a webcam, a capture card, the kernel's `vivid`.
///
/// Formats are what the node offered when it was discovered (ENUM_FMT × ENUM_FRAMESIZES × ENUM_FRAMEINTERVALS),
/// one `DeviceFormat` per pixel format and size, the formats we deliver without conversion first. Streaming is
/// `V4L2CaptureStream`'s: mmap buffers (each memory plane mapped on its own on a multi-planar node), one capture
/// thread, raw frames as pixel buffers wrapping the kernel's memory and compressed ones (MJPEG, H.264) as block
/// buffers.
///
/// Failures say what to do (`DeviceFault.explained`): EBUSY names the process holding the node, EACCES the group
/// to join, ENOSPC on STREAMON explains USB bandwidth; ENODEV, ENOENT and EIO mean the camera is gone.
///
/// Threading: thread safe; `start` and `stop` are serialized by the caller. The sink runs on the capture thread.
package final class V4L2Camera: CaptureBackend {
    /// How many buffers a stream asks the kernel for: enough for a delegate to hold one while the kernel fills the
    /// next two.
    package static let requestedBufferCount: UInt32 = 4

    package let identity: DeviceIdentity
    package let formats: [DeviceFormat]
    /// The V4L2 pixel format behind each of `formats`.
    package let pixelFormats: [V4L2PixelFormat]
    /// The node, `/dev/videoN`.
    package let path: String
    /// The node's queue frames come from: single-planar, or multi-planar (most SoC and ISP drivers).
    package let bufferType: V4L2BufferType
    package let cameraControls: V4L2CameraControls
    /// Where the camera sits on USB (bus, port, speed, streaming alternate settings); nil for a node that is no
    /// USB device's.
    package let usb: USBAttachment?
    private let system: SystemCalls
    private let diagnosis: DeviceNodeDiagnosis
    private let registry: DeviceRegistry?

    private struct State {
        var isConnected = true
        /// Set when the last start failed because another process held the node; cleared by a start that works.
        var isBusy = false
        var stream: V4L2CaptureStream?
    }

    private let state = Mutex(State())

    /// A camera for `path`, described by `description` (what discovery read from the node).
    package init(
        path: String, description: V4L2DeviceDescription, system: SystemCalls,
        diagnosis: DeviceNodeDiagnosis = DeviceNodeDiagnosis(), registry: DeviceRegistry? = nil,
        usb: USBAttachment? = nil
    ) {
        self.path = path
        self.usb = usb
        self.bufferType = description.bufferType
        self.identity = description.identity
        self.system = system
        self.diagnosis = diagnosis
        self.registry = registry
        let maxZoom = description.controls.maxZoomFactor
        let listed = description.formats.map { format -> (DeviceFormat, V4L2PixelFormat) in
            var video = format.video
            video.maxZoomFactor = maxZoom
            return (.video(video), format.pixelFormat)
        }
        formats = listed.map(\.0)
        pixelFormats = listed.map(\.1)
        let flag = StreamingFlag()
        cameraControls = V4L2CameraControls(
            controls: description.controls, initialValues: description.controlValues, path: path, system: system,
            isStreaming: { flag.isStreaming })
        streamingFlag = flag
    }

    private let streamingFlag: StreamingFlag

    // MARK: CaptureBackend

    package var controls: (any CameraControlling)? { cameraControls }
    package var clock: CMClock { .hostTimeClock }
    package var isConnected: Bool { state.withLock { $0.isConnected } }
    package var isInUseByAnotherApplication: Bool { state.withLock { $0.isBusy } }
    package var isAccessible: Bool { system.accessError(path) != .permissionDenied }
    package var accessAdvice: String? { isAccessible ? nil : diagnosis.accessAdvice(for: path) }
    /// `v4l2:` and the node's path, as PipeWire's V4L2 nodes name the node they read (`api.v4l2.path`).
    package var rawDeviceKey: String? { "v4l2:" + path }

    /// Invalid for a format the camera lacks; adjusted to the nearest allowed duration when the frame duration is
    /// out of the format's ranges (or not a number); valid otherwise.
    package func validate(_ configuration: StreamConfiguration) -> ConfigurationValidity {
        validateCameraConfiguration(configuration)
    }

    /// Opens the node, configures it and starts the capture thread. Throws what went wrong, explained.
    package func start(_ configuration: StreamConfiguration, sink: @escaping StreamSink) throws(DeviceFault) {
        let configuration = configurationToStart(configuration, caller: "V4L2Camera")
        guard case .video(let video) = configuration.format, let index = formats.firstIndex(of: configuration.format)
        else { preconditionFailure("a camera streams video") }
        let pixelFormat = pixelFormats[index]
        try state.withLock { state throws(DeviceFault) in
            guard state.isConnected else { throw DeviceFault.disconnected }
            precondition(
                state.stream.map(\.isFinished) ?? true,
                "\(identity.localizedName): start() while streaming; call stop() first")
        }
        cameraControls.streamWillStart()
        let stream: V4L2CaptureStream
        do {
            stream = try V4L2CaptureStream(
                path: path, system: system, type: bufferType, pixelFormat: pixelFormat, width: video.width,
                height: video.height,
                frameDuration: configuration.frameDuration, sink: sink,
                onFault: { [weak self] fault in self?.streamDidFault(fault) })
        } catch {
            let fault = explain(error, configuration: configuration)
            let busyChanged = state.withLock { state in
                defer { state.isBusy = fault.kind == .busy }
                return state.isBusy != (fault.kind == .busy)
            }
            if busyChanged { report(.availabilityChanged(self)) }
            throw fault
        }
        let busyChanged = state.withLock { state in
            state.stream = stream
            defer { state.isBusy = false }
            return state.isBusy
        }
        streamingFlag.set(true)
        if busyChanged { report(.availabilityChanged(self)) }
        stream.startThread(name: "OpenAVCapture \(identity.localizedName)")
    }

    package func stop() {
        let stream = state.withLock { state in
            defer { state.stream = nil }
            return state.stream
        }
        stream?.stop()
        streamingFlag.set(false)
    }

    /// The capture thread ended by itself. The camera lets go of the stream now, so its descriptor closes (and its
    /// mappings go as consumers release their frames) once the thread returns: an unplugged driver's module can be
    /// unloaded, and a replugged camera opened afresh.
    private func streamDidFault(_ fault: DeviceFault) {
        state.withLock { $0.stream = nil }
        streamingFlag.set(false)
        if fault.kind == .disconnected { markDisconnected() }
    }

    // MARK: Connection (the driver's hot-plug monitor calls these)

    /// The node went away: `isConnected` turns false and the registry hears of it once.
    package func markDisconnected() {
        let changed = state.withLock { state in
            defer { state.isConnected = false }
            return state.isConnected
        }
        if changed { report(.disconnected(self)) }
    }

    /// The node is back (the same camera replugged): `isConnected` turns true and the registry hears of it once.
    package func markConnected() {
        let changed = state.withLock { state in
            defer { state.isConnected = true }
            return !state.isConnected
        }
        if changed { report(.connected(self)) }
    }

    /// A camera discovery had not seen before appeared (plugged in while the process runs).
    package func announceArrival() {
        report(.connected(self))
    }

    private func report(_ event: ConnectionEvent) {
        (registry ?? DeviceRegistry.shared).report(event)
    }

    // MARK: Errors that say what to do

    /// A start failure as a fault with advice.
    func explain(_ failure: V4L2StartFailure, configuration: StreamConfiguration) -> DeviceFault {
        guard let index = formats.firstIndex(of: configuration.format), case .video(let video) = configuration.format
        else { preconditionFailure("a camera streams its own video formats") }
        let pixelFormat = pixelFormats[index]
        let format = "\(pixelFormat) \(video.width)x\(video.height) at \(Self.rateText(configuration)) fps"
        switch failure.errno {
        case .resourceBusy:
            return .explained(.busy, advice: diagnosis.busyAdvice(for: path))
        case .permissionDenied, .notPermitted:
            return .explained(.io(.permissionDenied), advice: diagnosis.accessAdvice(for: path))
        case .noSpace where failure.step == .streamOn:
            let advice = diagnosis.bandwidthAdvice(
                for: path, format: format, isCompressed: pixelFormat.isCompressed,
                demand: hardwareDemand(for: configuration).usb)
            return .explained(.io(.noSpace), advice: advice)
        case .noSuchFileOrDirectory, .operationNotSupportedByDevice, .noSuchAddressOrDevice, .ioError:
            return .disconnected
        default:
            return .explained(
                .io(failure.errno),
                advice: "\(failure.step.rawValue) on \(path) failed with \(failure.errno); `dmesg` may say why.")
        }
    }
}

extension V4L2Camera {
    /// "30" or "7.5": a frame rate as people write it.
    fileprivate static func rateText(_ configuration: StreamConfiguration) -> String {
        let rate = 1 / configuration.frameDuration.seconds
        guard rate.isFinite else { return "?" }
        let rounded = (rate * 100).rounded() / 100
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}

/// Whether a camera streams now, read by its controls' completion handlers.
private final class StreamingFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isStreaming: Bool { value.load(ordering: .relaxed) }
    func set(_ streaming: Bool) { value.store(streaming, ordering: .relaxed) }
}
