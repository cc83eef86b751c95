import Foundation
import Synchronization

public let kCMSampleBufferError_AllocationFailed: OSStatus = -12730
public let kCMSampleBufferError_RequiredParameterMissing: OSStatus = -12731
public let kCMSampleBufferError_AlreadyHasDataBuffer: OSStatus = -12732
public let kCMSampleBufferError_BufferNotReady: OSStatus = -12733
public let kCMSampleBufferError_SampleIndexOutOfRange: OSStatus = -12734
public let kCMSampleBufferError_BufferHasNoSampleSizes: OSStatus = -12735
public let kCMSampleBufferError_BufferHasNoSampleTimingInfo: OSStatus = -12736
public let kCMSampleBufferError_ArrayTooSmall: OSStatus = -12737
public let kCMSampleBufferError_InvalidEntryCount: OSStatus = -12738
public let kCMSampleBufferError_CannotSubdivide: OSStatus = -12739
public let kCMSampleBufferError_SampleTimingInfoInvalid: OSStatus = -12740
public let kCMSampleBufferError_InvalidMediaTypeForOperation: OSStatus = -12741
public let kCMSampleBufferError_InvalidSampleData: OSStatus = -12742
public let kCMSampleBufferError_InvalidMediaFormat: OSStatus = -12743
public let kCMSampleBufferError_Invalidated: OSStatus = -12744
public let kCMSampleBufferError_DataFailed: OSStatus = -16750
public let kCMSampleBufferError_DataCanceled: OSStatus = -16751

/// When a sample is decoded, presented, and for how long, as CoreMedia's struct.
///
/// Value type; safe to use from any thread.
public struct CMSampleTimingInfo: Hashable, Sendable {
    /// How long the sample lasts.
    public var duration: CMTime
    /// When the sample is presented.
    public var presentationTimeStamp: CMTime
    /// When the sample is decoded; `.invalid` when samples are in presentation order.
    public var decodeTimeStamp: CMTime

    /// All three times invalid (Apple's `CMSampleTimingInfo()`).
    public init() { self.init(duration: .invalid, presentationTimeStamp: .invalid, decodeTimeStamp: .invalid) }

    public init(duration: CMTime, presentationTimeStamp: CMTime, decodeTimeStamp: CMTime) {
        self.duration = duration
        self.presentationTimeStamp = presentationTimeStamp
        self.decodeTimeStamp = decodeTimeStamp
    }

    /// All three times invalid.
    public static let invalid = CMSampleTimingInfo()
}

/// All three times invalid, as Apple's constant.
public let kCMTimingInfoInvalid = CMSampleTimingInfo.invalid

/// Called to make a not-yet-ready sample buffer's data ready, with the refcon given at creation.
///
/// Apple's is a `@convention(c)` function pointer; ours is a Swift function type because `CMSampleBuffer` is a
/// Swift class here. Code that passes `nil` or a closure literal compiles against both.
public typealias CMSampleBufferMakeDataReadyCallback = (CMSampleBuffer, UnsafeMutableRawPointer?) -> OSStatus

/// Samples of one media type with their timing, format and data: the currency of the capture graph.
///
/// A video frame's buffer holds one sample and an image buffer (`imageBuffer`); an audio period's holds many
/// samples in a block buffer (`dataBuffer`) and one timing entry that applies to each in turn. Buffers carry
/// attachments (`CMGetAttachment`), such as the reason a frame was dropped.
///
/// Threading: thread safe. Timing, format and sample layout are immutable; the data buffer (settable once),
/// readiness, validity and attachments are guarded by a mutex. The pixels and bytes themselves are not
/// synchronized: producers fill them before the buffer is handed on.
public final class CMSampleBuffer: AttachmentBearing, @unchecked Sendable {
    /// The state that may change after creation.
    private struct MutableState {
        var dataBuffer: CMBlockBuffer?
        var isDataReady: Bool
        var isValid = true
        var makeDataReady: MakeDataReady?
        var attachments = AttachmentTable()
        /// Set by `CMSampleBufferSetOutputPresentationTimeStamp`; `.invalid` means "the presentation time".
        var outputPresentationTimeStamp = CMTime.invalid
    }

