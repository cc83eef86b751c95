import Foundation
@testable import OpenAVCapture
import Testing

/// Specific configurations whose expected values were worked out by hand, each derivation written beside it.
@Suite("Preview geometry, hand-computed cases")
struct HandComputedTests {
    static let hd = CGSize(width: 1920, height: 1080)

    // A 1920×1080 sensor, previewed in a 1080×1920 portrait layer with .resizeAspectFill and .portrait.
    //
    // Apple defines capture device coordinates on the unrotated sensor image: (0, 0) its top-left, (1, 1) its
    // bottom-right, "relative to a landscape device orientation with the home button on the right", whatever the
    // preview's orientation (docs of focusPointOfInterest and captureDevicePointConverted(fromLayerPoint:)).
    //
    // Portrait is videoRotationAngle 90: the sensor image turned 90° clockwise (the device is held turned a
    // quarter clockwise from home-button-right to home-button-down, so the scene lies a quarter counterclockwise
    // on the sensor, and the connection turns it back). The turned picture is 1080×1920, the layer's exact
    // aspect, so .resizeAspectFill neither crops nor letterboxes: the video fills the layer exactly.
    //
    // Turning the sensor image a quarter clockwise moves
    //   its top edge    (device y = 0) to the layer's right edge,
    //   its left edge   (device x = 0) to the layer's top edge,
    //   its bottom edge (device y = 1) to the layer's left edge,
    //   its right edge  (device x = 1) to the layer's bottom edge.
    // So the layer's top-left corner lies on the sensor's left and bottom edges: device (0, 1); its top-right on
    // the left and top edges: (0, 0); bottom-right: (1, 0); bottom-left: (1, 1). In general, for a layer point
    // (X, Y): device x = Y / 1920 (going down the layer goes right along the sensor) and device y = 1 − X / 1080.
    // The centre (540, 960) gives (0.5, 0.5), and (270, 480) gives (0.25, 0.75).
    //
    // The same formula is the hand-written conversion that apps used before iOS 6 added these methods, for a
    // portrait aspect-fill preview: layer x = (1 − poi.y) · width, layer y = poi.x · height.
    static let portraitFill = PreviewGeometry(
        layerBounds: CGRect(x: 0, y: 0, width: 1080, height: 1920), videoDimensions: hd,
        videoGravity: .resizeAspectFill, videoOrientation: .portrait, isVideoMirrored: false)

    @Test func portraitAspectFillCentreAndCorners() {
        let geometry = Self.portraitFill
        #expect(geometry.videoRect == CGRect(x: 0, y: 0, width: 1080, height: 1920))
        let expectations: [(layer: CGPoint, device: CGPoint)] = [
            (CGPoint(x: 540, y: 960), CGPoint(x: 0.5, y: 0.5)),
            (CGPoint(x: 0, y: 0), CGPoint(x: 0, y: 1)),
            (CGPoint(x: 1080, y: 0), CGPoint(x: 0, y: 0)),
            (CGPoint(x: 1080, y: 1920), CGPoint(x: 1, y: 0)),
            (CGPoint(x: 0, y: 1920), CGPoint(x: 1, y: 1)),
            (CGPoint(x: 270, y: 480), CGPoint(x: 0.25, y: 0.75)),
        ]
        for (layerPoint, devicePoint) in expectations {
            #expect(isClose(geometry.captureDevicePointConverted(fromLayerPoint: layerPoint), devicePoint))
            #expect(isClose(geometry.layerPointConverted(fromCaptureDevicePoint: devicePoint), layerPoint))
        }
    }

    // The same, mirrored: the displayed picture is flipped left to right, so what was shown at the layer's
    // top-right, device (0, 0), is now shown at its top-left, and (270, 480) now shows what (810, 480) showed:
    // device x = 480 / 1920 = 0.25, y = 1 − 810 / 1080 = 0.25.
    @Test func portraitAspectFillMirrored() {
        var geometry = Self.portraitFill
        geometry.isVideoMirrored = true
        let expectations: [(layer: CGPoint, device: CGPoint)] = [
            (CGPoint(x: 540, y: 960), CGPoint(x: 0.5, y: 0.5)),
            (CGPoint(x: 0, y: 0), CGPoint(x: 0, y: 0)),
            (CGPoint(x: 1080, y: 0), CGPoint(x: 0, y: 1)),
            (CGPoint(x: 270, y: 480), CGPoint(x: 0.25, y: 0.25)),
        ]
        for (layerPoint, devicePoint) in expectations {
            #expect(isClose(geometry.captureDevicePointConverted(fromLayerPoint: layerPoint), devicePoint))
            #expect(isClose(geometry.layerPointConverted(fromCaptureDevicePoint: devicePoint), layerPoint))
        }
    }

