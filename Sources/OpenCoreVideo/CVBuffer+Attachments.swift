// Apple's CVBuffer attachment functions and the image buffer keys capture code reads: what a pixel buffer's numbers
// mean (the Y'CbCr matrix), carried with the buffer so every converter and encoder downstream reads them the same way.

/// Whether an attachment is copied to buffers made from this one. Apple's `CVAttachmentMode`.
///
/// Value type; safe to use from any thread.
public enum CVAttachmentMode: UInt32, Sendable {
    /// Stays on this buffer. Apple's `kCVAttachmentMode_ShouldNotPropagate`.
    case shouldNotPropagate = 0
    /// Copied by ``CVBufferPropagateAttachments(_:_:)``. Apple's `kCVAttachmentMode_ShouldPropagate`.
    case shouldPropagate = 1
}

/// Apple's C spelling of ``CVAttachmentMode/shouldNotPropagate``.
public let kCVAttachmentMode_ShouldNotPropagate = CVAttachmentMode.shouldNotPropagate
/// Apple's C spelling of ``CVAttachmentMode/shouldPropagate``.
public let kCVAttachmentMode_ShouldPropagate = CVAttachmentMode.shouldPropagate

/// One stored attachment. `@unchecked Sendable`: values are plist-like constants, never mutated in place.
struct CVBufferAttachment: @unchecked Sendable {
    var value: CFTypeRef
    var mode: CVAttachmentMode
}

/// The Y'CbCr matrix of the buffer's pixels; one of the `kCVImageBufferYCbCrMatrix_…` values.
public let kCVImageBufferYCbCrMatrixKey: CFString = "CVImageBufferYCbCrMatrix"
/// ITU-R BT.709: high-definition video, and the virtual cameras at every size.
public let kCVImageBufferYCbCrMatrix_ITU_R_709_2: CFString = "ITU_R_709_2"
/// ITU-R BT.601 (SMPTE 170M): standard-definition video, and JPEG (JFIF), hence MJPEG cameras.
public let kCVImageBufferYCbCrMatrix_ITU_R_601_4: CFString = "ITU_R_601_4"
/// SMPTE 240M, an early HD matrix.
public let kCVImageBufferYCbCrMatrix_SMPTE_240M_1995: CFString = "SMPTE_240M_1995"

/// Sets `key` to `value` on `buffer`. Apple's `CVBufferSetAttachment`.
public func CVBufferSetAttachment(
    _ buffer: CVBuffer, _ key: CFString, _ value: CFTypeRef, _ attachmentMode: CVAttachmentMode
) {
    buffer.attachmentStore.withLock { $0[key] = CVBufferAttachment(value: value, mode: attachmentMode) }
}

/// The value of `key` on `buffer`, or nil; `attachmentMode` receives its mode. Apple's `CVBufferCopyAttachment`.
public func CVBufferCopyAttachment(
    _ buffer: CVBuffer, _ key: CFString, _ attachmentMode: UnsafeMutablePointer<CVAttachmentMode>?
) -> CFTypeRef? {
    guard let attachment = buffer.attachmentStore.withLock({ $0[key] }) else { return nil }
    attachmentMode?.pointee = attachment.mode
    return attachment.value
}

/// Apple's older `CVBufferGetAttachment`: the same as ``CVBufferCopyAttachment(_:_:_:)``.
public func CVBufferGetAttachment(
    _ buffer: CVBuffer, _ key: CFString, _ attachmentMode: UnsafeMutablePointer<CVAttachmentMode>?
) -> CFTypeRef? {
    CVBufferCopyAttachment(buffer, key, attachmentMode)
}

/// The attachments of one mode, or nil when there are none. Apple's `CVBufferCopyAttachments`.
public func CVBufferCopyAttachments(_ buffer: CVBuffer, _ attachmentMode: CVAttachmentMode) -> CFDictionary? {
    let matching = buffer.attachmentStore.withLock { store in
        store.filter { $0.value.mode == attachmentMode }.mapValues(\.value)
    }
    return matching.isEmpty ? nil : matching
}

/// Removes `key` from `buffer`. Apple's `CVBufferRemoveAttachment`.
public func CVBufferRemoveAttachment(_ buffer: CVBuffer, _ key: CFString) {
    _ = buffer.attachmentStore.withLock { $0.removeValue(forKey: key) }
}

/// Removes every attachment of `buffer`. Apple's `CVBufferRemoveAllAttachments`.
public func CVBufferRemoveAllAttachments(_ buffer: CVBuffer) {
    buffer.attachmentStore.withLock { if !$0.isEmpty { $0.removeAll() } }
}

/// Copies the propagating attachments of `sourceBuffer` to `destinationBuffer`. Apple's
/// `CVBufferPropagateAttachments`.
public func CVBufferPropagateAttachments(_ sourceBuffer: CVBuffer, _ destinationBuffer: CVBuffer) {
    guard sourceBuffer !== destinationBuffer else { return }
    let propagating = sourceBuffer.attachmentStore.withLock { store in store.filter { $0.value.mode == .shouldPropagate } }
    guard !propagating.isEmpty else { return }
    destinationBuffer.attachmentStore.withLock { $0.merge(propagating) { _, new in new } }
}

/// Sets every entry of `theAttachments` on `buffer` with one mode, as ``CVBufferSetAttachment(_:_:_:_:)`` would
/// one by one. Apple's `CVBufferSetAttachments`.
public func CVBufferSetAttachments(_ buffer: CVBuffer, _ theAttachments: CFDictionary, _ attachmentMode: CVAttachmentMode) {
    guard !theAttachments.isEmpty else { return }
    buffer.attachmentStore.withLock { store in
        for (key, value) in theAttachments { store[key] = CVBufferAttachment(value: value, mode: attachmentMode) }
    }
}

/// The attachments of one mode; empty (not nil) when the buffer has none of that mode, as Apple's deprecated
/// `CVBufferGetAttachments` answers (``CVBufferCopyAttachments(_:_:)`` answers nil instead).
public func CVBufferGetAttachments(_ buffer: CVBuffer, _ attachmentMode: CVAttachmentMode) -> CFDictionary? {
    CVBufferCopyAttachments(buffer, attachmentMode) ?? [:]
}
