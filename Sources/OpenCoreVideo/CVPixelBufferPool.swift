// CVPixelBufferPool: recycles pixel buffers, objects and memory both, so steady-state capture allocates nothing.

import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A set of same-sized pixel buffers that are reused: a buffer you release goes back to its pool, and the next
/// ``CVPixelBufferPoolCreatePixelBuffer(_:_:_:)`` hands the same buffer out again.
///
/// Create one with ``CVPixelBufferPoolCreate(_:_:_:_:)``, giving the buffers' width, height and pixel format
/// in the pixel buffer attributes. Capture devices draw their frames from pools; a consumer that holds on to
/// buffers makes its device's pool run dry (see ``kCVPixelBufferPoolAllocationThresholdKey``) and frames are
/// dropped with reason `OutOfBuffers`, as on Apple's platforms.
///
/// After warm-up, taking a buffer and releasing it allocates nothing: the pool recycles the `CVPixelBuffer`
/// objects themselves, not only their memory. A buffer is free again when the pool's reference is the only
/// one left, so weak or unowned references to a released buffer do not keep it out of the pool; do not keep
/// them. Free buffers unused for ``kCVPixelBufferPoolMaximumBufferAgeKey`` seconds (1 by default, 0 for never) are
/// released at a later checkout; ``CVPixelBufferPoolFlush(_:_:)`` frees every free one beyond the minimum now.
///
/// Threading: thread safe; `@unchecked Sendable`. Every call takes the pool's mutex (a futex; it never
/// allocates). A buffer handed out belongs to the caller alone until its last reference is released, from any
/// thread.
public final class CVPixelBufferPool: @unchecked Sendable {
    /// The buffers' width in pixels.
    package let width: Int
    /// The buffers' height in pixels.
    package let height: Int
    /// The buffers' pixel format.
    package let pixelFormatType: OSType
    /// The buffers' row alignment: a multiple of 64.
    package let bytesPerRowAlignment: Int
    /// Buffers made at creation and kept by a flush.
    package let minimumBufferCount: Int
    /// What ``CVPixelBufferPoolGetPixelBufferAttributes(_:)`` returns. Immutable.
    let pixelBufferAttributes: CFDictionary
    /// What ``CVPixelBufferPoolGetAttributes(_:)`` returns. Immutable.
    let poolAttributes: CFDictionary
    /// How long a free buffer may stay unused before the pool releases it (kCVPixelBufferPoolMaximumBufferAgeKey);
    /// 0 keeps free buffers forever.
    package let maximumBufferAge: Double
    /// Every buffer the pool has made, handed out or not, with when each was last handed out.
    private let buffers: Mutex<Slots>
    /// Where buffer ages are read from: the monotonic clock, nanoseconds. Tests of aging set their own, to step
    /// time rather than wait for it.
    package let agingClock = Mutex<@Sendable () -> Int64>(CVPixelBufferPool.nowNanoseconds)

    /// The pool's buffers and their last use (host nanoseconds), index for index.
    private struct Slots {
        var buffers: [CVPixelBuffer]
        var lastUse: [Int64]
        var lastTrim: Int64 = 0
    }

    /// A pool of `width`×`height` buffers of `pixelFormatType`, `minimumBufferCount` of them allocated now.
    ///
    /// The Swift form of ``CVPixelBufferPoolCreate(_:_:_:_:)``, for devices and converters.
    ///
    /// - Throws: ``CVPixelBufferCreationError`` with the status ``CVPixelBufferCreate(_:_:_:_:_:_:)`` would give
    ///   for the size and format, ``kCVReturnInvalidPoolAttributes`` for a negative count, or
    ///   ``kCVReturnPoolAllocationFailed``.
    package convenience init(
        width: Int, height: Int, pixelFormatType: OSType, minimumBufferCount: Int = 0, bytesPerRowAlignment: Int = 64
    ) throws(CVPixelBufferCreationError) {
        let attributes: CFDictionary = [
            kCVPixelBufferWidthKey: width, kCVPixelBufferHeightKey: height,
            kCVPixelBufferPixelFormatTypeKey: pixelFormatType,
            kCVPixelBufferBytesPerRowAlignmentKey: bytesPerRowAlignment,
        ]
        try self.init(
            poolAttributes: [kCVPixelBufferPoolMinimumBufferCountKey: minimumBufferCount],
            pixelBufferAttributes: attributes)
    }