    // Portrait upside down is videoRotationAngle 270: a quarter counterclockwise. The sensor's top edge goes to
    // the layer's left edge and its left edge to the bottom, so for a normalized layer position (s, t):
    // device x = 1 − t, device y = s. The layer's top-left (s, t) = (0, 0) shows device (1, 0); with the layer at
    // origin (−40, 100), the point (−40 + 270, 100 + 480) is (s, t) = (0.25, 0.25), device (0.75, 0.25).
    @Test func portraitUpsideDownWithAnOffsetOrigin() {
        let geometry = PreviewGeometry(
            layerBounds: CGRect(x: -40, y: 100, width: 1080, height: 1920), videoDimensions: Self.hd,
            videoGravity: .resizeAspectFill, videoOrientation: .portraitUpsideDown, isVideoMirrored: false)
        #expect(
            isClose(geometry.captureDevicePointConverted(fromLayerPoint: CGPoint(x: -40, y: 100)), CGPoint(x: 1, y: 0)))
        #expect(
            isClose(
                geometry.captureDevicePointConverted(fromLayerPoint: CGPoint(x: 230, y: 580)), CGPoint(x: 0.75, y: 0.25)
            ))
    }

    // Landscape left is 180°: a 640×480 sensor in an 800×600 layer at (100, 50) has the same 4:3 aspect, so the
    // video fills the layer, upside down: the point a quarter of the way in on both axes, (300, 200), shows device
    // (1 − 0.25, 1 − 0.25).
    @Test func landscapeLeftTurnsTheSensorHalfway() {
        let geometry = PreviewGeometry(
            layerBounds: CGRect(x: 100, y: 50, width: 800, height: 600),
            videoDimensions: CGSize(width: 640, height: 480),
            videoGravity: .resizeAspect, videoOrientation: .landscapeLeft, isVideoMirrored: false)
        #expect(geometry.videoRect == CGRect(x: 100, y: 50, width: 800, height: 600))
        #expect(
            isClose(
                geometry.captureDevicePointConverted(fromLayerPoint: CGPoint(x: 300, y: 200)), CGPoint(x: 0.75, y: 0.75)
            ))
    }

    // Landscape right is the sensor as it is. 1920×1080 in a 1080×1920 layer at (10, 20) with .resizeAspect:
    // scale = min(1080 / 1920, 1920 / 1080) = 0.5625, so the video is 1080 × 607.5, centred vertically at
    // y = 20 + (1920 − 607.5) / 2 = 676.25. The top bar's point (550, 20) is 656.25 points above the video:
    // device (0.5, −656.25 / 607.5), outside 0...1, unclamped.
    @Test func resizeAspectLetterboxInPortraitLayer() {
        let geometry = PreviewGeometry(
            layerBounds: CGRect(x: 10, y: 20, width: 1080, height: 1920), videoDimensions: Self.hd,
            videoGravity: .resizeAspect, videoOrientation: .landscapeRight, isVideoMirrored: false)
        #expect(isClose(geometry.videoRect, CGRect(x: 10, y: 676.25, width: 1080, height: 607.5)))
        #expect(
            isClose(
                geometry.captureDevicePointConverted(fromLayerPoint: CGPoint(x: 550, y: 20)),
                CGPoint(x: 0.5, y: -656.25 / 607.5)))
        #expect(isClose(geometry.layerPointConverted(fromCaptureDevicePoint: .zero), CGPoint(x: 10, y: 676.25)))
    }

    // The same with .resizeAspectFill: scale = max(...) = 16 / 9, so the video is 10240 / 3 wide and 1920 high,
    // centred horizontally at x = 550 − 5120 / 3 = −3470 / 3. The layer's top-left (10, 20) shows device
    // x = (10 + 3470 / 3) / (10240 / 3) = 3500 / 10240 = 0.341796875, y = 0; the sensor's top-left is shown at
    // (−3470 / 3, 20), far outside the layer.
    @Test func resizeAspectFillCropInPortraitLayer() {
        let geometry = PreviewGeometry(
            layerBounds: CGRect(x: 10, y: 20, width: 1080, height: 1920), videoDimensions: Self.hd,
            videoGravity: .resizeAspectFill, videoOrientation: .landscapeRight, isVideoMirrored: false)
        #expect(isClose(geometry.videoRect, CGRect(x: -3470.0 / 3, y: 20, width: 10240.0 / 3, height: 1920)))
        #expect(
            isClose(
                geometry.captureDevicePointConverted(fromLayerPoint: CGPoint(x: 10, y: 20)),
                CGPoint(x: 0.341796875, y: 0)))
        #expect(isClose(geometry.layerPointConverted(fromCaptureDevicePoint: .zero), CGPoint(x: -3470.0 / 3, y: 20)))
    }

    // Rectangles in the portrait aspect-fill case, from device x = Y / 1920 and device y = 1 − X / 1080:
    // the layer's top-left quarter, X in 0...540 and Y in 0...960, is device x in 0...0.5 and y in 0.5...1.
    // Conversely, device x in 0.1...0.4 and y in 0.2...0.6 is X = (1 − y) · 1080 in 432...864 and
    // Y = x · 1920 in 192...768.
    @Test func portraitAspectFillRectangles() {
        let geometry = Self.portraitFill
        #expect(
            isClose(
                geometry.metadataOutputRectConverted(fromLayerRect: CGRect(x: 0, y: 0, width: 540, height: 960)),
                CGRect(x: 0, y: 0.5, width: 0.5, height: 0.5)))
        #expect(
            isClose(
                geometry.layerRectConverted(fromMetadataOutputRect: CGRect(x: 0.1, y: 0.2, width: 0.3, height: 0.4)),
                CGRect(x: 432, y: 192, width: 432, height: 576)))
    }

    @Test func nullRectanglesStayNull() {
        #expect(Self.portraitFill.metadataOutputRectConverted(fromLayerRect: .null).isNull)
        #expect(Self.portraitFill.layerRectConverted(fromMetadataOutputRect: .null).isNull)
    }

    // A rectangle given with a negative size is the same rectangle; the result is standardized.
    @Test func unstandardizedRectanglesAreStandardized() {
        let converted = Self.portraitFill.metadataOutputRectConverted(
            fromLayerRect: CGRect(x: 540, y: 960, width: -540, height: -960))
        #expect(isClose(converted, CGRect(x: 0, y: 0.5, width: 0.5, height: 0.5)))
    }

    // An unknown gravity name is displayed as .resizeAspect, the preview layer's default.
    @Test func unknownGravityBehavesAsResizeAspect() {
        var unknown = Self.portraitFill
        unknown.videoGravity = AVLayerVideoGravity(rawValue: "SomethingElse")
        unknown.videoRotation(0)
        var aspect = unknown
        aspect.videoGravity = .resizeAspect
        #expect(unknown.videoRect == aspect.videoRect)
        #expect(isClose(unknown.videoRect, CGRect(x: 0, y: 656.25, width: 1080, height: 607.5)))
    }

    // Nothing to show: no NaN, no infinity.
    @Test func degenerateInputsStayFinite() {
        let emptyLayer = PreviewGeometry(
            layerBounds: CGRect(x: 5, y: 6, width: 0, height: 100), videoDimensions: Self.hd,
            videoGravity: .resizeAspectFill, videoOrientation: .portrait, isVideoMirrored: true)
        #expect(emptyLayer.captureDevicePointConverted(fromLayerPoint: CGPoint(x: 5, y: 50)) == CGPoint(x: 0.5, y: 0.5))
        #expect(emptyLayer.layerPointConverted(fromCaptureDevicePoint: CGPoint(x: 0.2, y: 0.9)) == CGPoint(x: 5, y: 56))

        let noVideo = PreviewGeometry(
            layerBounds: CGRect(x: 5, y: 6, width: 300, height: 100), videoDimensions: .zero,
            videoGravity: .resizeAspect, videoOrientation: .portrait, isVideoMirrored: false)
        #expect(noVideo.videoRect == CGRect(x: 5, y: 6, width: 300, height: 100))
        #expect(isClose(noVideo.captureDevicePointConverted(fromLayerPoint: CGPoint(x: 5, y: 6)), CGPoint(x: 0, y: 1)))
    }
}

extension PreviewGeometry {
    /// Sets the rotation from degrees, for tests that start from another geometry.
    fileprivate mutating func videoRotation(_ degrees: CGFloat) {
        guard let rotation = Rotation(degrees: degrees) else { preconditionFailure("unsupported angle \(degrees)") }
        self.rotation = rotation
    }
}
