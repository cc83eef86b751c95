import Foundation

/// A 2-D affine transform, as CoreGraphics' `CGAffineTransform`: Foundation on Linux has none, and
/// `AVAssetWriterInput.transform` (a track's matrix) needs it.
///
/// A point (x, y) maps to (a·x + c·y + tx, b·x + d·y + ty).
///
/// Value type; safe to use from any thread.
public struct CGAffineTransform: Hashable, Sendable, CustomStringConvertible {
    public var a: CGFloat
    public var b: CGFloat
    public var c: CGFloat
    public var d: CGFloat
    public var tx: CGFloat
    public var ty: CGFloat

    public init(a: CGFloat, b: CGFloat, c: CGFloat, d: CGFloat, tx: CGFloat, ty: CGFloat) {
        (self.a, self.b, self.c, self.d, self.tx, self.ty) = (a, b, c, d, tx, ty)
    }

    public init() { self = .identity }

    /// The transform that changes nothing.
    public static let identity = CGAffineTransform(a: 1, b: 0, c: 0, d: 1, tx: 0, ty: 0)

    /// A rotation by `angle` radians (counterclockwise in a y-up space; clockwise on a y-down screen).
    /// Quarter turns are exact.
    public init(rotationAngle angle: CGFloat) {
        let (sine, cosine) = Self.exactSineCosine(angle)
        self.init(a: cosine, b: sine, c: -sine, d: cosine, tx: 0, ty: 0)
    }

    public init(scaleX sx: CGFloat, y sy: CGFloat) { self.init(a: sx, b: 0, c: 0, d: sy, tx: 0, ty: 0) }

    public init(translationX tx: CGFloat, y ty: CGFloat) { self.init(a: 1, b: 0, c: 0, d: 1, tx: tx, ty: ty) }

    public var isIdentity: Bool { self == .identity }

    /// `self` followed by `t2`.
    public func concatenating(_ t2: CGAffineTransform) -> CGAffineTransform {
        CGAffineTransform(
            a: a * t2.a + b * t2.c, b: a * t2.b + b * t2.d, c: c * t2.a + d * t2.c, d: c * t2.b + d * t2.d,
            tx: tx * t2.a + ty * t2.c + t2.tx, ty: tx * t2.b + ty * t2.d + t2.ty)
    }

    public func rotated(by angle: CGFloat) -> CGAffineTransform {
        CGAffineTransform(rotationAngle: angle).concatenating(self)
    }

    public func scaledBy(x sx: CGFloat, y sy: CGFloat) -> CGAffineTransform {
        CGAffineTransform(scaleX: sx, y: sy).concatenating(self)
    }

    public func translatedBy(x: CGFloat, y: CGFloat) -> CGAffineTransform {
        CGAffineTransform(translationX: x, y: y).concatenating(self)
    }

    /// The inverse, or `self` when it has none (as CoreGraphics does).
    public func inverted() -> CGAffineTransform {
        let determinant = a * d - b * c
        guard determinant != 0 else { return self }
        return CGAffineTransform(
            a: d / determinant, b: -b / determinant, c: -c / determinant, d: a / determinant,
            tx: (c * ty - d * tx) / determinant, ty: (b * tx - a * ty) / determinant)
    }

    /// The rotation in whole degrees when the transform is a quarter-turn rotation (0, 90, 180, 270), else nil:
    /// what a track's display matrix can say.
    package var quarterTurnDegrees: Int? {
        switch (a, b, c, d) {
        case (1, 0, 0, 1): 0
        case (0, 1, -1, 0): 90
        case (-1, 0, 0, -1): 180
        case (0, -1, 1, 0): 270
        default: nil
        }
    }

    public var description: String { "CGAffineTransform(a: \(a), b: \(b), c: \(c), d: \(d), tx: \(tx), ty: \(ty))" }

    /// Exact values at quarter turns, so `CGAffineTransform(rotationAngle: .pi / 2)` is exactly a quarter turn.
    private static func exactSineCosine(_ angle: CGFloat) -> (CGFloat, CGFloat) {
        let quarterTurns = angle / (.pi / 2)
        if abs(quarterTurns - quarterTurns.rounded()) < 1e-12 {
            switch ((Int(quarterTurns.rounded()) % 4) + 4) % 4 {
            case 0: return (0, 1)
            case 1: return (1, 0)
            case 2: return (0, -1)
            default: return (-1, 0)
            }
        }
        return (sin(angle), cos(angle))
    }
}

extension CGPoint {
    /// The point transformed.
    public func applying(_ t: CGAffineTransform) -> CGPoint {
        CGPoint(x: t.a * x + t.c * y + t.tx, y: t.b * x + t.d * y + t.ty)
    }
}

extension CGSize {
    /// The size transformed as a vector: the translation is ignored, and a rotation can make a side negative (take
    /// `abs` of each, as Apple's sample code does with a track's `naturalSize` and `preferredTransform`).
    public func applying(_ t: CGAffineTransform) -> CGSize {
        CGSize(width: t.a * width + t.c * height, height: t.b * width + t.d * height)
    }
}

extension CGRect {
    /// The smallest rectangle holding the transformed corners of this one, as Apple's `CGRect.applying`.
    public func applying(_ t: CGAffineTransform) -> CGRect {
        let corners = [
            CGPoint(x: minX, y: minY), CGPoint(x: maxX, y: minY), CGPoint(x: minX, y: maxY), CGPoint(x: maxX, y: maxY),
        ].map { $0.applying(t) }
        let xs = corners.map(\.x)
        let ys = corners.map(\.y)
        return CGRect(x: xs.min()!, y: ys.min()!, width: xs.max()! - xs.min()!, height: ys.max()! - ys.min()!)
    }
}
