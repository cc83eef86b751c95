// CoreMedia functions that take a CFDictionary, taking an `NSDictionary` too.
//
// On Apple's platforms NSDictionary and CFDictionary are toll-free bridged, so capture code passes
// `extensions as NSDictionary` or an `NSMutableDictionary` where a CFDictionary is asked for. Our CFDictionary is
// `[String: Any]`; these overloads read the NSDictionary's string-keyed entries (see OpenCoreVideo's
// CoreFoundationBridging.swift for the pixel buffer ones).

import Foundation
import OpenCoreVideo

/// ``CMSetAttachments(_:attachments:attachmentMode:)`` with the attachments given as an `NSDictionary`.
@_disfavoredOverload
public func CMSetAttachments(
    _ target: CMAttachmentBearer, attachments theAttachments: NSDictionary, attachmentMode: CMAttachmentMode
) {
    CMSetAttachments(target, attachments: CFDictionary(bridging: theAttachments), attachmentMode: attachmentMode)
}

/// ``CMVideoFormatDescriptionCreate(allocator:codecType:width:height:extensions:formatDescriptionOut:)`` with the
/// extensions given as an `NSDictionary`.
@_disfavoredOverload
@discardableResult
public func CMVideoFormatDescriptionCreate(
    allocator: CFAllocator?, codecType: CMVideoCodecType, width: Int32, height: Int32, extensions: NSDictionary?,
    formatDescriptionOut: UnsafeMutablePointer<CMVideoFormatDescription?>
) -> OSStatus {
    CMVideoFormatDescriptionCreate(
        allocator: allocator, codecType: codecType, width: width, height: height,
        extensions: extensions.map(CFDictionary.init(bridging:)), formatDescriptionOut: formatDescriptionOut)
}

/// ``CMAudioFormatDescriptionCreate(allocator:asbd:layoutSize:layout:magicCookieSize:magicCookie:extensions:formatDescriptionOut:)``
/// with the extensions given as an `NSDictionary`.
@_disfavoredOverload
@discardableResult
public func CMAudioFormatDescriptionCreate(
    allocator: CFAllocator?, asbd: UnsafePointer<AudioStreamBasicDescription>, layoutSize: Int,
    layout: UnsafeRawPointer?, magicCookieSize: Int, magicCookie: UnsafeRawPointer?, extensions: NSDictionary?,
    formatDescriptionOut: UnsafeMutablePointer<CMAudioFormatDescription?>
) -> OSStatus {
    CMAudioFormatDescriptionCreate(
        allocator: allocator, asbd: asbd, layoutSize: layoutSize, layout: layout, magicCookieSize: magicCookieSize,
        magicCookie: magicCookie, extensions: extensions.map(CFDictionary.init(bridging:)),
        formatDescriptionOut: formatDescriptionOut)
}
