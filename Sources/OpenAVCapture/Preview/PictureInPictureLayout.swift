import Foundation

/// Where a picture-in-picture preview puts the pictures of a multi-camera session's other cameras over the first
/// one's: each inset is `insetWidthFraction` of the container's width (a quarter by default), as tall as its own
/// camera's aspect ratio makes it, in `corner` with a margin of 2 % of the container's width; a second inset goes
/// beside the first towards the opposite edge (above it in a bottom corner, below it in a top corner), and so on.
/// Beyond Apple: AVMultiCamPiP draws its inset with a second `AVCaptureVideoPreviewLayer` in a view of its own;
/// this is that view's frame for a renderer that draws several layers in one window or picture.
///
/// Threading: a value type; safe to use from any thread.
public struct PictureInPictureLayout: Sendable, Equatable {
    /// A corner of the container.
    public enum Corner: String, Sendable, CaseIterable {
        case topLeft = "top-left"
        case topRight = "top-right"
        case bottomLeft = "bottom-left"
        case bottomRight = "bottom-right"
    }

    /// Where the insets go.
    public var corner: Corner
    /// Each inset's width as a share of the container's width, 0.05 ... 0.5.
    public var insetWidthFraction: Double

    /// The margin between an inset and the container's edges or the next inset, a share of the container's width.
    public static let marginFraction = 0.02

    /// A layout of insets `insetWidthFraction` wide (clamped to 0.05 ... 0.5) in `corner`.
    public init(corner: Corner = .bottomRight, insetWidthFraction: Double = 0.25) {
        self.corner = corner
        self.insetWidthFraction = min(0.5, max(0.05, insetWidthFraction))
    }

    /// The insets' frames in `container`, one per aspect ratio (width over height; 16:9 where one is not positive),
    /// in order, on whole pixels. Insets that do not fit along the side overlap the container's opposite edge; a
    /// renderer still draws them, clipped.
    public func insetFrames(in container: CGRect, aspectRatios: [Double]) -> [CGRect] {
        let margin = (container.width * Self.marginFraction).rounded()
        let width = (container.width * insetWidthFraction).rounded()
        let left = corner == .topLeft || corner == .bottomLeft
        let top = corner == .topLeft || corner == .topRight
        let x = left ? container.minX + margin : container.maxX - margin - width
        var edge = top ? container.minY + margin : container.maxY - margin
        return aspectRatios.map { ratio in
            let height = (width / (ratio > 0 ? ratio : 16.0 / 9.0)).rounded()
            let y = top ? edge : edge - height
            edge = top ? edge + height + margin : edge - height - margin
            return CGRect(x: x, y: y, width: width, height: height)
        }
    }
}
