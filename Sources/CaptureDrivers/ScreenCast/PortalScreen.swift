import Foundation
import OpenCoreMedia
import Synchronization

/// One stream of a ScreenCast portal session (a monitor or window the user chose) as a capture device: the
/// portal's PipeWire node, read on the connection `OpenPipeWireRemote` gives, its frames cropped, scaled and paced
/// by a capture thread as the X11 and wlr-screencopy screens are.
///
/// The session belongs to the device: it stays open while the device exists (the portal ends it with the bus
/// connection), so a second recording reuses the choice. A session's cursor mode is fixed when it starts: the
/// listing that makes it is told the cursor wanted (`AVCaptureScreenInput.displays(capturingCursor:)`), so one
/// session serves. Only a stream whose `capturesCursor` was changed afterwards to what the session cannot give (a
/// hidden session asked for the cursor, an embedded one asked to hide it; a metadata session serves both) reads a
/// second session made in the mode that can, with the stored restore token (the portal asks again only when the
/// user did not let it remember), kept for the next start.
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
    private let order: Int
    private let environment: [String: String]
    /// Sessions in another cursor mode, by the mode's raw value.
    private let otherModes = Mutex<[UInt32: ScreenCastSession]>([:])

    /// A device for `stream` of `session`, whose size the portal gave; `order` 0 is the main one. `environment`
    /// finds the portal again for a session in another cursor mode.
    package init(
        session: ScreenCastSession, stream: ScreenCastStream, size: (width: Int32, height: Int32), order: Int,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        self.session = session
        self.stream = stream
        self.order = order
        self.environment = environment
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
        // The cursor mode first: a new session may wait for the user's answer.
        let source = try source(capturingCursor: settings.capturesCursor)
        let wake = try ScreenStreaming.makeWake()
        let grabber = try PortalScreenGrabber(
            screen: self, session: source.session, nodeID: source.stream.nodeID, outputWidth: video.width,
            outputHeight: video.height, frameDuration: configuration.frameDuration)
        streaming.start(name: "OpenAVCapture.PortalScreen", wake: wake, grabber: grabber, sink: sink)
    }

    package func stop() { streaming.stop() }

    /// The session and stream that give the cursor as `capturingCursor` asks: this screen's own when its mode serves
    /// or the portal offers none that would, else one in a mode that does (made once, with the restore token).
    private func source(capturingCursor: Bool) throws(DeviceFault) -> (
        session: ScreenCastSession, stream: ScreenCastStream
    ) {
        guard let mode = session.cursorMode, !mode.serves(capturingCursor: capturingCursor),
            let wanted = ScreenCastPortal.CursorModes.forCapture(
                capturingCursor: capturingCursor, available: session.availableCursorModes, environment: environment),
            wanted != mode
        else {
            return (session, stream)
        }
        let other = try otherModes.withLock { (sessions) throws(DeviceFault) -> ScreenCastSession in
            if let known = sessions[wanted.rawValue], !known.isClosed { return known }
            do throws(ScreenCastPortalError) {
                let made = try WaylandScreenRoute.session(
                    capturingCursor: capturingCursor, sources: stream.sourceType == 2 ? .window : .monitor,
                    environment: environment)
                sessions[wanted.rawValue] = made
                return made
            } catch {
                throw .explained(
                    .disconnected,
                    advice: "The cursor setting needs a new screen sharing session (cursor mode "
                        + "\(capturingCursor ? "embedded" : "hidden")), and the ScreenCast portal did not give one: "
                        + "\(error.description)")
            }
        }
        // The same kind of source at the same place in the list: the restored choice gives the streams in order.
        let alike = other.streams.filter { $0.sourceType == stream.sourceType }
        guard let match = alike.indices.contains(order) ? alike[order] : alike.first ?? other.streams.first else {
            throw .explained(.disconnected, advice: "The ScreenCast portal's new session has no stream.")
        }
        return (other, match)
    }
}
