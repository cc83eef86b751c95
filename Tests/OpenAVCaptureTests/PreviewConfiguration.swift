import Foundation
@testable import OpenAVCapture
import Testing

/// One combination of the inputs that the parameterized tests run over.
struct Configuration: Sendable, CustomTestStringConvertible {
    let gravity: AVLayerVideoGravity
    let rotationDegrees: CGFloat
    let isVideoMirrored: Bool
    let layerName: String
    let layerBounds: CGRect
    let videoDimensions: CGSize

    var geometry: PreviewGeometry {
        guard
            let geometry = PreviewGeometry(
                layerBounds: layerBounds, videoDimensions: videoDimensions, videoGravity: gravity,
                videoRotationAngle: rotationDegrees, isVideoMirrored: isVideoMirrored)
        else { preconditionFailure("test configuration has an unsupported angle \(rotationDegrees)") }
        return geometry
    }

    var reference: ReferenceModel { ReferenceModel(self) }

    var testDescription: String {
        let gravityName =
            switch gravity {
            case .resize: "resize"
            case .resizeAspect: "aspect"
            case .resizeAspectFill: "aspectFill"
            default: gravity.rawValue
            }
        return "\(gravityName) \(Int(rotationDegrees))°\(isVideoMirrored ? " mirrored" : "") \(layerName) layer"
            + " \(Int(videoDimensions.width))x\(Int(videoDimensions.height))"
    }

    static let gravities: [AVLayerVideoGravity] = [.resize, .resizeAspect, .resizeAspectFill]
    static let rotations: [CGFloat] = [0, 90, 180, 270]
    static let layers: [(name: String, bounds: CGRect)] = [
        ("portrait", CGRect(x: 7, y: -13, width: 390, height: 844)),
        ("landscape", CGRect(x: -50, y: 33.5, width: 1000, height: 500)),
    ]
    static let videos: [CGSize] = [CGSize(width: 1920, height: 1080), CGSize(width: 640, height: 480)]

    /// 3 gravities × 4 rotations × 2 mirror states × 2 layer shapes × 2 video sizes = 96.
    static let all: [Configuration] = gravities.flatMap { gravity in
        rotations.flatMap { rotation in
            [false, true].flatMap { mirrored in
                layers.flatMap { layer in
                    videos.map { video in
                        Configuration(
                            gravity: gravity, rotationDegrees: rotation, isVideoMirrored: mirrored,
                            layerName: layer.name, layerBounds: layer.bounds, videoDimensions: video)
                    }
                }
            }
        }
    }

    static func all(_ gravity: AVLayerVideoGravity) -> [Configuration] {
        all.filter { $0.gravity == gravity }
    }
}

let tolerance = 1e-9

func isClose(_ a: CGFloat, _ b: CGFloat) -> Bool { abs(a - b) <= tolerance }

func isClose(_ a: CGPoint, _ b: CGPoint) -> Bool { isClose(a.x, b.x) && isClose(a.y, b.y) }

func isClose(_ a: CGRect, _ b: CGRect) -> Bool {
    isClose(a.minX, b.minX) && isClose(a.minY, b.minY) && isClose(a.width, b.width) && isClose(a.height, b.height)
}

/// Points spread over and beyond a rectangle: fractions of its size from -0.2 to 1.5 on each axis.
func samplePoints(in rect: CGRect) -> [CGPoint] {
    let fractions: [CGFloat] = [-0.2, 0, 0.25, 0.5, 0.9, 1, 1.5]
    return fractions.flatMap { fx in
        fractions.map { fy in CGPoint(x: rect.minX + fx * rect.width, y: rect.minY + fy * rect.height) }
    }
}

let unitSquare = CGRect(x: 0, y: 0, width: 1, height: 1)

/// Rectangles inside, across and beyond a rectangle, as fractions of its size.
func sampleRects(in rect: CGRect) -> [CGRect] {
    let fractions: [(CGFloat, CGFloat, CGFloat, CGFloat)] = [
        (0, 0, 1, 1), (0.1, 0.2, 0.3, 0.4), (0.5, 0.5, 0.5, 0.5), (-0.25, 0.6, 0.5, 0.7), (0.9, -0.1, 0.4, 1.3),
        (0.3, 0.3, 0, 0),
    ]
    return fractions.map { fx, fy, fw, fh in
        CGRect(
            x: rect.minX + fx * rect.width, y: rect.minY + fy * rect.height, width: fw * rect.width,
            height: fh * rect.height)
    }
}
