// Apple's C-style CVPixelBuffer functions, with Apple's Swift signatures.
//
// Every function that returns a CVReturn is @discardableResult: Swift imports Apple's C functions that way, so
// user code that ignores the result compiles here without a warning too.

/// Flags for ``CVPixelBufferLockBaseAddress(_:_:)`` and ``CVPixelBufferUnlockBaseAddress(_:_:)``.
///
/// Apple's `CVPixelBufferLockFlags`. Pass the same flags to the unlock as to the lock.
///
/// Threading: a value; `Sendable`.
public struct CVPixelBufferLockFlags: OptionSet, Sendable, Hashable {
    public let rawValue: CVOptionFlags

    public init(rawValue: CVOptionFlags) {
        self.rawValue = rawValue
    }

    /// The caller only reads the pixels. The corresponding C constant is `kCVPixelBufferLock_ReadOnly`.
    public static let readOnly = CVPixelBufferLockFlags(rawValue: 0x0000_0001)
}

/// Called when a buffer made by ``CVPixelBufferCreateWithBytes(_:_:_:_:_:_:_:_:_:_:)`` dies, with the
/// `releaseRefCon` and `baseAddress` given at creation.
///
/// Apple's `CVPixelBufferReleaseBytesCallback`. Called exactly once, on the thread that drops the last reference.
public typealias CVPixelBufferReleaseBytesCallback = @convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?) ->
    Void

/// Called when a buffer made by ``CVPixelBufferCreateWithPlanarBytes(_:_:_:_:_:_:_:_:_:_:_:_:_:_:_:)`` dies, with
/// the `releaseRefCon`, `dataPtr`, `dataSize`, plane count and plane base addresses given at creation.
///
/// Apple's `CVPixelBufferReleasePlanarBytesCallback`. Called exactly once, on the thread that drops the last
/// reference; the plane address array is valid only during the call.
public typealias CVPixelBufferReleasePlanarBytesCallback = @convention(c) (
    UnsafeMutableRawPointer?, UnsafeRawPointer?, Int, Int, UnsafeMutablePointer<UnsafeRawPointer?>?
) -> Void

// MARK: - Creation

/// Creates a pixel buffer of the given size and format in newly allocated memory.
///
/// Apple's `CVPixelBufferCreate`. Rows are padded to a multiple of 64 bytes (and of
/// ``kCVPixelBufferBytesPerRowAlignmentKey`` if given); the memory is not zeroed. The dictionaries under
/// ``kCVBufferPropagatedAttachmentsKey`` and ``kCVBufferNonPropagatedAttachmentsKey`` become the buffer's
/// attachments in those modes (as with every creation function and pool here); other attributes are read for
/// compatibility and otherwise ignored; the size and format come from the arguments.
///
/// - Returns: ``kCVReturnSuccess``; ``kCVReturnInvalidArgument`` for a width or height below 1;
///   ``kCVReturnInvalidSize`` for a size beyond 32768 pixels or too large to address;
///   ``kCVReturnInvalidPixelFormat`` for a format OpenCoreVideo does not know;
///   ``kCVReturnInvalidPixelBufferAttributes`` for a malformed attribute; ``kCVReturnAllocationFailed`` when
///   memory runs out. On failure `pixelBufferOut` is set to `nil`.
@discardableResult
public func CVPixelBufferCreate(
    _ allocator: CFAllocator?, _ width: Int, _ height: Int, _ pixelFormatType: OSType,
    _ pixelBufferAttributes: CFDictionary?, _ pixelBufferOut: UnsafeMutablePointer<CVPixelBuffer?>
) -> CVReturn {
    do throws(CVPixelBufferCreationError) {
        let attributes = try PixelBufferAttributes(pixelBufferAttributes)
        let buffer = try CVPixelBuffer(
            allocatingWidth: width, height: height, pixelFormat: pixelFormatType,
            bytesPerRowAlignment: attributes.bytesPerRowAlignment)
        attributes.attach(to: buffer)
        pixelBufferOut.pointee = buffer
        return kCVReturnSuccess
    } catch {
        pixelBufferOut.pointee = nil
        return error.status
    }
}

