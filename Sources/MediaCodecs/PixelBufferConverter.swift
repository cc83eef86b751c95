// PixelBufferConverter: pixel format conversion and scaling of CVPixelBuffers with libswscale, into pooled buffers.

import CFFmpeg
import OpenCoreVideo
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Converts pixel buffers of one pixel format and size into another, with libswscale, writing into buffers from
/// its own ``CVPixelBufferPool``.
///
/// The capture graph puts one between a device and an output whose `videoSettings` ask for another pixel format
/// or size. Identity is not this type's job: when ``needsConversion(from:to:)`` says no, the graph hands the
/// device's buffer on untouched, without a copy; creating a converter for identical formats still works (it
/// copies the planes) but wastes a pass over the pixels.
///
/// libswscale 6 drops the chroma of NV12 in its plane-copy path, so the identity and `'L008'` → `'420f'` at the
/// same size are done in Swift (see `Shortcut`); everything else goes through `sws_scale`.
///
/// Supported pixel formats, both ways, and the FFmpeg format each maps to (``supportedPixelFormats``):
///
/// | ours | FFmpeg | range |
/// |---|---|---|
/// | `'420v'` (NV12) | `AV_PIX_FMT_NV12` | video (Y 16–235, CbCr 16–240) |
/// | `'420f'` (NV12) | `AV_PIX_FMT_NV12` | full |
/// | `'x420'` (P010) | `AV_PIX_FMT_P010LE` | video, 10-bit (Y 64–940, CbCr 64–960, in the high bits of 16) |
/// | `'xf20'` (P010) | `AV_PIX_FMT_P010LE` | full, 10-bit |
/// | `'y420'` (I420) | `AV_PIX_FMT_YUV420P` | video |
/// | `'f420'` (I420) | `AV_PIX_FMT_YUV420P` | full |
/// | `'yuvs'` (YUYV) | `AV_PIX_FMT_YUYV422` | video |
/// | `'yuvf'` (YUYV) | `AV_PIX_FMT_YUYV422` | full |
/// | `'2vuy'` (UYVY) | `AV_PIX_FMT_UYVY422` | video |
/// | `'BGRA'` | `AV_PIX_FMT_BGRA` | RGB, full |
/// | `32ARGB` | `AV_PIX_FMT_ARGB` | RGB, full |
/// | `'ABGR'` | `AV_PIX_FMT_ABGR` | RGB, full |
/// | `'RGBA'` | `AV_PIX_FMT_RGBA` | RGB, full |
/// | `24RGB` | `AV_PIX_FMT_RGB24` | RGB, full |
/// | `'24BG'` | `AV_PIX_FMT_BGR24` | RGB, full |
/// | `'L008'` | `AV_PIX_FMT_GRAY8` | full (luminance 0–255, as Apple's one-component format) |
///
/// The range is set on the context before `sws_init_context` (the `src_range`/`dst_range` options), so that
/// libswscale's unscaled fast paths, which it only takes when the ranges agree, see the real ranges.
///
/// Colour: Y'CbCr ↔ RGB uses one ``YCbCrMatrix`` for the whole conversion (`sws_setColorspaceDetails` with the
/// same table on both sides). Unless the caller names one, the matrix follows the convention cameras and Apple's
/// capture follow: BT.709 for HD (at least 1280 wide or 720 high), BT.601 below, judged on the Y'CbCr side's size
/// (the source's when both sides are Y'CbCr, so a 1080p frame scaled to 360p keeps its BT.709 values; libswscale
/// does not change matrices between two Y'CbCr formats). A device that knows its matrix (the virtual camera
/// encodes BT.709 at every size) passes it.
///
/// Scaling: ``ScalingFilter/automatic`` picks area averaging (`SWS_AREA`) when the image shrinks to half or less
/// in a dimension and grows in none, bilinear (`SWS_BILINEAR`) otherwise, always with `SWS_ACCURATE_RND`; see
/// ``swscaleFlags(for:)`` for what was weighed.
///
/// Cost: no allocation per frame once the pool holds as many buffers as are held downstream at once: the plane
/// pointer and stride arrays passed to `sws_scale` live on the stack, and no `AVFrame` is made.
///
/// Wraps `sws_alloc_context`, `av_opt_set_int`, `sws_init_context`, `sws_getCoefficients`,
/// `sws_setColorspaceDetails`, `sws_scale` and `sws_freeContext`. The converter is the `SwsContext`'s one owner
/// and frees it in `deinit`; the context never leaves it.
///
/// Threading: thread-bound; use it from one thread at a time (a serial queue is fine: consecutive calls may come
/// from different threads). Not `Sendable`: hand it over with `sending`, or keep it in a `Mutex` or in the
/// output that owns the queue. Debug builds trap when two threads convert at once. Buffers it returns are
/// ordinary pool buffers and may go anywhere.
package final class PixelBufferConverter {
    /// A pixel buffer's pixel format and size: one side of a conversion.
    ///
    /// Threading: a value; `Sendable`.
    package struct Format: Hashable, Sendable, CustomStringConvertible {
        /// The pixel format, such as `kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange`.
        package var pixelFormatType: OSType
        /// The width in pixels.
        package var width: Int
        /// The height in pixels.
        package var height: Int

        /// A format from its parts.
        package init(pixelFormatType: OSType, width: Int, height: Int) {
            self.pixelFormatType = pixelFormatType
            self.width = width
            self.height = height
        }

        /// The format of `buffer`.
        package init(of buffer: CVPixelBuffer) {
            self.init(pixelFormatType: buffer.pixelFormatType, width: buffer.width, height: buffer.height)
        }

        /// "1920x1080 420v".
        package var description: String { "\(width)x\(height) \(pixelFormatName(pixelFormatType))" }
    }

    /// How pixels are resampled when the size changes.
    ///
    /// Threading: a value; `Sendable`.
    package enum ScalingFilter: Hashable, Sendable {
        /// ``area`` when the image shrinks to half or less in a dimension and grows in none, else ``bilinear``.
        case automatic
        /// Bilinear interpolation (`SWS_BILINEAR`): widened to the scale factor when shrinking, so it still
        /// averages every source pixel. The default for moderate changes (1080p → 720p, any enlargement).
        case bilinear
        /// Area averaging (`SWS_AREA`): for big reductions (1080p → 360p), where it is as sharp as bilinear and
        /// cheaper.
        case area
        /// Bicubic interpolation (`SWS_BICUBIC`): sharper, slower.
        case bicubic

        /// The filter ``automatic`` resolves to for a change of size.
        package static func conventional(from source: Format, to destination: Format) -> ScalingFilter {
            let shrinksByHalf = destination.width * 2 <= source.width || destination.height * 2 <= source.height
            let grows = destination.width > source.width || destination.height > source.height
            return shrinksByHalf && !grows ? .area : .bilinear
        }
    }

    /// The source side: every buffer passed to ``convert(_:)`` must have this format.
    package let source: Format
    /// The destination side: every buffer ``convert(_:)`` returns has this format.
    package let destination: Format
    /// The Y'CbCr matrix the conversion uses (irrelevant, but set, when neither side is Y'CbCr).
    package let matrix: YCbCrMatrix
    /// The filter used, ``ScalingFilter/automatic`` resolved.
    package let scalingFilter: ScalingFilter
    /// Where output buffers come from: buffers of ``destination``'s format and size, rows 64-byte aligned.
    package let pool: CVPixelBufferPool
    /// The most pool buffers that may be held downstream at once; ``convert(_:)`` fails with
    /// ``MediaCodecsError/Kind/outOfBuffers`` beyond it. `Int.max` when unlimited.
    package let bufferLimit: Int

    /// The libswscale context; this object is its only owner. `nil` when a ``Shortcut`` does the work.
    private let context: OpaquePointer?
    /// A conversion done without libswscale, or `nil`.
    private let shortcut: Shortcut?
    /// Whether output buffers are Y'CbCr, and so carry the matrix as their `kCVImageBufferYCbCrMatrixKey`.
    private let marksMatrix: Bool
    /// The number of planes (1 for packed formats) on each side.
    private let sourcePlaneCount: Int
    private let destinationPlaneCount: Int
    #if DEBUG
        /// Set while a conversion runs: debug builds trap on concurrent use.
        private let isConverting = Atomic<Bool>(false)
    #endif

    /// A converter from `source` to `destination`, with its own pool of destination buffers.
    ///
    /// - Parameters:
    ///   - matrix: the Y'CbCr matrix; `nil` chooses by size (``YCbCrMatrix/conventional(width:height:)`` of the
    ///     Y'CbCr side, the source's when both are Y'CbCr).
    ///   - scalingFilter: how to resample when the size changes.
    ///   - minimumBufferCount: pool buffers allocated now, so the first frames do not allocate.
    ///   - bufferLimit: at most this many output buffers held downstream at once (`nil`: no limit).
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/unsupportedConversion`` for a pixel format
    ///   outside ``supportedPixelFormats`` or a size outside 1…32768, ``MediaCodecsError/Kind/allocationFailed``
    ///   when the context or pool cannot be made, ``MediaCodecsError/Kind/ffmpeg`` when libswscale refuses.
    package convenience init(
        from source: Format, to destination: Format, matrix: YCbCrMatrix? = nil,
        scalingFilter: ScalingFilter = .automatic, minimumBufferCount: Int = 0, bufferLimit: Int? = nil
    ) throws(MediaCodecsError) {
        let operation = "creating a pixel buffer converter from \(source) to \(destination)"
        guard let sourceMapping = FFmpegPixelFormat(source.pixelFormatType),
            let destinationMapping = FFmpegPixelFormat(destination.pixelFormatType)
        else {
            throw MediaCodecsError(
                .unsupportedConversion, while: operation,
                message: "supported pixel formats are "
                    + Self.supportedPixelFormats.map(pixelFormatName).joined(separator: ", "))
        }
        for side in [source, destination] {
            guard (1...CVPixelBuffer.maximumDimension).contains(side.width),
                (1...CVPixelBuffer.maximumDimension).contains(side.height)
            else {
                throw MediaCodecsError(
                    .unsupportedConversion, while: operation,
                    message: "sizes must be 1 to \(CVPixelBuffer.maximumDimension) pixels")
            }
        }
        let matrix =
            matrix
            ?? (sourceMapping.isYCbCr || !destinationMapping.isYCbCr
                ? YCbCrMatrix.conventional(width: source.width, height: source.height)
                : YCbCrMatrix.conventional(width: destination.width, height: destination.height))
        let filter =
            scalingFilter == .automatic ? ScalingFilter.conventional(from: source, to: destination) : scalingFilter

        let pool: CVPixelBufferPool
        do {
            pool = try CVPixelBufferPool(
                width: destination.width, height: destination.height,
                pixelFormatType: destination.pixelFormatType, minimumBufferCount: minimumBufferCount,
                bytesPerRowAlignment: CVPixelBuffer.planeAlignment)
        } catch {
            throw MediaCodecsError(
                .allocationFailed, while: operation, message: "the output pool failed with CVReturn \(error.status)")
        }

        let shortcut = Shortcut(from: source, to: destination)
        guard shortcut == nil else {
            self.init(
                source: source, destination: destination, matrix: matrix, scalingFilter: filter, pool: pool,
                bufferLimit: bufferLimit, context: nil, shortcut: shortcut, sourcePlaneCount: sourceMapping.planeCount,
                destinationPlaneCount: destinationMapping.planeCount)
            return
        }
        guard let context = sws_alloc_context() else {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "sws_alloc_context returned NULL")
        }
        // From here on, a failure must free the context: this initializer owns it until it is stored.
        do throws(MediaCodecsError) {
            let options: [(String, Int64)] = [
                ("srcw", Int64(source.width)), ("srch", Int64(source.height)),
                ("src_format", Int64(sourceMapping.format.rawValue)),
                ("dstw", Int64(destination.width)), ("dsth", Int64(destination.height)),
                ("dst_format", Int64(destinationMapping.format.rawValue)),
                ("sws_flags", Int64(Self.swscaleFlags(for: filter))),
                ("src_range", sourceMapping.isFullRange ? 1 : 0),
                ("dst_range", destinationMapping.isFullRange ? 1 : 0),
            ]
            for (name, value) in options {
                let status = av_opt_set_int(UnsafeMutableRawPointer(context), name, value, 0)
                guard status >= 0 else { throw .ffmpeg(status, while: "\(operation) (setting \(name))") }
            }
            let status = sws_init_context(context, nil, nil)
            guard status >= 0 else { throw .ffmpeg(status, while: operation) }
            // The same table on both sides: one matrix for the whole conversion. Between two Y'CbCr (or grey)
            // formats libswscale 6 answers -1 ("not supported") and ignores the tables, which is what we want:
            // the matrix does not change there. Anywhere else a negative answer is a failure.
            let table = sws_getCoefficients(matrix.swscaleColorspace)
            let details = sws_setColorspaceDetails(
                context, table, sourceMapping.isFullRange ? 1 : 0, table, destinationMapping.isFullRange ? 1 : 0,
                0, 1 << 16, 1 << 16)
            if details < 0 && !(sourceMapping.isYCbCrOrGray && destinationMapping.isYCbCrOrGray) {
                throw .ffmpeg(details, while: "\(operation) (setting the \(matrix) matrix)")
            }
        } catch {
            sws_freeContext(context)
            throw error
        }

        self.init(
            source: source, destination: destination, matrix: matrix, scalingFilter: filter, pool: pool,
            bufferLimit: bufferLimit, context: context, shortcut: nil, sourcePlaneCount: sourceMapping.planeCount,
            destinationPlaneCount: destinationMapping.planeCount)
    }

    /// Stores what the public initializer worked out.
    private init(
        source: Format, destination: Format, matrix: YCbCrMatrix, scalingFilter: ScalingFilter,
        pool: CVPixelBufferPool, bufferLimit: Int?, context: OpaquePointer?, shortcut: Shortcut?,
        sourcePlaneCount: Int, destinationPlaneCount: Int
    ) {
        self.source = source
        self.destination = destination
        self.matrix = matrix
        self.scalingFilter = scalingFilter
        self.pool = pool
        self.bufferLimit = bufferLimit ?? .max
        self.context = context
        self.shortcut = shortcut
        self.sourcePlaneCount = sourcePlaneCount
        self.destinationPlaneCount = destinationPlaneCount
        self.marksMatrix = FFmpegPixelFormat(destination.pixelFormatType)?.isYCbCr ?? false
    }

    deinit {
        sws_freeContext(context)
    }

    /// Converts `buffer` into a buffer from ``pool``.
    ///
    /// Locks `buffer` read-only and the output read-write for the duration of `sws_scale`. Allocation-free once
    /// the pool is warm.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/formatMismatch`` when `buffer` is not of
    ///   ``source``'s format and size, ``MediaCodecsError/Kind/outOfBuffers`` when ``bufferLimit`` buffers are
    ///   held, ``MediaCodecsError/Kind/allocationFailed`` when the pool cannot grow, and
    ///   ``MediaCodecsError/Kind/ffmpeg`` when `sws_scale` fails.
    package func convert(_ buffer: CVPixelBuffer) throws(MediaCodecsError) -> CVPixelBuffer {
        #if DEBUG
            precondition(
                !isConverting.exchange(true, ordering: .acquiring),
                "PixelBufferConverter is thread-bound: convert(_:) was called from two threads at once")
            defer { isConverting.store(false, ordering: .releasing) }
        #endif
        guard buffer.pixelFormatType == source.pixelFormatType, buffer.width == source.width,
            buffer.height == source.height
        else {
            throw MediaCodecsError(
                .formatMismatch, while: "converting a pixel buffer from \(source) to \(destination)",
                message: "the buffer is \(Format(of: buffer))")
        }
        let output: CVPixelBuffer
        switch pool.pixelBuffer(allocationThreshold: bufferLimit) {
        case .success(let buffer):
            output = buffer
        case .failure(let error):
            let operation = "taking a \(destination) buffer from the converter's pool"
            if error.status == kCVReturnWouldExceedAllocationThreshold {
                throw MediaCodecsError(
                    .outOfBuffers, while: operation, message: "\(bufferLimit) buffers are held downstream")
            }
            throw MediaCodecsError(.allocationFailed, while: operation, message: "CVReturn \(error.status)")
        }
        // Y'CbCr numbers keep their matrix through a conversion (or get the converter's, from RGB).
        if marksMatrix { matrix.attach(to: output) }
        // Primaries and curve pass through unconverted: the result says the source's (see ColourAttachments).
        ColourAttachments(of: buffer).attach(to: output)
        if let shortcut {
            shortcut.convert(from: buffer, into: output)
            return output
        }
        let status = scale(from: buffer, into: output)
        guard status >= 0 else {
            throw .ffmpeg(status, while: "converting a pixel buffer from \(source) to \(destination) (sws_scale)")
        }
        return output
    }

    /// Runs `sws_scale` over the whole image; its result (the output height, or a negative `AVERROR`).
    private func scale(from input: CVPixelBuffer, into output: CVPixelBuffer) -> Int32 {
        guard let context else { return CFFmpeg_AVERROR(EINVAL) }
        let height = Int32(source.height)
        let sourcePlaneCount = sourcePlaneCount
        let destinationPlaneCount = destinationPlaneCount
        return input.withLockedPlanes(.readOnly) { sourcePlanes in
            output.withLockedPlanes { destinationPlanes in
                // sws_scale reads four pointer and four stride slots per side; the unused ones must be NULL/0.
                withUnsafeTemporaryAllocation(of: UnsafePointer<UInt8>?.self, capacity: 4) { sourceData in
                    withUnsafeTemporaryAllocation(of: UnsafeMutablePointer<UInt8>?.self, capacity: 4) {
                        destinationData in
                        withUnsafeTemporaryAllocation(of: Int32.self, capacity: 8) { strides in
                            for index in 0..<4 {
                                if index < sourcePlaneCount {
                                    let plane = sourcePlanes[index]
                                    sourceData[index] = UnsafePointer(
                                        plane.baseAddress.assumingMemoryBound(to: UInt8.self))
                                    strides[index] = Int32(plane.bytesPerRow)
                                } else {
                                    sourceData[index] = nil
                                    strides[index] = 0
                                }
                                if index < destinationPlaneCount {
                                    let plane = destinationPlanes[index]
                                    destinationData[index] = plane.baseAddress.assumingMemoryBound(to: UInt8.self)
                                    strides[4 + index] = Int32(plane.bytesPerRow)
                                } else {
                                    destinationData[index] = nil
                                    strides[4 + index] = 0
                                }
                            }
                            return sws_scale(
                                context, sourceData.baseAddress, strides.baseAddress, 0, height,
                                destinationData.baseAddress, strides.baseAddress! + 4)
                        }
                    }
                }
            }
        }
    }

    // MARK: Decisions the graph makes

    /// Whether a buffer of `source`'s format must be converted to give `destination`: false when pixel format
    /// and size are the same, and the graph then passes the buffer through without a copy.
    package static func needsConversion(from source: Format, to destination: Format) -> Bool {
        source != destination
    }

    /// Whether `source` and `destination` are an identity: the opposite of ``needsConversion(from:to:)``.
    package static func isIdentity(from source: Format, to destination: Format) -> Bool {
        !needsConversion(from: source, to: destination)
    }

    /// Whether a converter can be made between the two pixel formats (any sizes from 1 to 32768).
    package static func canConvert(from source: OSType, to destination: OSType) -> Bool {
        FFmpegPixelFormat(source) != nil && FFmpegPixelFormat(destination) != nil
    }

    /// The pixel formats this type converts from and to, in the order of the table in the type's documentation.
    package static let supportedPixelFormats: [OSType] = FFmpegPixelFormat.supported

    /// The libswscale flags for a filter.
    ///
    /// - `SWS_ACCURATE_RND`: rounds instead of truncating in the vertical pass, keeping colour errors within a
    ///   code or two. It switches off libswscale's unscaled I420 → RGB shortcut (NV12, our usual source, never
    ///   had one).
    /// - Not `SWS_FULL_CHR_H_INT | SWS_FULL_CHR_H_INP` (chroma interpolated to full width before the RGB
    ///   conversion): sharper colour edges, but NV12 → BGRA at 1920x1080 took 10 ms a frame with it and 2.5 ms
    ///   without (release build, one core of the project's build machine). 4:2:0 chroma is half-width anyway.
    static func swscaleFlags(for filter: ScalingFilter) -> Int32 {
        let kernel: Int32
        switch filter {
        case .automatic, .bilinear: kernel = SWS_BILINEAR
        case .area: kernel = SWS_AREA
        case .bicubic: kernel = SWS_BICUBIC
        }
        return kernel | SWS_ACCURATE_RND
    }
}

