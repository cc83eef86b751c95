import Foundation
import OpenCoreMedia

/// One stream of a ScreenCast portal session (a monitor or window the user chose) as a capture device: the
/// portal's PipeWire node, read on the connection `OpenPipeWireRemote` gives, its frames cropped, scaled and paced
/// by a capture thread as the X11 and wlr-screencopy screens are.
///
/// The session belongs to the device: it stays open while the device exists (the portal ends it with the bus
/// connection), so a second recording reuses the choice.
///
/// Threading: thread safe. `start`/`stop` are serialized by the caller; the settings are guarded by a mutex.
package final class PortalScreen: ScreenDevice {
    package let identity: DeviceIdentity
    package let monitor: ScreenMonitor
    package let session: ScreenCastSession
    package let stream: ScreenCastStream
    package let formats: [DeviceFormat]
    package var controls: (any CameraControlling)? { nil }
    package var clock: CMClock { .hostTimeClock }
    package var isConnected: Bool { streaming.isConnected }
    package var isInUseByAnotherApplication: Bool { false }
    package var isAccessible: Bool { true }

    private let streaming: ScreenStreaming
    package var framesConsidered: ScreenFrameCount { streaming.framesConsidered }

    /// A device for `stream` of `session`, whose size the portal gave; `order` 0 is the main one.
    package init(session: ScreenCastSession, stream: ScreenCastStream, size: (width: Int32, height: Int32), order: Int)
    {
        self.session = session
        self.stream = stream
        let kind = stream.sourceType == 2 ? "window" : "monitor"
        let name = "portal-\(kind)-\(stream.nodeID)"
        monitor = ScreenMonitor(
            identifier: stream.nodeID, name: name, isPrimary: order == 0, x: stream.position?.x ?? 0,
            y: stream.position?.y ?? 0, width: size.width, height: size.height)
        identity = DeviceIdentity(
            uniqueID: "screencast:\(session.handle):\(stream.nodeID)", modelID: "screencast:\(kind)",
            localizedName: "Shared \(kind) (\(size.width)x\(size.height)) from the ScreenCast portal",
            manufacturer: "xdg-desktop-portal", kind: .external, position: .unspecified, media: .video, origin: .real)
        formats = [.video(Screens.format(width: size.width, height: size.height))]
        streaming = ScreenStreaming(settings: ScreenCaptureSettings(cropWidth: size.width, cropHeight: size.height))
    }

    package var settings: ScreenCaptureSettings {
        get { streaming.settings }
        set { streaming.settings = newValue }
    }

    package func start(_ configuration: StreamConfiguration, sink: @escaping StreamSink) throws(DeviceFault) {
        let configuration = configurationToStart(configuration, caller: "PortalScreen")
        guard case .video(let video) = configuration.format else { preconditionFailure("validated above") }
        stop()
        let wake = try ScreenStreaming.makeWake()
        let grabber = try PortalScreenGrabber(
            screen: self, outputWidth: video.width, outputHeight: video.height,
            frameDuration: configuration.frameDuration)
        streaming.start(name: "OpenAVCapture.PortalScreen", wake: wake, grabber: grabber, sink: sink)
    }

    package func stop() { streaming.stop() }
}
