import Foundation

/// How a layer's contents fill its bounds, with Apple's raw values (`kCAGravityResize` is `"resize"`, …).
///
/// Threading: a value type; safe to use from any thread.
public struct CALayerContentsGravity: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let center = CALayerContentsGravity(rawValue: "center")
    public static let top = CALayerContentsGravity(rawValue: "top")
    public static let bottom = CALayerContentsGravity(rawValue: "bottom")
    public static let left = CALayerContentsGravity(rawValue: "left")
    public static let right = CALayerContentsGravity(rawValue: "right")
    public static let topLeft = CALayerContentsGravity(rawValue: "topLeft")
    public static let topRight = CALayerContentsGravity(rawValue: "topRight")
    public static let bottomLeft = CALayerContentsGravity(rawValue: "bottomLeft")
    public static let bottomRight = CALayerContentsGravity(rawValue: "bottomRight")
    /// Stretch to the bounds (the default).
    public static let resize = CALayerContentsGravity(rawValue: "resize")
    public static let resizeAspect = CALayerContentsGravity(rawValue: "resizeAspect")
    public static let resizeAspectFill = CALayerContentsGravity(rawValue: "resizeAspectFill")
}

/// QuartzCore's layer, reduced to its geometry and hierarchy: what capture code sets on a preview layer and the layers
/// it draws over it (frame, bounds, position, anchor point, affine transform, the sublayer tree, hiding, masking, the
/// contents gravity). The base of ``AVCaptureVideoPreviewLayer``, visible through `import OpenAVCaptureShim` as
/// `import AVFoundation` makes QuartzCore's visible on Apple's platforms.
///
/// A model: nothing here draws. Renderers (a window, a web page) read the tree. No implicit animations: a change
/// takes effect at once, as inside a disabled `CATransaction`.
///
/// Geometry as QuartzCore's: `position` is where the anchor point (a unit point of the bounds, `(0.5, 0.5)` by
/// default) sits in the superlayer; the affine transform turns the layer about it; `frame` is the transformed bounds'
/// bounding box in the superlayer's coordinates (setting it with a non-identity transform is undefined, as Apple's).
///
/// Threading: every layer of every tree shares one recursive lock, so any member may be called from any thread, and
/// tree changes are atomic. Not `Sendable`, as Apple's, so subclasses need no restating; use it from one thread (the
/// main thread, as Apple advises) unless you know better.
open class CALayer: NSObject {
    /// Guards every layer's state and the tree's links.
    private static let treeLock = NSRecursiveLock()

    private var storedBounds = CGRect.zero
    private var storedPosition = CGPoint.zero
    private var storedAnchorPoint = CGPoint(x: 0.5, y: 0.5)
    private var storedTransform = CGAffineTransform.identity
    private var storedSublayers: [CALayer] = []
    private weak var storedSuperlayer: CALayer?
    private var storedHidden = false
    private var storedMasksToBounds = false
    private var storedContentsGravity = CALayerContentsGravity.resize
    private var storedOpacity: Float = 1
    private var storedZPosition: CGFloat = 0
    private var storedName: String?
    private var storedContents: Any?
    private var storedCornerRadius: CGFloat = 0
    private var storedBorderWidth: CGFloat = 0

    public override init() { super.init() }

    /// A copy of `layer`'s properties (not its sublayers), as Apple's presentation-layer initializer.
    public init(layer: Any) {
        super.init()
        guard let other = layer as? CALayer else { return }
        Self.locked {
            storedBounds = other.storedBounds
            storedPosition = other.storedPosition
            storedAnchorPoint = other.storedAnchorPoint
            storedTransform = other.storedTransform
            storedHidden = other.storedHidden
            storedMasksToBounds = other.storedMasksToBounds
            storedContentsGravity = other.storedContentsGravity
            storedOpacity = other.storedOpacity
            storedZPosition = other.storedZPosition
            storedName = other.storedName
            storedContents = other.storedContents
            storedCornerRadius = other.storedCornerRadius
            storedBorderWidth = other.storedBorderWidth
        }
    }

    private static func locked<T>(_ body: () throws -> T) rethrows -> T {
        treeLock.lock()
        defer { treeLock.unlock() }
        return try body()
    }

    // MARK: Geometry

    /// The layer's own coordinate space: origin and size.
    open var bounds: CGRect {
        get { Self.locked { storedBounds } }
        set { Self.locked { storedBounds = newValue } }
    }

    /// Where the anchor point sits, in the superlayer's coordinates.
    open var position: CGPoint {
        get { Self.locked { storedPosition } }
        set { Self.locked { storedPosition = newValue } }
    }

    /// The point of the bounds (in unit coordinates) that `position` places and the transform turns about.
    open var anchorPoint: CGPoint {
        get { Self.locked { storedAnchorPoint } }
        set { Self.locked { storedAnchorPoint = newValue } }
    }

