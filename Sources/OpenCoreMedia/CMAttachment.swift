
/// Whether an attachment travels with the data to buffers derived from it, as CoreMedia's `CMAttachmentMode`.
public typealias CMAttachmentMode = UInt32
/// The attachment stays on this buffer.
public let kCMAttachmentMode_ShouldNotPropagate: CMAttachmentMode = 0
/// The attachment is copied to buffers derived from this one (`CMPropagateAttachments`).
public let kCMAttachmentMode_ShouldPropagate: CMAttachmentMode = 1

/// Anything that carries attachments. On Apple's platforms any CF object; here the buffers of this package.
public typealias CMAttachmentBearer = CFTypeRef

/// Key-value attachments with a propagation mode: the table behind `CMSetAttachment` and friends. A value type;
/// its owner guards it (a sample buffer keeps it under its mutex). Empty, it allocates nothing.
///
/// Values are expected to be immutable (strings, numbers, dictionaries), as CF attachments are: that is what
/// makes the `@unchecked Sendable` sound.
package struct AttachmentTable: @unchecked Sendable {
    private struct Entry {
        var value: Any
        var mode: CMAttachmentMode
    }

    private var entries: [String: Entry] = [:]

    package init() {}

    package var isEmpty: Bool { entries.isEmpty }

    package func value(forKey key: String) -> (value: Any, mode: CMAttachmentMode)? {
        entries[key].map { ($0.value, $0.mode) }
    }

    package mutating func set(_ value: Any?, forKey key: String, mode: CMAttachmentMode) {
        entries[key] = value.map { Entry(value: $0, mode: mode) }
    }

    package mutating func removeAll() { entries.removeAll() }

    /// The attachments with the given mode, or nil when there are none.
    package func dictionary(mode: CMAttachmentMode) -> [String: Any]? {
        let matching = entries.filter { $0.value.mode == mode }
        return matching.isEmpty ? nil : matching.mapValues(\.value)
    }

    /// The attachments that propagate.
    package var propagating: AttachmentTable {
        var table = AttachmentTable()
        table.entries = entries.filter { $0.value.mode == kCMAttachmentMode_ShouldPropagate }
        return table
    }

    /// Adds `other`'s attachments, replacing those with the same key.
    package mutating func merge(_ other: AttachmentTable) {
        entries.merge(other.entries) { _, new in new }
    }
}

/// A type whose instances carry attachments, guarding them itself.
package protocol AttachmentBearing: AnyObject {
    /// Runs `body` with exclusive access to the attachments.
    func withAttachments<R>(_ body: (inout AttachmentTable) -> R) -> R
}

// MARK: - The C-style functions, with Apple's Swift spelling

/// The attachment for `key`, or nil; its mode goes to `attachmentModeOut`.
/// Targets that carry no attachments (anything but a ``CMSampleBuffer`` here) have none.
public func CMGetAttachment(
    _ target: CMAttachmentBearer, key: CFString, attachmentModeOut: UnsafeMutablePointer<CMAttachmentMode>?
) -> CFTypeRef? {
    guard let found = (target as? any AttachmentBearing)?.withAttachments({ $0.value(forKey: key) }) else {
        return nil
    }
    attachmentModeOut?.pointee = found.mode
    return found.value
}

/// Sets (or, with a nil value, removes) the attachment for `key`.
public func CMSetAttachment(
    _ target: CMAttachmentBearer, key: CFString, value: CFTypeRef?, attachmentMode: CMAttachmentMode
) {
    (target as? any AttachmentBearing)?.withAttachments { $0.set(value, forKey: key, mode: attachmentMode) }
}

/// Sets every attachment in `theAttachments` with one mode.
public func CMSetAttachments(
    _ target: CMAttachmentBearer, attachments theAttachments: CFDictionary, attachmentMode: CMAttachmentMode
) {
    (target as? any AttachmentBearing)?.withAttachments { table in
        for (key, value) in theAttachments { table.set(value, forKey: key, mode: attachmentMode) }
    }
}

/// Removes the attachment for `key`.
public func CMRemoveAttachment(_ target: CMAttachmentBearer, key: CFString) {
    (target as? any AttachmentBearing)?.withAttachments { $0.set(nil, forKey: key, mode: 0) }
}

/// Removes every attachment.
public func CMRemoveAllAttachments(_ target: CMAttachmentBearer) {
    (target as? any AttachmentBearing)?.withAttachments { $0.removeAll() }
}

/// The attachments with the given mode, or nil when there are none.
public func CMCopyDictionaryOfAttachments(
    allocator: CFAllocator?, target: CMAttachmentBearer, attachmentMode: CMAttachmentMode
) -> CFDictionary? {
    (target as? any AttachmentBearing)?.withAttachments { $0.dictionary(mode: attachmentMode) }
}

/// Copies the attachments of `source` whose mode is `kCMAttachmentMode_ShouldPropagate` to `destination`.
public func CMPropagateAttachments(_ source: CMAttachmentBearer, destination: CMAttachmentBearer) {
    guard let from = source as? any AttachmentBearing, let to = destination as? any AttachmentBearing else { return }
    let propagating = from.withAttachments { $0.propagating }
    to.withAttachments { $0.merge(propagating) }
}

// MARK: - Attachment keys and values used by the capture stack

/// Why a frame was dropped; on the sample buffer passed to `captureOutput(_:didDrop:from:)`.
public let kCMSampleBufferAttachmentKey_DroppedFrameReason: CFString = "DroppedFrameReason"
/// The frame arrived after the next one was due: the consumer was too slow.
public let kCMSampleBufferDroppedFrameReason_FrameWasLate: CFString = "FrameWasLate"
/// The device had no free buffer: the consumer held too many.
public let kCMSampleBufferDroppedFrameReason_OutOfBuffers: CFString = "OutOfBuffers"
/// The device skipped frames (a sequence gap, an overrun).
public let kCMSampleBufferDroppedFrameReason_Discontinuity: CFString = "Discontinuity"
/// More detail on a drop.
public let kCMSampleBufferAttachmentKey_DroppedFrameReasonInfo: CFString = "DroppedFrameReasonInfo"
/// The drop happened while the camera switched modes.
public let kCMSampleBufferDroppedFrameReasonInfo_CameraModeSwitch: CFString = "CameraModeSwitch"
/// Seconds of media to trim from the start (audio priming).
public let kCMSampleBufferAttachmentKey_TrimDurationAtStart: CFString = "TrimDurationAtStart"
/// Seconds of media to trim from the end.
public let kCMSampleBufferAttachmentKey_TrimDurationAtEnd: CFString = "TrimDurationAtEnd"
/// The buffer follows a gap: do not interpolate across it.
public let kCMSampleBufferAttachmentKey_ResetDecoderBeforeDecoding: CFString = "ResetDecoderBeforeDecoding"

/// Per-sample: the sample is not a sync (key) frame.
public let kCMSampleAttachmentKey_NotSync: CFString = "NotSync"
/// Per-sample: the sample depends on others.
public let kCMSampleAttachmentKey_DependsOnOthers: CFString = "DependsOnOthers"
/// Per-sample: display the sample immediately.
public let kCMSampleAttachmentKey_DisplayImmediately: CFString = "DisplayImmediately"
