import Foundation
import OpenCoreMedia
import Synchronization

/// One output of a Wayland compositor as a capture device: BGRA frames copied by the compositor into shared memory
/// through wlr-screencopy at the stream's frame duration, the cursor drawn in by the compositor, unchanged frames
/// skipped with the protocol's damage.
///
/// Not listed by `DeviceRegistry` (Apple's discovery shows no screens either); `AVCaptureScreenInput` makes it.
///
/// Threading: thread safe. `start`/`stop` are serialized by the caller; the settings are guarded by a mutex.
package final class WaylandScreen: ScreenDevice {
    package let identity: DeviceIdentity
    package let monitor: ScreenMonitor
    /// The `WAYLAND_DISPLAY` value (`wayland-1`, or a socket's path) the output belongs to.
    package let displayName: String
    /// The output's scale (`wl_output.scale`): its mode's pixels per unit of the compositor's layout, in which
    /// screencopy regions are given. The monitor's size and the crop are in pixels.
    package let scale: Int32
    package let formats: [DeviceFormat]
    package var controls: (any CameraControlling)? { nil }
    package var clock: CMClock { .hostTimeClock }
    package var isConnected: Bool { state.withLock { $0.isConnected } }
    package var isInUseByAnotherApplication: Bool { false }
    package var isAccessible: Bool { true }

    private struct State {
        var settings: ScreenCaptureSettings
        var stream: WaylandScreenCaptureStream?
        var isConnected = true
    }

    private let state: Mutex<State>

    package init(displayName: String, monitor: ScreenMonitor, scale: Int32, description: String) {
        self.displayName = displayName
        self.scale = scale
        self.monitor = monitor
        let place = (displayName as NSString).lastPathComponent
        identity = DeviceIdentity(
            uniqueID: "wayland:\(place):\(monitor.name)", modelID: "wayland:screen",
            localizedName: "Screen \(monitor.name) (\(monitor.width)x\(monitor.height)) on \(place)",
            manufacturer: description.isEmpty ? "Wayland" : description, kind: .external, position: .unspecified,
            media: .video, origin: .real)
        formats = [.video(Screens.format(width: monitor.width, height: monitor.height))]
        state = Mutex(State(settings: ScreenCaptureSettings(cropWidth: monitor.width, cropHeight: monitor.height)))
    }

    package var settings: ScreenCaptureSettings {
        get { state.withLock { $0.settings } }
        set { state.withLock { $0.settings = newValue } }
    }

    package func start(_ configuration: StreamConfiguration, sink: @escaping StreamSink) throws(DeviceFault) {
        let configuration = configurationToStart(configuration, caller: "WaylandScreen")
        guard case .video(let video) = configuration.format else { preconditionFailure("validated above") }
        stop()
        let stream = try WaylandScreenCaptureStream.start(
            screen: self, outputWidth: video.width, outputHeight: video.height,
            frameDuration: configuration.frameDuration, sink: sink)
        state.withLock { $0.stream = stream }
    }

    /// The compositor went away or dropped the output: the screen is gone for good.
    func connectionWasLost() { state.withLock { $0.isConnected = false } }

    package func stop() {
        let stream = state.withLock { state in
            defer { state.stream = nil }
            return state.stream
        }
        stream?.stop()
    }
}