    /// The layer's rectangle in its superlayer's coordinates: the bounding box of its transformed bounds. Setting it
    /// sets `position` and the bounds' size.
    open var frame: CGRect {
        get {
            Self.locked {
                let corners = [
                    CGPoint(x: storedBounds.minX, y: storedBounds.minY), CGPoint(x: storedBounds.maxX, y: storedBounds.minY),
                    CGPoint(x: storedBounds.minX, y: storedBounds.maxY), CGPoint(x: storedBounds.maxX, y: storedBounds.maxY),
                ].map(toSuperlayer)
                let xs = corners.map(\.x)
                let ys = corners.map(\.y)
                return CGRect(x: xs.min()!, y: ys.min()!, width: xs.max()! - xs.min()!, height: ys.max()! - ys.min()!)
            }
        }
        set {
            Self.locked {
                storedBounds.size = newValue.size
                storedPosition = CGPoint(
                    x: newValue.minX + storedAnchorPoint.x * newValue.width,
                    y: newValue.minY + storedAnchorPoint.y * newValue.height)
            }
        }
    }

    /// The layer's affine transform, applied about the anchor point.
    open func affineTransform() -> CGAffineTransform { Self.locked { storedTransform } }

    /// Sets the layer's affine transform, applied about the anchor point.
    open func setAffineTransform(_ m: CGAffineTransform) { Self.locked { storedTransform = m } }

    /// A point of this layer in its superlayer's coordinates. Call under the lock.
    private func toSuperlayer(_ point: CGPoint) -> CGPoint {
        let anchor = CGPoint(
            x: storedBounds.minX + storedAnchorPoint.x * storedBounds.width,
            y: storedBounds.minY + storedAnchorPoint.y * storedBounds.height)
        let turned = CGPoint(x: point.x - anchor.x, y: point.y - anchor.y).applying(storedTransform)
        return CGPoint(x: storedPosition.x + turned.x, y: storedPosition.y + turned.y)
    }

    /// A point of the superlayer in this layer's coordinates. Call under the lock.
    private func fromSuperlayer(_ point: CGPoint) -> CGPoint {
        let anchor = CGPoint(
            x: storedBounds.minX + storedAnchorPoint.x * storedBounds.width,
            y: storedBounds.minY + storedAnchorPoint.y * storedBounds.height)
        let local = CGPoint(x: point.x - storedPosition.x, y: point.y - storedPosition.y).applying(storedTransform.inverted())
        return CGPoint(x: local.x + anchor.x, y: local.y + anchor.y)
    }

    /// The chain from this layer up to its root.
    private var ancestry: [CALayer] {
        var chain: [CALayer] = [self]
        while let parent = chain.last?.storedSuperlayer { chain.append(parent) }
        return chain
    }

    /// `point` of `layer` (nil: the root's coordinates of this tree) in this layer's coordinates.
    open func convert(_ point: CGPoint, from layer: CALayer?) -> CGPoint {
        Self.locked {
            var inRoot = point
            if let layer { for step in layer.ancestry.dropLast() { inRoot = step.toSuperlayer(inRoot) } }
            var result = inRoot
            for step in ancestry.dropLast().reversed() { result = step.fromSuperlayer(result) }
            return result
        }
    }

    /// `point` of this layer in `layer`'s coordinates (nil: the root's).
    open func convert(_ point: CGPoint, to layer: CALayer?) -> CGPoint {
        guard let layer else { return Self.locked { ancestry.dropLast().reduce(point) { $1.toSuperlayer($0) } } }
        return layer.convert(point, from: self)
    }

    /// `rect` of `layer` in this layer's coordinates: the bounding box of its converted corners.
    open func convert(_ rect: CGRect, from layer: CALayer?) -> CGRect {
        AVMetadataObject.boundingBox(
            [CGPoint(x: rect.minX, y: rect.minY), CGPoint(x: rect.maxX, y: rect.minY), CGPoint(x: rect.minX, y: rect.maxY),
             CGPoint(x: rect.maxX, y: rect.maxY)].map { convert($0, from: layer) })
    }

    /// `rect` of this layer in `layer`'s coordinates.
    open func convert(_ rect: CGRect, to layer: CALayer?) -> CGRect {
        AVMetadataObject.boundingBox(
            [CGPoint(x: rect.minX, y: rect.minY), CGPoint(x: rect.maxX, y: rect.minY), CGPoint(x: rect.minX, y: rect.maxY),
             CGPoint(x: rect.maxX, y: rect.maxY)].map { convert($0, to: layer) })
    }

    // MARK: The tree

    /// The layer this one is a sublayer of.
    open var superlayer: CALayer? { Self.locked { storedSuperlayer } }