    /// Timing entries, the common single entry stored inline so a frame's buffer allocates no array.
    private enum TimingEntries {
        case none
        case one(CMSampleTimingInfo)
        case many([CMSampleTimingInfo])

        init(_ entries: [CMSampleTimingInfo]) {
            switch entries.count {
            case 0: self = .none
            case 1: self = .one(entries[0])
            default: self = .many(entries)
            }
        }

        var count: Int {
            switch self {
            case .none: 0
            case .one: 1
            case .many(let entries): entries.count
            }
        }

        var first: CMSampleTimingInfo? {
            switch self {
            case .none: nil
            case .one(let entry): entry
            case .many(let entries): entries.first
            }
        }

        subscript(index: Int) -> CMSampleTimingInfo {
            switch self {
            case .none: preconditionFailure("no timing entries")
            case .one(let entry): entry
            case .many(let entries): entries[index]
            }
        }

        var array: [CMSampleTimingInfo] {
            switch self {
            case .none: []
            case .one(let entry): [entry]
            case .many(let entries): entries
            }
        }
    }

    /// The creator's callback and refcon. `@unchecked Sendable`: called at most once, by whoever asks for the
    /// data, as Apple's.
    private struct MakeDataReady: @unchecked Sendable {
        let callback: CMSampleBufferMakeDataReadyCallback
        let refcon: UnsafeMutableRawPointer?
    }

    // These are `var` only so a recycler that holds the only reference can reuse the object (see
    // `CMSampleBufferRecycler`); for everyone else they never change after creation.

    /// The uncompressed frame, for video from a device; nil for buffers that carry bytes.
    public private(set) var imageBuffer: CVImageBuffer?
    /// The format of the samples.
    public private(set) var formatDescription: CMFormatDescription?
    /// The number of samples.
    public let numSamples: CMItemCount
    /// 0, 1 (applies to every sample in turn) or `numSamples` timing entries.
    private var timingEntries: TimingEntries
    /// 0, 1 (every sample has this size) or `numSamples` sizes in bytes.
    private let sizeEntries: [Int]
    private let state: Mutex<MutableState>

    private init(
        imageBuffer: CVImageBuffer?, dataBuffer: CMBlockBuffer?, dataReady: Bool,
        makeDataReady: CMSampleBufferMakeDataReadyCallback?, refcon: UnsafeMutableRawPointer?,
        formatDescription: CMFormatDescription?, numSamples: Int, timing: [CMSampleTimingInfo], sizes: [Int]
    ) {
        self.imageBuffer = imageBuffer
        self.formatDescription = formatDescription
        self.numSamples = numSamples
        self.timingEntries = TimingEntries(timing)
        self.sizeEntries = sizes
        self.state = Mutex(
            MutableState(
                dataBuffer: dataBuffer, isDataReady: dataReady,
                makeDataReady: makeDataReady.map { MakeDataReady(callback: $0, refcon: refcon) }))
    }

    /// A buffer of samples in a block buffer (audio, compressed video). Throws `kCMSampleBufferError_*` statuses
    /// (as `NSOSStatusErrorDomain` errors) for inconsistent counts.
    ///
    /// - Parameters:
    ///   - sampleTimings: empty, one entry for every sample in turn, or one per sample.
    ///   - sampleSizes: empty, one size for every sample, or one per sample.
    public convenience init(
        dataBuffer: CMBlockBuffer?, formatDescription: CMFormatDescription?, numSamples: CMItemCount,
        sampleTimings: [CMSampleTimingInfo], sampleSizes: [Int]
    ) throws {
        try self.init(
            dataBuffer: dataBuffer, dataReady: true, makeDataReady: nil, refcon: nil,
            formatDescription: formatDescription, numSamples: numSamples, sampleTimings: sampleTimings,
            sampleSizes: sampleSizes)
    }

