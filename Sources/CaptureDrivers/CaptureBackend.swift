import OpenCoreMedia
import SystemPackage

/// What a stream is asked to do: a format and a frame duration. A value, validated before it is applied
/// (libcamera's `CameraConfiguration::validate`).
///
/// Value type; safe to use from any thread.
package struct StreamConfiguration: Sendable, Hashable {
    /// The format to stream, one of the device's `formats`.
    package var format: DeviceFormat
    /// The time between frames (video). Ignored for audio, whose periods are the driver's choice.
    package var frameDuration: CMTime

    package init(format: DeviceFormat, frameDuration: CMTime) {
        self.format = format
        self.frameDuration = frameDuration
    }
}

/// The answer to "can you stream this?".
package enum ConfigurationValidity: Sendable, Hashable {
    /// Streams exactly as asked.
    case valid
    /// Streams, but not exactly as asked: this is what it will do (a frame duration clamped into range).
    case adjusted(StreamConfiguration)
    /// Cannot stream this at all; the reason is for people.
    case invalid(String)
}

/// Why a frame never reached the stream's sink, as the `DroppedFrameReason` attachment says it.
package enum DropReason: String, Sendable, Hashable {
    /// The consumer was too slow.
    case frameWasLate = "FrameWasLate"
    /// Every buffer was held by consumers.
    case outOfBuffers = "OutOfBuffers"
    /// The device skipped frames (a sequence gap, an overrun).
    case discontinuity = "Discontinuity"
}

/// Why a device stopped streaming by itself.
package enum DeviceFault: Error, Sendable, Hashable {
    /// The device went away (unplugged, driver unbound).
    case disconnected
    /// Another process holds the device.
    case busy
    /// No frame arrived for much longer than a frame interval.
    case stalled
    /// A system call failed; the errno says which.
    case io(Errno)
    /// A fault with what a person needs to fix it: who holds the device, which group to join, why the USB bus
    /// refused the format. `AVError`'s recovery suggestion carries the text.
    indirect case explained(DeviceFault, advice: String)

    /// The fault without its explanation: what code compares against (`fault.kind == .busy`).
    package var kind: DeviceFault {
        if case .explained(let fault, _) = self { return fault.kind }
        return self
    }

    /// The explanation, when the driver gave one.
    package var advice: String? {
        if case .explained(_, let advice) = self { return advice }
        return nil
    }
}

/// What a streaming device tells its sink, on the device's capture thread. A small closed set, as GStreamer's
/// flow results.
package enum StreamEvent: Sendable {
    /// A frame or audio period, stamped on the host clock; `sequence` counts every frame the device produced.
    case output(CMSampleBuffer, sequence: UInt64)
    /// A frame the device produced (or should have) that the sink will not get.
    case dropped(sequence: UInt64, presentationTime: CMTime, reason: DropReason)
    /// The device stopped by itself; no further events follow.
    case fault(DeviceFault)
}

/// Receives a stream's events. Called on the device's capture thread, in sequence order; it must not block
/// (hand the buffer to a queue and return).
package typealias StreamSink = @Sendable (StreamEvent) -> Void

/// One capture device as a driver sees it: the contract every device kind implements (virtual camera, V4L2
/// camera, ALSA microphone, X11 screen, movie file), in the spirit of libcamera's pipeline handler.
///
/// Lifecycle: `validate` → `start` (the device opens and streams on its own thread) → `stop` (blocks until the
/// thread has delivered its last event). A device may fault while streaming; it then sends `.fault` and stops
/// itself. `start` after `stop` streams again.
///
/// Threading: implementations are thread safe; `start` and `stop` are serialized by the caller (the session).
package protocol CaptureBackend: AnyObject, Sendable {
    /// Who the device is.
    var identity: DeviceIdentity { get }
    /// Every format the device can stream, in a stable order (the order `AVCaptureDevice.formats` shows).
    var formats: [DeviceFormat] { get }
    /// The camera's controls, or nil for devices without any (microphones).
    var controls: (any CameraControlling)? { get }
    /// The clock the device's timestamps are on: the host clock for every driver we have.
    var clock: CMClock { get }
    /// False once the device has gone away.
    var isConnected: Bool { get }
    /// True while another process holds the device.
    var isInUseByAnotherApplication: Bool { get }
    /// Whether this process may open the device (the node's permissions); what authorization means on Linux.
    var isAccessible: Bool { get }
    /// When `isAccessible` is false, what to do about it (the group to join), for people.
    var accessAdvice: String? { get }
    /// The raw device this is (`v4l2:/dev/video0`, `alsa:card:1`), which a PipeWire node may stand for; nil for
    /// devices that are no raw device.
    var rawDeviceKey: String? { get }
    /// What streaming `configuration` needs of the machine: its pixel rate and encoding, and of its USB bus where
    /// the device is on one (`CaptureHardwareCost` sums these over a session's cameras).
    func hardwareDemand(for configuration: StreamConfiguration) -> HardwareDemand
    /// Whether the device can stream `configuration`, and what it would stream instead.
    func validate(_ configuration: StreamConfiguration) -> ConfigurationValidity
    /// Opens the device and starts streaming to `sink`. Throws the fault that prevents it (busy, gone).
    func start(_ configuration: StreamConfiguration, sink: @escaping StreamSink) throws(DeviceFault)
    /// Stops streaming; returns after the capture thread has delivered its last event.
    func stop()
}

