import CaptureDrivers
import Foundation

extension AVCaptureDevice {
    /// The kind of a device, with Apple's raw values.
    public struct DeviceType: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }

        /// A camera built into (or, on Linux, permanently attached to) the machine: CSI cameras, vivid.
        public static let builtInWideAngleCamera = DeviceType(DeviceKind.builtInWideAngleCamera.rawValue)
        /// A camera plugged in: USB (UVC) cameras, capture cards.
        public static let external = DeviceType(DeviceKind.external.rawValue)
        /// A microphone (ALSA capture PCM).
        public static let microphone = DeviceType(DeviceKind.microphone.rawValue)
        /// Apple's older name for the built-in microphone; the same devices here.
        public static let builtInMicrophone = DeviceType(DeviceKind.microphone.rawValue)
        /// Apple's older name for external cameras.
        public static let externalUnknown = DeviceType(DeviceKind.external.rawValue)
        public static let builtInTelephotoCamera = DeviceType("AVCaptureDeviceTypeBuiltInTelephotoCamera")
        public static let builtInUltraWideCamera = DeviceType("AVCaptureDeviceTypeBuiltInUltraWideCamera")
        public static let builtInDualCamera = DeviceType("AVCaptureDeviceTypeBuiltInDualCamera")
        public static let builtInDualWideCamera = DeviceType("AVCaptureDeviceTypeBuiltInDualWideCamera")
        public static let builtInTripleCamera = DeviceType("AVCaptureDeviceTypeBuiltInTripleCamera")
        public static let builtInTrueDepthCamera = DeviceType("AVCaptureDeviceTypeBuiltInTrueDepthCamera")
        public static let builtInLiDARDepthCamera = DeviceType("AVCaptureDeviceTypeBuiltInLiDARDepthCamera")
        public static let continuityCamera = DeviceType("AVCaptureDeviceTypeContinuityCamera")
        public static let deskViewCamera = DeviceType("AVCaptureDeviceTypeDeskViewCamera")
    }

    /// Where a device faces, with Apple's raw values.
    public enum Position: Int, Sendable, Hashable {
        case unspecified = 0
        case back = 1
        case front = 2
    }

    /// Focus modes, with Apple's raw values.
    public enum FocusMode: Int, Sendable, Hashable {
        /// The lens stays where it is.
        case locked = 0
        /// Focus once on the point of interest, then lock.
        case autoFocus = 1
        /// Keep focusing on the point of interest as the scene changes.
        case continuousAutoFocus = 2
    }

    /// Exposure modes, with Apple's raw values.
    public enum ExposureMode: Int, Sendable, Hashable {
        /// Exposure stays where it is.
        case locked = 0
        /// Expose once for the point of interest, then lock.
        case autoExpose = 1
        /// Keep exposing for the point of interest as the scene changes.
        case continuousAutoExposure = 2
        /// Duration and ISO as set with `setExposureModeCustom(duration:iso:completionHandler:)`.
        case custom = 3
    }

    /// White balance modes, with Apple's raw values.
    public enum WhiteBalanceMode: Int, Sendable, Hashable {
        case locked = 0
        case autoWhiteBalance = 1
        case continuousAutoWhiteBalance = 2
    }

    /// Flash modes, with Apple's raw values.
    public enum FlashMode: Int, Sendable, Hashable {
        case off = 0
        case on = 1
        /// Fire when the scene is dark.
        case auto = 2
    }

    /// Torch modes, with Apple's raw values.
    public enum TorchMode: Int, Sendable, Hashable {
        case off = 0
        case on = 1
        case auto = 2
    }

    /// Where auto focus looks, with Apple's raw values.
    public enum AutoFocusRangeRestriction: Int, Sendable, Hashable {
        case none = 0
        case near = 1
        case far = 2
    }

    /// Per-channel white balance gains, each between 1 and `maxWhiteBalanceGain`.
    public struct WhiteBalanceGains: Hashable, Sendable {
        public var redGain: Float
        public var greenGain: Float
        public var blueGain: Float
        public init() { self.init(redGain: 0, greenGain: 0, blueGain: 0) }
        public init(redGain: Float, greenGain: Float, blueGain: Float) {
            self.redGain = redGain
            self.greenGain = greenGain
            self.blueGain = blueGain
        }
        package init(_ gains: ColorGains) { self.init(redGain: gains.red, greenGain: gains.green, blueGain: gains.blue) }
        package var colorGains: ColorGains { ColorGains(red: redGain, green: greenGain, blue: blueGain) }
    }

    /// The name this project used before it followed Apple's top-level ``AVAuthorizationStatus``; kept so
    /// existing code compiles.
    public typealias AuthorizationStatus = AVAuthorizationStatus
}

/// Whether the app may use devices of a media type, with Apple's raw values. Top level, as in Apple's Swift API
/// (`AVAuthorizationStatus.authorized`).
public enum AVAuthorizationStatus: Int, Sendable, Hashable {
    case notDetermined = 0
    case restricted = 1
    case denied = 2
    case authorized = 3
}
