// Apple's CVImageBuffer functions that capture code calls on pixel buffers.

// Foundation for CGSize and CGRect, which swift-corelibs-foundation provides on Linux.
import Foundation

/// The size of the buffer's pixels, in pixels. Apple's `CVImageBufferGetEncodedSize`.
public func CVImageBufferGetEncodedSize(_ imageBuffer: CVImageBuffer) -> CGSize {
    CGSize(width: imageBuffer.width, height: imageBuffer.height)
}

/// The size at which to display the image; the encoded size here (square pixels, no clean aperture).
/// Apple's `CVImageBufferGetDisplaySize`.
public func CVImageBufferGetDisplaySize(_ imageBuffer: CVImageBuffer) -> CGSize {
    CGSize(width: imageBuffer.width, height: imageBuffer.height)
}

/// The part of the image to show; the whole image here (no clean aperture). Apple's `CVImageBufferGetCleanRect`.
public func CVImageBufferGetCleanRect(_ imageBuffer: CVImageBuffer) -> CGRect {
    CGRect(x: 0, y: 0, width: imageBuffer.width, height: imageBuffer.height)
}

/// Whether the image's rows run bottom to top; always false here. Apple's `CVImageBufferIsFlipped`.
public func CVImageBufferIsFlipped(_ imageBuffer: CVImageBuffer) -> Bool {
    false
}
