// Pixel buffer and pool attribute keys (Apple's string values) and how their values are read.

// Foundation only for `NSNumber`, the value type Apple-style attribute dictionaries often hold.
import Foundation

// MARK: - Pixel buffer attribute keys

/// The pixel format of the buffers a pool makes: an `OSType` (or an array of them, the first is used).
/// Apple's value: `"PixelFormatType"`.
public let kCVPixelBufferPixelFormatTypeKey: CFString = "PixelFormatType"

/// The width in pixels of the buffers a pool makes. Apple's value: `"Width"`.
public let kCVPixelBufferWidthKey: CFString = "Width"

/// The height in pixels of the buffers a pool makes. Apple's value: `"Height"`.
public let kCVPixelBufferHeightKey: CFString = "Height"

/// A row alignment in bytes; rows are padded to a multiple of both it and 64. Apple's value:
/// `"BytesPerRowAlignment"`.
public let kCVPixelBufferBytesPerRowAlignmentKey: CFString = "BytesPerRowAlignment"

/// A plane alignment in bytes; accepted for compatibility, planes are always 64-byte aligned (and aligned to
/// a power-of-two row alignment). Apple's value: `"PlaneAlignment"`.
public let kCVPixelBufferPlaneAlignmentKey: CFString = "PlaneAlignment"

/// Accepted for compatibility and ignored: every buffer can back an image. Apple's value: `"CGImageCompatibility"`.
public let kCVPixelBufferCGImageCompatibilityKey: CFString = "CGImageCompatibility"

/// Accepted for compatibility and ignored. Apple's value: `"CGBitmapContextCompatibility"`.
public let kCVPixelBufferCGBitmapContextCompatibilityKey: CFString = "CGBitmapContextCompatibility"

/// Accepted for compatibility and ignored: there is no IOSurface on Linux. Apple's value: `"IOSurfaceProperties"`.
public let kCVPixelBufferIOSurfacePropertiesKey: CFString = "IOSurfaceProperties"

/// Accepted for compatibility and ignored. Apple's value: `"MetalCompatibility"`.
public let kCVPixelBufferMetalCompatibilityKey: CFString = "MetalCompatibility"

/// Accepted for compatibility and ignored. Apple's value: `"OpenGLCompatibility"`.
public let kCVPixelBufferOpenGLCompatibilityKey: CFString = "OpenGLCompatibility"

// MARK: - Pool attribute keys

/// The number of buffers a pool allocates when it is created, and keeps through
/// ``CVPixelBufferPoolFlush(_:_:)`` with `.excessBuffers`. Apple's value: `"MinimumBufferCount"`.
public let kCVPixelBufferPoolMinimumBufferCountKey: CFString = "MinimumBufferCount"

/// Accepted for compatibility and ignored: free buffers do not age out; call ``CVPixelBufferPoolFlush(_:_:)``.
/// Apple's value: `"MaximumBufferAge"`.
public let kCVPixelBufferPoolMaximumBufferAgeKey: CFString = "MaximumBufferAge"

/// In the auxiliary attributes of ``CVPixelBufferPoolCreatePixelBufferWithAuxAttributes(_:_:_:_:)``: how many of
/// the pool's buffers may be held at once before the call fails with ``kCVReturnWouldExceedAllocationThreshold``.
/// Apple's value: `"AllocationThreshold"`.
public let kCVPixelBufferPoolAllocationThresholdKey: CFString = "AllocationThreshold"

// MARK: - Reading values

/// The values OpenCoreVideo reads from a pixel buffer attributes dictionary.
struct PixelBufferAttributes {
    var width: Int?
    var height: Int?
    var pixelFormat: OSType?
    /// A multiple of 64: the least common multiple of 64 and the requested alignment.
    var bytesPerRowAlignment = CVPixelBuffer.planeAlignment
    /// The attachments every buffer made with these attributes gets: `kCVBufferPropagatedAttachmentsKey`'s with
    /// `.shouldPropagate`, `kCVBufferNonPropagatedAttachmentsKey`'s with `.shouldNotPropagate`, as Apple's.
    var attachments: [(key: String, value: CFTypeRef, mode: CVAttachmentMode)] = []

    /// Sets ``attachments`` on `buffer`.
    func attach(to buffer: CVBuffer) {
        for attachment in attachments { CVBufferSetAttachment(buffer, attachment.key, attachment.value, attachment.mode) }
    }

    /// Reads `dictionary`; a present value of the wrong type is `kCVReturnInvalidPixelBufferAttributes`.
    init(_ dictionary: CFDictionary?) throws(CVPixelBufferCreationError) {
        guard let dictionary else { return }
        let invalid = CVPixelBufferCreationError(kCVReturnInvalidPixelBufferAttributes)
        if let value = dictionary[kCVPixelBufferWidthKey] {
            guard let width = attributeInteger(value) else { throw invalid }
            self.width = width
        }
        if let value = dictionary[kCVPixelBufferHeightKey] {
            guard let height = attributeInteger(value) else { throw invalid }
            self.height = height
        }
        if let value = dictionary[kCVPixelBufferPixelFormatTypeKey] {
            let first = (value as? [Any])?.first ?? value
            guard let code = attributeInteger(first), let format = OSType(exactly: code) else { throw invalid }
            self.pixelFormat = format
        }
        for (key, mode) in [(kCVBufferPropagatedAttachmentsKey, CVAttachmentMode.shouldPropagate),
            (kCVBufferNonPropagatedAttachmentsKey, .shouldNotPropagate)]
        {
            guard let value = dictionary[key] else { continue }
            let entries: [String: Any]
            if let swiftDictionary = value as? [String: Any] {
                entries = swiftDictionary
            } else if let bridged = value as? NSDictionary {
                entries = CFDictionary(bridging: bridged)
            } else {
                throw invalid
            }
            // Sorted, so buffers get their attachments in one order whatever the dictionary's.
            for (name, attachment) in entries.sorted(by: { $0.key < $1.key }) {
                attachments.append((name, attachment, mode))
            }
        }
        if let value = dictionary[kCVPixelBufferBytesPerRowAlignmentKey] {
            guard let requested = attributeInteger(value), requested >= 0, requested <= 1 << 16 else { throw invalid }
            if requested > 0 {
                bytesPerRowAlignment = leastCommonMultiple(CVPixelBuffer.planeAlignment, requested)
            }
        }
    }
}

/// A whole number from an attribute value: any Swift integer, an integral floating-point value, or an `NSNumber`.
func attributeInteger(_ value: Any) -> Int? {
    switch value {
    case let number as Int:
        return number
    case let number as any BinaryInteger:
        return Int(exactly: number)
    case let number as Double:
        return Int(exactly: number)
    case let number as Float:
        return Int(exactly: number)
    case let number as NSNumber:
        return Int(exactly: number.doubleValue)
    default:
        return nil
    }
}

func leastCommonMultiple(_ a: Int, _ b: Int) -> Int {
    var (x, y) = (a, b)
    while y != 0 { (x, y) = (y, x % y) }
    return a / x * b
}
