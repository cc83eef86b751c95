import Foundation
import OpenAVCapture

/// A session put together from command-line choices: devices, a preset or an exact format, and outputs.
struct CaptureSetup {
    /// How the camera's format is chosen.
    enum FormatChoice {
        case preset(AVCaptureSession.Preset)
        /// A size, and optionally a frame rate and a pixel format: the device's first format of that size (and pixel
        /// format) whose rates include the rate; its highest rate when none is given.
        case exact(width: Int32, height: Int32, framesPerSecond: Double?, pixelFormat: PixelFormatChoice?)
        /// The format at this index of `AVCaptureDevice.formats`, as `avcapture formats` numbers them, at the rate
        /// given or its highest.
        case index(Int, framesPerSecond: Double?)
    }

    let session = AVCaptureSession()
    let video: AVCaptureDevice?
    let audio: AVCaptureDevice?
    /// The screen captured instead of a camera (`record --screen`).
    let screen: AVCaptureScreenInput?

    /// Whether the session has a picture (a camera or a screen).
    var hasVideo: Bool { video != nil || screen != nil }

    /// Adds `video` and `audio` (either may be nil) and `outputs`, configured as `format` says. Throws one-line
    /// failures: a busy or forbidden device (69), a format the camera cannot do (64).
    init(
        video: AVCaptureDevice?, audio: AVCaptureDevice?, screen: AVCaptureScreenInput? = nil, format: FormatChoice?,
        outputs: [AVCaptureOutput]
    ) throws {
        self.video = video
        self.audio = audio
        self.screen = screen
        session.beginConfiguration()
        defer { session.commitConfiguration() }
        if let screen {
            guard session.canAddInput(screen) else { throw ToolFailure(.unavailable, "the session cannot take \(screen)") }
            session.addInput(screen)
        }
        // A movie file plays its own size and rate (a 25 fps or 320x240 clip meets no preset) unless told otherwise.
        if format == nil, video?.uniqueID.hasPrefix("file:") == true { session.sessionPreset = .inputPriority }
        for device in [video, audio].compactMap({ $0 }) {
            if device.isInUseByAnotherApplication {
                throw ToolFailure(
                    .unavailable, "\(device.localizedName) is in use by another application; close it and try again")
            }
            let input: AVCaptureDeviceInput
            do {
                input = try AVCaptureDeviceInput(device: device)
            } catch {
                throw ToolFailure(.unavailable, "cannot open \(device.localizedName): \(Self.describe(error))")
            }
            guard session.canAddInput(input) else {
                throw ToolFailure(.unavailable, "the session cannot take \(device.localizedName)")
            }
            session.addInput(input)
        }
        switch format {
        case .preset(let preset)?:
            guard session.canSetSessionPreset(preset) else {
                throw ToolFailure(.usage, "the session cannot use preset \(preset.rawValue); see 'avcapture formats'")
            }
            session.sessionPreset = preset
        case .exact(let width, let height, let rate, let pixelFormat)?:
            guard let video else { throw ToolFailure(.usage, "--format needs a camera (--video is none)") }
            try Self.apply(width: width, height: height, framesPerSecond: rate, pixelFormat: pixelFormat, to: video)
        case .index(let index, let rate)?:
            guard let video else { throw ToolFailure(.usage, "--format needs a camera (--video is none)") }
            try Self.apply(index: index, framesPerSecond: rate, to: video)
        case nil:
            break
        }
        for output in outputs {
            guard session.canAddOutput(output) else {
                throw ToolFailure(.usage, "the session cannot take a \(type(of: output)) with these devices")
            }
            session.addOutput(output)
        }
    }

    /// Sets the camera's format of that size (and pixel format) whose rates include `framesPerSecond` (its
    /// highest rate when nil); the session then keeps it (`.inputPriority`).
    static func apply(
        width: Int32, height: Int32, framesPerSecond: Double?, pixelFormat: PixelFormatChoice?,
        to device: AVCaptureDevice
    ) throws {
        let sized = device.formats.filter {
            $0.formatDescription.dimensions.width == width && $0.formatDescription.dimensions.height == height
        }
        let matching = sized.filter { format in
            pixelFormat.map { $0.mediaSubTypes.contains(format.formatDescription.mediaSubType.rawValue) } ?? true
        }
        let format = matching.first { format in
            guard let framesPerSecond else { return true }
            return format.videoSupportedFrameRateRanges.contains {
                framesPerSecond >= $0.minFrameRate - 1e-6 && framesPerSecond <= $0.maxFrameRate + 1e-6
            }
        }
        let asked = "\(width)x\(height)" + (framesPerSecond.map { "@\(FormatsCommand.number($0))" } ?? "")
            + (pixelFormat.map { ":\($0.rawValue)" } ?? "")
        guard let format else {
            let sizes = Set(device.formats.map { "\($0.formatDescription.dimensions.width)x\($0.formatDescription.dimensions.height)" })
            let detail =
                sized.isEmpty
                ? "sizes: \(sizes.sorted().joined(separator: ", "))"
                : matching.isEmpty
                    ? "pixel formats at that size: "
                        + sized.map { FormatsCommand.pixelFormatName($0.formatDescription.mediaSubType.rawValue) }
                        .joined(separator: ", ")
                    : "rates at that size: "
                        + matching.flatMap(\.videoSupportedFrameRateRanges)
                        .map { "\($0.minFrameRate)-\($0.maxFrameRate)" }.joined(separator: ", ")
            throw ToolFailure(.usage, "\(device.localizedName) cannot stream \(asked); \(detail)")
        }
        try activate(format, framesPerSecond: framesPerSecond, on: device)
    }