    /// The sublayers, back to front; nil when there are none, as Apple's. Setting replaces them all.
    open var sublayers: [CALayer]? {
        get { Self.locked { storedSublayers.isEmpty ? nil : storedSublayers } }
        set {
            Self.locked {
                for layer in storedSublayers { layer.storedSuperlayer = nil }
                storedSublayers = []
                for layer in newValue ?? [] { insert(layer, at: storedSublayers.count) }
            }
        }
    }

    /// Adds `layer` in front of the other sublayers, taking it from its superlayer first.
    open func addSublayer(_ layer: CALayer) {
        Self.locked { insert(layer, at: storedSublayers.count) }
    }

    /// Inserts `layer` at `idx` among the sublayers (clamped to their count), taking it from its superlayer first.
    open func insertSublayer(_ layer: CALayer, at idx: UInt32) {
        Self.locked { insert(layer, at: Int(idx)) }
    }

    /// Inserts `layer` just behind `sibling` (at the back when `sibling` is nil or not a sublayer).
    open func insertSublayer(_ layer: CALayer, below sibling: CALayer?) {
        Self.locked {
            layer.detach()
            insert(layer, at: sibling.flatMap { s in storedSublayers.firstIndex { $0 === s } } ?? 0)
        }
    }

    /// Inserts `layer` just in front of `sibling` (at the front when `sibling` is nil or not a sublayer).
    open func insertSublayer(_ layer: CALayer, above sibling: CALayer?) {
        Self.locked {
            layer.detach()
            insert(layer, at: sibling.flatMap { s in storedSublayers.firstIndex { $0 === s }.map { $0 + 1 } } ?? storedSublayers.count)
        }
    }

    /// Puts `newLayer` where `oldLayer` is among the sublayers; does nothing when `oldLayer` is not one.
    open func replaceSublayer(_ oldLayer: CALayer, with newLayer: CALayer) {
        Self.locked {
            guard let index = storedSublayers.firstIndex(where: { $0 === oldLayer }) else { return }
            oldLayer.detach()
            insert(newLayer, at: index)
        }
    }

    /// Takes the layer out of its superlayer's sublayers.
    open func removeFromSuperlayer() {
        Self.locked { detach() }
    }

    private func detach() {
        guard let parent = storedSuperlayer else { return }
        parent.storedSublayers.removeAll { $0 === self }
        storedSuperlayer = nil
    }

    private func insert(_ layer: CALayer, at index: Int) {
        precondition(
            !ancestry.contains { $0 === layer },
            "CALayer: a layer cannot be a sublayer of itself or of its own sublayers")
        layer.detach()
        storedSublayers.insert(layer, at: max(0, min(index, storedSublayers.count)))
        layer.storedSuperlayer = self
    }

    // MARK: Appearance (kept for renderers)

    /// Whether the layer and its sublayers are not shown.
    open var isHidden: Bool {
        get { Self.locked { storedHidden } }
        set { Self.locked { storedHidden = newValue } }
    }

    /// Whether sublayers are clipped to the bounds.
    open var masksToBounds: Bool {
        get { Self.locked { storedMasksToBounds } }
        set { Self.locked { storedMasksToBounds = newValue } }
    }

    /// How the contents fill the bounds (`.resize` by default).
    open var contentsGravity: CALayerContentsGravity {
        get { Self.locked { storedContentsGravity } }
        set { Self.locked { storedContentsGravity = newValue } }
    }

    /// What the layer shows (an image on Apple's platforms); kept for renderers.
    open var contents: Any? {
        get { Self.locked { storedContents } }
        set { Self.locked { storedContents = newValue } }
    }

    /// 0 (transparent) to 1 (opaque, the default).
    open var opacity: Float {
        get { Self.locked { storedOpacity } }
        set { Self.locked { storedOpacity = newValue } }
    }

    /// The layer's place front to back among its siblings, beyond their order.
    open var zPosition: CGFloat {
        get { Self.locked { storedZPosition } }
        set { Self.locked { storedZPosition = newValue } }
    }

    /// A name, for finding the layer.
    open var name: String? {
        get { Self.locked { storedName } }
        set { Self.locked { storedName = newValue } }
    }

    /// The radius of the rounded corners.
    open var cornerRadius: CGFloat {
        get { Self.locked { storedCornerRadius } }
        set { Self.locked { storedCornerRadius = newValue } }
    }

    /// The width of the border.
    open var borderWidth: CGFloat {
        get { Self.locked { storedBorderWidth } }
        set { Self.locked { storedBorderWidth = newValue } }
    }

    /// Asks for `layoutSublayers()`; here it lays out at once (there is no render loop).
    open func setNeedsLayout() { layoutSublayers() }

    /// Lays out sublayers; subclasses override it. Does nothing by default.
    open func layoutSublayers() {}
}
