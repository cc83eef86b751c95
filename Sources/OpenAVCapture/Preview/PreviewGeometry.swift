import Foundation

/// Where a preview layer displays its video, and the conversions between the layer's coordinates and the capture
/// device's: the pure geometry behind `AVCaptureVideoPreviewLayer`'s `captureDevicePointConverted(fromLayerPoint:)`,
/// `layerPointConverted(fromCaptureDevicePoint:)`, `metadataOutputRectConverted(fromLayerRect:)` and
/// `layerRectConverted(fromMetadataOutputRect:)`. Ours, not Apple's; the layer builds one from its bounds, its
/// `videoGravity`, the video dimensions and its connection's rotation and mirroring whenever it converts.
///
/// ## Coordinate spaces
///
/// - **Layer coordinates**: the layer's own space, in points. `layerBounds.origin` is the top-left corner and
///   y grows downward, as in UIKit, where Apple's preview layer is used (the seeds are iOS code).
/// - **Capture device coordinates** (also metadata-output coordinates): normalized to the *unrotated sensor
///   image*, `(0, 0)` at its top-left and `(1, 1)` at its bottom-right, whatever the preview's rotation and
///   mirroring. Apple: "`{0,0}` represents the top-left and `{1,1}` represents the bottom-right of the unrotated
///   image", "always relative to a landscape device orientation with the home button on the right"
///   (`focusPointOfInterest`, `captureDevicePointConverted(fromLayerPoint:)`, `metadataOutputRectConverted`).
///
/// ## The displayed picture
///
/// The sensor image (`videoDimensions`, e.g. 1920×1080) is turned clockwise by `rotation` (so 90° and 270°
/// display it as 1080×1920), then, if `isVideoMirrored`, flipped left to right as displayed (a mirror: what is on
/// the left of the screen moves to the right), then scaled into the layer by `videoGravity` and centred:
///
/// - `.resize`: stretched to the bounds exactly.
/// - `.resizeAspect`: the largest aspect-preserving size that fits; bars on two sides.
/// - `.resizeAspectFill`: the smallest aspect-preserving size that covers the bounds; the overflow is cropped.
///
/// Every step is an axis-aligned scale and translation, a quarter turn or a flip, so the conversions are exact
/// inverses of each other up to floating-point rounding.
///
/// Nothing is clamped, as with Apple's conversions: a layer point in an `.resizeAspect` bar maps to a device
/// point outside `0...1`, and the device corners of a `.resizeAspectFill` video map to layer points outside the
/// bounds.
///
/// Degenerate input: if the bounds have no area, or the video dimensions are not positive, ``videoRect`` is the
/// (standardized) bounds for every gravity (a zero-area rectangle when the bounds have none); when it has no area,
/// every layer point converts to the device centre `(0.5, 0.5)` and every device point to the centre of the
/// bounds, so no conversion ever yields NaN or infinity.
///
/// Threading: a value type; safe to use from any thread.
package struct PreviewGeometry: Sendable, Equatable {
    /// A clockwise quarter turn of the sensor image: the supported values of
    /// `AVCaptureConnection.videoRotationAngle`.
    package enum Rotation: Int, Sendable, Hashable, CaseIterable {
        /// The sensor image as it is: `AVCaptureVideoOrientation.landscapeRight`.
        case degrees0 = 0
        /// Turned 90° clockwise: `.portrait`.
        case degrees90 = 90
        /// Turned 180°: `.landscapeLeft`.
        case degrees180 = 180
        /// Turned 270° clockwise (90° counterclockwise): `.portraitUpsideDown`.
        case degrees270 = 270

        /// The rotation of an angle in degrees that is a whole number of quarter turns, in any range
        /// (`-90` and `630` are `.degrees270`); `nil` for any other angle, which Apple's connection refuses.
        package init?(degrees: CGFloat) {
            guard degrees.isFinite else { return nil }
            let turned = degrees.truncatingRemainder(dividingBy: 360)
            let normalized = turned < 0 ? turned + 360 : turned
            switch normalized {
            case 0: self = .degrees0
            case 90: self = .degrees90
            case 180: self = .degrees180
            case 270: self = .degrees270
            default: return nil
            }
        }

        /// The rotation equivalent to an orientation.
        package init(_ orientation: AVCaptureVideoOrientation) {
            switch orientation {
            case .landscapeRight: self = .degrees0
            case .portrait: self = .degrees90
            case .landscapeLeft: self = .degrees180
            case .portraitUpsideDown: self = .degrees270
            }
        }

        /// The clockwise angle in degrees: 0, 90, 180 or 270.
        package var degrees: CGFloat { CGFloat(rawValue) }

        /// Whether the displayed picture's width is the sensor image's height.
        var swapsAxes: Bool { self == .degrees90 || self == .degrees270 }
    }

    /// The layer's bounds, in layer coordinates; the origin need not be zero.
    package var layerBounds: CGRect
    /// The sensor image's width and height in pixels, unrotated (e.g. 1920×1080 for a 1080p landscape sensor).
    package var videoDimensions: CGSize
    /// How the video is scaled into the bounds; unknown raw values behave as `.resizeAspect`.
    package var videoGravity: AVLayerVideoGravity
    /// The connection's clockwise rotation of the sensor image.
    package var rotation: Rotation
    /// Whether the connection mirrors the displayed picture left to right.
    package var isVideoMirrored: Bool

    /// Creates the geometry of a layer.
    package init(
        layerBounds: CGRect, videoDimensions: CGSize, videoGravity: AVLayerVideoGravity, rotation: Rotation,
        isVideoMirrored: Bool
    ) {
        self.layerBounds = layerBounds
        self.videoDimensions = videoDimensions
        self.videoGravity = videoGravity
        self.rotation = rotation
        self.isVideoMirrored = isVideoMirrored
    }

    /// Creates the geometry of a layer whose connection has a `videoRotationAngle` in degrees; `nil` unless the
    /// angle is a whole number of quarter turns (see ``Rotation/init(degrees:)``).
    package init?(
        layerBounds: CGRect, videoDimensions: CGSize, videoGravity: AVLayerVideoGravity, videoRotationAngle: CGFloat,
        isVideoMirrored: Bool
    ) {
        guard let rotation = Rotation(degrees: videoRotationAngle) else { return nil }
        self.init(
            layerBounds: layerBounds, videoDimensions: videoDimensions, videoGravity: videoGravity,
            rotation: rotation, isVideoMirrored: isVideoMirrored)
    }

    /// Creates the geometry of a layer whose connection has a `videoOrientation`.
    package init(
        layerBounds: CGRect, videoDimensions: CGSize, videoGravity: AVLayerVideoGravity,
        videoOrientation: AVCaptureVideoOrientation, isVideoMirrored: Bool
    ) {
        self.init(
            layerBounds: layerBounds, videoDimensions: videoDimensions, videoGravity: videoGravity,
            rotation: Rotation(videoOrientation), isVideoMirrored: isVideoMirrored)
    }

    // MARK: The displayed video

    /// The rectangle, in layer coordinates, that the whole (rotated, mirrored, scaled) video occupies.
    ///
    /// Inside the bounds for `.resizeAspect`, equal to them for `.resize`, and covering them for
    /// `.resizeAspectFill` (the parts outside are cropped from view). Always standardized and centred on the
    /// bounds.
    package var videoRect: CGRect {
        let bounds = layerBounds.standardized
        let sensorWidth = videoDimensions.width
        let sensorHeight = videoDimensions.height
        guard bounds.width > 0, bounds.height > 0, sensorWidth > 0, sensorHeight > 0, videoGravity != .resize else {
            return bounds
        }
        let displayedWidth = rotation.swapsAxes ? sensorHeight : sensorWidth
        let displayedHeight = rotation.swapsAxes ? sensorWidth : sensorHeight
        let widthScale = bounds.width / displayedWidth
        let heightScale = bounds.height / displayedHeight
        // Fit scales by the smaller factor, fill by the larger; the side that sets the scale keeps the bounds'
        // exact extent, so a matching aspect ratio gives back the bounds bit for bit.
        let widthSetsScale = videoGravity == .resizeAspectFill ? widthScale >= heightScale : widthScale <= heightScale
        if widthSetsScale {
            let height = displayedHeight * widthScale
            return CGRect(x: bounds.minX, y: bounds.midY - height / 2, width: bounds.width, height: height)
        } else {
            let width = displayedWidth * heightScale
            return CGRect(x: bounds.midX - width / 2, y: bounds.minY, width: width, height: bounds.height)
        }
    }

    // MARK: Points

    /// The capture device point (normalized, unrotated sensor image) shown at a layer point, as
    /// `AVCaptureVideoPreviewLayer.captureDevicePointConverted(fromLayerPoint:)`. Not clamped to `0...1`.
    package func captureDevicePointConverted(fromLayerPoint pointInLayer: CGPoint) -> CGPoint {
        let rect = videoRect
        guard rect.width > 0, rect.height > 0 else { return CGPoint(x: 0.5, y: 0.5) }
        // Normalized position in the displayed picture, then undo the mirror, then undo the clockwise turn.
        let displayedX = (pointInLayer.x - rect.minX) / rect.width
        let displayedY = (pointInLayer.y - rect.minY) / rect.height
        let turnedX = isVideoMirrored ? 1 - displayedX : displayedX
        switch rotation {
        case .degrees0: return CGPoint(x: turnedX, y: displayedY)
        case .degrees90: return CGPoint(x: displayedY, y: 1 - turnedX)
        case .degrees180: return CGPoint(x: 1 - turnedX, y: 1 - displayedY)
        case .degrees270: return CGPoint(x: 1 - displayedY, y: turnedX)
        }
    }

    /// The layer point that shows a capture device point (normalized, unrotated sensor image), as
    /// `AVCaptureVideoPreviewLayer.layerPointConverted(fromCaptureDevicePoint:)`. May lie outside the bounds.
    package func layerPointConverted(fromCaptureDevicePoint captureDevicePointOfInterest: CGPoint) -> CGPoint {
        let rect = videoRect
        guard rect.width > 0, rect.height > 0 else { return CGPoint(x: rect.midX, y: rect.midY) }
        let sensorX = captureDevicePointOfInterest.x
        let sensorY = captureDevicePointOfInterest.y
        // A clockwise quarter turn takes the sensor's top-left corner to the display's top-right:
        // (x, y) -> (1 - y, x). Then the mirror flips the displayed picture left to right.
        let turned: (x: CGFloat, y: CGFloat)
        switch rotation {
        case .degrees0: turned = (sensorX, sensorY)
        case .degrees90: turned = (1 - sensorY, sensorX)
        case .degrees180: turned = (1 - sensorX, 1 - sensorY)
        case .degrees270: turned = (sensorY, 1 - sensorX)
        }
        let displayedX = isVideoMirrored ? 1 - turned.x : turned.x
        return CGPoint(x: rect.minX + displayedX * rect.width, y: rect.minY + turned.y * rect.height)
    }

    // MARK: Rectangles

    /// The metadata-output rectangle (normalized, unrotated sensor image) shown in a layer rectangle, as
    /// `AVCaptureVideoPreviewLayer.metadataOutputRectConverted(fromLayerRect:)`. The result is standardized;
    /// `CGRect.null` stays null. Not clamped to the unit square.
    package func metadataOutputRectConverted(fromLayerRect rectInLayerCoordinates: CGRect) -> CGRect {
        guard !rectInLayerCoordinates.isNull else { return .null }
        return Self.rect(
            spanning: captureDevicePointConverted(
                fromLayerPoint: CGPoint(x: rectInLayerCoordinates.minX, y: rectInLayerCoordinates.minY)),
            captureDevicePointConverted(
                fromLayerPoint: CGPoint(x: rectInLayerCoordinates.maxX, y: rectInLayerCoordinates.maxY)))
    }

    /// The layer rectangle that shows a metadata-output rectangle (normalized, unrotated sensor image), as
    /// `AVCaptureVideoPreviewLayer.layerRectConverted(fromMetadataOutputRect:)`. The result is standardized;
    /// `CGRect.null` stays null. May extend outside the bounds.
    package func layerRectConverted(fromMetadataOutputRect rectInMetadataOutputCoordinates: CGRect) -> CGRect {
        guard !rectInMetadataOutputCoordinates.isNull else { return .null }
        return Self.rect(
            spanning: layerPointConverted(
                fromCaptureDevicePoint: CGPoint(
                    x: rectInMetadataOutputCoordinates.minX, y: rectInMetadataOutputCoordinates.minY)),
            layerPointConverted(
                fromCaptureDevicePoint: CGPoint(
                    x: rectInMetadataOutputCoordinates.maxX, y: rectInMetadataOutputCoordinates.maxY)))
    }

    /// The axis-aligned rectangle with two opposite corners. Because every conversion is a composition of
    /// axis-aligned scales, quarter turns and flips, the image of a rectangle is the rectangle spanned by the
    /// images of two opposite corners.
    private static func rect(spanning corner: CGPoint, _ oppositeCorner: CGPoint) -> CGRect {
        CGRect(
            x: min(corner.x, oppositeCorner.x), y: min(corner.y, oppositeCorner.y),
            width: abs(oppositeCorner.x - corner.x), height: abs(oppositeCorner.y - corner.y))
    }
}