/// A conversion done in Swift because libswscale 6 gets it wrong.
///
/// libswscale takes its plane-copy path (`planarCopyWrapper`) for same-size conversions between planar formats of
/// equal range, and that path skips plane 1 whenever the destination has no plane 2 (a rule meant for GRAY8's
/// palette). An NV12 destination therefore gets no chroma at all: NV12 → NV12 and GRAY8 → full-range NV12 come
/// out green. Those two, and every identity, are done here instead. The same path mistreats full-range P010
/// (`'xf20'`) ↔ GRAY8 (chroma left unwritten one way, the low bytes of the 16-bit samples read the other): both
/// are done here too.
private enum Shortcut {
    /// Same format and size: copy every plane row by row.
    case copy
    /// `'L008'` → `'420f'` at the same size: copy the luma, fill the chroma with the neutral 128.
    case grayToFullRangeNV12
    /// `'L008'` → `'xf20'` at the same size: each luma byte widened to 10 bits (v·1023/255, as bit replication),
    /// in the high bits of its word; the chroma the neutral 512.
    case grayToFullRangeP010
    /// `'xf20'` → `'L008'` at the same size: the top 8 of each luma sample's 10 bits.
    case fullRangeP010ToGray

    init?(from source: PixelBufferConverter.Format, to destination: PixelBufferConverter.Format) {
        if source == destination {
            self = .copy
        } else if source.pixelFormatType == kCVPixelFormatType_OneComponent8,
            destination.pixelFormatType == kCVPixelFormatType_420YpCbCr8BiPlanarFullRange,
            source.width == destination.width, source.height == destination.height
        {
            self = .grayToFullRangeNV12
        } else if source.width == destination.width, source.height == destination.height,
            source.pixelFormatType == kCVPixelFormatType_OneComponent8,
            destination.pixelFormatType == kCVPixelFormatType_420YpCbCr10BiPlanarFullRange
        {
            self = .grayToFullRangeP010
        } else if source.width == destination.width, source.height == destination.height,
            source.pixelFormatType == kCVPixelFormatType_420YpCbCr10BiPlanarFullRange,
            destination.pixelFormatType == kCVPixelFormatType_OneComponent8
        {
            self = .fullRangeP010ToGray
        } else {
            return nil
        }
    }

