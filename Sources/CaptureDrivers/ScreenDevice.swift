import Foundation
import OpenCoreMedia

/// One monitor of a display server: where it sits in the server's space and what the API calls it.
///
/// Value type; safe to use from any thread.
package struct ScreenMonitor: Sendable, Hashable {
    /// The display ID the public API gives it (`CGDirectDisplayID`): an X11 RandR output's XID, a Wayland output's
    /// registry name.
    package var identifier: UInt32
    /// The server's name for it (RandR's `HDMI-1`, `screen`; a Wayland output's `HEADLESS-1`, `DP-2`).
    package var name: String
    package var isPrimary: Bool
    package var x: Int32
    package var y: Int32
    package var width: Int32
    package var height: Int32

    package init(identifier: UInt32, name: String, isPrimary: Bool, x: Int32, y: Int32, width: Int32, height: Int32) {
        self.identifier = identifier
        self.name = name
        self.isPrimary = isPrimary
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
}

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

/// Why no screen can be captured, with what a person should do about it.
///
/// Value type; safe to use from any thread.
package struct ScreenUnavailable: Error, Sendable, Hashable, CustomStringConvertible {
    package var reason: String
    package var advice: String

    package init(reason: String, advice: String) {
        self.reason = reason
        self.advice = advice
    }

    package var description: String { "\(reason). \(advice)" }
}

/// A monitor as a capture device: what `AVCaptureScreenInput` drives, whichever display server it belongs to.
///
/// Threading: conforming types are thread safe; `settings` is read by the capture thread at each frame.
package protocol ScreenDevice: CaptureBackend, AnyObject {
    var monitor: ScreenMonitor { get }
    /// What the next frames capture.
    var settings: ScreenCaptureSettings { get set }
    /// The frame times the screen's streams have looked at the screen, in all (grabbed or found unchanged).
    var framesConsidered: ScreenFrameCount { get }
}

/// The screen formats and the choice of display server.
package enum Screens {
    /// The highest frame rate a screen offers: faster than any common monitor refreshes.
    package static let maximumFrameRate: Int32 = 120

    /// The format of a stream delivering `width`×`height` BGRA frames at 1 to 120 fps.
    package static func format(width: Int32, height: Int32) -> VideoFormat {
        VideoFormat(
            width: width, height: height, mediaSubType: kCVPixelFormatType_32BGRA,
            frameDurationRanges: [FrameDurationRange(minFrameRate: 1, maxFrameRate: maximumFrameRate)], fieldOfView: 0,
            maxZoomFactor: 1)
    }

    /// The screens of the session this process runs in, the main one first: when `WAYLAND_DISPLAY` is set (an X
    /// server beside it sees only X clients), what the ScreenCast portal shares, else the compositor's outputs
    /// through wlr-screencopy (`WaylandScreenRoute`); else the X server `DISPLAY` names. `capturingCursor` is the
    /// cursor a portal session made by this call gives (X11 and wlr-screencopy choose it at each frame).
    package static func screens(
        capturingCursor: Bool = true, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ScreenUnavailable) -> [any ScreenDevice] {
        if let wayland = environment["WAYLAND_DISPLAY"], !wayland.isEmpty {
            return try WaylandScreenRoute.screens(
                displayName: wayland, capturingCursor: capturingCursor, environment: environment)
        }
        do {
            return try X11ScreenDriver.screens()
        } catch {
            throw ScreenUnavailable(reason: error.reason, advice: error.advice)
        }
    }

    /// The windows the ScreenCast portal shares in a Wayland session (the user chooses them in its dialog); X11
    /// and wlr-screencopy share none, so elsewhere this throws saying so.
    package static func windows(
        capturingCursor: Bool = true, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ScreenUnavailable) -> [any ScreenDevice] {
        guard let wayland = environment["WAYLAND_DISPLAY"], !wayland.isEmpty,
            environment["OPENAV_SCREENCAST"]?.lowercased() != "wlr"
        else {
            throw ScreenUnavailable(
                reason: "window capture needs a Wayland session's ScreenCast portal",
                advice: "Record a display instead, with its crop set to the window's area.")
        }
        return try WaylandScreenRoute.windows(
            displayName: wayland, capturingCursor: capturingCursor, environment: environment)
    }

    /// The screen whose display ID is `identifier`: a portal window or screen already shared, else one of `screens()`.
    package static func screen(identifier: UInt32) -> (any ScreenDevice)? {
        if let kept = WaylandScreenRoute.kept(identifier: identifier) { return kept }
        return try? screens().first { $0.monitor.identifier == identifier }
    }
}

extension ScreenDevice {
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
        let range = FrameDurationRange(minFrameRate: 1, maxFrameRate: Screens.maximumFrameRate)
        let duration = configuration.frameDuration
        guard duration.isNumeric, duration > .zero else {
            return .adjusted(
                StreamConfiguration(format: configuration.format, frameDuration: CMTime(value: 1, timescale: 30)))
        }
        if range.contains(duration) { return .valid }
        let clamped = min(max(duration, range.minFrameDuration), range.maxFrameDuration)
        return .adjusted(StreamConfiguration(format: configuration.format, frameDuration: clamped))
    }
}
