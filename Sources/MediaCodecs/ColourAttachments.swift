import OpenCoreVideo

/// A pixel buffer's colour primaries, transfer function and gamma level attachments
/// (`kCVImageBufferColorPrimariesKey`, `kCVImageBufferTransferFunctionKey`, `kCVImageBufferGammaLevelKey`): what a
/// conversion that only changes the matrix, the range, the packing or the size must carry from its source to its
/// result. libswscale converts none of them (it has no gamut or curve conversion), so the result's numbers keep the
/// source's primaries and curve, and say so, as Apple's pixel transfer propagates them.
///
/// Value type; any thread.
package struct ColourAttachments: Hashable, Sendable {
    package var primaries: String?
    package var transferFunction: String?
    package var gammaLevel: Double?

    package init(primaries: String? = nil, transferFunction: String? = nil, gammaLevel: Double? = nil) {
        self.primaries = primaries
        self.transferFunction = transferFunction
        self.gammaLevel = gammaLevel
    }

    /// What `buffer` says.
    package init(of buffer: CVPixelBuffer) {
        primaries = CVBufferCopyAttachment(buffer, kCVImageBufferColorPrimariesKey, nil) as? String
        transferFunction = CVBufferCopyAttachment(buffer, kCVImageBufferTransferFunctionKey, nil) as? String
        gammaLevel = CVBufferCopyAttachment(buffer, kCVImageBufferGammaLevelKey, nil) as? Double
    }

    /// Makes `buffer` say the same: sets these (propagating) and removes what this does not say, since pooled
    /// buffers come back with the attachments of their previous frame.
    package func attach(to buffer: CVPixelBuffer) {
        guard ColourAttachments(of: buffer) != self else { return }
        set(primaries, kCVImageBufferColorPrimariesKey, on: buffer)
        set(transferFunction, kCVImageBufferTransferFunctionKey, on: buffer)
        set(gammaLevel, kCVImageBufferGammaLevelKey, on: buffer)
    }

    private func set(_ value: (any Sendable)?, _ key: CFString, on buffer: CVPixelBuffer) {
        if let value {
            CVBufferSetAttachment(buffer, key, value, .shouldPropagate)
        } else {
            CVBufferRemoveAttachment(buffer, key)
        }
    }
}
