import OpenAVCapture

/// Where a renderer puts the camera's (unrotated) picture so that it shows what the preview layer's geometry says:
/// a destination rectangle, a clockwise turn about its centre and a flip of the picture, which is what a 2-D
/// renderer's "copy with rotation and flip" takes (SDL's `SDL_RenderCopyExF`, a canvas transform).
///
/// Derived from ``PreviewGeometry/videoRect`` and its rotation and mirroring only; `displayedPoint(ofTexturePoint:)`
/// applies the renderer's transform, and the tests check it against the layer's
/// `layerPointConverted(fromCaptureDevicePoint:)` for every gravity, rotation and mirroring.
///
/// Threading: a value type; safe to use from any thread.
package struct TexturePlacement: Sendable, Equatable {
    /// The rectangle the unturned picture is scaled into, in layer coordinates, before the turn.
    package var destination: CGRect
    /// The clockwise turn about the destination's centre, in degrees (0, 90, 180 or 270).
    package var angle: Double
    /// Whether the picture is flipped left to right (in its own coordinates, before the turn).
    package var flipsHorizontally: Bool
    /// Whether the picture is flipped top to bottom (in its own coordinates, before the turn).
    package var flipsVertically: Bool

    package init(_ geometry: PreviewGeometry) {
        let shown = geometry.videoRect
        let quarterTurned = geometry.rotation == .degrees90 || geometry.rotation == .degrees270
        // Turned a quarter, the picture's width lies along the layer's height: the destination is the shown
        // rectangle with its sides swapped, about the same centre.
        destination =
            quarterTurned
            ? CGRect(
                x: shown.midX - shown.height / 2, y: shown.midY - shown.width / 2, width: shown.height,
                height: shown.width)
            : shown
        angle = Double(geometry.rotation.degrees)
        // The layer mirrors the displayed (turned) picture left to right; before a quarter turn that is the
        // picture's own top-to-bottom flip.
        flipsHorizontally = geometry.isVideoMirrored && !quarterTurned
        flipsVertically = geometry.isVideoMirrored && quarterTurned
    }

    /// The layer point where a point of the picture (normalized, (0,0) top left) lands: flip, scale into
    /// `destination`, turn clockwise about its centre (y grows downward), as SDL and canvases draw.
    package func displayedPoint(ofTexturePoint point: CGPoint) -> CGPoint {
        let u = flipsHorizontally ? 1 - point.x : point.x
        let v = flipsVertically ? 1 - point.y : point.y
        let x = destination.minX + u * destination.width - destination.midX
        let y = destination.minY + v * destination.height - destination.midY
        let (sine, cosine): (CGFloat, CGFloat)
        switch angle {
        case 90: (sine, cosine) = (1, 0)
        case 180: (sine, cosine) = (0, -1)
        case 270: (sine, cosine) = (-1, 0)
        default: (sine, cosine) = (0, 1)
        }
        return CGPoint(
            x: destination.midX + x * cosine - y * sine, y: destination.midY + x * sine + y * cosine)
    }
}
