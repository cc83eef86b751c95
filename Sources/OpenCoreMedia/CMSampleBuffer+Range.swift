import Foundation

// Part of a sample buffer as a buffer of its own: Apple's `CMSampleBufferCopySampleBufferForRange`. It is how PCM
// audio is cut (at a recording's start, a limit, a file switch, a pause, a time range read from a file), so every
// cut in the framework rounds the same way: callers turn a time into a sample index, and the samples are exact.

extension CMSampleBuffer {
    /// Samples `range` of this buffer as a new buffer: the same format, the bytes of those samples (shared, not
    /// copied), their timing (with a single timing entry, the first sample of the range starts `lowerBound`
    /// durations later), and the attachments that propagate.
    ///
    /// Throws `NSOSStatusErrorDomain` errors with Apple's codes:
    /// - `kCMSampleBufferError_SampleIndexOutOfRange` when the range is empty or reaches past the buffer;
    /// - `kCMSampleBufferError_CannotSubdivide` for an image buffer, or bytes that are not one run per sample
    ///   (no sizes, or sizes that overrun the data);
    /// - `kCMSampleBufferError_BufferNotReady` when the data is not ready.
    ///
    /// Threading: safe from any thread, as every read of a sample buffer is.
    public func copy(samplesIn range: Range<CMItemIndex>) throws -> CMSampleBuffer {
        guard range.lowerBound >= 0, !range.isEmpty, range.upperBound <= numSamples else {
            throw coreMediaError(
                kCMSampleBufferError_SampleIndexOutOfRange, "samples \(range) are not inside 0..<\(numSamples)")
        }
        if range == 0..<numSamples, imageBuffer != nil { return try withNewTiming(storedTimingEntries) }
        guard imageBuffer == nil, let data = dataBuffer, !storedSizeEntries.isEmpty else {
            throw coreMediaError(kCMSampleBufferError_CannotSubdivide, "the buffer has no per-sample bytes to cut")
        }
        guard dataIsReady else {
            throw coreMediaError(kCMSampleBufferError_BufferNotReady, "the buffer's data is not ready")
        }
        let sizes = storedSizeEntries
        let offset = sizes.count == 1 ? sizes[0] * range.lowerBound : sizes[..<range.lowerBound].reduce(0, +)
        let length = sizes.count == 1 ? sizes[0] * range.count : sizes[range].reduce(0, +)
        guard offset + length <= data.dataLength else {
            throw coreMediaError(
                kCMSampleBufferError_CannotSubdivide,
                "the samples' sizes add up to more than the \(data.dataLength) bytes of data")
        }
        let copy = try CMSampleBuffer(
            dataBuffer: CMBlockBuffer(referencing: data, offset: offset, length: length),
            formatDescription: formatDescription, numSamples: range.count, sampleTimings: try timings(of: range),
            sampleSizes: sizes.count == 1 ? sizes : Array(sizes[range]))
        let propagating = withAttachments { $0.propagating }
        copy.withAttachments { $0.merge(propagating) }
        return copy
    }

    /// The timing entries of samples `range`, stored as this buffer stores its own (none, one, or one each).
    private func timings(of range: Range<CMItemIndex>) throws -> [CMSampleTimingInfo] {
        let entries = storedTimingEntries
        switch entries.count {
        case 0: return []
        case 1: return [try sampleTimingInfo(at: range.lowerBound)]
        default: return Array(entries[range])
        }
    }
}

/// Creates a sample buffer holding samples `sampleRange` of `sbuf`. The corresponding Apple function is
/// `CMSampleBufferCopySampleBufferForRange`; see ``CMSampleBuffer/copy(samplesIn:)`` for what is shared and the
/// errors returned.
public func CMSampleBufferCopySampleBufferForRange(
    allocator: CFAllocator?, sampleBuffer sbuf: CMSampleBuffer, sampleRange: CFRange,
    sampleBufferOut: UnsafeMutablePointer<CMSampleBuffer?>
) -> OSStatus {
    guard sampleRange.length > 0, sampleRange.location >= 0,
        sampleRange.location <= CMItemIndex.max - sampleRange.length
    else {
        sampleBufferOut.pointee = nil
        return kCMSampleBufferError_SampleIndexOutOfRange
    }
    return reportingStatus(into: sampleBufferOut) {
        try sbuf.copy(samplesIn: sampleRange.location..<(sampleRange.location + sampleRange.length))
    }
}
