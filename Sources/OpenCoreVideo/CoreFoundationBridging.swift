// The CoreFoundation names that need Foundation: numbers, and dictionaries passed as `NSDictionary`.
//
// On Apple's platforms CFNumber and NSNumber, CFDictionary and NSDictionary are toll-free bridged: the compiler
// converts one to the other implicitly, so capture code passes `attributes as NSDictionary` where a CFDictionary is
// asked for. Linux has no toll-free bridging; these overloads take the `NSDictionary` and read it as the
// `[String: Any]` our `CFDictionary` is.

import Foundation

/// A number: dictionary values such as a pixel format (`kCVPixelFormatType_32BGRA as CFNumber`).
///
/// Apple's CoreFoundation type, reduced to what the capture API needs: Foundation's `NSNumber`, which Swift numbers
/// convert to with `as`, and which every attribute reader here accepts.
public typealias CFNumber = NSNumber

extension Dictionary where Key == String, Value == Any {
    /// The dictionary's string-keyed entries, as toll-free bridging would give them on Apple's platforms; entries
    /// whose key is not a string are left out (no CoreVideo or CoreMedia key is anything else).
    package init(bridging dictionary: NSDictionary) {
        self.init()
        for case let (key as String, value) in dictionary {
            self[key] = value
        }
    }
}

/// ``CVPixelBufferCreate(_:_:_:_:_:_:)`` with attributes given as an `NSDictionary`, as Apple's toll-free bridging
/// allows (`attributes as NSDictionary`).
@_disfavoredOverload
@discardableResult
public func CVPixelBufferCreate(
    _ allocator: CFAllocator?, _ width: Int, _ height: Int, _ pixelFormatType: OSType,
    _ pixelBufferAttributes: NSDictionary?, _ pixelBufferOut: UnsafeMutablePointer<CVPixelBuffer?>
) -> CVReturn {
    CVPixelBufferCreate(
        allocator, width, height, pixelFormatType, pixelBufferAttributes.map(CFDictionary.init(bridging:)),
        pixelBufferOut)
}

/// ``CVPixelBufferPoolCreate(_:_:_:_:)`` with attributes given as `NSDictionary`s, as Apple's toll-free bridging
/// allows.
@_disfavoredOverload
@discardableResult
public func CVPixelBufferPoolCreate(
    _ allocator: CFAllocator?, _ poolAttributes: NSDictionary?, _ pixelBufferAttributes: NSDictionary?,
    _ poolOut: UnsafeMutablePointer<CVPixelBufferPool?>
) -> CVReturn {
    CVPixelBufferPoolCreate(
        allocator, poolAttributes.map(CFDictionary.init(bridging:)),
        pixelBufferAttributes.map(CFDictionary.init(bridging:)), poolOut)
}

/// ``CVPixelBufferCreateWithBytes(_:_:_:_:_:_:_:_:_:_:)`` with attributes given as an `NSDictionary`.
@_disfavoredOverload
@discardableResult
public func CVPixelBufferCreateWithBytes(
    _ allocator: CFAllocator?, _ width: Int, _ height: Int, _ pixelFormatType: OSType,
    _ baseAddress: UnsafeMutableRawPointer, _ bytesPerRow: Int,
    _ releaseCallback: CVPixelBufferReleaseBytesCallback?, _ releaseRefCon: UnsafeMutableRawPointer?,
    _ pixelBufferAttributes: NSDictionary?, _ pixelBufferOut: UnsafeMutablePointer<CVPixelBuffer?>
) -> CVReturn {
    CVPixelBufferCreateWithBytes(
        allocator, width, height, pixelFormatType, baseAddress, bytesPerRow, releaseCallback, releaseRefCon,
        pixelBufferAttributes.map(CFDictionary.init(bridging:)), pixelBufferOut)
}

/// ``CVPixelBufferCreateWithPlanarBytes(_:_:_:_:_:_:_:_:_:_:_:_:_:_:_:)`` with attributes given as an
/// `NSDictionary`.
@_disfavoredOverload
@discardableResult
public func CVPixelBufferCreateWithPlanarBytes(
    _ allocator: CFAllocator?, _ width: Int, _ height: Int, _ pixelFormatType: OSType,
    _ dataPtr: UnsafeMutableRawPointer?, _ dataSize: Int, _ numberOfPlanes: Int,
    _ planeBaseAddress: UnsafeMutablePointer<UnsafeMutableRawPointer?>, _ planeWidth: UnsafeMutablePointer<Int>,
    _ planeHeight: UnsafeMutablePointer<Int>, _ planeBytesPerRow: UnsafeMutablePointer<Int>,
    _ releaseCallback: CVPixelBufferReleasePlanarBytesCallback?, _ releaseRefCon: UnsafeMutableRawPointer?,
    _ pixelBufferAttributes: NSDictionary?, _ pixelBufferOut: UnsafeMutablePointer<CVPixelBuffer?>
) -> CVReturn {
    CVPixelBufferCreateWithPlanarBytes(
        allocator, width, height, pixelFormatType, dataPtr, dataSize, numberOfPlanes, planeBaseAddress, planeWidth,
        planeHeight, planeBytesPerRow, releaseCallback, releaseRefCon,
        pixelBufferAttributes.map(CFDictionary.init(bridging:)), pixelBufferOut)
}

/// ``CVPixelBufferPoolCreatePixelBufferWithAuxAttributes(_:_:_:_:)`` with the auxiliary attributes given as an
/// `NSDictionary` (`[kCVPixelBufferPoolAllocationThresholdKey: 4] as NSDictionary`).
@_disfavoredOverload
@discardableResult
public func CVPixelBufferPoolCreatePixelBufferWithAuxAttributes(
    _ allocator: CFAllocator?, _ pixelBufferPool: CVPixelBufferPool, _ auxAttributes: NSDictionary?,
    _ pixelBufferOut: UnsafeMutablePointer<CVPixelBuffer?>
) -> CVReturn {
    CVPixelBufferPoolCreatePixelBufferWithAuxAttributes(
        allocator, pixelBufferPool, auxAttributes.map(CFDictionary.init(bridging:)), pixelBufferOut)
}

/// ``CVBufferSetAttachments(_:_:_:)`` with the attachments given as an `NSDictionary`.
@_disfavoredOverload
public func CVBufferSetAttachments(_ buffer: CVBuffer, _ theAttachments: NSDictionary, _ attachmentMode: CVAttachmentMode) {
    CVBufferSetAttachments(buffer, CFDictionary(bridging: theAttachments), attachmentMode)
}