    /// Reads the attribute dictionaries of ``CVPixelBufferPoolCreate(_:_:_:_:)`` and makes the minimum buffers.
    init(poolAttributes: CFDictionary?, pixelBufferAttributes: CFDictionary?) throws(CVPixelBufferCreationError) {
        let attributes = try PixelBufferAttributes(pixelBufferAttributes)
        guard let width = attributes.width, let height = attributes.height, let format = attributes.pixelFormat else {
            throw CVPixelBufferCreationError(kCVReturnInvalidPixelBufferAttributes)
        }
        _ = try CVPixelBuffer.validate(width: width, height: height, pixelFormat: format)
        var minimumBufferCount = 0
        if let value = poolAttributes?[kCVPixelBufferPoolMinimumBufferCountKey] {
            guard let count = attributeInteger(value), count >= 0, count <= Self.maximumMinimumBufferCount else {
                throw CVPixelBufferCreationError(kCVReturnInvalidPoolAttributes)
            }
            minimumBufferCount = count
        }
        var buffers: [CVPixelBuffer] = []
        buffers.reserveCapacity(max(minimumBufferCount, Self.initialCapacity))
        for _ in 0..<minimumBufferCount {
            guard
                let buffer = try? CVPixelBuffer(
                    allocatingWidth: width, height: height, pixelFormat: format,
                    bytesPerRowAlignment: attributes.bytesPerRowAlignment, mapped: true)
            else { throw CVPixelBufferCreationError(kCVReturnPoolAllocationFailed) }
            buffers.append(buffer)
        }
        var maximumBufferAge = 1.0
        if let value = poolAttributes?[kCVPixelBufferPoolMaximumBufferAgeKey] {
            guard let age = (value as? Double) ?? attributeInteger(value).map(Double.init), age >= 0 else {
                throw CVPixelBufferCreationError(kCVReturnInvalidPoolAttributes)
            }
            maximumBufferAge = age
        }
        var resolved = pixelBufferAttributes ?? [:]
        resolved[kCVPixelBufferWidthKey] = width
        resolved[kCVPixelBufferHeightKey] = height
        resolved[kCVPixelBufferPixelFormatTypeKey] = format
        resolved[kCVPixelBufferBytesPerRowAlignmentKey] = attributes.bytesPerRowAlignment
        var resolvedPool = poolAttributes ?? [:]
        resolvedPool[kCVPixelBufferPoolMinimumBufferCountKey] = minimumBufferCount
        resolvedPool[kCVPixelBufferPoolMaximumBufferAgeKey] = maximumBufferAge
        self.width = width
        self.height = height
        self.pixelFormatType = format
        self.bytesPerRowAlignment = attributes.bytesPerRowAlignment
        self.minimumBufferCount = minimumBufferCount
        self.pixelBufferAttributes = resolved
        self.poolAttributes = resolvedPool
        self.maximumBufferAge = maximumBufferAge
        self.bufferAttributes = attributes
        self.buffers = Mutex(Slots(buffers: buffers, lastUse: Array(repeating: 0, count: buffers.count)))
    }

    /// The pixel buffer attributes read once, for the attachments every buffer handed out gets
    /// (`kCVBufferPropagatedAttachmentsKey`, `kCVBufferNonPropagatedAttachmentsKey`).
    let bufferAttributes: PixelBufferAttributes

