import Foundation
@testable import OpenAVCapture
import Testing

/// Every gravity × rotation × mirroring, on a portrait and a landscape layer with non-zero origins, for a 16:9 and
/// a 4:3 sensor: the conversions against an independent model, their round trips, and the order of the corners.
@Suite("Preview geometry, every configuration")
struct PreviewGeometryTests {
    // MARK: Against the independent model

    @Test(arguments: Configuration.all)
    func videoRectMatchesTheReferenceModel(_ configuration: Configuration) {
        let videoRect = configuration.geometry.videoRect
        #expect(isClose(videoRect, configuration.reference.videoRect), "\(videoRect)")
        let bounds = configuration.layerBounds
        switch configuration.gravity {
        case .resize:
            #expect(videoRect == bounds)
        case .resizeAspect:
            // Inside the bounds, touching them on both sides along one axis.
            #expect(videoRect.minX >= bounds.minX - tolerance && videoRect.maxX <= bounds.maxX + tolerance)
            #expect(videoRect.minY >= bounds.minY - tolerance && videoRect.maxY <= bounds.maxY + tolerance)
            #expect(isClose(videoRect.width, bounds.width) || isClose(videoRect.height, bounds.height))
        default:
            // Covering the bounds, touching them on both sides along one axis.
            #expect(videoRect.minX <= bounds.minX + tolerance && videoRect.maxX >= bounds.maxX - tolerance)
            #expect(videoRect.minY <= bounds.minY + tolerance && videoRect.maxY >= bounds.maxY - tolerance)
            #expect(isClose(videoRect.width, bounds.width) || isClose(videoRect.height, bounds.height))
        }
        #expect(isClose(videoRect.midX, bounds.midX) && isClose(videoRect.midY, bounds.midY))
    }

    @Test(arguments: Configuration.all)
    func devicePointsConvertAsTheReferenceModelDoes(_ configuration: Configuration) {
        let geometry = configuration.geometry
        let reference = configuration.reference
        for devicePoint in samplePoints(in: unitSquare) {
            let layerPoint = geometry.layerPointConverted(fromCaptureDevicePoint: devicePoint)
            let expected = reference.layerPoint(fromDevicePoint: devicePoint)
            #expect(isClose(layerPoint, expected), "device \(devicePoint): \(layerPoint) != \(expected)")
        }
    }

    @Test(arguments: Configuration.all)
    func layerPointsConvertAsTheReferenceModelDoes(_ configuration: Configuration) {
        let geometry = configuration.geometry
        let reference = configuration.reference
        for layerPoint in samplePoints(in: configuration.layerBounds) {
            let devicePoint = geometry.captureDevicePointConverted(fromLayerPoint: layerPoint)
            let expected = reference.devicePoint(fromLayerPoint: layerPoint)
            #expect(isClose(devicePoint, expected), "layer \(layerPoint): \(devicePoint) != \(expected)")
        }
    }

    @Test(arguments: Configuration.all)
    func rectanglesConvertAsTheReferenceModelDoes(_ configuration: Configuration) {
        let geometry = configuration.geometry
        let reference = configuration.reference
        for layerRect in sampleRects(in: configuration.layerBounds) {
            let metadataRect = geometry.metadataOutputRectConverted(fromLayerRect: layerRect)
            let expected = reference.metadataRect(fromLayerRect: layerRect)
            #expect(isClose(metadataRect, expected), "layer \(layerRect): \(metadataRect) != \(expected)")
        }
        for metadataRect in sampleRects(in: unitSquare) {
            let layerRect = geometry.layerRectConverted(fromMetadataOutputRect: metadataRect)
            let expected = reference.layerRect(fromMetadataRect: metadataRect)
            #expect(isClose(layerRect, expected), "metadata \(metadataRect): \(layerRect) != \(expected)")
        }
    }

    // MARK: Round trips

    @Test(arguments: Configuration.all)
    func pointsRoundTrip(_ configuration: Configuration) {
        let geometry = configuration.geometry
        for layerPoint in samplePoints(in: configuration.layerBounds) {
            let devicePoint = geometry.captureDevicePointConverted(fromLayerPoint: layerPoint)
            let back = geometry.layerPointConverted(fromCaptureDevicePoint: devicePoint)
            #expect(isClose(back, layerPoint), "layer \(layerPoint) -> \(devicePoint) -> \(back)")
        }
        for devicePoint in samplePoints(in: unitSquare) {
            let layerPoint = geometry.layerPointConverted(fromCaptureDevicePoint: devicePoint)
            let back = geometry.captureDevicePointConverted(fromLayerPoint: layerPoint)
            #expect(isClose(back, devicePoint), "device \(devicePoint) -> \(layerPoint) -> \(back)")
        }
    }

