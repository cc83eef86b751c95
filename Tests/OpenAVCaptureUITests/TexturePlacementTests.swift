import Foundation
import OpenAVCapture
@testable import OpenAVCaptureUI
import Testing

/// The window draws the camera's picture with one "copy, flipped, turned" call; these check that the call puts
/// every corner and the centre of the picture where the preview layer's own conversion says it shows.
@Suite struct TexturePlacementTests {
    static let gravities: [AVLayerVideoGravity] = [.resizeAspect, .resizeAspectFill, .resize]
    static let rotations = PreviewGeometry.Rotation.allCases
    static let layers: [CGRect] = [
        CGRect(x: 0, y: 0, width: 800, height: 480), CGRect(x: 0, y: 0, width: 360, height: 640),
        CGRect(x: 10, y: 20, width: 640, height: 480),
    ]

    @Test(arguments: gravities, rotations)
    func picturePointsLandWhereTheLayerConvertsThem(gravity: AVLayerVideoGravity, rotation: PreviewGeometry.Rotation) {
        for bounds in Self.layers {
            for mirrored in [false, true] {
                let geometry = PreviewGeometry(
                    layerBounds: bounds, videoDimensions: CGSize(width: 640, height: 480), videoGravity: gravity,
                    rotation: rotation, isVideoMirrored: mirrored)
                let placement = TexturePlacement(geometry)
                for point in [
                    CGPoint(x: 0, y: 0), CGPoint(x: 1, y: 0), CGPoint(x: 0, y: 1), CGPoint(x: 1, y: 1),
                    CGPoint(x: 0.25, y: 0.75),
                ] {
                    let drawn = placement.displayedPoint(ofTexturePoint: point)
                    let expected = geometry.layerPointConverted(fromCaptureDevicePoint: point)
                    #expect(
                        abs(drawn.x - expected.x) < 1e-9 && abs(drawn.y - expected.y) < 1e-9,
                        "\(gravity.rawValue) \(rotation) mirrored \(mirrored) \(bounds): \(point) drawn at \(drawn), layer says \(expected)")
                }
            }
        }
    }

    /// A hand-worked case: 640x480 in 800x480 with aspect fit leaves 80-point bars left and right.
    @Test func aspectFitInAWideWindowLeavesBarsAtTheSides() {
        let geometry = PreviewGeometry(
            layerBounds: CGRect(x: 0, y: 0, width: 800, height: 480), videoDimensions: CGSize(width: 640, height: 480),
            videoGravity: .resizeAspect, rotation: .degrees0, isVideoMirrored: true)
        let placement = TexturePlacement(geometry)
        #expect(placement.destination == CGRect(x: 80, y: 0, width: 640, height: 480))
        #expect(placement.flipsHorizontally && !placement.flipsVertically && placement.angle == 0)
    }
}