    /// A one-sample buffer around an image. Throws `kCMSampleBufferError_InvalidMediaFormat` when the format
    /// description does not describe the image (pixel format and dimensions).
    public convenience init(
        imageBuffer: CVImageBuffer, formatDescription: CMFormatDescription, sampleTiming: CMSampleTimingInfo
    ) throws {
        guard formatDescription.matches(imageBuffer) else {
            throw coreMediaError(
                kCMSampleBufferError_InvalidMediaFormat,
                "the format description \(formatDescription) does not describe the image buffer")
        }
        self.init(unchecked: imageBuffer, formatDescription: formatDescription, sampleTiming: sampleTiming)
    }

    /// A one-sample image buffer whose description the caller guarantees matches (a device's own pool).
    /// Allocates only the object: the timing is stored inline and no attachment table exists until one is set.
    package init(unchecked imageBuffer: CVImageBuffer, formatDescription: CMFormatDescription, sampleTiming: CMSampleTimingInfo) {
        self.imageBuffer = imageBuffer
        self.formatDescription = formatDescription
        self.numSamples = 1
        self.timingEntries = .one(sampleTiming)
        self.sizeEntries = []
        self.state = Mutex(MutableState(dataBuffer: nil, isDataReady: true, makeDataReady: nil))
    }

    /// Makes a buffer no one else holds into a new frame (a recycler's job): new image and timing, valid, no
    /// attachments.
    func reuse(imageBuffer: CVImageBuffer, formatDescription: CMFormatDescription, timing: CMSampleTimingInfo) {
        self.imageBuffer = imageBuffer
        self.formatDescription = formatDescription
        self.timingEntries = .one(timing)
        state.withLock { state in
            state.isValid = true
            state.isDataReady = true
            state.dataBuffer = nil
            state.attachments.removeAll()
            state.outputPresentationTimeStamp = .invalid
        }
    }

    /// Drops the image of a buffer no one else holds, so its pixel buffer can go back to its pool.
    func releaseImage() { imageBuffer = nil }

    package func withAttachments<R>(_ body: (inout AttachmentTable) -> R) -> R {
        state.withLock { body(&$0.attachments) }
    }

    fileprivate convenience init(
        dataBuffer: CMBlockBuffer?, dataReady: Bool, makeDataReady: CMSampleBufferMakeDataReadyCallback?,
        refcon: UnsafeMutableRawPointer?, formatDescription: CMFormatDescription?, numSamples: CMItemCount,
        sampleTimings: [CMSampleTimingInfo], sampleSizes: [Int]
    ) throws {
        guard numSamples >= 0 else {
            throw coreMediaError(kCMSampleBufferError_InvalidEntryCount, "the sample count is negative")
        }
        guard [0, 1, numSamples].contains(sampleTimings.count) else {
            throw coreMediaError(
                kCMSampleBufferError_InvalidEntryCount,
                "\(sampleTimings.count) timing entries for \(numSamples) samples: give 0, 1 or one per sample")
        }
        guard [0, 1, numSamples].contains(sampleSizes.count) else {
            throw coreMediaError(
                kCMSampleBufferError_InvalidEntryCount,
                "\(sampleSizes.count) size entries for \(numSamples) samples: give 0, 1 or one per sample")
        }
        guard sampleSizes.allSatisfy({ $0 >= 0 }) else {
            throw coreMediaError(kCMSampleBufferError_InvalidEntryCount, "a sample size is negative")
        }
        if dataBuffer == nil && formatDescription == nil && numSamples > 0 {
            throw coreMediaError(
                kCMSampleBufferError_RequiredParameterMissing, "samples need a data buffer or a format description")
        }
        self.init(
            imageBuffer: nil, dataBuffer: dataBuffer, dataReady: dataReady, makeDataReady: makeDataReady,
            refcon: refcon, formatDescription: formatDescription, numSamples: numSamples, timing: sampleTimings,
            sizes: sampleSizes)
    }

