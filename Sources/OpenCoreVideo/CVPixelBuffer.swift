// CVPixelBuffer: an image in memory, its plane geometry, its base-address lock and its memory's owner.

import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An image in main memory: pixels of one pixel format, in one plane or several, with rows padded for alignment.
///
/// Create one with ``CVPixelBufferCreate(_:_:_:_:_:_:)``, take one from a ``CVPixelBufferPool``, or wrap memory
/// you own with ``CVPixelBufferCreateWithBytes(_:_:_:_:_:_:_:_:_:_:)`` and
/// ``CVPixelBufferCreateWithPlanarBytes(_:_:_:_:_:_:_:_:_:_:_:_:_:_:_:)``. Capture outputs deliver them inside
/// `CMSampleBuffer`s (`CMSampleBufferGetImageBuffer`).
///
/// Read and write the pixels between ``CVPixelBufferLockBaseAddress(_:_:)`` and
/// ``CVPixelBufferUnlockBaseAddress(_:_:)``, as on Apple's platforms, or inside
/// ``withLockedPlanes(_:_:)``, which locks and unlocks for you.
///
/// Memory OpenCoreVideo allocates holds all planes in one allocation; every plane starts on a 64-byte boundary
/// and every row's length (`bytesPerRow`) is a multiple of 64, so SIMD code and FFmpeg's `linesize` rules are
/// satisfied without copies. Odd widths and heights round up in subsampled planes: the CbCr plane of a 5×3
/// NV12 buffer is 3 samples (6 bytes) wide and 2 rows high.
///
/// `CVImageBuffer` and `CVBuffer` are the same type here (on Apple's platforms they are its ancestors).
///
/// Threading: thread safe; `@unchecked Sendable`. Geometry is immutable after creation; the base-address lock
/// count is guarded by a mutex, so locking and unlocking from several threads is safe. As on Apple's platforms,
/// the *pixels* are not synchronised: concurrent writers, or a writer and readers, must coordinate themselves
/// (the lock is a count, not a reader-writer lock). A buffer taken from a pool is the caller's alone until the
/// caller releases its last reference.
public final class CVPixelBuffer: @unchecked Sendable {
    /// The image's width in pixels. Apple's C function: ``CVPixelBufferGetWidth(_:)``.
    public let width: Int
    /// The image's height in pixels. Apple's C function: ``CVPixelBufferGetHeight(_:)``.
    public let height: Int
    /// The pixel format, such as ``kCVPixelFormatType_32BGRA``. Apple's C function:
    /// ``CVPixelBufferGetPixelFormatType(_:)``.
    public let pixelFormatType: OSType
    /// The number of planes: 2 for NV12, 3 for I420, and 0 for non-planar formats such as BGRA, as on Apple's
    /// platforms. Apple's C function: ``CVPixelBufferGetPlaneCount(_:)``.
    public let planeCount: Int
    /// The size of the buffer's memory in bytes, padding included. Apple's C function:
    /// ``CVPixelBufferGetDataSize(_:)``.
    public let dataSize: Int

    /// Plane geometry, inline so that no accessor allocates. A non-planar buffer has one entry (the image).
    let layouts: PlaneLayouts
    /// What ``CVPixelBufferGetBaseAddress(_:)`` returns: the memory's start, or a planar wrapper's `dataPtr`.
    let baseAddress: UnsafeMutableRawPointer?
    /// Who owns the memory, and how to give it back when the buffer dies.
    private let backing: Backing
    /// The base-address lock counts.
    private let lockState = Mutex(LockState())
    /// Attachments (``CVBufferSetAttachment(_:_:_:_:)``): key → value and propagation mode. Empty for most buffers,
    /// which costs no allocation.
    let attachmentStore = Mutex<[String: CVBufferAttachment]>([:])

    /// Whether the buffer has planes. Apple's C function: ``CVPixelBufferIsPlanar(_:)``.
    public var isPlanar: Bool { planeCount > 0 }

    /// Bytes per row of a non-planar buffer, or of plane 0 of a planar one. Apple's C function:
    /// ``CVPixelBufferGetBytesPerRow(_:)``.
    public var bytesPerRow: Int { layouts.first.bytesPerRow }

    // MARK: Creation