    @Test(arguments: Configuration.all)
    func rectanglesRoundTrip(_ configuration: Configuration) {
        let geometry = configuration.geometry
        for layerRect in sampleRects(in: configuration.layerBounds) {
            let metadataRect = geometry.metadataOutputRectConverted(fromLayerRect: layerRect)
            let back = geometry.layerRectConverted(fromMetadataOutputRect: metadataRect)
            #expect(isClose(back, layerRect), "layer \(layerRect) -> \(metadataRect) -> \(back)")
        }
        for metadataRect in sampleRects(in: unitSquare) {
            let layerRect = geometry.layerRectConverted(fromMetadataOutputRect: metadataRect)
            let back = geometry.metadataOutputRectConverted(fromLayerRect: layerRect)
            #expect(isClose(back, metadataRect), "metadata \(metadataRect) -> \(layerRect) -> \(back)")
        }
    }

    // MARK: Corners, by hand

    /// Which sensor corner (device coordinates) is displayed at each corner of the video rectangle, written out by
    /// hand: a clockwise quarter turn moves the sensor's top edge to the display's right edge, so the sensor's
    /// top-left goes to the display's top-right and its bottom-left to the display's top-left; the mirror then
    /// swaps left and right.
    static func expectedSensorCorners(
        rotation: CGFloat, mirrored: Bool
    ) -> (
        topLeft: CGPoint, topRight: CGPoint, bottomLeft: CGPoint, bottomRight: CGPoint
    ) {
        let topLeft: CGPoint
        let topRight: CGPoint
        let bottomLeft: CGPoint
        let bottomRight: CGPoint
        switch rotation {
        case 0:
            (topLeft, topRight) = (CGPoint(x: 0, y: 0), CGPoint(x: 1, y: 0))
            (bottomLeft, bottomRight) = (CGPoint(x: 0, y: 1), CGPoint(x: 1, y: 1))
        case 90:
            (topLeft, topRight) = (CGPoint(x: 0, y: 1), CGPoint(x: 0, y: 0))
            (bottomLeft, bottomRight) = (CGPoint(x: 1, y: 1), CGPoint(x: 1, y: 0))
        case 180:
            (topLeft, topRight) = (CGPoint(x: 1, y: 1), CGPoint(x: 0, y: 1))
            (bottomLeft, bottomRight) = (CGPoint(x: 1, y: 0), CGPoint(x: 0, y: 0))
        case 270:
            (topLeft, topRight) = (CGPoint(x: 1, y: 0), CGPoint(x: 1, y: 1))
            (bottomLeft, bottomRight) = (CGPoint(x: 0, y: 0), CGPoint(x: 0, y: 1))
        default:
            preconditionFailure("unsupported rotation \(rotation)")
        }
        return mirrored
            ? (topRight, topLeft, bottomRight, bottomLeft) : (topLeft, topRight, bottomLeft, bottomRight)
    }

    @Test(arguments: Configuration.all)
    func videoRectCornersShowTheSensorCornersInOrder(_ configuration: Configuration) {
        let geometry = configuration.geometry
        let rect = geometry.videoRect
        let expected = Self.expectedSensorCorners(
            rotation: configuration.rotationDegrees, mirrored: configuration.isVideoMirrored)
        let cases: [(layer: CGPoint, device: CGPoint)] = [
            (CGPoint(x: rect.minX, y: rect.minY), expected.topLeft),
            (CGPoint(x: rect.maxX, y: rect.minY), expected.topRight),
            (CGPoint(x: rect.minX, y: rect.maxY), expected.bottomLeft),
            (CGPoint(x: rect.maxX, y: rect.maxY), expected.bottomRight),
        ]
        for (layerPoint, devicePoint) in cases {
            let converted = geometry.captureDevicePointConverted(fromLayerPoint: layerPoint)
            #expect(isClose(converted, devicePoint), "layer \(layerPoint) -> \(converted), expected \(devicePoint)")
            let back = geometry.layerPointConverted(fromCaptureDevicePoint: devicePoint)
            #expect(isClose(back, layerPoint), "device \(devicePoint) -> \(back), expected \(layerPoint)")
        }
    }

    @Test(arguments: Configuration.all)
    func theLayerCentreShowsTheSensorCentre(_ configuration: Configuration) {
        let geometry = configuration.geometry
        let centre = CGPoint(x: configuration.layerBounds.midX, y: configuration.layerBounds.midY)
        #expect(isClose(geometry.captureDevicePointConverted(fromLayerPoint: centre), CGPoint(x: 0.5, y: 0.5)))
        #expect(isClose(geometry.layerPointConverted(fromCaptureDevicePoint: CGPoint(x: 0.5, y: 0.5)), centre))
    }