/// Creates a non-planar pixel buffer around memory you own; `releaseCallback` runs exactly once when it dies.
///
/// Apple's `CVPixelBufferCreateWithBytes`. The memory must stay valid until the callback runs; it need not be
/// aligned. `bytesPerRow` must hold a full row (`width` × bytes per pixel). When the call fails the callback is
/// not called and you still own the memory.
///
/// - Returns: ``kCVReturnSuccess``; ``kCVReturnInvalidArgument`` for a bad size or short rows;
///   ``kCVReturnInvalidPixelFormat`` for an unknown or planar format (use
///   ``CVPixelBufferCreateWithPlanarBytes(_:_:_:_:_:_:_:_:_:_:_:_:_:_:_:)``).
@discardableResult
public func CVPixelBufferCreateWithBytes(
    _ allocator: CFAllocator?, _ width: Int, _ height: Int, _ pixelFormatType: OSType,
    _ baseAddress: UnsafeMutableRawPointer, _ bytesPerRow: Int,
    _ releaseCallback: CVPixelBufferReleaseBytesCallback?, _ releaseRefCon: UnsafeMutableRawPointer?,
    _ pixelBufferAttributes: CFDictionary?, _ pixelBufferOut: UnsafeMutablePointer<CVPixelBuffer?>
) -> CVReturn {
    do throws(CVPixelBufferCreationError) {
        let attributes = try PixelBufferAttributes(pixelBufferAttributes)
        let description = try CVPixelBuffer.validate(width: width, height: height, pixelFormat: pixelFormatType)
        guard !description.isPlanar else { throw CVPixelBufferCreationError(kCVReturnInvalidPixelFormat) }
        var layouts = PlaneLayouts()
        layouts[0] = try CVPixelBuffer.wrappedLayout(
            description.planes[0], width: width, height: height, baseAddress: baseAddress, bytesPerRow: bytesPerRow)
        layouts.count = 1
        let buffer = CVPixelBuffer(
            width: width, height: height, description: description, layouts: layouts, baseAddress: baseAddress,
            dataSize: nil, backing: .bytes(releaseCallback, releaseRefCon))
        attributes.attach(to: buffer)
        pixelBufferOut.pointee = buffer
        return kCVReturnSuccess
    } catch {
        pixelBufferOut.pointee = nil
        return error.status
    }
}

/// Creates a planar pixel buffer around plane memory you own; `releaseCallback` runs exactly once when it dies.
///
/// Apple's `CVPixelBufferCreateWithPlanarBytes`. `numberOfPlanes` must match the format (2 for NV12, 3 for
/// I420); the plane arrays hold that many entries. Each plane's `bytesPerRow` must hold a row of its width.
/// `dataPtr` is what ``CVPixelBufferGetBaseAddress(_:)`` returns (plane 0 when `nil`); `dataSize` is what
/// ``CVPixelBufferGetDataSize(_:)`` returns (the planes' extent when 0). When the call fails the callback is not
/// called and you still own the memory.
///
/// - Returns: ``kCVReturnSuccess``; ``kCVReturnInvalidArgument`` for a bad size, plane count, plane pointer or
///   row length; ``kCVReturnInvalidPixelFormat`` for an unknown or non-planar format.
@discardableResult
public func CVPixelBufferCreateWithPlanarBytes(
    _ allocator: CFAllocator?, _ width: Int, _ height: Int, _ pixelFormatType: OSType,
    _ dataPtr: UnsafeMutableRawPointer?, _ dataSize: Int, _ numberOfPlanes: Int,
    _ planeBaseAddress: UnsafeMutablePointer<UnsafeMutableRawPointer?>, _ planeWidth: UnsafeMutablePointer<Int>,
    _ planeHeight: UnsafeMutablePointer<Int>, _ planeBytesPerRow: UnsafeMutablePointer<Int>,
    _ releaseCallback: CVPixelBufferReleasePlanarBytesCallback?, _ releaseRefCon: UnsafeMutableRawPointer?,
    _ pixelBufferAttributes: CFDictionary?, _ pixelBufferOut: UnsafeMutablePointer<CVPixelBuffer?>
) -> CVReturn {
    do throws(CVPixelBufferCreationError) {
        let attributes = try PixelBufferAttributes(pixelBufferAttributes)
        let description = try CVPixelBuffer.validate(width: width, height: height, pixelFormat: pixelFormatType)
        guard description.isPlanar else { throw CVPixelBufferCreationError(kCVReturnInvalidPixelFormat) }
        guard numberOfPlanes == description.planes.count, dataSize >= 0 else {
            throw CVPixelBufferCreationError(kCVReturnInvalidArgument)
        }
        var layouts = PlaneLayouts()
        for index in 0..<numberOfPlanes {
            layouts[index] = try CVPixelBuffer.wrappedLayout(
                description.planes[index], width: planeWidth[index], height: planeHeight[index],
                baseAddress: planeBaseAddress[index], bytesPerRow: planeBytesPerRow[index])
        }
        layouts.count = numberOfPlanes
        let buffer = CVPixelBuffer(
            width: width, height: height, description: description, layouts: layouts,
            baseAddress: dataPtr ?? layouts[0].baseAddress, dataSize: dataSize > 0 ? dataSize : nil,
            backing: .planarBytes(releaseCallback, releaseRefCon, dataPtr, dataSize))
        attributes.attach(to: buffer)
        pixelBufferOut.pointee = buffer
        return kCVReturnSuccess
    } catch {
        pixelBufferOut.pointee = nil
        return error.status
    }
}