extension CaptureBackend {
    /// No advice: devices that are always accessible (virtual ones) need none.
    package var accessAdvice: String? { nil }

    /// None: devices that are not a kernel node of their own.
    package var rawDeviceKey: String? { nil }

    /// The pixel rate and encoding alone: devices that are on no bus we can measure (virtual cameras, movie files,
    /// screens, PipeWire nodes) know nothing more.
    package func hardwareDemand(for configuration: StreamConfiguration) -> HardwareDemand {
        HardwareDemand(pixelRateOf: configuration)
    }

    /// A camera's `validate`: invalid for a format the camera lacks; adjusted to the nearest allowed duration when
    /// the frame duration is out of the format's ranges (or not a number); valid otherwise.
    package func validateCameraConfiguration(_ configuration: StreamConfiguration) -> ConfigurationValidity {
        guard formats.contains(configuration.format), case .video(let video) = configuration.format else {
            return .invalid("\(identity.localizedName) has no format \(configuration.format)")
        }
        let duration = configuration.frameDuration
        guard duration.isNumeric, duration > .zero else {
            return .adjusted(defaultConfiguration(for: configuration.format))
        }
        if video.supports(frameDuration: duration) { return .valid }
        let candidates = video.frameDurationRanges.map { min(max(duration, $0.minFrameDuration), $0.maxFrameDuration) }
        let nearest = candidates.min { abs(($0 - duration).seconds) < abs(($1 - duration).seconds) } ?? duration
        return .adjusted(StreamConfiguration(format: configuration.format, frameDuration: nearest))
    }

    /// What `start` streams: `configuration` as `validate` adjusts it. An invalid one traps, naming `caller`: the
    /// session validates before it starts a device.
    package func configurationToStart(_ configuration: StreamConfiguration, caller: String) -> StreamConfiguration {
        switch validate(configuration) {
        case .valid: return configuration
        case .adjusted(let adjusted): return adjusted
        case .invalid(let reason): preconditionFailure("\(caller).start: \(reason); validate first")
        }
    }

    /// The first format, or the closest one to a size when asked (presets), as a configuration at its highest
    /// frame rate up to 30 fps.
    package func defaultConfiguration(for format: DeviceFormat) -> StreamConfiguration {
        switch format {
        case .video(let video):
            let thirtyFPS = CMTime(value: 1, timescale: 30)
            let fastest = video.frameDurationRanges.map(\.minFrameDuration).min() ?? thirtyFPS
            let slowest = video.frameDurationRanges.map(\.maxFrameDuration).max() ?? thirtyFPS
            let duration = max(fastest, min(thirtyFPS, slowest))
            return StreamConfiguration(format: format, frameDuration: duration)
        case .audio:
            return StreamConfiguration(format: format, frameDuration: .invalid)
        }
    }
}

/// A camera that can read a still larger than its stream's frames, as a phone's camera reads its whole sensor
/// for a photo while the preview streams smaller. Optional: a camera without it gives stills at the stream's size.
///
/// Threading: thread safe; the completion runs on a queue of the device's, never on its capture thread.
package protocol HighResolutionStillCapturing: CaptureBackend {
    /// Takes the stream's next frame again at the active format's high-resolution still size, in NV12, with the
    /// flash fired for it when `firingFlash` (the stream's frame is lit too). `completion` gets the picture and
    /// the stream frame's presentation time, or nil and `.invalid` when the camera stopped first.
    func captureHighResolutionStill(
        size: CMVideoDimensions, firingFlash: Bool, completion: @escaping @Sendable (CVPixelBuffer?, CMTime) -> Void)
}