    /// Allocates a buffer for `width`×`height` pixels of `pixelFormat`, rows a multiple of `bytesPerRowAlignment`
    /// (itself a multiple of 64) and planes 64-byte aligned, in one allocation.
    /// `mapped`: large buffers get pages of their own (pools, whose buffers live long and must give their memory
    /// back when they age out); otherwise malloc, which reuses freed memory quickly for buffers made and dropped
    /// one after another.
    init(allocatingWidth width: Int, height: Int, pixelFormat: OSType, bytesPerRowAlignment: Int = 64, mapped: Bool = false)
        throws(CVPixelBufferCreationError)
    {
        let description = try Self.validate(width: width, height: height, pixelFormat: pixelFormat)
        var layouts = PlaneLayouts()
        var total = 0
        for (index, plane) in description.planes.enumerated() {
            let planeWidth = plane.width(forImageWidth: width)
            let planeHeight = plane.height(forImageHeight: height)
            guard let rowBytes = plane.minimumBytesPerRow(forPlaneWidth: planeWidth),
                let bytesPerRow = roundUp(rowBytes, toMultipleOf: bytesPerRowAlignment)
            else { throw CVPixelBufferCreationError(kCVReturnInvalidSize) }
            let (planeBytes, o1) = bytesPerRow.multipliedReportingOverflow(by: planeHeight)
            let (end, o2) = total.addingReportingOverflow(planeBytes)
            guard !o1, !o2, end <= Self.maximumDataSize else { throw CVPixelBufferCreationError(kCVReturnInvalidSize) }
            // The offset is a multiple of 64 because every earlier plane's size is a multiple of its bytesPerRow.
            layouts[index] = PlaneLayout(
                offset: total, width: planeWidth, height: planeHeight, bytesPerRow: bytesPerRow)
            total = end
        }
        layouts.count = description.planes.count
        let alignment = bytesPerRowAlignment.nonzeroBitCount == 1 ? bytesPerRowAlignment : Self.planeAlignment
        let memory: UnsafeMutableRawPointer
        let backing: Backing
        if mapped && total >= Self.mappedAllocationSize && alignment <= Int(getpagesize()) {
            // Frames (a 1080p NV12 frame is 3 MB) get pages of their own, so a freed buffer's memory goes back to
            // the system at once; from malloc it would stay in the heap (glibc raises its mmap threshold after
            // the first large free) and a pool that shrinks would not shrink the process.
            let mapped = mmap(nil, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
            guard let mapped, mapped != MAP_FAILED else { throw CVPixelBufferCreationError(kCVReturnAllocationFailed) }
            memory = mapped
            backing = .mapped(total)
        } else {
            var allocated: UnsafeMutableRawPointer?
            // posix_memalign, not UnsafeMutableRawPointer.allocate: running out of memory is a result, not a trap.
            guard posix_memalign(&allocated, alignment, total) == 0, let allocated else {
                throw CVPixelBufferCreationError(kCVReturnAllocationFailed)
            }
            memory = allocated
            backing = .owned
        }
        for index in 0..<layouts.count {
            layouts[index].baseAddress = memory + layouts[index].offset
        }
        self.width = width
        self.height = height
        self.pixelFormatType = pixelFormat
        self.planeCount = description.isPlanar ? description.planes.count : 0
        self.dataSize = total
        self.layouts = layouts
        self.baseAddress = memory
        self.backing = backing
    }

    /// Buffers at least this large are mapped pages, not heap memory (see the allocating initializer).
    static let mappedAllocationSize = 1 << 20

    /// Wraps memory the buffer does not own; `release` runs exactly once, when the buffer's last reference goes.
    ///
    /// For devices that hand out their own memory: a V4L2 mmap buffer, an FFmpeg frame. `planes` has one entry
    /// for a non-planar format and one per plane otherwise; each `bytesPerRow` must hold a full row of its plane.
    /// No alignment is required of wrapped memory. When the initializer throws, `release` is not called and the
    /// caller still owns the memory.
    ///
    /// - Throws: ``CVPixelBufferCreationError`` with `kCVReturnInvalidArgument` (zero size, wrong plane count,
    ///   short rows) or `kCVReturnInvalidPixelFormat` (unknown format).
    package convenience init(
        width: Int, height: Int, pixelFormatType: OSType, planes: [WrappedPlane],
        release: @escaping @Sendable () -> Void
    ) throws(CVPixelBufferCreationError) {
        let description = try Self.validate(width: width, height: height, pixelFormat: pixelFormatType)
        guard planes.count == description.planes.count else {
            throw CVPixelBufferCreationError(kCVReturnInvalidArgument)
        }
        var layouts = PlaneLayouts()
        for (index, (plane, wrapped)) in zip(description.planes, planes).enumerated() {
            layouts[index] = try Self.wrappedLayout(
                plane, width: plane.width(forImageWidth: width), height: plane.height(forImageHeight: height),
                baseAddress: wrapped.baseAddress, bytesPerRow: wrapped.bytesPerRow)
        }
        layouts.count = planes.count
        self.init(
            width: width, height: height, description: description, layouts: layouts,
            baseAddress: planes[0].baseAddress, dataSize: nil, backing: .closure(release))
    }

    /// The designated initializer of wrapped buffers; geometry already validated.
    init(
        width: Int, height: Int, description: PixelFormatDescription, layouts: PlaneLayouts,
        baseAddress: UnsafeMutableRawPointer?, dataSize: Int?, backing: Backing
    ) {
        self.width = width
        self.height = height
        self.pixelFormatType = description.pixelFormat
        self.planeCount = description.isPlanar ? layouts.count : 0
        self.layouts = layouts
        self.baseAddress = baseAddress
        self.dataSize = dataSize ?? layouts.totalBytes
        self.backing = backing
    }

    deinit {
        switch backing {
        case .owned:
            free(baseAddress)
        case .mapped(let size):
            munmap(baseAddress, size)
        case .bytes(let callback, let refCon):
            callback?(refCon, UnsafeRawPointer(baseAddress))
        case .planarBytes(let callback, let refCon, let dataPointer, let dataSize):
            guard let callback else { return }
            let count = layouts.count
            withUnsafeTemporaryAllocation(of: UnsafeRawPointer?.self, capacity: count) { addresses in
                for index in 0..<count {
                    addresses[index] = UnsafeRawPointer(layouts[index].baseAddress)
                }
                callback(refCon, UnsafeRawPointer(dataPointer), dataSize, count, addresses.baseAddress)
            }
        case .closure(let release):
            release()
        }
    }

    // MARK: Geometry

    /// The layout of plane `index` as the C functions see it: `nil` for a non-planar buffer or a bad index.
    @inline(__always)
    func planeLayout(_ index: Int) -> PlaneLayout? {
        guard planeCount > 0, index >= 0, index < planeCount else { return nil }
        return layouts[index]
    }

    // MARK: Locking

    /// Locks the base address; balanced by ``unlockBaseAddress(_:)`` with the same flags.
    func lockBaseAddress(_ flags: CVPixelBufferLockFlags) -> CVReturn {
        lockState.withLock { state in
            if flags.contains(.readOnly) {
                state.readOnlyLocks += 1
            } else {
                state.readWriteLocks += 1
            }
        }
        return kCVReturnSuccess
    }

    /// Unlocks the base address: `kCVReturnError` if it is not locked, `kCVReturnInvalidArgument` if it is
    /// locked only with other flags (a read-only lock undone by a read-write unlock, or the reverse).
    func unlockBaseAddress(_ flags: CVPixelBufferLockFlags) -> CVReturn {
        let status = lockState.withLock { state -> CVReturn in
            if flags.contains(.readOnly) {
                guard state.readOnlyLocks > 0 else {
                    return state.readWriteLocks > 0 ? kCVReturnInvalidArgument : kCVReturnError
                }
                state.readOnlyLocks -= 1
            } else {
                guard state.readWriteLocks > 0 else {
                    return state.readOnlyLocks > 0 ? kCVReturnInvalidArgument : kCVReturnError
                }
                state.readWriteLocks -= 1
            }
            return kCVReturnSuccess
        }
        #if DEBUG
            if status == kCVReturnError {
                debugWarnOnce(
                    .unlockWithoutLock, "CVPixelBufferUnlockBaseAddress called on a buffer that is not locked")
            } else if status == kCVReturnInvalidArgument {
                debugWarnOnce(
                    .unlockFlagsMismatch,
                    "CVPixelBufferUnlockBaseAddress flags differ from CVPixelBufferLockBaseAddress's "
                        + "(pass .readOnly to both or to neither)")
            }
        #endif
        return status
    }

    /// Whether the base address is locked, read-only or read-write.
    package var isBaseAddressLocked: Bool {
        lockState.withLock { $0.readOnlyLocks > 0 || $0.readWriteLocks > 0 }
    }

    /// Forgets any locks left by the previous holder; called by pools before handing the buffer out again, while
    /// the pool holds the only reference.
    func resetForReuse() {
        lockState.withLock { state in
            #if DEBUG
                if state.readOnlyLocks > 0 || state.readWriteLocks > 0 {
                    debugWarnOnce(
                        .releasedWhileLocked, "a CVPixelBuffer was released while its base address was locked")
                }
            #endif
            state = LockState()
        }
    }

    /// In debug builds, notes an access to a base address while the buffer is unlocked (see the DocC article's
    /// locking rules). Release builds do nothing: Apple returns the address unlocked too.
    @inline(__always)
    func noteBaseAddressAccess() {
        #if DEBUG
            if !isBaseAddressLocked {
                CVPixelBuffer.debugUnlockedAccessCount.add(1, ordering: .relaxed)
                debugWarnOnce(
                    .unlockedAccess,
                    "a CVPixelBuffer base address was read while the buffer is unlocked; "
                        + "call CVPixelBufferLockBaseAddress first")
            }
        #endif
    }

    #if DEBUG
        /// Debug builds only: how many times a base address was taken from an unlocked buffer, process-wide.
        package static let debugUnlockedAccessCount = Atomic<Int>(0)
    #endif

    // MARK: Limits and validation

    /// Every plane starts on a multiple of this, and every row is a multiple of it.
    package static let planeAlignment = 64
    /// The largest width or height accepted.
    package static let maximumDimension = 1 << 15
    /// The largest allocation accepted (4 GiB).
    static let maximumDataSize = 1 << 32

    /// The format's description after checking the size: `kCVReturnInvalidArgument` for a size below 1,
    /// `kCVReturnInvalidSize` above ``maximumDimension``, `kCVReturnInvalidPixelFormat` for an unknown format.
    static func validate(width: Int, height: Int, pixelFormat: OSType) throws(CVPixelBufferCreationError)
        -> PixelFormatDescription
    {
        guard width > 0, height > 0 else { throw CVPixelBufferCreationError(kCVReturnInvalidArgument) }
        guard width <= maximumDimension, height <= maximumDimension else {
            throw CVPixelBufferCreationError(kCVReturnInvalidSize)
        }
        guard let description = PixelFormatDescription.describing(pixelFormat) else {
            throw CVPixelBufferCreationError(kCVReturnInvalidPixelFormat)
        }
        return description
    }

    /// The layout of one wrapped plane, after checking that its rows hold `width` samples.
    static func wrappedLayout(
        _ plane: PixelFormatDescription.Plane, width: Int, height: Int, baseAddress: UnsafeMutableRawPointer?,
        bytesPerRow: Int
    ) throws(CVPixelBufferCreationError) -> PlaneLayout {
        guard width > 0, height > 0, width <= maximumDimension, height <= maximumDimension,
            let baseAddress, let rowBytes = plane.minimumBytesPerRow(forPlaneWidth: width), bytesPerRow >= rowBytes,
            !bytesPerRow.multipliedReportingOverflow(by: height).overflow
        else { throw CVPixelBufferCreationError(kCVReturnInvalidArgument) }
        return PlaneLayout(
            offset: 0, width: width, height: height, bytesPerRow: bytesPerRow, baseAddress: baseAddress)
    }
}

/// `CVImageBuffer` is ``CVPixelBuffer`` here; on Apple's platforms it is a base type of it.
public typealias CVImageBuffer = CVPixelBuffer

/// `CVBuffer` is ``CVPixelBuffer`` here; on Apple's platforms it is a base type of it.
public typealias CVBuffer = CVPixelBuffer

/// One plane of memory to wrap: its first byte and the distance between rows.
///
/// Threading: a value; `@unchecked Sendable` because it only carries the address to the buffer that will own it.
package struct WrappedPlane {
    package var baseAddress: UnsafeMutableRawPointer
    package var bytesPerRow: Int

    package init(baseAddress: UnsafeMutableRawPointer, bytesPerRow: Int) {
        self.baseAddress = baseAddress
        self.bytesPerRow = bytesPerRow
    }
}

// `UnsafeMutableRawPointer` is not Sendable; a wrapped plane is handed to the buffer that owns it from then on.
extension WrappedPlane: @unchecked Sendable {}

/// Why a pixel buffer or pool could not be made (or a buffer taken), as the `CVReturn` Apple's function returns.
///
/// Threading: a value; `Sendable`.
package struct CVPixelBufferCreationError: Error, Equatable {
    package var status: CVReturn

    package init(_ status: CVReturn) {
        self.status = status
    }
}

// MARK: - Internals

/// Where a plane is and how big it is.
struct PlaneLayout {
    /// Offset from the start of an owned allocation; 0 for wrapped planes.
    var offset = 0
    var width = 0
    var height = 0
    var bytesPerRow = 0
    var baseAddress: UnsafeMutableRawPointer?
}

/// Up to ``PixelFormatDescription/maximumPlaneCount`` plane layouts, stored inline (an array would allocate).
struct PlaneLayouts {
    var count = 0
    private var plane0 = PlaneLayout()
    private var plane1 = PlaneLayout()
    private var plane2 = PlaneLayout()

