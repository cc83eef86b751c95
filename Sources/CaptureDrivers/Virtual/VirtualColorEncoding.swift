import Foundation

/// How the virtual camera turns linear light into 8-bit video-range Y'CbCr, and how the readers turn it back.
///
/// Transfer: the BT.709 OETF, `V = 4.5·L` below `L = 0.018`, else `V = 1.099·L^0.45 − 0.099`; its exact inverse in
/// `linear(fromEncoded:)`. Matrix: BT.709 (`Y' = 0.2126 R' + 0.7152 G' + 0.0722 B'`) at every size, so the driver
/// tags every buffer BT.709. Range: video, Y 16 ... 235 and Cb, Cr 16 ... 240 about 128.
/// Stateless; safe from any thread.
package enum VirtualColorEncoding {
    /// The video-range black level.
    package static let videoBlack: UInt8 = 16
    /// The video-range white level, also the level of every flash-frame pixel.
    package static let videoWhite: UInt8 = 235
    /// The neutral chroma level.
    package static let neutralChroma: UInt8 = 128

    /// The BT.709 OETF: linear light 0...1 (clipped) to the encoded value 0...1.
    @inlinable
    package static func encoded(fromLinear linear: Double) -> Double {
        let l = min(max(linear, 0), 1)
        return l < 0.018 ? 4.5 * l : 1.099 * pow(l, 0.45) - 0.099
    }

    /// The inverse BT.709 OETF: the encoded value 0...1 (clipped) to linear light.
    @inlinable
    package static func linear(fromEncoded encoded: Double) -> Double {
        let v = min(max(encoded, 0), 1)
        return v < 0.081 ? v / 4.5 : pow((v + 0.099) / 1.099, 1 / 0.45)
    }

    /// The video-range Y', Cb and Cr, unrounded, of a linear RGB value (each component clipped to 0...1).
    @inlinable
    package static func videoYCbCr(fromLinear rgb: VirtualRGB) -> (y: Double, cb: Double, cr: Double) {
        let r = encoded(fromLinear: rgb.red)
        let g = encoded(fromLinear: rgb.green)
        let b = encoded(fromLinear: rgb.blue)
        let y = 0.2126 * r + 0.7152 * g + 0.0722 * b
        return (y: 16 + 219 * y, cb: 128 + 224 * (b - y) / 1.8556, cr: 128 + 224 * (r - y) / 1.5748)
    }

    /// An unrounded level rounded and clamped to a byte.
    @inlinable
    package static func byte(_ level: Double) -> UInt8 {
        UInt8(min(max(level.rounded(), 0), 255))
    }
}
