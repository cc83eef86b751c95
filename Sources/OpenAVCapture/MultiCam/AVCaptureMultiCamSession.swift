import CaptureDrivers
import Foundation

/// A session that captures from several cameras at once, as Apple's `AVCaptureMultiCamSession`.
///
/// Add each camera's input with `addInputWithNoConnections(_:)` and each output with
/// `addOutputWithNoConnections(_:)`, then connect them by hand: `AVCaptureConnection(inputPorts:output:)` with the
/// port from `AVCaptureDeviceInput.ports(for:sourceDeviceType:sourceDevicePosition:)`, checked with
/// `canAddConnection(_:)` and added with `addConnection(_:)`. Every camera streams on its own capture thread, its
/// frames stamped on the host clock (`synchronizationClock`), so frames of different cameras compare directly and
/// `AVCaptureDataOutputSynchronizer` pairs them.
///
/// Apple's rules, as Apple documents them:
/// - The preset is always `.inputPriority`; set each camera's `activeFormat` instead. Setting another preset traps
///   (`canSetSessionPreset(_:)` says no), as Apple's raises.
/// - A device is used by only one input of the session.
/// - Every camera's active format must be `isMultiCamSupported` once there is more than one camera (Apple's iOS 26
///   exception: not enforced while a single camera is used).
/// - A camera feeds at most one output of each kind (one video data output, one movie file output, ...) and one
///   preview layer: Apple does not clone a camera to two outputs of the same type. The exception is sound: one
///   microphone's port may feed any number of outputs, and its hidden front and back ports too, so every camera's
///   recording gets the one microphone.
/// - Disabling every connection (or port) of a camera stops that camera; enabling one starts it again. A camera
///   without an enabled connection does not stream.
/// - `hardwareCost` above 1.0: the session does not run; `startRunning()` posts `.AVCaptureSessionRuntimeError`
///   with `AVError.sessionHardwareCostOverage`, and a commit that takes a running session over budget stops it
///   with the same error (recordings in progress are finished).
///
/// Threading: thread safe, as `AVCaptureSession`.
open class AVCaptureMultiCamSession: AVCaptureSession, @unchecked Sendable {
    /// Whether this machine runs multi-camera sessions: true; every camera here streams on its own thread, and
    /// `hardwareCost` says whether a chosen set of formats fits.
    open class var isMultiCamSupported: Bool { true }

    public override init() {
        super.init()
        preset = .inputPriority
        // Apple's KVO spells a subclass's key paths with the subclass: alias them to the base class's registrations.
        keyValueObservers.addAlias(\AVCaptureMultiCamSession.isRunning, for: \AVCaptureSession.isRunning)
        keyValueObservers.addAlias(\AVCaptureMultiCamSession.isInterrupted, for: \AVCaptureSession.isInterrupted)
    }

    /// The share of the capture hardware's budget the session's cameras need in their active formats (0 with no
    /// camera). Above 1.0 the session cannot run: lower it with smaller formats, lower frame rates
    /// (`activeVideoMinFrameDuration`), compressed formats, or fewer cameras.
    open var hardwareCost: Float { CaptureHardwareCost.hardwareCost(of: streamedCameras) }

    /// The share of the machine's budget for decoding and converting frames the session's cameras need. Above 1.0
    /// the session may not keep up, and frames arrive late or are dropped; it still runs.
    open var systemPressureCost: Float { CaptureHardwareCost.systemPressureCost(of: streamedCameras) }

    /// The cameras the session streams when running (see `streams(_:)`).
    private var streamedCameras: [AVCaptureDevice] {
        locked {
            inputList.compactMap { input in
                guard streams(input), let device = input.streamedDevice, device.isCamera else { return nil }
                return device
            }
        }
    }

    /// A device streams while one of its connections is enabled with the input's port enabled, as Apple's: disable
    /// every connection (or port) of a camera and it stops streaming, the others unaffected.
    package override func streams(_ input: AVCaptureInput) -> Bool {
        connectionList.contains { connection in
            connection.isEnabled && connection.inputPorts.contains { $0.input === input && $0.isEnabled }
        }
    }

    package override func enablementDidChange() { changeConfiguration {} }

    // MARK: Rules

    package override var takesSeveralCameras: Bool { true }

    /// Always `.inputPriority`. Setting another preset traps, as Apple's raises.
    open override var sessionPreset: Preset {
        get { .inputPriority }
        set {
            precondition(
                newValue == .inputPriority,
                "AVCaptureMultiCamSession: the preset is always .inputPriority; set each camera's activeFormat instead"
                    + " (Apple raises NSInvalidArgumentException)")
        }
    }

    /// True only for `.inputPriority`.
    open override func canSetSessionPreset(_ preset: Preset) -> Bool { preset == .inputPriority }

    /// `AVCaptureSession`'s rules, and a camera's active format must be `isMultiCamSupported` when the session
    /// would have more than one camera.
    open override func canAddInput(_ input: AVCaptureInput) -> Bool {
        locked {
            guard super.canAddInput(input) else { return false }
            guard let device = input.streamedDevice, device.hasMediaType(.video) else { return true }
            let cameras = inputList.compactMap(\.streamedDevice).filter { $0.hasMediaType(.video) } + [device]
            return cameras.count == 1 || cameras.allSatisfy(\.activeFormat.isMultiCamSupported)
        }
    }

    /// `AVCaptureSession`'s rules, and a camera's video feeds at most one output of each kind and one preview
    /// layer. Audio is exempt: one microphone may feed every output.
    open override func canAddConnection(_ connection: AVCaptureConnection) -> Bool {
        locked {
            guard super.canAddConnection(connection) else { return false }
            let cameras = Set(
                connection.inputPorts.filter { $0.mediaType == .video }.compactMap {
                    $0.input.streamedDevice.map(ObjectIdentifier.init)
                })
            guard !cameras.isEmpty else { return true }
            return !connectionList.contains { existing in
                let sameCamera = existing.inputPorts.contains { port in
                    port.mediaType == .video
                        && port.input.streamedDevice.map { cameras.contains(ObjectIdentifier($0)) } == true
                }
                guard sameCamera else { return false }
                if let output = connection.output, let other = existing.output {
                    return type(of: output) == type(of: other)
                }
                return connection.videoPreviewLayer != nil && existing.videoPreviewLayer != nil
            }
        }
    }

    package override func refusalToRun() -> AVError? {
        let cost = hardwareCost
        guard cost > 1 else { return nil }
        let cameras = streamedCameras.map { camera in
            let size = camera.activeFormat.video.map { "\($0.width)x\($0.height)" } ?? "?"
            let rate = camera.activeVideoMinFrameDuration.isNumeric
                ? Int((1 / camera.activeVideoMinFrameDuration.seconds).rounded()) : 0
            return "\(camera.localizedName) at \(size)@\(rate)"
        }
        return AVError(
            .sessionHardwareCostOverage,
            "the cameras need \(Int((cost * 100).rounded())) % of the capture hardware's budget ("
                + cameras.joined(separator: ", ") + ")",
            suggestion: "Choose smaller or compressed (MJPEG) formats, lower frame rates, or fewer cameras, until"
                + " hardwareCost is 1.0 or less.")
    }
}