    subscript(index: Int) -> PlaneLayout {
        get {
            switch index {
            case 0: plane0
            case 1: plane1
            default: plane2
            }
        }
        set {
            switch index {
            case 0: plane0 = newValue
            case 1: plane1 = newValue
            default: plane2 = newValue
            }
        }
    }

    var first: PlaneLayout { plane0 }

    /// The bytes the planes span, rows included in full.
    var totalBytes: Int {
        var total = 0
        for index in 0..<count {
            let (bytes, o1) = self[index].bytesPerRow.multipliedReportingOverflow(by: self[index].height)
            let (sum, o2) = total.addingReportingOverflow(bytes)
            guard !o1, !o2 else { return Int.max }
            total = sum
        }
        return total
    }
}

/// Who owns a buffer's memory.
enum Backing {
    /// Allocated by OpenCoreVideo with `posix_memalign`; freed in `deinit`.
    case owned
    /// Mapped by OpenCoreVideo (anonymous pages of this many bytes); unmapped in `deinit`.
    case mapped(Int)
    /// From ``CVPixelBufferCreateWithBytes(_:_:_:_:_:_:_:_:_:_:)``.
    case bytes(CVPixelBufferReleaseBytesCallback?, UnsafeMutableRawPointer?)
    /// From ``CVPixelBufferCreateWithPlanarBytes(_:_:_:_:_:_:_:_:_:_:_:_:_:_:_:)``: callback, refCon, dataPtr,
    /// dataSize.
    case planarBytes(CVPixelBufferReleasePlanarBytesCallback?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int)
    /// From the package initializer for device memory.
    case closure(@Sendable () -> Void)
}

/// Base-address lock counts, kept apart so that an unlock with the wrong flags is detected.
struct LockState {
    var readOnlyLocks = 0
    var readWriteLocks = 0
}

/// `value` rounded up to a multiple of `multiple`, or `nil` on overflow.
func roundUp(_ value: Int, toMultipleOf multiple: Int) -> Int? {
    let (sum, overflow) = value.addingReportingOverflow(multiple - 1)
    return overflow ? nil : sum / multiple * multiple
}

// MARK: - Debug diagnostics

#if DEBUG
    /// Misuse that debug builds report, each once per process.
    enum DebugWarning: Int {
        case unlockWithoutLock, unlockFlagsMismatch, unlockedAccess, releasedWhileLocked
    }

    private let debugWarningsIssued = Atomic<Int>(0)

    /// Writes `message` to standard error the first time `warning` happens in this process.
    func debugWarnOnce(_ warning: DebugWarning, _ message: @autoclosure () -> String) {
        let bit = 1 << warning.rawValue
        let previous = debugWarningsIssued.bitwiseOr(bit, ordering: .relaxed).oldValue
        guard previous & bit == 0 else { return }
        var line = "OpenCoreVideo debug check: \(message()) (reported once; debug builds only)\n"
        // write(2) rather than fputs(stderr): the global `stderr` is shared mutable state to strict concurrency.
        line.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
#endif