    /// Sets the camera's format at `index` of its formats (as `avcapture formats` numbers them).
    static func apply(index: Int, framesPerSecond: Double?, to device: AVCaptureDevice) throws {
        guard device.formats.indices.contains(index) else {
            throw ToolFailure(
                .usage,
                "\(device.localizedName) has no format \(index); its formats are 0 to \(device.formats.count - 1) "
                    + "(see 'avcapture formats')")
        }
        let format = device.formats[index]
        if let framesPerSecond,
            !format.videoSupportedFrameRateRanges.contains(where: {
                framesPerSecond >= $0.minFrameRate - 1e-6 && framesPerSecond <= $0.maxFrameRate + 1e-6
            })
        {
            throw ToolFailure(
                .usage,
                "format \(index) of \(device.localizedName) cannot stream "
                    + "\(FormatsCommand.number(framesPerSecond)) fps; "
                    + "rates: " + format.videoSupportedFrameRateRanges.map { "\($0.minFrameRate)-\($0.maxFrameRate)" }
                    .joined(separator: ", "))
        }
        try activate(format, framesPerSecond: framesPerSecond, on: device)
    }

    /// Makes `format` the device's, at `framesPerSecond` or the format's highest rate.
    private static func activate(
        _ format: AVCaptureDevice.Format, framesPerSecond: Double?, on device: AVCaptureDevice
    ) throws {
        guard format.mediaType == .video else {
            throw ToolFailure(.usage, "that format of \(device.localizedName) is not a video format")
        }
        let rate = framesPerSecond ?? format.videoSupportedFrameRateRanges.map(\.maxFrameRate).max() ?? 30
        do {
            try device.lockForConfiguration()
        } catch {
            throw ToolFailure(.unavailable, "cannot configure \(device.localizedName): \(describe(error))")
        }
        defer { device.unlockForConfiguration() }
        device.activeFormat = format
        let duration = CMTime(seconds: 1 / rate, preferredTimescale: 600_000)
        device.activeVideoMinFrameDuration = duration
        device.activeVideoMaxFrameDuration = duration
    }

    /// Starts the session; a device that fails to stream is a one-line failure (69).
    func start() throws {
        let failure = RuntimeErrorWatcher(session: session)
        session.startRunning()
        if let error = failure.error ?? (session.isRunning ? nil : failure.waitBriefly()) {
            session.stopRunning()
            throw ToolFailure(.unavailable, "capture did not start: \(Self.describe(error))")
        }
    }

    /// Whether a device is a movie file (`file:`) that played to its end: such a device reports itself
    /// disconnected at the end of its input, and stays so.
    var movieFileReachedEnd: Bool {
        [video, audio].contains { device in
            guard let device else { return false }
            return device.uniqueID.hasPrefix("file:") && !device.isConnected
        }
    }

    /// An error's description and, where it has one, its recovery suggestion, as one line: "X cannot stream this
    /// format: not enough USB bandwidth. USB bus 1 … To fix it: …".
    static func describe(_ error: any Error) -> String {
        let info = (error as NSError).userInfo
        let description = info[NSLocalizedDescriptionKey] as? String ?? "\(error)"
        guard let suggestion = info[NSLocalizedRecoverySuggestionErrorKey] as? String else { return description }
        let ended = description.last.map { ".!?:;".contains($0) } ?? true
        return description + (ended ? " " : ". ") + suggestion
    }

    /// "Virtual Back Camera 1920x1080 @ 30 fps (nv12)" for status lines: the camera's pixel format or codec last,
    /// as --format's :PIXFMT names it.
    var videoSummary: String? {
        if let screen, let dimensions = screen.ports.first?.formatDescription?.dimensions {
            let rate = 1 / screen.minFrameDuration.seconds
            return "screen \(screen.displayID) \(dimensions.width)x\(dimensions.height) @ up to"
                + " \(FormatsCommand.number(rate.rounded())) fps"
        }
        guard let video else { return nil }
        let dimensions = video.activeFormat.formatDescription.dimensions
        let rate = 1 / video.activeVideoMinFrameDuration.seconds
        let pixelFormat = FormatsCommand.pixelFormatName(video.activeFormat.formatDescription.mediaSubType.rawValue)
        return "\(video.localizedName) \(dimensions.width)x\(dimensions.height) @ \(FormatsCommand.number(rate.rounded())) fps"
            + " (\(pixelFormat))"
    }
}

/// Catches the session's runtime error (a device that failed to start or failed later).
final class RuntimeErrorWatcher: @unchecked Sendable {
    private let lock = NSLock()
    private var caught: (any Error)?
    private let arrived = DispatchSemaphore(value: 0)
    private var token: (any NSObjectProtocol)?

    init(session: AVCaptureSession) {
        token = NotificationCenter.default.addObserver(
            forName: .AVCaptureSessionRuntimeError, object: session, queue: nil
        ) { [weak self] note in
            guard let self else { return }
            lock.withLock { caught = note.userInfo?[AVCaptureSessionErrorKey] as? any Error }
            arrived.signal()
        }
    }

    deinit { token.map(NotificationCenter.default.removeObserver) }

    var error: (any Error)? { lock.withLock { caught } }

    /// The error if one comes within a second (a session that is not running after startRunning has one coming).
    func waitBriefly() -> (any Error)? {
        _ = arrived.wait(timeout: .now() + 1)
        return error ?? AVError(.unknown, userInfo: [NSLocalizedDescriptionKey: "the session is not running"])
    }
}
