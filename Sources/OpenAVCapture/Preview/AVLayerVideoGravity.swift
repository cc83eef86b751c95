import Foundation

/// How a layer displays video within its bounds, as AVFoundation's `AVLayerVideoGravity`.
///
/// A string-backed value, like Apple's: the raw values are the names of Apple's constants
/// (`AVLayerVideoGravityResize`, …), so values stored or logged by code written for Apple's framework read the
/// same here. A raw value that is none of the three constants is displayed as ``resizeAspect``, the default of
/// `AVCaptureVideoPreviewLayer.videoGravity`.
///
/// Threading: a value type; safe to use from any thread.
public struct AVLayerVideoGravity: RawRepresentable, Hashable, Sendable {
    /// The name of the gravity, such as `"AVLayerVideoGravityResizeAspect"`.
    public let rawValue: String

    /// Creates a gravity from its name, such as `"AVLayerVideoGravityResizeAspectFill"`.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The video stretches to fill the layer's bounds; its aspect ratio is not preserved.
    ///
    /// The corresponding Apple constant is `AVLayerVideoGravityResize`.
    public static let resize = AVLayerVideoGravity(rawValue: "AVLayerVideoGravityResize")

    /// The video keeps its aspect ratio and fits within the layer's bounds, centred, leaving bars
    /// (letterbox or pillarbox) where the aspect ratios differ. The default.
    ///
    /// The corresponding Apple constant is `AVLayerVideoGravityResizeAspect`.
    public static let resizeAspect = AVLayerVideoGravity(rawValue: "AVLayerVideoGravityResizeAspect")

    /// The video keeps its aspect ratio and fills the layer's bounds, centred, cropping whatever overflows them.
    ///
    /// The corresponding Apple constant is `AVLayerVideoGravityResizeAspectFill`.
    public static let resizeAspectFill = AVLayerVideoGravity(rawValue: "AVLayerVideoGravityResizeAspectFill")
}