    /// Room reserved for this many buffers at creation, so that warm-up rarely grows the array.
    static let initialCapacity = 16
    /// The largest ``kCVPixelBufferPoolMinimumBufferCountKey`` accepted.
    static let maximumMinimumBufferCount = 1024

    /// A free buffer, or a new one if none is free; fails with ``kCVReturnWouldExceedAllocationThreshold`` when
    /// `allocationThreshold` buffers are already held.
    ///
    /// The Swift form of ``CVPixelBufferPoolCreatePixelBufferWithAuxAttributes(_:_:_:_:)``. Allocation-free once
    /// the pool holds enough buffers; O(number of buffers the pool has made).
    package func pixelBuffer(allocationThreshold: Int = .max) -> Result<CVPixelBuffer, CVPixelBufferCreationError> {
        let now = agingClock.withLock { $0 }()
        return buffers.withLock { slots -> Result<CVPixelBuffer, CVPixelBufferCreationError> in
            releaseAgedBuffers(&slots, now: now)
            var free: Int?
            var held = 0
            for index in slots.buffers.indices {
                // Why this is race-free: the pool's array holds a strong reference to every buffer it made. A
                // buffer's reference count can rise above 1 only by copying a reference that already exists.
                // Every reference outside the pool descends from one this method returned, under this mutex,
                // when the count was 1. So once a buffer's count has fallen back to 1 (its last outside
                // reference released, on whatever thread), no other thread holds it or can obtain it except
                // through this method, which is serialised by the mutex. The answer "unique" therefore cannot go
                // stale before we hand the buffer out; the answer "shared" may go stale (released just after we
                // looked), which only means the buffer is found free next time. Weak or unowned references are
                // the exception; the type's documentation forbids keeping them.
                if isKnownUniquelyReferenced(&slots.buffers[index]) {
                    if free == nil { free = index }
                    if allocationThreshold == .max { break }
                } else {
                    held += 1
                }
            }
            guard held < allocationThreshold else {
                return .failure(CVPixelBufferCreationError(kCVReturnWouldExceedAllocationThreshold))
            }
            if let free {
                // The last holder's release decremented the count with release ordering; this fence pairs with it
                // so that everything the holder did to the pixels happens before the next holder's writes.
                atomicMemoryFence(ordering: .acquiring)
                let buffer = slots.buffers[free]
                slots.lastUse[free] = now
                buffer.resetForReuse()
                return .success(buffer)
            }
            do throws(CVPixelBufferCreationError) {
                let buffer = try CVPixelBuffer(
                    allocatingWidth: width, height: height, pixelFormat: pixelFormatType,
                    bytesPerRowAlignment: bytesPerRowAlignment, mapped: true)
                slots.buffers.append(buffer)
                slots.lastUse.append(now)
                return .success(buffer)
            } catch {
                return .failure(error)
            }
        }
    }

    /// Releases free buffers unused for longer than ``maximumBufferAge`` (beyond ``minimumBufferCount``), at most
    /// once per age period. Checkouts take the first free buffer, so after a burst the later ones go unused and
    /// age out: a pool grows for a consumer that holds buffers and shrinks back when it stops (Apple's default
    /// age is one second).
    private func releaseAgedBuffers(_ slots: inout Slots, now: Int64) {
        guard maximumBufferAge > 0 else { return }
        let age = Int64(maximumBufferAge * 1e9)
        guard now - slots.lastTrim >= age, slots.buffers.count > minimumBufferCount else { return }
        slots.lastTrim = now
        var index = slots.buffers.count - 1
        while index >= 0, slots.buffers.count > minimumBufferCount {
            if now - slots.lastUse[index] > age, isKnownUniquelyReferenced(&slots.buffers[index]) {
                slots.buffers.remove(at: index)
                slots.lastUse.remove(at: index)
            }
            index -= 1
        }
    }

