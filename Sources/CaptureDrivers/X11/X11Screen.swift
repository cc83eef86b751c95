import Foundation
import OpenCoreMedia
import Synchronization

/// What a screen stream captures and draws, changeable while it streams (`AVCaptureScreenInput`'s properties).
///
/// The capture thread reads it once per frame, so a moved crop origin or a cursor switched off shows in the next
/// frame; a new crop *size* or scale changes the stream's format, so the session restarts the stream for it.
/// Value type; safe to use from any thread.
package struct ScreenCaptureSettings: Sendable, Hashable {
    /// The captured area's top-left corner, in the monitor's pixels from its top-left corner.
    package var cropX: Int32 = 0
    package var cropY: Int32 = 0
    /// The captured area's size in the monitor's pixels; the stream's format gives the delivered size.
    package var cropWidth: Int32
    package var cropHeight: Int32
    package var capturesCursor = true
    package var capturesMouseClicks = false
    package var removesDuplicateFrames = false

    package init(cropWidth: Int32, cropHeight: Int32) {
        self.cropWidth = cropWidth
        self.cropHeight = cropHeight
    }
}

/// One monitor of an X server as a capture device: BGRA frames grabbed through MIT-SHM at the stream's frame
/// duration, the cursor composited from XFixes, duplicates skipped with Damage.
///
/// Not listed by `DeviceRegistry` (Apple's discovery shows no screens either); `AVCaptureScreenInput` makes it.
///
/// Threading: thread safe. `start`/`stop` are serialized by the caller; the settings are guarded by a mutex.
package final class X11Screen: CaptureBackend {
    /// The highest frame rate a screen offers: faster than any common monitor refreshes.
    package static let maximumFrameRate: Int32 = 120

    package let identity: DeviceIdentity
    package let monitor: X11Monitor
    /// The X display name (`:0`) the screen belongs to.
    package let displayName: String
    package let formats: [DeviceFormat]
    package var controls: (any CameraControlling)? { nil }
    package var clock: CMClock { .hostTimeClock }
    package var isConnected: Bool { state.withLock { $0.isConnected } }
    package var isInUseByAnotherApplication: Bool { false }
    package var isAccessible: Bool { true }

    private struct State {
        var settings: ScreenCaptureSettings
        var stream: X11ScreenCaptureStream?
        var isConnected = true
    }

    private let state: Mutex<State>

    package init(displayName: String, monitor: X11Monitor) {
        self.displayName = displayName
        self.monitor = monitor
        identity = DeviceIdentity(
            uniqueID: "x11:\(displayName):\(monitor.name)", modelID: "x11:screen",
            localizedName: "Screen \(monitor.name) (\(monitor.width)x\(monitor.height)) on \(displayName)",
            manufacturer: "X11", kind: .external, position: .unspecified, media: .video, origin: .real)
        formats = [.video(Self.format(width: monitor.width, height: monitor.height))]
        state = Mutex(State(settings: ScreenCaptureSettings(cropWidth: monitor.width, cropHeight: monitor.height)))
    }

    /// The format of a stream delivering `width`×`height` BGRA frames at 1 to 120 fps.
    package static func format(width: Int32, height: Int32) -> VideoFormat {
        VideoFormat(
            width: width, height: height, mediaSubType: kCVPixelFormatType_32BGRA,
            frameDurationRanges: [FrameDurationRange(minFrameRate: 1, maxFrameRate: maximumFrameRate)], fieldOfView: 0,
            maxZoomFactor: 1)
    }

    /// What the next frames capture.
    package var settings: ScreenCaptureSettings {
        get { state.withLock { $0.settings } }
        set { state.withLock { $0.settings = newValue } }
    }

    /// Valid for BGRA at any size from 1×1 to the monitor's (the crop scaled), at 1 to 120 fps; the frame duration
    /// is clamped into that range.
    package func validate(_ configuration: StreamConfiguration) -> ConfigurationValidity {
        guard case .video(let video) = configuration.format, video.mediaSubType == kCVPixelFormatType_32BGRA else {
            return .invalid("\(identity.localizedName) delivers BGRA video only")
        }
        guard video.width > 0, video.height > 0, video.width <= monitor.width, video.height <= monitor.height else {
            return .invalid(
                "\(identity.localizedName) cannot deliver \(video.width)x\(video.height): at most"
                    + " \(monitor.width)x\(monitor.height)")
        }
        let range = FrameDurationRange(minFrameRate: 1, maxFrameRate: Self.maximumFrameRate)
        let duration = configuration.frameDuration
        guard duration.isNumeric, duration > .zero else {
            return .adjusted(
                StreamConfiguration(format: configuration.format, frameDuration: CMTime(value: 1, timescale: 30)))
        }
        if range.contains(duration) { return .valid }
        let clamped = min(max(duration, range.minFrameDuration), range.maxFrameDuration)
        return .adjusted(StreamConfiguration(format: configuration.format, frameDuration: clamped))
    }

    package func start(_ configuration: StreamConfiguration, sink: @escaping StreamSink) throws(DeviceFault) {
        let configuration = configurationToStart(configuration, caller: "X11Screen")
        guard case .video(let video) = configuration.format else { preconditionFailure("validated above") }
        stop()
        let stream = try X11ScreenCaptureStream.start(
            screen: self, outputWidth: video.width, outputHeight: video.height,
            frameDuration: configuration.frameDuration, sink: sink)
        state.withLock { $0.stream = stream }
    }

    /// The X server went away: the screen is gone for good (a new server is a new screen).
    func connectionWasLost() { state.withLock { $0.isConnected = false } }

    package func stop() {
        let stream = state.withLock { state in
            defer { state.stream = nil }
            return state.stream
        }
        stream?.stop()
    }
}
