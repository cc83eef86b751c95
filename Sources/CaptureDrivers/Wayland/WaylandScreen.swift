import Foundation
import OpenCoreMedia

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
    package var isConnected: Bool { streaming.isConnected }
    package var isInUseByAnotherApplication: Bool { false }
    package var isAccessible: Bool { true }

    private let streaming: ScreenStreaming
    package var framesConsidered: ScreenFrameCount { streaming.framesConsidered }

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
        streaming = ScreenStreaming(settings: ScreenCaptureSettings(cropWidth: monitor.width, cropHeight: monitor.height))
    }

    package var settings: ScreenCaptureSettings {
        get { streaming.settings }
        set { streaming.settings = newValue }
    }

    package func start(_ configuration: StreamConfiguration, sink: @escaping StreamSink) throws(DeviceFault) {
        let configuration = configurationToStart(configuration, caller: "WaylandScreen")
        guard case .video(let video) = configuration.format else { preconditionFailure("validated above") }
        stop()
        let wake = try ScreenStreaming.makeWake()
        let grabber = try WaylandScreenGrabber(
            screen: self, outputWidth: video.width, outputHeight: video.height,
            frameDuration: configuration.frameDuration, wakeDescriptor: wake.descriptor)
        streaming.start(name: "OpenAVCapture.WaylandScreen", wake: wake, grabber: grabber, sink: sink)
    }

    package func stop() { streaming.stop() }
}