    @Sendable private static func nowNanoseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    /// Releases free buffers beyond ``minimumBufferCount``; buffers still held are untouched.
    package func flush() {
        buffers.withLock { slots in
            var kept = 0
            var index = 0
            while index < slots.buffers.count {
                if isKnownUniquelyReferenced(&slots.buffers[index]) {
                    if kept < minimumBufferCount {
                        kept += 1
                    } else {
                        slots.buffers.remove(at: index)
                        slots.lastUse.remove(at: index)
                        continue
                    }
                }
                index += 1
            }
        }
    }

    /// How many buffers the pool has made and still keeps, held or free.
    package var bufferCount: Int {
        buffers.withLock { $0.buffers.count }
    }

    /// How many of the pool's buffers are held outside it right now.
    package var heldBufferCount: Int {
        buffers.withLock { slots in
            var held = 0
            for index in slots.buffers.indices where !isKnownUniquelyReferenced(&slots.buffers[index]) {
                held += 1
            }
            return held
        }
    }
}

/// Options of ``CVPixelBufferPoolFlush(_:_:)``. Apple's `CVPixelBufferPoolFlushFlags`.
///
/// Threading: a value; `Sendable`.
public struct CVPixelBufferPoolFlushFlags: OptionSet, Sendable, Hashable {
    public let rawValue: CVOptionFlags

    public init(rawValue: CVOptionFlags) {
        self.rawValue = rawValue
    }

    /// Free every free buffer beyond the pool's minimum count. The corresponding C constant is
    /// `kCVPixelBufferPoolFlushExcessBuffers`.
    public static let excessBuffers = CVPixelBufferPoolFlushFlags(rawValue: 1)
}

// MARK: - Apple's C-style functions

/// Creates a pool of pixel buffers whose width, height and pixel format the pixel buffer attributes give.
///
/// Apple's `CVPixelBufferPoolCreate`. `pixelBufferAttributes` must hold ``kCVPixelBufferWidthKey``,
/// ``kCVPixelBufferHeightKey`` and ``kCVPixelBufferPixelFormatTypeKey``, and may hold
/// ``kCVPixelBufferBytesPerRowAlignmentKey``. `poolAttributes` may hold
/// ``kCVPixelBufferPoolMinimumBufferCountKey``: that many buffers are allocated now.
///
/// - Returns: ``kCVReturnSuccess``; ``kCVReturnInvalidPixelBufferAttributes`` when a required key is missing or
///   malformed; ``kCVReturnInvalidArgument``, ``kCVReturnInvalidSize`` or ``kCVReturnInvalidPixelFormat`` as
///   ``CVPixelBufferCreate(_:_:_:_:_:_:)`` would; ``kCVReturnInvalidPoolAttributes`` for a bad minimum count;
///   ``kCVReturnPoolAllocationFailed`` when the minimum buffers cannot be allocated. On failure `poolOut` is
///   set to `nil`.
@discardableResult
public func CVPixelBufferPoolCreate(
    _ allocator: CFAllocator?, _ poolAttributes: CFDictionary?, _ pixelBufferAttributes: CFDictionary?,
    _ poolOut: UnsafeMutablePointer<CVPixelBufferPool?>
) -> CVReturn {
    do throws(CVPixelBufferCreationError) {
        poolOut.pointee = try CVPixelBufferPool(
            poolAttributes: poolAttributes, pixelBufferAttributes: pixelBufferAttributes)
        return kCVReturnSuccess
    } catch {
        poolOut.pointee = nil
        return error.status
    }
}

/// Takes a buffer from the pool: a free one if there is one, else a newly allocated one.
///
/// Apple's `CVPixelBufferPoolCreatePixelBuffer`. Release the buffer (drop every reference) to give it back.
/// Allocation-free once the pool has made as many buffers as are held at once.
///
/// - Returns: ``kCVReturnSuccess``, or ``kCVReturnAllocationFailed`` when a new buffer cannot be allocated;
///   on failure `pixelBufferOut` is set to `nil`.
@discardableResult
public func CVPixelBufferPoolCreatePixelBuffer(
    _ allocator: CFAllocator?, _ pixelBufferPool: CVPixelBufferPool,
    _ pixelBufferOut: UnsafeMutablePointer<CVPixelBuffer?>
) -> CVReturn {
    store(pixelBufferPool.pixelBuffer(), from: pixelBufferPool, in: pixelBufferOut)
}

