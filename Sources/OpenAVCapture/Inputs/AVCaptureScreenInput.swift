import CaptureDrivers
import Foundation
import Synchronization

/// A display's identifier, as CoreGraphics names it: here a stream the ScreenCast portal shares (its PipeWire node),
/// or an output of the Wayland compositor `WAYLAND_DISPLAY` names (its registry name), else a monitor of the X server
/// `DISPLAY` names (its first RandR output's XID).
public typealias CGDirectDisplayID = UInt32

/// The display ID no display has (CoreGraphics' `kCGNullDirectDisplay`).
public let kCGNullDirectDisplay: CGDirectDisplayID = 0

/// The main display: the compositor's first output, or the X server's primary monitor (the first one where none is
/// primary), or `kCGNullDirectDisplay` when there is neither (`AVCaptureScreenInput.displays()` says why).
public func CGMainDisplayID() -> CGDirectDisplayID {
    (try? AVCaptureScreenInput.displays().first?.displayID) ?? kCGNullDirectDisplay
}

/// Where a display sits in the server's space (the X screen, the compositor's layout), in pixels from its top-left
/// corner; `.null` for an unknown one.
public func CGDisplayBounds(_ display: CGDirectDisplayID) -> CGRect {
    (try? AVCaptureScreenInput.displays().first { $0.displayID == display }?.bounds) ?? .null
}

/// An input that captures a display, as Apple's captures a Mac's screen: in a Wayland session (`WAYLAND_DISPLAY` set)
/// what the ScreenCast portal shares (GNOME, KDE: the desktop asks the user once per process; a choice the user asked
/// to remember is kept in `$XDG_STATE_HOME/openavcapture/screencast-restore-token`), or, where there is no portal or
/// it cannot start, an output of a wlroots compositor (sway, Hyprland, river) through wlr-screencopy; else an X11
/// monitor (Xorg, Xwayland, Xvfb) of the server `DISPLAY` names.
///
/// Frames are BGRA, copied by the server into shared memory that is handed on without another copy (MIT-SHM
/// segments on X11, whose alpha byte is what the X server stores, 0 at depth 24; `wl_shm` buffers on Wayland). Add
/// the input to a session like a device input; every output takes its frames (movie files encode them, data outputs
/// convert them).
///
/// - `cropRect`: the area captured, in the display's pixels from its top-left corner (X11's orientation, and
///   CoreGraphics' display space); `.zero` (the default) captures the whole display.
/// - `scaleFactor`: the delivered size is the crop's times this (nearest-neighbour), any positive factor.
/// - `minFrameDuration`: frames are grabbed at most this often on the host clock (default 1/30 s; 1/120 to 1 s).
/// - `capturesCursor` (default true) composites the cursor the server shows (XFixes; on Wayland the compositor draws
///   it in; through the portal, the session's cursor mode: say the setting first with `displays(capturingCursor:)`,
///   or a later change needs a second portal session); `capturesMouseClicks` (default false) draws a ring around it
///   while a button is down (X11 only: a Wayland client cannot see the buttons).
/// - `removesDuplicateFrames` (default false, as Apple's since macOS 10.10): when true, a frame whose area the
///   server reports unchanged (Damage; on Wayland the compositor's damage of the whole output) and whose pointer did
///   not move is not delivered at all, so an idle screen costs almost nothing. When false an unchanged screen repeats
///   its last picture at the frame rate.
///
/// Changing the crop's position, the cursor, clicks or duplicate removal takes effect at the next frame; a new
/// crop size, scale or frame duration restarts the stream of a running session with the new format.
///
/// Threading: thread safe; the properties are guarded by a mutex.
open class AVCaptureScreenInput: AVCaptureInput, @unchecked Sendable {
    private struct Properties {
        var cropRect: CGRect = .zero
        var scaleFactor: CGFloat = 1
        var minFrameDuration = CMTime(value: 1, timescale: 30)
        var capturesCursor = true
        var capturesMouseClicks = false
        var removesDuplicateFrames = false
    }

    /// The display the input captures.
    open var displayID: CGDirectDisplayID { storedDisplayID }
    /// The frame times the display's streams have looked at the screen, in all: what tests wait on to see a
    /// still screen deliver nothing.
    package var framesConsidered: Int { screen.framesConsidered.value }
    private let storedDisplayID: CGDirectDisplayID
    private let screen: any ScreenDevice
    private let device: AVCaptureDevice
    private let properties = Mutex(Properties())

    /// One device object per screen, so a session sees two inputs on one display as the same device.
    private static let devices = Mutex<[ObjectIdentifier: AVCaptureDevice]>([:])