    /// A copy that shares data, image and format, with new timing; attachments that propagate come along.
    public func withNewTiming(_ sampleTimings: [CMSampleTimingInfo]) throws -> CMSampleBuffer {
        guard [0, 1, numSamples].contains(sampleTimings.count) else {
            throw coreMediaError(kCMSampleBufferError_InvalidEntryCount, "give 0, 1 or one timing entry per sample")
        }
        let snapshot = state.withLock { ($0.dataBuffer, $0.isDataReady, $0.attachments.propagating) }
        let copy = CMSampleBuffer(
            imageBuffer: imageBuffer, dataBuffer: snapshot.0, dataReady: snapshot.1, makeDataReady: nil, refcon: nil,
            formatDescription: formatDescription, numSamples: numSamples, timing: sampleTimings, sizes: sizeEntries)
        copy.withAttachments { $0.merge(snapshot.2) }
        return copy
    }

    // MARK: Data

    /// The samples' bytes; nil for image buffers and buffers whose data is not attached yet.
    public var dataBuffer: CMBlockBuffer? { state.withLock { $0.dataBuffer } }

    /// Attaches the data of a buffer created without it. Fails with `kCMSampleBufferError_AlreadyHasDataBuffer`.
    package func setDataBuffer(_ buffer: CMBlockBuffer) -> OSStatus {
        state.withLock { state in
            guard state.dataBuffer == nil else { return kCMSampleBufferError_AlreadyHasDataBuffer }
            state.dataBuffer = buffer
            return noErr
        }
    }

    /// Whether the data is ready to read.
    public var dataIsReady: Bool { state.withLock { $0.isDataReady } }

    /// Marks the data ready.
    package func setDataReady() { state.withLock { $0.isDataReady = true } }

    /// Makes the data ready by calling the buffer's callback, if it is not ready yet.
    public func makeDataReady() throws {
        let pending = state.withLock { state -> MakeDataReady? in
            guard !state.isDataReady else { return nil }
            return state.makeDataReady
        }
        guard let pending else {
            if !dataIsReady { throw coreMediaError(kCMSampleBufferError_BufferNotReady, "no way to make data ready") }
            return
        }
        let status = pending.callback(self, pending.refcon)
        guard status == noErr else { throw coreMediaError(status, "the make-data-ready callback failed") }
        setDataReady()
    }

    // MARK: Validity

    /// False once the buffer has been invalidated (`CMSampleBufferInvalidate`): its data must not be used.
    public var isValid: Bool { state.withLock { $0.isValid } }

    /// Marks the buffer invalid; later calls throw `kCMSampleBufferError_Invalidated`.
    public func invalidate() throws {
        let wasValid = state.withLock { state in
            defer { state.isValid = false }
            return state.isValid
        }
        if !wasValid { throw coreMediaError(kCMSampleBufferError_Invalidated, "the sample buffer was invalidated") }
    }

    // MARK: Timing

    /// The presentation time of the first sample, or `.invalid` without timing.
    public var presentationTimeStamp: CMTime { timingEntries.first?.presentationTimeStamp ?? .invalid }

    /// The decode time of the first sample, or `.invalid` when samples are in presentation order.
    public var decodeTimeStamp: CMTime { timingEntries.first?.decodeTimeStamp ?? .invalid }

    /// The presentation time after trimming and edits: the one set with
    /// ``CMSampleBufferSetOutputPresentationTimeStamp(_:newValue:)``, otherwise `presentationTimeStamp` (we apply
    /// no edits). Settable, as Apple's Swift property is.
    public var outputPresentationTimeStamp: CMTime {
        get {
            let set = state.withLock { $0.outputPresentationTimeStamp }
            return set.isValid ? set : presentationTimeStamp
        }
        set { state.withLock { $0.outputPresentationTimeStamp = newValue } }
    }

