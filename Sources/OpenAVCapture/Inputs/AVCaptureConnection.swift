import CaptureGraph
import CaptureDrivers
import Foundation
import Synchronization

/// A link from input ports to an output (or a preview layer), with what it does to the media on the way:
/// rotation and mirroring of video, a frame-rate cap, and audio channel levels.
///
/// Rotation and mirroring are applied to the pixels data outputs receive, as Apple does. Connections of data
/// outputs start unrotated (`.landscapeRight`, angle 0: the sensor's own orientation) and unmirrored; a preview
/// connection of a front camera starts mirrored (`automaticallyAdjustsVideoMirroring`).
///
/// Threading: thread safe; settings are guarded by a mutex and read once per frame by the session.
open class AVCaptureConnection: NSObject, KeyValueObservable, @unchecked Sendable {
    /// Everything that can change after creation.
    package struct Settings: Sendable, Equatable {
        var isEnabled = true
        var rotationAngle: CGFloat = 0
        var isVideoMirrored = false
        var automaticallyAdjustsVideoMirroring = true
        var videoMinFrameDuration: CMTime = .invalid
        var videoMaxFrameDuration: CMTime = .invalid
        var preferredVideoStabilizationMode: AVCaptureVideoStabilizationMode = .off
        var isAttached = false
    }

    /// The ports the connection takes media from.
    open var inputPorts: [AVCaptureInput.Port] { storedInputPorts }
    private let storedInputPorts: [AVCaptureInput.Port]
    /// The output the media goes to; nil for a preview connection.
    public private(set) weak var output: AVCaptureOutput?
    /// The preview layer the video goes to; nil for an output connection.
    public private(set) weak var videoPreviewLayer: AVCaptureVideoPreviewLayer?
    /// One channel object per audio channel of the port's format; empty for video.
    open var audioChannels: [AVCaptureAudioChannel] { storedAudioChannels }
    private let storedAudioChannels: [AVCaptureAudioChannel]
    public let keyValueObservers = KeyValueObserverRegistry()
    private let settings: Mutex<Settings>
    /// The ports' inputs, held so `inputPorts[i].input` stays valid as long as the connection exists (a port
    /// refers to its input without owning it, or the two would keep each other alive); an output kept after its
    /// session and inputs are gone can still read its connections.
    private let inputs: [AVCaptureInput]

    /// A connection from `ports` to `output`, for `AVCaptureSession.addConnection(_:)` after
    /// `addInputWithNoConnections`/`addOutputWithNoConnections`.
    public init(inputPorts ports: [AVCaptureInput.Port], output: AVCaptureOutput) {
        self.storedInputPorts = ports
        self.inputs = ports.map(\.input)
        self.output = output
        self.storedAudioChannels = Self.makeAudioChannels(for: ports)
        self.settings = Mutex(Settings())
        super.init()
    }

    /// A connection from a video port to a preview layer.
    public init(inputPort port: AVCaptureInput.Port, videoPreviewLayer layer: AVCaptureVideoPreviewLayer) {
        self.storedInputPorts = [port]
        self.inputs = [port.input]
        self.videoPreviewLayer = layer
        self.storedAudioChannels = []
        var initial = Settings()
        // Apple mirrors a front camera's preview so it reads like a mirror.
        initial.isVideoMirrored = Self.isFrontCamera(port)
        self.settings = Mutex(initial)
        super.init()
    }

    private static func makeAudioChannels(for ports: [AVCaptureInput.Port]) -> [AVCaptureAudioChannel] {
        guard let port = ports.first(where: { $0.mediaType == .audio }),
            let layout = port.formatDescription?.audioStreamBasicDescription
        else { return [] }
        return (0..<Int(layout.mChannelsPerFrame)).map { _ in AVCaptureAudioChannel() }
    }

    private static func isFrontCamera(_ port: AVCaptureInput.Port) -> Bool {
        (port.input as? AVCaptureDeviceInput)?.device.position == .front
    }

    package var currentSettings: Settings { settings.withLock { $0 } }
    /// Moves when rotation, mirroring or another observed setting changes: the routes recompute their outputs'
    /// demands then.
    package let demandGeneration = DemandGeneration()

    /// The media type of the connection's ports.
    package var mediaType: AVMediaType? { inputPorts.first?.mediaType }

    // MARK: Enabled and active

    /// Whether media flows through the connection.
    open var isEnabled: Bool {
        get { settings.withLock { $0.isEnabled } }
        set {
            let changed = isEnabled != newValue
            update(\.isEnabled, newValue, keyPath: \AVCaptureConnection.isEnabled)
            if changed, isAttached { inputPorts.first?.input.session?.enablementDidChange() }
        }
    }

    private var isAttached: Bool { settings.withLock { $0.isAttached } }

    /// Whether media can flow now: enabled, every input port enabled, and part of a session. Observable.
    open var isActive: Bool {
        let current = currentSettings
        return current.isEnabled && current.isAttached && inputPorts.allSatisfy(\.isEnabled)
    }

    package func setAttached(_ attached: Bool) {
        let wasActive = isActive
        settings.withLock { $0.isAttached = attached }
        let nowActive = isActive
        if wasActive != nowActive {
            keyValueObservers.notifyChange(\AVCaptureConnection.isActive, of: self, from: wasActive, to: nowActive)
        }
    }

    // MARK: Orientation

    /// Whether the connection can rotate video: true for video connections.
    open var isVideoOrientationSupported: Bool { mediaType == .video }