    /// An input for `displayID` (from `CGMainDisplayID()` or `displays()`), or nil when there is no such display or no
    /// display server; `displays()` throws the reason.
    public init?(displayID: CGDirectDisplayID) {
        guard let screen = Screens.screen(identifier: displayID) else {
            return nil
        }
        self.storedDisplayID = displayID
        self.screen = screen
        device = Self.devices.withLock { devices in
            if let existing = devices[ObjectIdentifier(screen)] { return existing }
            let made = AVCaptureDevice(backend: screen)
            devices[ObjectIdentifier(screen)] = made
            return made
        }
        super.init()
        setPorts([Port(input: self, mediaType: .video, clock: screen.clock, format: activeFormatDescription)])
        pushSettings()
    }

    // MARK: Apple's properties

    /// The area captured, in the display's pixels from its top-left corner; `.zero` captures the whole display. The
    /// area is made whole pixels and kept inside the display.
    open var cropRect: CGRect {
        get { properties.withLock { $0.cropRect } }
        set { change { $0.cropRect = newValue } }
    }

    /// The factor the captured area is scaled by (nearest-neighbour): 0.5 halves it, 2 doubles it, as Apple's
    /// example has a 320x240 area at 2.0 give 640x480 frames. A factor that is not positive and finite gives no
    /// frame size; Apple documents no exception for it, so it is ignored and logged once.
    open var scaleFactor: CGFloat {
        get { properties.withLock { $0.scaleFactor } }
        set {
            guard newValue > 0, newValue.isFinite else {
                ToleratedMisuse.report(
                    "AVCaptureScreenInput.scaleFactor",
                    "AVCaptureScreenInput: scaleFactor \(newValue) is not a positive number; the factor stays"
                        + " \(scaleFactor)")
                return
            }
            change { $0.scaleFactor = newValue }
        }
    }

    /// The shortest time between frames: 1 / the highest frame rate. Clamped to 1/120 s ... 1 s; `.invalid` restores
    /// the default, 1/30 s.
    open var minFrameDuration: CMTime {
        get { properties.withLock { $0.minFrameDuration } }
        set {
            let range = FrameDurationRange(minFrameRate: 1, maxFrameRate: Screens.maximumFrameRate)
            let duration =
                newValue.isNumeric && newValue > .zero
                ? min(max(newValue, range.minFrameDuration), range.maxFrameDuration) : CMTime(value: 1, timescale: 30)
            change { $0.minFrameDuration = duration }
        }
    }

    /// Whether the cursor appears in the frames (default true).
    open var capturesCursor: Bool {
        get { properties.withLock { $0.capturesCursor } }
        set { change { $0.capturesCursor = newValue } }
    }

    /// Whether mouse clicks are highlighted: a ring around the pointer while a button is down (default false).
    open var capturesMouseClicks: Bool {
        get { properties.withLock { $0.capturesMouseClicks } }
        set { change { $0.capturesMouseClicks = newValue } }
    }

    /// Whether frames in which nothing changed are left out (default false).
    open var removesDuplicateFrames: Bool {
        get { properties.withLock { $0.removesDuplicateFrames } }
        set { change { $0.removesDuplicateFrames = newValue } }
    }

    // MARK: Displays (ours)

    /// A display that can be captured.
    ///
    /// Value type; safe to use from any thread.
    public struct Display: Sendable, Hashable {
        /// What `init?(displayID:)` takes.
        public var displayID: CGDirectDisplayID
        /// The monitor's name (RandR's: `HDMI-1`, `eDP-1`; `screen` on Xvfb; a Wayland output's: `DP-2`).
        public var name: String
        /// Where the monitor sits on the X screen or in the compositor's layout, in pixels.
        public var bounds: CGRect
        /// Whether it is the main display (`CGMainDisplayID()`).
        public var isMain: Bool
    }

    /// What the ScreenCast portal shares or the outputs of the Wayland compositor `WAYLAND_DISPLAY` names, else the
    /// displays of the X server `DISPLAY` names, the main one first (ours: Apple's platforms list displays with
    /// CoreGraphics' `CGGetActiveDisplayList`). The first call in a Wayland session may wait for the portal's dialog.
    /// A portal session it makes draws the cursor in (`capturesCursor`'s default); see `displays(capturingCursor:)`.
    ///
    /// - Throws: `AVError.screenCaptureFailed` saying what to do when there is no server (DISPLAY unset, nothing
    ///   listening), this user may not use it (the cookie, `xhost`), the portal's dialog was cancelled, or the
    ///   compositor has neither a ScreenCast portal nor wlr-screencopy.
    public static func displays() throws -> [Display] {
        try displays(capturingCursor: true)
    }