    /// The total duration of every sample, or `.invalid` when any duration is unknown.
    ///
    /// One timing entry for N samples means N times its duration (an audio period); one per sample is summed.
    public var duration: CMTime {
        switch timingEntries.count {
        case 0: return .invalid
        case 1 where numSamples <= 1: return timingEntries[0].duration
        case 1:
            let each = timingEntries[0].duration
            guard let count = Int32(exactly: numSamples) else { return .invalid }
            return each.isNumeric ? CMTimeMultiply(each, multiplier: count) : .invalid
        default:
            let entries = timingEntries.array
            return entries.dropFirst().reduce(entries[0].duration) { total, entry in
                total.isNumeric && entry.duration.isNumeric ? total + entry.duration : .invalid
            }
        }
    }

    /// The timing of every sample, expanded: one entry each.
    public func sampleTimingInfos() throws -> [CMSampleTimingInfo] {
        guard timingEntries.count > 0 else {
            throw coreMediaError(kCMSampleBufferError_BufferHasNoSampleTimingInfo, "the buffer has no timing")
        }
        return try (0..<numSamples).map { try sampleTimingInfo(at: $0) }
    }

    /// The timing of one sample. With a single entry, sample `i` starts `i` durations after the first.
    public func sampleTimingInfo(at sampleIndex: CMItemIndex) throws -> CMSampleTimingInfo {
        guard timingEntries.count > 0 else {
            throw coreMediaError(kCMSampleBufferError_BufferHasNoSampleTimingInfo, "the buffer has no timing")
        }
        guard sampleIndex >= 0, sampleIndex < max(numSamples, 1) else {
            throw coreMediaError(kCMSampleBufferError_SampleIndexOutOfRange, "no sample \(sampleIndex)")
        }
        if timingEntries.count > 1 || sampleIndex == 0 { return timingEntries[sampleIndex] }
        var timing = timingEntries[0]
        guard let index = Int32(exactly: sampleIndex) else {
            throw coreMediaError(kCMSampleBufferError_SampleIndexOutOfRange, "no sample \(sampleIndex)")
        }
        let offset = CMTimeMultiply(timing.duration, multiplier: index)
        timing.presentationTimeStamp = timing.presentationTimeStamp + offset
        if timing.decodeTimeStamp.isValid { timing.decodeTimeStamp = timing.decodeTimeStamp + offset }
        return timing
    }

    /// The timing entries as stored (0, 1 or one per sample), as `CMSampleBufferGetSampleTimingInfoArray` returns.
    package var storedTimingEntries: [CMSampleTimingInfo] { timingEntries.array }

    // MARK: Sizes

    /// The size in bytes of one sample; 0 for image buffers and buffers without sizes.
    public func sampleSize(at sampleIndex: CMItemIndex) -> Int {
        guard sampleIndex >= 0, sampleIndex < numSamples, !sizeEntries.isEmpty else { return 0 }
        return sizeEntries.count == 1 ? sizeEntries[0] : sizeEntries[sampleIndex]
    }

    /// The sizes of every sample, expanded.
    public func sampleSizes() throws -> [Int] {
        guard !sizeEntries.isEmpty else {
            throw coreMediaError(kCMSampleBufferError_BufferHasNoSampleSizes, "the buffer has no sample sizes")
        }
        return (0..<numSamples).map(sampleSize(at:))
    }

    /// The sizes as stored (0, 1 or one per sample).
    package var storedSizeEntries: [Int] { sizeEntries }

    /// The bytes of every sample together; 0 for image buffers.
    public var totalSampleSize: Int {
        sizeEntries.count == 1 ? sizeEntries[0] * numSamples : sizeEntries.reduce(0, +)
    }
}

