// A minimal CGImage: what `AVAssetImageGenerator.copyCGImage(at:actualTime:)` returns, and what code reads of it
// (size, layout, colour space, and the pixels through its data provider). Linux has no CoreGraphics.

import Foundation
import OpenCoreVideo

/// Immutable bytes, as CoreFoundation's `CFData` (toll-free bridged to `NSData` on Apple's platforms).
public typealias CFData = NSData

/// The bytes of `data`; valid while `data` lives. Apple's `CFDataGetBytePtr`.
public func CFDataGetBytePtr(_ data: CFData) -> UnsafePointer<UInt8>? {
    data.length == 0 ? nil : data.bytes.assumingMemoryBound(to: UInt8.self)
}

/// The number of bytes in `data`. Apple's `CFDataGetLength`.
public func CFDataGetLength(_ data: CFData) -> CFIndex { data.length }

/// Where an image's alpha channel is and whether colours are premultiplied by it. Apple's `CGImageAlphaInfo`.
///
/// Value type; safe to use from any thread.
public enum CGImageAlphaInfo: UInt32, Sendable {
    case none = 0
    case premultipliedLast = 1
    case premultipliedFirst = 2
    case last = 3
    case first = 4
    case noneSkipLast = 5
    case noneSkipFirst = 6
    case alphaOnly = 7
}

/// How an image's pixels are laid out: the alpha info in the low bits, the byte order above. Apple's
/// `CGBitmapInfo`.
///
/// Value type; safe to use from any thread.
public struct CGBitmapInfo: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let alphaInfoMask = CGBitmapInfo(rawValue: 0x1F)
    public static let byteOrderMask = CGBitmapInfo(rawValue: 0x7000)
    public static let byteOrder32Little = CGBitmapInfo(rawValue: 2 << 12)
    public static let byteOrder32Big = CGBitmapInfo(rawValue: 4 << 12)
}

/// Where an image's bytes come from. Apple's `CGDataProvider`, holding the bytes.
///
/// Threading: immutable; safe to share between threads.
public final class CGDataProvider: @unchecked Sendable {
    /// The bytes. Apple's `data` (a copy on Apple's platforms; the same bytes here, which are immutable).
    public let data: CFData?

    /// A provider of `data`. Apple's `init?(data:)`.
    public init?(data: CFData) { self.data = data }
}

/// A bitmap image: 8 bits per component, four bytes per pixel in BGRA memory order (little-endian ARGB with
/// premultiplied alpha, CoreGraphics' `kCGImageAlphaPremultipliedFirst | kCGBitmapByteOrder32Little`), rows
/// `bytesPerRow` apart. Apple's `CGImage`, reduced to reading what an image generator made; there is no drawing.
///
/// Threading: immutable; safe to share between threads.
public final class CGImage: @unchecked Sendable {
    public let width: Int
    public let height: Int
    public let bitsPerComponent: Int
    public let bitsPerPixel: Int
    public let bytesPerRow: Int
    public let colorSpace: CGColorSpace?
    public let bitmapInfo: CGBitmapInfo
    public let dataProvider: CGDataProvider?

    /// The alpha channel's place: first (BGRA in memory, little-endian ARGB), premultiplied.
    public var alphaInfo: CGImageAlphaInfo {
        CGImageAlphaInfo(rawValue: bitmapInfo.intersection(.alphaInfoMask).rawValue) ?? .none
    }

    /// An image of a 32BGRA pixel buffer's pixels, copied (the buffer may be reused); nil for another format.
    package init?(copying buffer: CVPixelBuffer, colorSpace: CGColorSpace) {
        guard CVPixelBufferGetPixelFormatType(buffer) == kCVPixelFormatType_32BGRA else { return nil }
        CVPixelBufferLockBaseAddress(buffer, .readOnly)
        defer { CVPixelBufferUnlockBaseAddress(buffer, .readOnly) }
        guard let base = CVPixelBufferGetBaseAddress(buffer) else { return nil }
        width = CVPixelBufferGetWidth(buffer)
        height = CVPixelBufferGetHeight(buffer)
        bytesPerRow = CVPixelBufferGetBytesPerRow(buffer)
        bitsPerComponent = 8
        bitsPerPixel = 32
        self.colorSpace = colorSpace
        bitmapInfo = CGBitmapInfo(rawValue: CGImageAlphaInfo.premultipliedFirst.rawValue).union(.byteOrder32Little)
        dataProvider = CGDataProvider(data: NSData(bytes: base, length: bytesPerRow * height))
    }
}
