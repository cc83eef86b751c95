import ArgumentParser
import Foundation
import OpenAVCapture

/// `avcapture formats DEVICE`: the formats a device streams and the controls it has.
struct FormatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "formats", abstract: "List a device's formats, frame rates and controls.",
        discussion: """
            Each format's index is what record's --format N takes; its pixel format name (mjpeg, yuyv, nv12, \
            h264, …) what --format WxH@FPS:PIXFMT takes. --json prints one object: name, uniqueID, formats (each \
            with index, mediaSubType (the FourCC), pixelFormat, and width, height, frameRates ("30" or "1-60"), \
            photoDimensions for video or sampleRate, channels for sound; absent fields are left out) and controls \
            (name, current, minimum, maximum).
            """)

    @OptionGroup var logging: LoggingOptions
    @Argument(
        help: ArgumentHelp(
            "An index from 'avcapture devices', a uniqueID, /dev/videoN, hw:CARD,DEV, 'virtual', part of the name, "
                + "or file:PATH."))
    var device: String
    @Flag(help: "Print JSON instead of text.") var json = false

    struct FormatEntry: Codable {
        var index: Int
        var mediaSubType: String
        /// The name --format's :PIXFMT and --pixel-format take (mjpeg, yuyv, nv12, h264, …); absent for sound and
        /// for subtypes with no such name.
        var pixelFormat: String?
        var width: Int?
        var height: Int?
        var frameRates: [String]?
        var sampleRate: Double?
        var channels: Int?
        var photoDimensions: String?
    }

    struct Control: Codable {
        var name: String
        var current: String
        var minimum: String?
        var maximum: String?
    }

    struct Report: Codable {
        var name: String
        var uniqueID: String
        var formats: [FormatEntry]
        var controls: [Control]
    }

    func run() throws {
        try reportingFailures {
            let selected: AVCaptureDevice?
            if device.hasPrefix("file:") {
                // A movie file: its camera, or its microphone when it has only sound.
                let path = String(device.dropFirst("file:".count))
                let devices = try DeviceSelector.movieFile(path.hasSuffix("#audio") ? String(path.dropLast(6)) : path)
                selected = path.hasSuffix("#audio") ? devices.microphone : devices.camera ?? devices.microphone
            } else {
                // A camera by that name, else a microphone; when neither, the camera's reason is the one told.
                do {
                    selected = try DeviceSelector.device(device, for: .video)
                } catch {
                    guard let microphone = try? DeviceSelector.device(device, for: .audio) else { throw error }
                    selected = microphone
                }
            }
            guard let device = selected else { throw ToolFailure(.usage, "name a device; 'none' lists nothing") }
            let report = Report(
                name: device.localizedName, uniqueID: device.uniqueID,
                formats: device.formats.enumerated().map(Self.entry), controls: Self.controls(of: device))
            if json {
                print(try JSONOutput.string(report))
                return
            }
            print("\(report.name) [\(report.uniqueID)]")
            print("Formats:")
            for format in report.formats {
                if let width = format.width, let height = format.height {
                    let rates = format.frameRates?.joined(separator: ", ") ?? ""
                    let photo = format.photoDimensions.map { ", stills \($0)" } ?? ""
                    let name = format.pixelFormat.map { " (\($0))" } ?? ""
                    print("  \(format.index)  \(format.mediaSubType)\(name) \(width)x\(height) @ \(rates) fps\(photo)")
                } else {
                    print("  \(format.index)  \(format.mediaSubType) \(Int(format.sampleRate ?? 0)) Hz, \(format.channels ?? 0) ch")
                }
            }
            if !report.controls.isEmpty {
                print("Controls:")
                for control in report.controls {
                    let range = control.minimum.map { " (\($0) … \(control.maximum ?? "?"))" } ?? ""
                    print("  \(control.name): \(control.current)\(range)")
                }
            }
        }
    }

    static func entry(_ index: Int, _ format: AVCaptureDevice.Format) -> FormatEntry {
        let description = format.formatDescription
        let subType = fourCharacters(description.mediaSubType.rawValue)
        if format.mediaType == .audio {
            let basic = description.audioStreamBasicDescription
            return FormatEntry(
                index: index, mediaSubType: subType, sampleRate: basic?.mSampleRate,
                channels: basic.map { Int($0.mChannelsPerFrame) })
        }
        let dimensions = description.dimensions
        let still = format.highResolutionStillImageDimensions
        return FormatEntry(
            index: index, mediaSubType: subType,
            pixelFormat: PixelFormatChoice.named(description.mediaSubType.rawValue)?.rawValue,
            width: Int(dimensions.width), height: Int(dimensions.height),
            frameRates: format.videoSupportedFrameRateRanges.map { range in
                range.minFrameRate == range.maxFrameRate
                    ? number(range.maxFrameRate) : "\(number(range.minFrameRate))-\(number(range.maxFrameRate))"
            },
            photoDimensions: still.width > dimensions.width ? "\(still.width)x\(still.height)" : nil)
    }

    static func controls(of device: AVCaptureDevice) -> [Control] {
        guard device.hasMediaType(.video) else { return [] }
        let format = device.activeFormat
        var controls: [Control] = []
        func add(_ name: String, _ current: String, _ minimum: String? = nil, _ maximum: String? = nil) {
            controls.append(Control(name: name, current: current, minimum: minimum, maximum: maximum))
        }
        add("zoom", number(Double(device.videoZoomFactor)), "1", number(Double(format.videoMaxZoomFactor)))
        if device.isExposureModeSupported(.custom) || format.maxISO > 0 {
            add("exposure duration (s)", number(device.exposureDuration.seconds),
                number(format.minExposureDuration.seconds), number(format.maxExposureDuration.seconds))
            add("ISO", number(Double(device.iso)), number(Double(format.minISO)), number(Double(format.maxISO)))
        }
        if device.isFocusModeSupported(.locked) { add("lens position", number(Double(device.lensPosition)), "0", "1") }
        add("focus mode", "\(device.focusMode)")
        add("exposure mode", "\(device.exposureMode)")
        add("white balance mode", "\(device.whiteBalanceMode)")
        add("torch", device.hasTorch ? "\(device.torchMode)" : "none")
        add("flash", device.hasFlash ? "available" : "none")
        return controls
    }

    /// "420v", or the number for codes that are not four printable characters (Apple's 24-bit RGB is 24).
    static func fourCharacters(_ code: FourCharCode) -> String {
        let bytes = [24, 16, 8, 0].map { UInt8((code >> $0) & 0xFF) }
        guard bytes.allSatisfy({ (0x20...0x7E).contains($0) }) else { return String(code) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// "mjpeg" for a subtype with a --pixel-format name, else its four characters ("420v").
    static func pixelFormatName(_ code: FourCharCode) -> String {
        PixelFormatChoice.named(code)?.rawValue ?? fourCharacters(code)
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e9 ? String(Int(value)) : String(format: "%.4g", value)
    }
}