// MARK: - The C-style functions, with Apple's Swift spelling

/// Creates a sample buffer. The corresponding Apple function is `CMSampleBufferCreate`.
@discardableResult
public func CMSampleBufferCreate(
    allocator: CFAllocator?, dataBuffer: CMBlockBuffer?, dataReady: Bool,
    makeDataReadyCallback: CMSampleBufferMakeDataReadyCallback?, refcon makeDataReadyRefcon: UnsafeMutableRawPointer?,
    formatDescription: CMFormatDescription?, sampleCount numSamples: CMItemCount,
    sampleTimingEntryCount numSampleTimingEntries: CMItemCount,
    sampleTimingArray: UnsafePointer<CMSampleTimingInfo>?, sampleSizeEntryCount numSampleSizeEntries: CMItemCount,
    sampleSizeArray: UnsafePointer<Int>?, sampleBufferOut: UnsafeMutablePointer<CMSampleBuffer?>
) -> OSStatus {
    guard numSampleTimingEntries >= 0, numSampleSizeEntries >= 0,
        numSampleTimingEntries == 0 || sampleTimingArray != nil, numSampleSizeEntries == 0 || sampleSizeArray != nil
    else {
        sampleBufferOut.pointee = nil
        return kCMSampleBufferError_RequiredParameterMissing
    }
    let timings = Array(UnsafeBufferPointer(start: sampleTimingArray, count: numSampleTimingEntries))
    let sizes = Array(UnsafeBufferPointer(start: sampleSizeArray, count: numSampleSizeEntries))
    return reportingStatus(into: sampleBufferOut) {
        try CMSampleBuffer(
            dataBuffer: dataBuffer, dataReady: dataReady, makeDataReady: makeDataReadyCallback,
            refcon: makeDataReadyRefcon, formatDescription: formatDescription, numSamples: numSamples,
            sampleTimings: timings, sampleSizes: sizes)
    }
}

/// Creates a sample buffer whose data is ready. The corresponding Apple function is `CMSampleBufferCreateReady`.
@discardableResult
public func CMSampleBufferCreateReady(
    allocator: CFAllocator?, dataBuffer: CMBlockBuffer?, formatDescription: CMFormatDescription?,
    sampleCount numSamples: CMItemCount, sampleTimingEntryCount numSampleTimingEntries: CMItemCount,
    sampleTimingArray: UnsafePointer<CMSampleTimingInfo>?, sampleSizeEntryCount numSampleSizeEntries: CMItemCount,
    sampleSizeArray: UnsafePointer<Int>?, sampleBufferOut: UnsafeMutablePointer<CMSampleBuffer?>
) -> OSStatus {
    CMSampleBufferCreate(
        allocator: allocator, dataBuffer: dataBuffer, dataReady: true, makeDataReadyCallback: nil, refcon: nil,
        formatDescription: formatDescription, sampleCount: numSamples, sampleTimingEntryCount: numSampleTimingEntries,
        sampleTimingArray: sampleTimingArray, sampleSizeEntryCount: numSampleSizeEntries,
        sampleSizeArray: sampleSizeArray, sampleBufferOut: sampleBufferOut)
}

/// Creates a one-sample buffer around an image. The corresponding Apple function is
/// `CMSampleBufferCreateForImageBuffer`.
@discardableResult
public func CMSampleBufferCreateForImageBuffer(
    allocator: CFAllocator?, imageBuffer: CVImageBuffer, dataReady: Bool,
    makeDataReadyCallback: CMSampleBufferMakeDataReadyCallback?, refcon makeDataReadyRefcon: UnsafeMutableRawPointer?,
    formatDescription: CMVideoFormatDescription, sampleTiming: UnsafePointer<CMSampleTimingInfo>,
    sampleBufferOut: UnsafeMutablePointer<CMSampleBuffer?>
) -> OSStatus {
    reportingStatus(into: sampleBufferOut) {
        try CMSampleBuffer(imageBuffer: imageBuffer, formatDescription: formatDescription, sampleTiming: sampleTiming.pointee)
    }
}

