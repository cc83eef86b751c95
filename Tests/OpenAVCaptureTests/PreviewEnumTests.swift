import Foundation
@testable import OpenAVCapture
import Testing

@Suite("Gravity, orientation and rotation values")
struct EnumTests {
    @Test func gravityRawValuesAreApplesConstantNames() {
        #expect(AVLayerVideoGravity.resize.rawValue == "AVLayerVideoGravityResize")
        #expect(AVLayerVideoGravity.resizeAspect.rawValue == "AVLayerVideoGravityResizeAspect")
        #expect(AVLayerVideoGravity.resizeAspectFill.rawValue == "AVLayerVideoGravityResizeAspectFill")
        #expect(AVLayerVideoGravity(rawValue: "AVLayerVideoGravityResizeAspectFill") == .resizeAspectFill)
        #expect(Set([AVLayerVideoGravity.resize, .resizeAspect, .resizeAspectFill]).count == 3)
    }

    @Test func orientationRawValuesAreApples() {
        #expect(AVCaptureVideoOrientation.portrait.rawValue == 1)
        #expect(AVCaptureVideoOrientation.portraitUpsideDown.rawValue == 2)
        #expect(AVCaptureVideoOrientation.landscapeRight.rawValue == 3)
        #expect(AVCaptureVideoOrientation.landscapeLeft.rawValue == 4)
        #expect(AVCaptureVideoOrientation(rawValue: 0) == nil)
        #expect(AVCaptureVideoOrientation(rawValue: 5) == nil)
    }

    // The mapping Apple's AVCaptureConnection uses for cameras mounted in landscape: portrait 90,
    // portraitUpsideDown 270, landscapeRight 0, landscapeLeft 180, clockwise.
    @Test(arguments: [
        (AVCaptureVideoOrientation.landscapeRight, CGFloat(0)), (.portrait, 90), (.landscapeLeft, 180),
        (.portraitUpsideDown, 270),
    ])
    func orientationsAreClockwiseRotationAngles(_ orientation: AVCaptureVideoOrientation, _ degrees: CGFloat) {
        #expect(orientation.rotationAngle == degrees)
        #expect(AVCaptureVideoOrientation(rotationAngle: degrees) == orientation)
        #expect(PreviewGeometry.Rotation(orientation).degrees == degrees)
        #expect(PreviewGeometry.Rotation(degrees: degrees) == PreviewGeometry.Rotation(orientation))
    }

    @Test func onlyQuarterTurnsAreOrientations() {
        #expect(AVCaptureVideoOrientation(rotationAngle: 45) == nil)
        #expect(AVCaptureVideoOrientation(rotationAngle: 360) == nil)
    }

    @Test(arguments: [
        (CGFloat(-90), PreviewGeometry.Rotation.degrees270), (360, .degrees0), (450, .degrees90), (-180, .degrees180),
        (630, .degrees270), (-720, .degrees0),
    ])
    func rotationAnglesAreTakenModulo360(_ degrees: CGFloat, _ rotation: PreviewGeometry.Rotation) {
        #expect(PreviewGeometry.Rotation(degrees: degrees) == rotation)
    }

    @Test(arguments: [CGFloat(45), 89.999, 1, .nan, .infinity, -.infinity])
    func otherAnglesAreRefused(_ degrees: CGFloat) {
        #expect(PreviewGeometry.Rotation(degrees: degrees) == nil)
        let geometry = PreviewGeometry(
            layerBounds: CGRect(x: 0, y: 0, width: 100, height: 100), videoDimensions: CGSize(width: 4, height: 3),
            videoGravity: .resize, videoRotationAngle: degrees, isVideoMirrored: false)
        #expect(geometry == nil)
    }
}