    @Test(arguments: Configuration.all)
    func theWholeSensorIsTheVideoRect(_ configuration: Configuration) {
        let geometry = configuration.geometry
        #expect(isClose(geometry.layerRectConverted(fromMetadataOutputRect: unitSquare), geometry.videoRect))
        #expect(isClose(geometry.metadataOutputRectConverted(fromLayerRect: geometry.videoRect), unitSquare))
    }

    // MARK: Per gravity

    @Test(arguments: Configuration.all(.resize))
    func resizeShowsTheSensorCornersAtTheLayerCorners(_ configuration: Configuration) {
        let geometry = configuration.geometry
        let bounds = configuration.layerBounds
        let expected = Self.expectedSensorCorners(
            rotation: configuration.rotationDegrees, mirrored: configuration.isVideoMirrored)
        #expect(
            isClose(
                geometry.captureDevicePointConverted(fromLayerPoint: CGPoint(x: bounds.minX, y: bounds.minY)),
                expected.topLeft))
        #expect(
            isClose(
                geometry.captureDevicePointConverted(fromLayerPoint: CGPoint(x: bounds.maxX, y: bounds.minY)),
                expected.topRight))
        #expect(
            isClose(
                geometry.captureDevicePointConverted(fromLayerPoint: CGPoint(x: bounds.minX, y: bounds.maxY)),
                expected.bottomLeft))
        #expect(
            isClose(
                geometry.captureDevicePointConverted(fromLayerPoint: CGPoint(x: bounds.maxX, y: bounds.maxY)),
                expected.bottomRight))
        #expect(isClose(geometry.metadataOutputRectConverted(fromLayerRect: bounds), unitSquare))
    }

    @Test(arguments: Configuration.all(.resizeAspect))
    func resizeAspectBarsMapOutsideTheSensor(_ configuration: Configuration) {
        let geometry = configuration.geometry
        let bounds = configuration.layerBounds
        // Every configuration here has bars: no sensor aspect matches a layer's (16:9 or 4:3 against 390:844 or
        // 2:1, turned or not).
        let barsAreAboveAndBelow = isClose(geometry.videoRect.width, bounds.width)
        let barCentres: [CGPoint] =
            barsAreAboveAndBelow
            ? [
                CGPoint(x: bounds.midX, y: (bounds.minY + geometry.videoRect.minY) / 2),
                CGPoint(x: bounds.midX, y: (geometry.videoRect.maxY + bounds.maxY) / 2),
            ]
            : [
                CGPoint(x: (bounds.minX + geometry.videoRect.minX) / 2, y: bounds.midY),
                CGPoint(x: (geometry.videoRect.maxX + bounds.maxX) / 2, y: bounds.midY),
            ]
        #expect(!isClose(geometry.videoRect, bounds))
        for point in barCentres + [CGPoint(x: bounds.minX, y: bounds.minY), CGPoint(x: bounds.maxX, y: bounds.maxY)] {
            let devicePoint = geometry.captureDevicePointConverted(fromLayerPoint: point)
            let inside = (0...1).contains(devicePoint.x) && (0...1).contains(devicePoint.y)
            #expect(!inside, "bar point \(point) -> \(devicePoint)")
        }
    }

    @Test(arguments: Configuration.all(.resizeAspectFill))
    func resizeAspectFillCropsTheSensor(_ configuration: Configuration) {
        let geometry = configuration.geometry
        let bounds = configuration.layerBounds
        // Every layer point is video: the layer's corners map inside the unit square.
        for corner in [
            CGPoint(x: bounds.minX, y: bounds.minY), CGPoint(x: bounds.maxX, y: bounds.minY),
            CGPoint(x: bounds.minX, y: bounds.maxY), CGPoint(x: bounds.maxX, y: bounds.maxY),
        ] {
            let devicePoint = geometry.captureDevicePointConverted(fromLayerPoint: corner)
            #expect(
                (-tolerance...1 + tolerance).contains(devicePoint.x)
                    && (-tolerance...1 + tolerance).contains(devicePoint.y), "corner \(corner) -> \(devicePoint)")
        }
        // The sensor's corners are cropped away: they map more than a point outside the bounds.
        for devicePoint in [CGPoint(x: 0, y: 0), CGPoint(x: 1, y: 0), CGPoint(x: 0, y: 1), CGPoint(x: 1, y: 1)] {
            let layerPoint = geometry.layerPointConverted(fromCaptureDevicePoint: devicePoint)
            #expect(!bounds.insetBy(dx: -1, dy: -1).contains(layerPoint), "device \(devicePoint) -> \(layerPoint)")
        }
        // What is visible is a strict part of the sensor.
        let visible = geometry.metadataOutputRectConverted(fromLayerRect: bounds)
        #expect(visible.width < 1 - tolerance || visible.height < 1 - tolerance, "\(visible)")
    }
}
