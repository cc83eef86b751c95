import Foundation
@testable import OpenAVCapture

/// An independent model of the preview, written differently from the code under test so that a shared mistake is
/// unlikely: it works in sensor pixels about the picture's centre, turns them with a rotation matrix built from
/// `cos`/`sin` of the angle, flips the sign of x for the mirror, and scales about the centre of the bounds.
///
/// Clockwise on a y-down screen: `x' = x cos θ − y sin θ`, `y' = x sin θ + y cos θ`. Check with θ = 90°: the
/// vector pointing right, (1, 0), becomes (0, 1), pointing down; right to down is clockwise on the screen.
struct ReferenceModel {
    let bounds: CGRect
    let sensor: CGSize
    let radians: Double
    let mirrored: Bool
    /// Layer points per sensor pixel, horizontally and vertically, in the displayed (turned) picture.
    let scaleX: Double
    let scaleY: Double

    init(_ configuration: Configuration) {
        bounds = configuration.layerBounds
        sensor = configuration.videoDimensions
        radians = Double(configuration.rotationDegrees) * .pi / 180
        mirrored = configuration.isVideoMirrored
        let quarterTurnsAreOdd = Int(configuration.rotationDegrees / 90) % 2 == 1
        let displayedWidth = quarterTurnsAreOdd ? sensor.height : sensor.width
        let displayedHeight = quarterTurnsAreOdd ? sensor.width : sensor.height
        let fitX = bounds.width / displayedWidth
        let fitY = bounds.height / displayedHeight
        switch configuration.gravity {
        case .resize:
            (scaleX, scaleY) = (fitX, fitY)
        case .resizeAspectFill:
            (scaleX, scaleY) = (max(fitX, fitY), max(fitX, fitY))
        default:
            (scaleX, scaleY) = (min(fitX, fitY), min(fitX, fitY))
        }
    }

    /// Device point (normalized, unrotated sensor image) to layer point.
    func layerPoint(fromDevicePoint point: CGPoint) -> CGPoint {
        // Sensor pixels, relative to the sensor image's centre.
        let x = (point.x - 0.5) * sensor.width
        let y = (point.y - 0.5) * sensor.height
        // Turn clockwise by the angle.
        var turnedX = x * cos(radians) - y * sin(radians)
        let turnedY = x * sin(radians) + y * cos(radians)
        // Mirror left to right as displayed.
        if mirrored { turnedX = -turnedX }
        // Scale about the centre of the bounds (every gravity centres the picture).
        return CGPoint(x: bounds.midX + turnedX * scaleX, y: bounds.midY + turnedY * scaleY)
    }

    /// Layer point to device point: every step above undone in reverse order.
    func devicePoint(fromLayerPoint point: CGPoint) -> CGPoint {
        var turnedX = (point.x - bounds.midX) / scaleX
        let turnedY = (point.y - bounds.midY) / scaleY
        if mirrored { turnedX = -turnedX }
        // Turn counterclockwise by the angle (the transpose of the matrix above).
        let x = turnedX * cos(radians) + turnedY * sin(radians)
        let y = -turnedX * sin(radians) + turnedY * cos(radians)
        return CGPoint(x: x / sensor.width + 0.5, y: y / sensor.height + 0.5)
    }

    /// The layer rectangle covered by the whole video: the span of the four device corners' images.
    var videoRect: CGRect {
        span([CGPoint(x: 0, y: 0), CGPoint(x: 1, y: 0), CGPoint(x: 0, y: 1), CGPoint(x: 1, y: 1)].map(layerPoint))
    }

    /// A rectangle's image, by mapping all four of its corners and spanning them.
    func metadataRect(fromLayerRect rect: CGRect) -> CGRect {
        span(corners(of: rect).map(devicePoint))
    }

    /// A rectangle's image, by mapping all four of its corners and spanning them.
    func layerRect(fromMetadataRect rect: CGRect) -> CGRect {
        span(corners(of: rect).map(layerPoint))
    }

    private func corners(of rect: CGRect) -> [CGPoint] {
        [
            CGPoint(x: rect.minX, y: rect.minY), CGPoint(x: rect.maxX, y: rect.minY),
            CGPoint(x: rect.minX, y: rect.maxY), CGPoint(x: rect.maxX, y: rect.maxY),
        ]
    }

    private func span(_ points: [CGPoint]) -> CGRect {
        let xs = points.map(\.x)
        let ys = points.map(\.y)
        return CGRect(x: xs.min()!, y: ys.min()!, width: xs.max()! - xs.min()!, height: ys.max()! - ys.min()!)
    }
}