    /// The orientation of the video, as Apple's older API: `.landscapeRight` is the sensor's own orientation.
    /// Setting it sets `videoRotationAngle`.
    open var videoOrientation: AVCaptureVideoOrientation {
        get { AVCaptureVideoOrientation(rotationAngle: videoRotationAngle) ?? .landscapeRight }
        set {
            precondition(
                isVideoOrientationSupported,
                "AVCaptureConnection: videoOrientation is only for video connections; check"
                    + " isVideoOrientationSupported first (Apple raises NSInvalidArgumentException)")
            videoRotationAngle = newValue.rotationAngle
        }
    }

    /// Whether the connection can rotate by `videoRotationAngle` degrees: 0, 90, 180 and 270.
    open func isVideoRotationAngleSupported(_ videoRotationAngle: CGFloat) -> Bool {
        mediaType == .video && [0, 90, 180, 270].contains(videoRotationAngle)
    }

    /// The clockwise rotation, in degrees, applied to the video.
    open var videoRotationAngle: CGFloat {
        get { settings.withLock { $0.rotationAngle } }
        set {
            precondition(
                isVideoRotationAngleSupported(newValue),
                "AVCaptureConnection: videoRotationAngle \(newValue) is not supported; use 0, 90, 180 or 270 on a"
                    + " video connection (Apple raises NSInvalidArgumentException)")
            let old = videoOrientation
            update(\.rotationAngle, newValue, keyPath: \AVCaptureConnection.videoRotationAngle)
            if old != videoOrientation {
                keyValueObservers.notifyChange(
                    \AVCaptureConnection.videoOrientation, of: self, from: old, to: videoOrientation)
            }
        }
    }

    // MARK: Mirroring

    /// Whether the connection can mirror video: true for video connections.
    open var isVideoMirroringSupported: Bool { mediaType == .video }

    /// Whether video is mirrored left to right (after rotation, in the picture as delivered). Setting it needs
    /// `automaticallyAdjustsVideoMirroring` false, as Apple's.
    open var isVideoMirrored: Bool {
        get { settings.withLock { $0.isVideoMirrored } }
        set {
            precondition(
                isVideoMirroringSupported,
                "AVCaptureConnection: isVideoMirrored is only for video connections (Apple raises"
                    + " NSInvalidArgumentException)")
            precondition(
                !automaticallyAdjustsVideoMirroring || videoPreviewLayer == nil,
                "AVCaptureConnection: set automaticallyAdjustsVideoMirroring to false before setting"
                    + " isVideoMirrored (Apple raises NSInvalidArgumentException)")
            update(\.isVideoMirrored, newValue, keyPath: \AVCaptureConnection.isVideoMirrored)
        }
    }

    /// Whether the connection mirrors a front camera's preview by itself. Data output connections are never
    /// mirrored automatically (their pixels are what the sensor saw).
    open var automaticallyAdjustsVideoMirroring: Bool {
        get { settings.withLock { $0.automaticallyAdjustsVideoMirroring } }
        set {
            update(
                \.automaticallyAdjustsVideoMirroring, newValue,
                keyPath: \AVCaptureConnection.automaticallyAdjustsVideoMirroring)
            if newValue, videoPreviewLayer != nil, let port = inputPorts.first {
                update(\.isVideoMirrored, Self.isFrontCamera(port), keyPath: \AVCaptureConnection.isVideoMirrored)
            }
        }
    }

    // MARK: Stabilization (not supported: honestly false)

    /// Whether stabilization is possible: no, we do not stabilize.
    open var isVideoStabilizationSupported: Bool { false }
    /// The mode asked for; kept, but `activeVideoStabilizationMode` stays `.off`.
    open var preferredVideoStabilizationMode: AVCaptureVideoStabilizationMode {
        get { settings.withLock { $0.preferredVideoStabilizationMode } }
        set { settings.withLock { $0.preferredVideoStabilizationMode = newValue } }
    }
    /// The stabilization in effect: always `.off`.
    open var activeVideoStabilizationMode: AVCaptureVideoStabilizationMode { .off }
    /// Apple's older switch; ignored because stabilization is not supported.
    open var enablesVideoStabilizationWhenAvailable: Bool = false
    /// Whether video is being stabilized: never.
    open var isVideoStabilizationEnabled: Bool { false }

    // MARK: Frame rate limits

    /// Whether the connection can cap the frame rate: true for video connections.
    open var isVideoMinFrameDurationSupported: Bool { mediaType == .video }
    /// Whether the connection can set a lowest frame rate: true for video connections.
    open var isVideoMaxFrameDurationSupported: Bool { mediaType == .video }

    /// The shortest time between frames delivered through this connection: frames closer than that to the last
    /// delivered one are skipped. `.invalid` (the default) delivers every frame.
    open var videoMinFrameDuration: CMTime {
        get { settings.withLock { $0.videoMinFrameDuration } }
        set { settings.withLock { $0.videoMinFrameDuration = newValue } }
    }

    /// The longest time between frames; kept for compatibility (a device never waits longer than its format).
    open var videoMaxFrameDuration: CMTime {
        get { settings.withLock { $0.videoMaxFrameDuration } }
        set { settings.withLock { $0.videoMaxFrameDuration = newValue } }
    }

    // MARK: Helpers

    private func update<Value: Equatable & Sendable>(
        _ field: WritableKeyPath<Settings, Value>, _ value: Value, keyPath: KeyPath<AVCaptureConnection, Value>
    ) {
        let old = settings.withLock { settings in
            defer { settings[keyPath: field] = value }
            return settings[keyPath: field]
        }
        guard old != value else { return }
        demandGeneration.bump()
        keyValueObservers.notifyChange(keyPath, of: self, from: old, to: value)
    }

    public override var description: String {
        let target = output.map { "\(type(of: $0))" } ?? (videoPreviewLayer != nil ? "preview layer" : "nothing")
        return "<AVCaptureConnection \(inputPorts.map(\.mediaType.rawValue)) -> \(target)>"
    }
}