/// Creates a one-sample buffer around an image whose data is ready.
@discardableResult
public func CMSampleBufferCreateReadyWithImageBuffer(
    allocator: CFAllocator?, imageBuffer: CVImageBuffer, formatDescription: CMVideoFormatDescription,
    sampleTiming: UnsafePointer<CMSampleTimingInfo>, sampleBufferOut: UnsafeMutablePointer<CMSampleBuffer?>
) -> OSStatus {
    CMSampleBufferCreateForImageBuffer(
        allocator: allocator, imageBuffer: imageBuffer, dataReady: true, makeDataReadyCallback: nil, refcon: nil,
        formatDescription: formatDescription, sampleTiming: sampleTiming, sampleBufferOut: sampleBufferOut)
}

/// A copy with new timing that shares the data. The corresponding Apple function is
/// `CMSampleBufferCreateCopyWithNewTiming`.
@discardableResult
public func CMSampleBufferCreateCopyWithNewTiming(
    allocator: CFAllocator?, sampleBuffer originalSBuf: CMSampleBuffer,
    sampleTimingEntryCount numSampleTimingEntries: CMItemCount,
    sampleTimingArray: UnsafePointer<CMSampleTimingInfo>?, sampleBufferOut: UnsafeMutablePointer<CMSampleBuffer?>
) -> OSStatus {
    let timings = Array(UnsafeBufferPointer(start: sampleTimingArray, count: max(numSampleTimingEntries, 0)))
    return reportingStatus(into: sampleBufferOut) { try originalSBuf.withNewTiming(timings) }
}

/// The image of a video frame's buffer, or nil.
public func CMSampleBufferGetImageBuffer(_ sbuf: CMSampleBuffer) -> CVImageBuffer? { sbuf.imageBuffer }
/// The block buffer of the samples' bytes, or nil.
public func CMSampleBufferGetDataBuffer(_ sbuf: CMSampleBuffer) -> CMBlockBuffer? { sbuf.dataBuffer }
/// The format of the samples, or nil.
public func CMSampleBufferGetFormatDescription(_ sbuf: CMSampleBuffer) -> CMFormatDescription? {
    sbuf.formatDescription
}
/// The presentation time of the first sample.
public func CMSampleBufferGetPresentationTimeStamp(_ sbuf: CMSampleBuffer) -> CMTime { sbuf.presentationTimeStamp }
/// The decode time of the first sample.
public func CMSampleBufferGetDecodeTimeStamp(_ sbuf: CMSampleBuffer) -> CMTime { sbuf.decodeTimeStamp }
/// The presentation time after trims and edits.
public func CMSampleBufferGetOutputPresentationTimeStamp(_ sbuf: CMSampleBuffer) -> CMTime {
    sbuf.outputPresentationTimeStamp
}
/// The total duration of the samples.
/// Sets the buffer's output presentation time (what a player shows it at after edits), without changing its
/// sample timing. Apple's `CMSampleBufferSetOutputPresentationTimeStamp`; always succeeds here.
@discardableResult
public func CMSampleBufferSetOutputPresentationTimeStamp(_ sbuf: CMSampleBuffer, newValue outputPresentationTimeStamp: CMTime)
    -> OSStatus
{
    sbuf.outputPresentationTimeStamp = outputPresentationTimeStamp
    return noErr
}

