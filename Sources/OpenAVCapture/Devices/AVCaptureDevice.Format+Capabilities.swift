import CaptureDrivers
import Foundation

extension AVCaptureDevice.Format {
    /// How a format's camera focuses automatically, with Apple's raw values.
    public enum AutoFocusSystem: Int, Sendable, Hashable {
        /// No automatic focus (fixed-focus webcams, audio formats).
        case none = 0
        /// Focus found by maximizing contrast: what V4L2 cameras with continuous auto focus, and the virtual back
        /// camera, do.
        case contrastDetection = 1
        /// Phase-detection pixels on the sensor; no camera here has them.
        case phaseDetection = 2
    }

    /// How the camera focuses automatically in this format: `.contrastDetection` when it has an auto focus mode,
    /// `.none` otherwise (and for audio).
    public var autoFocusSystem: AutoFocusSystem {
        guard video != nil, let modes = capabilities?.focusModes else { return .none }
        return modes.contains(.autoFocus) || modes.contains(.continuousAutoFocus) ? .contrastDetection : .none
    }

    /// Whether an `AVCaptureMultiCamSession` runs the format beside other cameras: true for every camera's video
    /// format here (V4L2, PipeWire, virtual and movie-file cameras), which the session streams each on its own
    /// thread; false for audio and for screens, which are not cameras. Whether several chosen formats fit the
    /// machine together is the session's `hardwareCost`, not a property of one format.
    public var isMultiCamSupported: Bool { isCameraVideo }

    /// The photo sizes an `AVCapturePhotoOutput` can take in this format, smallest first: the format's own size and,
    /// where larger, its high-resolution still size. Empty for audio.
    public var supportedMaxPhotoDimensions: [CMVideoDimensions] {
        guard let video else { return [] }
        let own = CMVideoDimensions(width: Int32(video.width), height: Int32(video.height))
        let still = highResolutionStillImageDimensions
        let stillIsLarger = Int64(still.width) * Int64(still.height) > Int64(own.width) * Int64(own.height)
        return stillIsLarger ? [own, still] : [own]
    }

    /// The depth formats the camera can deliver beside this format: none, as on every Apple camera without a depth
    /// sensor; no Linux camera here has one.
    public var supportedDepthDataFormats: [AVCaptureDevice.Format] { [] }
}

extension AVCaptureDevice {
    /// The depth format in use: nil, since no format here has depth formats. Setting a format that is not in the
    /// active format's `supportedDepthDataFormats` traps, as Apple raises; setting nil is allowed.
    public var activeDepthDataFormat: Format? {
        get { nil }
        set {
            requireLock("activeDepthDataFormat")
            precondition(
                newValue.map { activeFormat.supportedDepthDataFormats.contains($0) } ?? true,
                "AVCaptureDevice.activeDepthDataFormat must be one of activeFormat.supportedDepthDataFormats, which is"
                    + " empty: this camera has no depth (Apple raises NSInvalidArgumentException)")
        }
    }
}
