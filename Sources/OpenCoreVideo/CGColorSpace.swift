// The few CoreGraphics types that `import AVFoundation` brings along on Apple's platforms and capture code names:
// colour spaces (kCVImageBufferCGColorSpaceKey's values). Linux has no CoreGraphics; these carry what the names mean.

/// What the numbers of an image mean: a colour model and, for named spaces, the primaries and transfer function.
/// Apple's CoreGraphics class, reduced to what capture and writing code uses.
///
/// Threading: immutable; safe to share between threads.
public final class CGColorSpace: Hashable, @unchecked Sendable, CustomStringConvertible {
    /// The space's name (`CGColorSpace.sRGB` …), or nil for a device space.
    public let name: CFString?
    /// The colour model: RGB or monochrome here.
    public let model: CGColorSpaceModel

    init(name: CFString?, model: CGColorSpaceModel) {
        self.name = name
        self.model = model
    }

    /// The named space `name`, or nil for a name CoreGraphics does not define (Apple's `init?(name:)`).
    public convenience init?(name: CFString) {
        guard let model = Self.models[name] else { return nil }
        self.init(name: name, model: model)
    }

    /// Colour components per pixel, alpha not counted: 3 for RGB, 1 for grey.
    public var numberOfComponents: Int { model == .monochrome ? 1 : 3 }
    /// Whether the space is wider than sRGB (Display P3, BT.2020, and the extended spaces).
    public var isWideGamutRGB: Bool {
        guard let name else { return false }
        return [Self.displayP3, Self.itur_2020, Self.itur_2100_HLG, Self.itur_2100_PQ, Self.extendedSRGB].contains(name)
    }
    /// Whether the space describes high dynamic range (the BT.2100 spaces).
    public var isHDR: Bool { name == Self.itur_2100_HLG || name == Self.itur_2100_PQ }

    public var description: String { "<CGColorSpace \(name ?? "device \(model)")>" }

    public static func == (lhs: CGColorSpace, rhs: CGColorSpace) -> Bool {
        lhs.name == rhs.name && lhs.model == rhs.model
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(model)
    }

    /// sRGB (IEC 61966-2-1).
    public static let sRGB: CFString = "kCGColorSpaceSRGB"
    /// sRGB with linear components.
    public static let linearSRGB: CFString = "kCGColorSpaceLinearSRGB"
    /// sRGB extended beyond 0...1.
    public static let extendedSRGB: CFString = "kCGColorSpaceExtendedSRGB"
    /// Display P3: DCI-P3 primaries, D65 white, sRGB's curve.
    public static let displayP3: CFString = "kCGColorSpaceDisplayP3"
    /// ITU-R BT.709 (HD video).
    public static let itur_709: CFString = "kCGColorSpaceITUR_709"
    /// ITU-R BT.2020 (UHD video).
    public static let itur_2020: CFString = "kCGColorSpaceITUR_2020"
    /// ITU-R BT.2100 with hybrid log-gamma.
    public static let itur_2100_HLG: CFString = "kCGColorSpaceITUR_2100_HLG"
    /// ITU-R BT.2100 with the PQ curve.
    public static let itur_2100_PQ: CFString = "kCGColorSpaceITUR_2100_PQ"
    /// Generic RGB with linear components.
    public static let genericRGBLinear: CFString = "kCGColorSpaceGenericRGBLinear"
    /// Grey with gamma 2.2.
    public static let genericGrayGamma2_2: CFString = "kCGColorSpaceGenericGrayGamma2_2"
    /// Grey with linear components.
    public static let linearGray: CFString = "kCGColorSpaceLinearGray"

    private static let models: [CFString: CGColorSpaceModel] = [
        sRGB: .rgb, linearSRGB: .rgb, extendedSRGB: .rgb, displayP3: .rgb, itur_709: .rgb, itur_2020: .rgb,
        itur_2100_HLG: .rgb, itur_2100_PQ: .rgb, genericRGBLinear: .rgb, genericGrayGamma2_2: .monochrome,
        linearGray: .monochrome,
    ]
}

/// A colour space's model. Apple's `CGColorSpaceModel`.
///
/// Value type; safe to use from any thread.
public enum CGColorSpaceModel: Int32, Sendable {
    case unknown = -1
    case monochrome = 0
    case rgb = 1
    case cmyk = 2
    case lab = 3
    case deviceN = 4
    case indexed = 5
    case pattern = 6
    case XYZ = 7
}

/// The device-dependent RGB space (sRGB here, as on Apple's platforms since macOS 10.4 and iOS).
public func CGColorSpaceCreateDeviceRGB() -> CGColorSpace { CGColorSpace(name: nil, model: .rgb) }
/// The device-dependent grey space.
public func CGColorSpaceCreateDeviceGray() -> CGColorSpace { CGColorSpace(name: nil, model: .monochrome) }
/// The named space `name`, or nil. Apple's `CGColorSpaceCreateWithName`.
public func CGColorSpaceCreateWithName(_ name: CFString) -> CGColorSpace? { CGColorSpace(name: name) }
/// The space's model. Apple's `CGColorSpaceGetModel`.
public func CGColorSpaceGetModel(_ space: CGColorSpace?) -> CGColorSpaceModel { space?.model ?? .unknown }
/// The space's name, or nil. Apple's `CGColorSpaceCopyName`.
public func CGColorSpaceCopyName(_ space: CGColorSpace) -> CFString? { space.name }

/// The image buffer attachment holding a `CGColorSpace` for the buffer's pixels. Apple's
/// `kCVImageBufferCGColorSpaceKey`.
public let kCVImageBufferCGColorSpaceKey: CFString = "CGColorSpace"

/// The colour space a buffer's colour attachments describe: BT.2020 with the PQ or HLG curve, BT.2020, Display P3,
/// BT.709, or sRGB for the sRGB curve; nil when the attachments name no primaries. Apple's
/// `CVImageBufferCreateColorSpaceFromAttachments`.
public func CVImageBufferCreateColorSpaceFromAttachments(_ attachments: CFDictionary) -> Unmanaged<CGColorSpace>? {
    let primaries = attachments[kCVImageBufferColorPrimariesKey] as? String
    let transfer = attachments[kCVImageBufferTransferFunctionKey] as? String
    let name: CFString? =
        switch (primaries, transfer) {
        case (kCVImageBufferColorPrimaries_ITU_R_2020, kCVImageBufferTransferFunction_SMPTE_ST_2084_PQ):
            CGColorSpace.itur_2100_PQ
        case (kCVImageBufferColorPrimaries_ITU_R_2020, kCVImageBufferTransferFunction_ITU_R_2100_HLG):
            CGColorSpace.itur_2100_HLG
        case (kCVImageBufferColorPrimaries_ITU_R_2020, _): CGColorSpace.itur_2020
        case (kCVImageBufferColorPrimaries_P3_D65, _): CGColorSpace.displayP3
        case (kCVImageBufferColorPrimaries_ITU_R_709_2, kCVImageBufferTransferFunction_sRGB): CGColorSpace.sRGB
        case (kCVImageBufferColorPrimaries_ITU_R_709_2, _): CGColorSpace.itur_709
        default: nil
        }
    return name.flatMap(CGColorSpace.init(name:)).map { Unmanaged.passRetained($0) }
}