/// The type ID of pixel buffers, to compare with ``CFGetTypeID(_:)``. Apple's `CVPixelBufferGetTypeID`.
public func CVPixelBufferGetTypeID() -> CFTypeID {
    _CFTypeID(of: CVPixelBuffer.self)
}

// MARK: - Locking

/// Locks the buffer's base address so the CPU can read (`.readOnly`) or read and write (`[]`) its pixels.
///
/// Apple's `CVPixelBufferLockBaseAddress`. Locks nest: each lock needs an unlock with the same flags. Pointers
/// from ``CVPixelBufferGetBaseAddress(_:)`` and ``CVPixelBufferGetBaseAddressOfPlane(_:_:)`` are valid until the
/// matching ``CVPixelBufferUnlockBaseAddress(_:_:)``. Thread safe.
///
/// - Returns: ``kCVReturnSuccess``.
@discardableResult
public func CVPixelBufferLockBaseAddress(_ pixelBuffer: CVPixelBuffer, _ lockFlags: CVPixelBufferLockFlags)
    -> CVReturn
{
    pixelBuffer.lockBaseAddress(lockFlags)
}

/// Undoes one ``CVPixelBufferLockBaseAddress(_:_:)`` made with the same flags.
///
/// Apple's `CVPixelBufferUnlockBaseAddress`. Misuse is reported, never trapped: debug builds also print a
/// warning once per process.
///
/// - Returns: ``kCVReturnSuccess``; ``kCVReturnError`` if the buffer is not locked; ``kCVReturnInvalidArgument``
///   if it is locked only with other flags.
@discardableResult
public func CVPixelBufferUnlockBaseAddress(_ pixelBuffer: CVPixelBuffer, _ unlockFlags: CVPixelBufferLockFlags)
    -> CVReturn
{
    pixelBuffer.unlockBaseAddress(unlockFlags)
}

// MARK: - Geometry

/// The width in pixels. Apple's `CVPixelBufferGetWidth`.
public func CVPixelBufferGetWidth(_ pixelBuffer: CVPixelBuffer) -> Int {
    pixelBuffer.width
}

/// The height in pixels. Apple's `CVPixelBufferGetHeight`.
public func CVPixelBufferGetHeight(_ pixelBuffer: CVPixelBuffer) -> Int {
    pixelBuffer.height
}

/// The pixel format, such as ``kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange``. Apple's
/// `CVPixelBufferGetPixelFormatType`.
public func CVPixelBufferGetPixelFormatType(_ pixelBuffer: CVPixelBuffer) -> OSType {
    pixelBuffer.pixelFormatType
}

/// The size of the buffer's memory in bytes, row padding included. Apple's `CVPixelBufferGetDataSize`.
public func CVPixelBufferGetDataSize(_ pixelBuffer: CVPixelBuffer) -> Int {
    pixelBuffer.dataSize
}

/// Whether the buffer has planes (NV12, I420). Apple's `CVPixelBufferIsPlanar`.
public func CVPixelBufferIsPlanar(_ pixelBuffer: CVPixelBuffer) -> Bool {
    pixelBuffer.isPlanar
}

