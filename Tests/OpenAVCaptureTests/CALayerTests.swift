import Foundation
import OpenAVCapture
import Testing

/// The CALayer model under the preview layer: QuartzCore's geometry and hierarchy rules.
@Suite struct CALayerTests {
    @Test func frameIsPositionAnchorPointAndBounds() {
        let layer = CALayer()
        layer.frame = CGRect(x: 10, y: 20, width: 100, height: 50)
        #expect(layer.bounds == CGRect(x: 0, y: 0, width: 100, height: 50))
        #expect(layer.position == CGPoint(x: 60, y: 45))
        layer.anchorPoint = CGPoint(x: 0, y: 0)
        #expect(layer.frame == CGRect(x: 60, y: 45, width: 100, height: 50))
        layer.bounds = CGRect(x: 0, y: 0, width: 20, height: 10)
        #expect(layer.frame == CGRect(x: 60, y: 45, width: 20, height: 10))
    }

    @Test func theTransformTurnsAboutTheAnchorPointAndTheFrameBoundsIt() {
        let layer = CALayer()
        layer.frame = CGRect(x: 0, y: 0, width: 200, height: 100)
        layer.setAffineTransform(CGAffineTransform(rotationAngle: .pi / 2))
        #expect(layer.affineTransform() == CGAffineTransform(rotationAngle: .pi / 2))
        // Turned a quarter about its centre (100, 50): 100 wide and 200 high around the same centre.
        #expect(layer.frame == CGRect(x: 50, y: -50, width: 100, height: 200))
        #expect(layer.position == CGPoint(x: 100, y: 50))
    }

    @Test func sublayersFollowQuartzCoresOrderingRules() {
        let root = CALayer()
        #expect(root.sublayers == nil)
        let a = CALayer()
        let b = CALayer()
        let c = CALayer()
        root.addSublayer(a)
        root.addSublayer(b)
        root.insertSublayer(c, at: 0)
        #expect(root.sublayers?.map(ObjectIdentifier.init) == [c, a, b].map(ObjectIdentifier.init))
        #expect(a.superlayer === root)
        root.insertSublayer(c, above: b)
        #expect(root.sublayers?.map(ObjectIdentifier.init) == [a, b, c].map(ObjectIdentifier.init))
        root.insertSublayer(c, below: a)
        #expect(root.sublayers?.map(ObjectIdentifier.init) == [c, a, b].map(ObjectIdentifier.init))
        // Adding to another layer takes it from the first.
        let other = CALayer()
        other.addSublayer(a)
        #expect(root.sublayers?.count == 2 && a.superlayer === other)
        let d = CALayer()
        root.replaceSublayer(b, with: d)
        #expect(root.sublayers?.map(ObjectIdentifier.init) == [c, d].map(ObjectIdentifier.init) && b.superlayer == nil)
        d.removeFromSuperlayer()
        c.removeFromSuperlayer()
        #expect(root.sublayers == nil && d.superlayer == nil)
        root.insertSublayer(a, at: 99)
        #expect(root.sublayers?.count == 1)
    }

    @Test func pointsConvertThroughTheTree() {
        let root = CALayer()
        root.frame = CGRect(x: 0, y: 0, width: 1000, height: 1000)
        let child = CALayer()
        child.frame = CGRect(x: 100, y: 200, width: 300, height: 300)
        root.addSublayer(child)
        let grandchild = CALayer()
        grandchild.frame = CGRect(x: 10, y: 20, width: 50, height: 50)
        child.addSublayer(grandchild)
        #expect(grandchild.convert(CGPoint(x: 5, y: 5), to: root) == CGPoint(x: 115, y: 225))
        #expect(root.convert(CGPoint(x: 115, y: 225), to: grandchild) == CGPoint(x: 5, y: 5))
        #expect(child.convert(CGRect(x: 0, y: 0, width: 50, height: 50), from: grandchild)
            == CGRect(x: 10, y: 20, width: 50, height: 50))
    }

    @Test func appearancePropertiesHaveQuartzCoresDefaults() {
        let layer = CALayer()
        #expect(layer.contentsGravity == .resize && layer.contentsGravity.rawValue == "resize")
        #expect(!layer.isHidden && !layer.masksToBounds && layer.opacity == 1)
        layer.isHidden = true
        layer.masksToBounds = true
        layer.contentsGravity = .resizeAspectFill
        let copy = CALayer(layer: layer)
        #expect(copy.isHidden && copy.masksToBounds && copy.contentsGravity == .resizeAspectFill)
    }

    @Test func aPreviewLayerIsALayerInATree() throws {
        let session = AVCaptureSession()
        session.addInput(try AVCaptureDeviceInput(device: VirtualDevices.back))
        let root = CALayer()
        root.frame = CGRect(x: 0, y: 0, width: 1280, height: 800)
        let preview = AVCaptureVideoPreviewLayer(session: session)
        preview.videoGravity = .resize
        preview.frame = CGRect(x: 40, y: 40, width: 640, height: 480)
        root.insertSublayer(preview, at: 0)
        let overlay = CALayer()
        overlay.frame = preview.bounds
        preview.addSublayer(overlay)
        let asLayer: CALayer = preview
        #expect(asLayer.superlayer === root)
        #expect(preview.bounds == CGRect(x: 0, y: 0, width: 640, height: 480))
        // Conversions work in the layer's own bounds; the tree places them in the root.
        let layerPoint = preview.layerPointConverted(fromCaptureDevicePoint: CGPoint(x: 0.5, y: 0.5))
        #expect(layerPoint == CGPoint(x: 320, y: 240))
        #expect(preview.convert(layerPoint, to: root) == CGPoint(x: 360, y: 280))
    }
}