    func convert(from input: CVPixelBuffer, into output: CVPixelBuffer) {
        if self == .grayToFullRangeP010 || self == .fullRangeP010ToGray {
            convertTenBitLuma(from: input, into: output)
            return
        }
        input.withLockedPlanes(.readOnly) { sourcePlanes in
            output.withLockedPlanes { destinationPlanes in
                // Rows hold padding; copy each row's used bytes only, the narrower of the two row lengths.
                for index in 0..<sourcePlanes.count {
                    let from = sourcePlanes[index]
                    let to = destinationPlanes[index]
                    let length = min(from.bytesPerRow, to.bytesPerRow)
                    for y in 0..<min(from.height, to.height) {
                        (to.baseAddress + y * to.bytesPerRow).copyMemory(
                            from: from.baseAddress + y * from.bytesPerRow, byteCount: length)
                    }
                }
                if self == .grayToFullRangeNV12 {
                    destinationPlanes[1].bytes.initializeMemory(as: UInt8.self, repeating: 128)
                }
            }
        }
    }

    /// Grey ↔ full-range P010 luma, sample by sample (little-endian 16-bit words, the value in the high 10 bits).
    private func convertTenBitLuma(from input: CVPixelBuffer, into output: CVPixelBuffer) {
        input.withLockedPlanes(.readOnly) { sourcePlanes in
            output.withLockedPlanes { destinationPlanes in
                let from = sourcePlanes[0]
                let to = destinationPlanes[0]
                for y in 0..<from.height {
                    let source = from.row(y)
                    let destination = to.row(y)
                    for x in 0..<from.width {
                        if self == .grayToFullRangeP010 {
                            let value = UInt16(source[x])
                            let word = (value << 2 | value >> 6) << 6
                            destination[2 * x] = UInt8(truncatingIfNeeded: word)
                            destination[2 * x + 1] = UInt8(truncatingIfNeeded: word >> 8)
                        } else {
                            destination[x] = source[2 * x + 1]  // the high byte: bits 9…2 of the sample
                        }
                    }
                }
                if self == .grayToFullRangeP010 {
                    let chroma = destinationPlanes[1]
                    for y in 0..<chroma.height {
                        let row = chroma.row(y)
                        for index in 0..<(2 * chroma.width) {
                            row[2 * index] = 0x00  // 512 << 6 = 0x8000, little-endian
                            row[2 * index + 1] = 0x80
                        }
                    }
                }
            }
        }
    }
}