/// The number of planes; 0 for a non-planar buffer, as Apple's. Apple's `CVPixelBufferGetPlaneCount`.
public func CVPixelBufferGetPlaneCount(_ pixelBuffer: CVPixelBuffer) -> Int {
    pixelBuffer.planeCount
}

/// The start of the buffer's memory; lock the buffer first.
///
/// Apple's `CVPixelBufferGetBaseAddress`. For a non-planar buffer this is the first pixel. For a planar buffer
/// Apple returns a descriptor block; here it is the first byte of the allocation (plane 0) or the `dataPtr` given
/// to ``CVPixelBufferCreateWithPlanarBytes(_:_:_:_:_:_:_:_:_:_:_:_:_:_:_:)``: use
/// ``CVPixelBufferGetBaseAddressOfPlane(_:_:)`` for planes. Returned even while unlocked, as Apple does; debug
/// builds warn once.
public func CVPixelBufferGetBaseAddress(_ pixelBuffer: CVPixelBuffer) -> UnsafeMutableRawPointer? {
    pixelBuffer.noteBaseAddressAccess()
    return pixelBuffer.baseAddress
}

/// Bytes per row of a non-planar buffer, or of plane 0 of a planar one; a multiple of 64 for buffers
/// OpenCoreVideo allocates. Apple's `CVPixelBufferGetBytesPerRow`.
public func CVPixelBufferGetBytesPerRow(_ pixelBuffer: CVPixelBuffer) -> Int {
    pixelBuffer.bytesPerRow
}

/// The width of a plane in samples: the CbCr plane of a 1920-wide NV12 buffer is 960 (pairs) wide. 0 for a
/// non-planar buffer or an index out of range. Apple's `CVPixelBufferGetWidthOfPlane`.
public func CVPixelBufferGetWidthOfPlane(_ pixelBuffer: CVPixelBuffer, _ planeIndex: Int) -> Int {
    pixelBuffer.planeLayout(planeIndex)?.width ?? 0
}

/// The height of a plane in rows; odd heights round up in subsampled planes. 0 for a non-planar buffer or an
/// index out of range. Apple's `CVPixelBufferGetHeightOfPlane`.
public func CVPixelBufferGetHeightOfPlane(_ pixelBuffer: CVPixelBuffer, _ planeIndex: Int) -> Int {
    pixelBuffer.planeLayout(planeIndex)?.height ?? 0
}

/// Bytes per row of a plane; 0 for a non-planar buffer or an index out of range. Apple's
/// `CVPixelBufferGetBytesPerRowOfPlane`.
public func CVPixelBufferGetBytesPerRowOfPlane(_ pixelBuffer: CVPixelBuffer, _ planeIndex: Int) -> Int {
    pixelBuffer.planeLayout(planeIndex)?.bytesPerRow ?? 0
}

/// The first byte of a plane, 64-byte aligned for buffers OpenCoreVideo allocates; lock the buffer first.
///
/// Apple's `CVPixelBufferGetBaseAddressOfPlane`. `nil` for a non-planar buffer or an index out of range, as
/// Apple's. Returned even while unlocked, as Apple does; debug builds warn once.
public func CVPixelBufferGetBaseAddressOfPlane(_ pixelBuffer: CVPixelBuffer, _ planeIndex: Int)
    -> UnsafeMutableRawPointer?
{
    guard let layout = pixelBuffer.planeLayout(planeIndex) else { return nil }
    pixelBuffer.noteBaseAddressAccess()
    return layout.baseAddress
}

/// The padding around the image that some codecs need; always zero here. Apple's
/// `CVPixelBufferGetExtendedPixels`.
public func CVPixelBufferGetExtendedPixels(
    _ pixelBuffer: CVPixelBuffer, _ extraColumnsOnLeft: UnsafeMutablePointer<Int>?,
    _ extraColumnsOnRight: UnsafeMutablePointer<Int>?, _ extraRowsOnTop: UnsafeMutablePointer<Int>?,
    _ extraRowsOnBottom: UnsafeMutablePointer<Int>?
) {
    extraColumnsOnLeft?.pointee = 0
    extraColumnsOnRight?.pointee = 0
    extraRowsOnTop?.pointee = 0
    extraRowsOnBottom?.pointee = 0
}