    /// `displays()`, telling the ScreenCast portal how the inputs made afterwards will set `capturesCursor` (ours):
    /// a portal session's cursor mode is fixed when the user's choice is made, so a session made for the other
    /// setting would need a second session (and maybe a second dialog) at `startRunning()`. Ignored on X11 and
    /// wlr-screencopy, which choose at each frame, and once the process's portal session exists.
    public static func displays(capturingCursor: Bool) throws -> [Display] {
        do {
            return try Screens.screens(capturingCursor: capturingCursor).enumerated().map { index, screen in
                let monitor = screen.monitor
                return Display(
                    displayID: monitor.identifier, name: monitor.name,
                    bounds: CGRect(
                        x: Int(monitor.x), y: Int(monitor.y), width: Int(monitor.width), height: Int(monitor.height)),
                    isMain: index == 0)
            }
        } catch {
            throw AVError(.screenCaptureFailed, error.reason + ".", suggestion: error.advice)
        }
    }

    /// The windows the user shares through the ScreenCast portal's dialog (ours: Apple's AVCaptureScreenInput
    /// captures displays only, and ScreenCaptureKit shares windows), each as a display whose `displayID`
    /// `init?(displayID:)` takes; `bounds` is the window's size. The portal's session gives the cursor as
    /// `capturingCursor` says.
    ///
    /// - Throws: `AVError.screenCaptureFailed` outside a Wayland session with a ScreenCast portal that shares
    ///   windows (X11 and wlr-screencopy share none), or when the dialog was cancelled.
    public static func windows(capturingCursor: Bool = true) throws -> [Display] {
        do {
            return try Screens.windows(capturingCursor: capturingCursor).enumerated().map { index, screen in
                let monitor = screen.monitor
                return Display(
                    displayID: monitor.identifier, name: monitor.name,
                    bounds: CGRect(x: 0, y: 0, width: Int(monitor.width), height: Int(monitor.height)),
                    isMain: index == 0)
            }
        } catch {
            throw AVError(.screenCaptureFailed, error.reason + ".", suggestion: error.advice)
        }
    }

    // MARK: The session's view

    package override var streamedDevice: AVCaptureDevice? { device }

    package override var streamConfiguration: StreamConfiguration {
        let (width, height, duration) = outputGeometry()
        return StreamConfiguration(
            format: .video(Screens.format(width: width, height: height)), frameDuration: duration)
    }

    package override var activeFormatDescription: CMFormatDescription? {
        let (width, height, _) = outputGeometry()
        return try? CMFormatDescription(
            videoCodecType: .init(rawValue: kCVPixelFormatType_32BGRA), width: Int(width), height: Int(height))
    }

    /// The crop in whole pixels inside the monitor, and the delivered size and frame duration.
    private func outputGeometry() -> (width: Int32, height: Int32, duration: CMTime) {
        let (crop, scale, duration) = properties.withLock { ($0.cropRect, $0.scaleFactor, $0.minFrameDuration) }
        let area = Self.pixelArea(crop, in: screen.monitor)
        let width = max(1, Int32((CGFloat(area.width) * scale).rounded()))
        let height = max(1, Int32((CGFloat(area.height) * scale).rounded()))
        return (width, height, duration)
    }

    /// `rect` as whole pixels inside the monitor; the whole monitor for an empty or disjoint rectangle.
    private static func pixelArea(
        _ rect: CGRect, in monitor: ScreenMonitor
    ) -> (x: Int32, y: Int32, width: Int32, height: Int32) {
        let bounds = CGRect(x: 0, y: 0, width: Int(monitor.width), height: Int(monitor.height))
        let area = rect.integral.intersection(bounds)
        guard !rect.isEmpty, !area.isNull, !area.isEmpty else { return (0, 0, monitor.width, monitor.height) }
        return (Int32(area.minX), Int32(area.minY), Int32(area.width), Int32(area.height))
    }

    /// Applies a property change: the screen's settings at once, and the session's streams when the format changed.
    private func change(_ body: (inout Properties) -> Void) {
        let before = streamConfiguration
        properties.withLock { body(&$0) }
        pushSettings()
        guard streamConfiguration != before else { return }
        if let session = sessionReference.withLock({ $0.session }) {
            session.inputConfigurationDidChange()
        } else {
            for port in ports { port.setFormatDescription(activeFormatDescription) }
        }
    }

    /// Gives the screen what its capture thread reads at each frame, in one write.
    private func pushSettings() {
        let current = properties.withLock { $0 }
        let area = Self.pixelArea(current.cropRect, in: screen.monitor)
        var settings = ScreenCaptureSettings(cropWidth: area.width, cropHeight: area.height)
        settings.cropX = area.x
        settings.cropY = area.y
        settings.capturesCursor = current.capturesCursor
        settings.capturesMouseClicks = current.capturesMouseClicks
        settings.removesDuplicateFrames = current.removesDuplicateFrames
        screen.settings = settings
    }

    public override var description: String { "<AVCaptureScreenInput: display \(displayID), \(screen.monitor.name)>" }
}
