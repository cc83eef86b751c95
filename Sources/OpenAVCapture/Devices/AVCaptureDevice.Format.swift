import CaptureDrivers
import Foundation

/// Video stabilization modes, with Apple's raw values. Our devices support only `.off`, and say so.
public enum AVCaptureVideoStabilizationMode: Int, Sendable, Hashable {
    case off = 0
    case standard = 1
    case cinematic = 2
    case cinematicExtended = 3
    case previewOptimized = 4
    case cinematicExtendedEnhanced = 5
    case auto = -1
}

/// Colour spaces a format can capture in, with Apple's raw values.
public enum AVCaptureColorSpace: Int, Sendable, Hashable {
    case sRGB = 0
    case P3_D65 = 1
    case HLG_BT2020 = 2
    case appleLog = 3
}

extension AVCaptureDevice {
    /// One format a device can stream: size and pixel format (or codec), frame rate ranges, zoom and exposure
    /// limits.
    ///
    /// Threading: immutable; safe to share between threads.
    open class Format: NSObject, @unchecked Sendable {
        package let format: DeviceFormat
        package let capabilities: CameraCapabilities?
        /// The description of what the format delivers.
        public let formatDescription: CMFormatDescription

        /// Whether the format is a camera's video format (not a screen's, not audio): what a multi-camera session
        /// runs beside other cameras (`isMultiCamSupported`).
        package let isCameraVideo: Bool

        package init(_ format: DeviceFormat, capabilities: CameraCapabilities?, isCamera: Bool = false) {
            self.format = format
            self.capabilities = capabilities
            if case .video = format { self.isCameraVideo = isCamera } else { self.isCameraVideo = false }
            switch format {
            case .video(let video):
                // A device format always has positive dimensions: the driver made it from a real mode.
                formatDescription = try! CMFormatDescription(
                    videoCodecType: .init(rawValue: video.mediaSubType), width: Int(video.width),
                    height: Int(video.height))
            case .audio(let audio):
                formatDescription = try! CMFormatDescription(audioStreamBasicDescription: audio.streamDescription)
            }
        }

        package var video: VideoFormat? {
            if case .video(let video) = format { return video }
            return nil
        }

        /// `.video` or `.audio`.
        public var mediaType: AVMediaType { format.media == .video ? .video : .audio }

        /// The frame rates the format supports; empty for audio.
        public var videoSupportedFrameRateRanges: [AVFrameRateRange] {
            video?.frameDurationRanges.map(AVFrameRateRange.init) ?? []
        }

        /// The horizontal field of view, in degrees; 0 for audio.
        public var videoFieldOfView: Float { video?.fieldOfView ?? 0 }

        /// The largest `videoZoomFactor` the format allows; 1 for audio.
        public var videoMaxZoomFactor: CGFloat { CGFloat(video?.maxZoomFactor ?? 1) }

        /// The factor above which zooming upscales (loses detail): 1 for our devices, whose zoom is digital.
        public var videoZoomFactorUpscaleThreshold: CGFloat { 1 }

        /// Whether the format supports a stabilization mode: only `.off` here (we do not stabilize).
        public func isVideoStabilizationModeSupported(_ videoStabilizationMode: AVCaptureVideoStabilizationMode)
            -> Bool
        {
            videoStabilizationMode == .off
        }

        /// The size of a high-resolution still taken in this format.
        public var highResolutionStillImageDimensions: CMVideoDimensions {
            video?.highResolutionStillDimensions ?? CMVideoDimensions()
        }

        /// Whether the sensor bins pixels in this format: never, as far as V4L2 tells us.
        public var isVideoBinned: Bool { false }

        /// The colour spaces the format captures in: sRGB (Rec. 709 primaries), as Apple reports for SDR formats.
        /// `[AVCaptureColorSpace]`, as in Apple's Swift API (Objective-C sees an array of numbers).
        public var supportedColorSpaces: [AVCaptureColorSpace] { [.sRGB] }

        /// The lowest ISO the device allows.
        public var minISO: Float { capabilities?.isoRange.lowerBound ?? 0 }
        /// The highest ISO the device allows.
        public var maxISO: Float { capabilities?.isoRange.upperBound ?? 0 }
        /// The shortest exposure the device allows.
        public var minExposureDuration: CMTime {
            capabilities?.exposureDurationRange.map { CMTime(seconds: $0.lowerBound, preferredTimescale: 1_000_000) }
                ?? .zero
        }
        /// The longest exposure the device allows.
        public var maxExposureDuration: CMTime {
            capabilities?.exposureDurationRange.map { CMTime(seconds: $0.upperBound, preferredTimescale: 1_000_000) }
                ?? .zero
        }

        /// Whether HDR video is supported: no.
        public var isVideoHDRSupported: Bool { false }

        public override var description: String {
            switch format {
            case .video(let video):
                let rates = video.frameDurationRanges.map { "\($0.minFrameRate)-\($0.maxFrameRate)" }
                let subtype = fourCharCodeDescription(video.mediaSubType)
                let size = "\(video.width)x\(video.height)"
                return "<AVCaptureDeviceFormat \(subtype) \(size), { \(rates.joined(separator: ", ")) fps },"
                    + " fov:\(video.fieldOfView), max zoom:\(video.maxZoomFactor)>"
            case .audio(let audio):
                return "<AVCaptureDeviceFormat 'lpcm' \(Int(audio.sampleRate)) Hz, \(audio.channels) ch,"
                    + " \(audio.sampleFormat.rawValue)>"
            }
        }

        public override func isEqual(_ object: Any?) -> Bool { (object as? Format)?.format == format }
        public override var hash: Int { format.hashValue }
    }
}
