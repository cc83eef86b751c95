import Foundation
import OpenCoreMedia

/// One monitor of an X server as a capture device: BGRA frames grabbed through MIT-SHM at the stream's frame
/// duration, the cursor composited from XFixes, duplicates skipped with Damage.
///
/// Not listed by `DeviceRegistry` (Apple's discovery shows no screens either); `AVCaptureScreenInput` makes it.
///
/// Threading: thread safe. `start`/`stop` are serialized by the caller; the settings are guarded by a mutex.
package final class X11Screen: ScreenDevice {
    package let identity: DeviceIdentity
    package let monitor: ScreenMonitor
    /// The X display name (`:0`) the screen belongs to.
    package let displayName: String
    package let formats: [DeviceFormat]
    package var controls: (any CameraControlling)? { nil }
    package var clock: CMClock { .hostTimeClock }
    package var isConnected: Bool { streaming.isConnected }
    package var isInUseByAnotherApplication: Bool { false }
    package var isAccessible: Bool { true }

    private let streaming: ScreenStreaming
    package var framesConsidered: ScreenFrameCount { streaming.framesConsidered }

    package init(displayName: String, monitor: ScreenMonitor) {
        self.displayName = displayName
        self.monitor = monitor
        identity = DeviceIdentity(
            uniqueID: "x11:\(displayName):\(monitor.name)", modelID: "x11:screen",
            localizedName: "Screen \(monitor.name) (\(monitor.width)x\(monitor.height)) on \(displayName)",
            manufacturer: "X11", kind: .external, position: .unspecified, media: .video, origin: .real)
        formats = [.video(Screens.format(width: monitor.width, height: monitor.height))]
        streaming = ScreenStreaming(settings: ScreenCaptureSettings(cropWidth: monitor.width, cropHeight: monitor.height))
    }

    /// What the next frames capture.
    package var settings: ScreenCaptureSettings {
        get { streaming.settings }
        set { streaming.settings = newValue }
    }

    package func start(_ configuration: StreamConfiguration, sink: @escaping StreamSink) throws(DeviceFault) {
        let configuration = configurationToStart(configuration, caller: "X11Screen")
        guard case .video(let video) = configuration.format else { preconditionFailure("validated above") }
        stop()
        let grabber: X11ScreenGrabber
        do {
            grabber = try X11ScreenGrabber(
                screen: self, outputWidth: video.width, outputHeight: video.height,
                frameDuration: configuration.frameDuration)
        } catch let failure {
            throw failure.fault
        }
        streaming.start(name: "OpenAVCapture.X11Screen", wake: try ScreenStreaming.makeWake(), grabber: grabber, sink: sink)
    }

    package func stop() { streaming.stop() }
}