public func CMSampleBufferGetDuration(_ sbuf: CMSampleBuffer) -> CMTime { sbuf.duration }
/// The number of samples.
public func CMSampleBufferGetNumSamples(_ sbuf: CMSampleBuffer) -> CMItemCount { sbuf.numSamples }
/// The bytes of every sample together.
public func CMSampleBufferGetTotalSampleSize(_ sbuf: CMSampleBuffer) -> Int { sbuf.totalSampleSize }
/// The size of one sample.
public func CMSampleBufferGetSampleSize(_ sbuf: CMSampleBuffer, at sampleIndex: CMItemIndex) -> Int {
    sbuf.sampleSize(at: sampleIndex)
}
/// Whether the buffer is still valid.
public func CMSampleBufferIsValid(_ sbuf: CMSampleBuffer) -> Bool { sbuf.isValid }
/// Whether the data is ready.
public func CMSampleBufferDataIsReady(_ sbuf: CMSampleBuffer) -> Bool { sbuf.dataIsReady }
/// Marks the data ready.
@discardableResult
public func CMSampleBufferSetDataReady(_ sbuf: CMSampleBuffer) -> OSStatus {
    sbuf.setDataReady()
    return noErr
}
/// Attaches data to a buffer created without it.
@discardableResult
public func CMSampleBufferSetDataBuffer(_ sbuf: CMSampleBuffer, newValue dataBuffer: CMBlockBuffer) -> OSStatus {
    sbuf.setDataBuffer(dataBuffer)
}
/// Invalidates the buffer.
@discardableResult
public func CMSampleBufferInvalidate(_ sbuf: CMSampleBuffer) -> OSStatus {
    do {
        try sbuf.invalidate()
        return noErr
    } catch {
        return kCMSampleBufferError_Invalidated
    }
}

/// The timing of one sample.
@discardableResult
public func CMSampleBufferGetSampleTimingInfo(
    _ sbuf: CMSampleBuffer, at sampleIndex: CMItemIndex, timingInfoOut: UnsafeMutablePointer<CMSampleTimingInfo>
) -> OSStatus {
    do {
        timingInfoOut.pointee = try sbuf.sampleTimingInfo(at: sampleIndex)
        return noErr
    } catch {
        return OSStatus(truncatingIfNeeded: (error as NSError).code)
    }
}

/// The timing entries as stored. With a nil array (or one too small) only the count needed is returned, and the
/// latter fails with `kCMSampleBufferError_ArrayTooSmall`, as Apple's.
@discardableResult
public func CMSampleBufferGetSampleTimingInfoArray(
    _ sbuf: CMSampleBuffer, entryCount: CMItemCount, arrayToFill: UnsafeMutablePointer<CMSampleTimingInfo>?,
    entriesNeededOut: UnsafeMutablePointer<CMItemCount>?
) -> OSStatus {
    copyEntries(sbuf.storedTimingEntries, entryCount, arrayToFill, entriesNeededOut,
                missing: kCMSampleBufferError_BufferHasNoSampleTimingInfo)
}

/// The sample sizes as stored, with the same contract as `CMSampleBufferGetSampleTimingInfoArray`.
@discardableResult
public func CMSampleBufferGetSampleSizeArray(
    _ sbuf: CMSampleBuffer, entryCount: CMItemCount, arrayToFill: UnsafeMutablePointer<Int>?,
    entriesNeededOut: UnsafeMutablePointer<CMItemCount>?
) -> OSStatus {
    copyEntries(sbuf.storedSizeEntries, entryCount, arrayToFill, entriesNeededOut,
                missing: kCMSampleBufferError_BufferHasNoSampleSizes)
}

private func copyEntries<T>(
    _ entries: [T], _ capacity: Int, _ destination: UnsafeMutablePointer<T>?,
    _ neededOut: UnsafeMutablePointer<CMItemCount>?, missing: OSStatus
) -> OSStatus {
    neededOut?.pointee = entries.count
    guard !entries.isEmpty else { return missing }
    guard let destination else { return noErr }
    guard capacity >= entries.count else { return kCMSampleBufferError_ArrayTooSmall }
    destination.update(from: entries, count: entries.count)
    return noErr
}