/// The matrix that turns R'G'B' into Y'CbCr and back.
///
/// Threading: a value; `Sendable`.
package enum YCbCrMatrix: Hashable, Sendable, CustomStringConvertible {
    /// ITU-R BT.601 (SMPTE 170M): standard-definition video. libswscale's `SWS_CS_ITU601`.
    case itu601
    /// ITU-R BT.709: high-definition video. libswscale's `SWS_CS_ITU709`.
    case itu709
    /// ITU-R BT.2020 (non-constant luminance): ultra-high-definition and HDR video. libswscale's `SWS_CS_BT2020`.
    case itu2020

    /// The matrix cameras and Apple's capture use for a size: BT.709 from 1280 wide or 720 high (HD), BT.601
    /// below.
    package static func conventional(width: Int, height: Int) -> YCbCrMatrix {
        width >= 1280 || height >= 720 ? .itu709 : .itu601
    }

    /// "BT.601" or "BT.709".
    package var description: String {
        switch self {
        case .itu601: "BT.601"
        case .itu709: "BT.709"
        case .itu2020: "BT.2020"
        }
    }

    /// The `SWS_CS_*` constant for `sws_getCoefficients`.
    var swscaleColorspace: Int32 {
        switch self {
        case .itu601: SWS_CS_ITU601
        case .itu709: SWS_CS_ITU709
        case .itu2020: SWS_CS_BT2020
        }
    }

    /// The stream's `AVColorSpace` tag for this matrix.
    var ffmpegColorspace: AVColorSpace {
        switch self {
        case .itu601: AVCOL_SPC_SMPTE170M
        case .itu709: AVCOL_SPC_BT709
        case .itu2020: AVCOL_SPC_BT2020_NCL
        }
    }
}