/// Takes a buffer from the pool unless ``kCVPixelBufferPoolAllocationThresholdKey`` buffers are already held.
///
/// Apple's `CVPixelBufferPoolCreatePixelBufferWithAuxAttributes`. With `auxAttributes` holding
/// `[kCVPixelBufferPoolAllocationThresholdKey: n]` (n ≥ 1), the call fails with
/// ``kCVReturnWouldExceedAllocationThreshold`` while n of the pool's buffers are held, and succeeds again as
/// soon as one is released. Without the key, or with n ≤ 0, it behaves as
/// ``CVPixelBufferPoolCreatePixelBuffer(_:_:_:)``.
///
/// - Returns: ``kCVReturnSuccess``, ``kCVReturnWouldExceedAllocationThreshold`` or
///   ``kCVReturnAllocationFailed``; on failure `pixelBufferOut` is set to `nil`.
@discardableResult
public func CVPixelBufferPoolCreatePixelBufferWithAuxAttributes(
    _ allocator: CFAllocator?, _ pixelBufferPool: CVPixelBufferPool, _ auxAttributes: CFDictionary?,
    _ pixelBufferOut: UnsafeMutablePointer<CVPixelBuffer?>
) -> CVReturn {
    var threshold = Int.max
    if let value = auxAttributes?[kCVPixelBufferPoolAllocationThresholdKey], let n = attributeInteger(value), n > 0 {
        threshold = n
    }
    return store(pixelBufferPool.pixelBuffer(allocationThreshold: threshold), from: pixelBufferPool, in: pixelBufferOut)
}

/// The pixel buffer attributes of the pool's buffers, with the width, height, pixel format and row alignment
/// resolved. Apple's `CVPixelBufferPoolGetPixelBufferAttributes`.
public func CVPixelBufferPoolGetPixelBufferAttributes(_ pool: CVPixelBufferPool) -> CFDictionary? {
    pool.pixelBufferAttributes
}

/// The pool's attributes, with the minimum buffer count resolved. Apple's `CVPixelBufferPoolGetAttributes`.
public func CVPixelBufferPoolGetAttributes(_ pool: CVPixelBufferPool) -> CFDictionary? {
    pool.poolAttributes
}

/// Frees the pool's free buffers beyond its minimum count; held buffers are untouched and come back as usual.
///
/// Apple's `CVPixelBufferPoolFlush`. Free buffers never age out here, so every free buffer beyond the minimum
/// counts as aged out: with or without `.excessBuffers` the effect is the same.
public func CVPixelBufferPoolFlush(_ pool: CVPixelBufferPool, _ options: CVPixelBufferPoolFlushFlags) {
    pool.flush()
}

/// The type ID of pixel buffer pools, to compare with ``CFGetTypeID(_:)``. Apple's `CVPixelBufferPoolGetTypeID`.
public func CVPixelBufferPoolGetTypeID() -> CFTypeID {
    _CFTypeID(of: CVPixelBufferPool.self)
}

/// Writes a checkout's result through Apple's out-parameter convention.
private func store(
    _ result: Result<CVPixelBuffer, CVPixelBufferCreationError>, from pool: CVPixelBufferPool,
    in pixelBufferOut: UnsafeMutablePointer<CVPixelBuffer?>
) -> CVReturn {
    switch result {
    case .success(let buffer):
        // A reused buffer has them already (unless its holder removed them): set again, as Apple's pool vends them.
        pool.bufferAttributes.attach(to: buffer)
        pixelBufferOut.pointee = buffer
        return kCVReturnSuccess
    case .failure(let error):
        pixelBufferOut.pointee = nil
        return error.status
    }
}
