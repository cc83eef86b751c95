// Swift-friendly, scoped access to a pixel buffer's planes: lock, hand the planes to a closure, unlock.

extension CVPixelBuffer {
    /// One plane of a locked buffer, or the whole image of a non-planar buffer: where it is and how big.
    ///
    /// Valid only inside the closure that received it; do not store it or let its pointers escape.
    ///
    /// Threading: not `Sendable`; use it on the thread that runs the closure.
    public struct Plane {
        /// The plane's first byte; 64-byte aligned for buffers OpenCoreVideo allocates.
        public let baseAddress: UnsafeMutableRawPointer
        /// The plane's width in samples (CbCr pairs for an NV12 chroma plane, pixels for BGRA).
        public let width: Int
        /// The plane's height in rows.
        public let height: Int
        /// The distance between rows in bytes; a multiple of 64 for buffers OpenCoreVideo allocates.
        public let bytesPerRow: Int

        /// The whole plane, padding included: `bytesPerRow × height` bytes.
        public var bytes: UnsafeMutableRawBufferPointer {
            UnsafeMutableRawBufferPointer(start: baseAddress, count: bytesPerRow * height)
        }

        /// Row `y` of the plane, padding included: `bytesPerRow` bytes.
        public func row(_ y: Int) -> UnsafeMutableRawBufferPointer {
            precondition(y >= 0 && y < height, "row \(y) is outside the plane's \(height) rows")
            return UnsafeMutableRawBufferPointer(start: baseAddress + y * bytesPerRow, count: bytesPerRow)
        }
    }

    /// The planes of a locked buffer: `planeCount` planes, or one (the image) for a non-planar buffer.
    ///
    /// Valid only inside the ``CVPixelBuffer/withLockedPlanes(_:_:)`` closure that received it.
    ///
    /// Threading: not `Sendable`; use it on the thread that runs the closure.
    public struct LockedPlanes: RandomAccessCollection {
        let buffer: CVPixelBuffer

        public var startIndex: Int { 0 }
        public var endIndex: Int { buffer.layouts.count }

        public subscript(position: Int) -> Plane {
            precondition(position >= 0 && position < endIndex, "plane \(position) is outside the buffer's planes")
            return buffer.plane(position)
        }
    }

    /// Locks the buffer, passes its planes to `body`, and unlocks it, even if `body` throws.
    ///
    /// The Swift form of ``CVPixelBufferLockBaseAddress(_:_:)``, the `…GetBaseAddressOfPlane` calls and
    /// ``CVPixelBufferUnlockBaseAddress(_:_:)``. Pass `.readOnly` when you only read. Keep the pointers inside
    /// `body`. A non-planar buffer has one plane, the image (unlike ``CVPixelBufferGetPlaneCount(_:)``, which
    /// says 0).
    ///
    ///     try buffer.withLockedPlanes { planes in
    ///         for y in 0..<planes[0].height { planes[0].row(y).initializeMemory(as: UInt8.self, repeating: 16) }
    ///     }
    public func withLockedPlanes<Result, Failure: Error>(
        _ flags: CVPixelBufferLockFlags = [], _ body: (LockedPlanes) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        _ = lockBaseAddress(flags)
        defer { _ = unlockBaseAddress(flags) }
        return try body(LockedPlanes(buffer: self))
    }

    /// Locks the buffer read-write, passes plane `planeIndex` (0 for a non-planar buffer) to `body`, and unlocks.
    ///
    /// Keep the pointers inside `body`. Traps if `planeIndex` is out of range.
    public func withUnsafeMutablePlane<Result, Failure: Error>(
        _ planeIndex: Int = 0, _ body: (Plane) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try withLockedPlanes([]) { (planes) throws(Failure) -> Result in try body(planes[planeIndex]) }
    }

    /// Locks the buffer read-only, passes the bytes of plane `planeIndex` (0 for a non-planar buffer) and its
    /// bytes per row to `body`, and unlocks.
    ///
    /// Keep the pointer inside `body`. Traps if `planeIndex` is out of range.
    public func withUnsafePlane<Result, Failure: Error>(
        _ planeIndex: Int = 0, _ body: (_ bytes: UnsafeRawBufferPointer, _ bytesPerRow: Int) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try withLockedPlanes(.readOnly) { (planes) throws(Failure) -> Result in
            let plane = planes[planeIndex]
            return try body(UnsafeRawBufferPointer(plane.bytes), plane.bytesPerRow)
        }
    }

    /// Plane `index` of the inline layouts, for the scoped accessors (which count a non-planar image as plane 0).
    func plane(_ index: Int) -> Plane {
        let layout = layouts[index]
        // Every layout of a live buffer has a base address: allocation and wrapping both guarantee it.
        return Plane(
            baseAddress: layout.baseAddress!, width: layout.width, height: layout.height,
            bytesPerRow: layout.bytesPerRow)
    }
}

// Pointers into a buffer belong to the closure that received them; they must not cross threads.
@available(*, unavailable)
extension CVPixelBuffer.Plane: Sendable {}

@available(*, unavailable)
extension CVPixelBuffer.LockedPlanes: Sendable {}

/// Where one plane of a raw frame read from a file goes: `rows` rows of `rowBytes` bytes, each `bytesPerRow` after
/// the last (a locked pixel buffer's plane, cut to the frame's own row length). The file readers of the drivers and
/// of the codecs fill it; not Apple API.
///
/// Threading: a value, valid while the memory it points into is; not `Sendable`.
package struct RawPlaneDestination {
    package var baseAddress: UnsafeMutableRawPointer
    package var rowBytes: Int
    package var bytesPerRow: Int
    package var rows: Int

    package init(baseAddress: UnsafeMutableRawPointer, rowBytes: Int, bytesPerRow: Int, rows: Int) {
        self.baseAddress = baseAddress
        self.rowBytes = rowBytes
        self.bytesPerRow = bytesPerRow
        self.rows = rows
    }
}
