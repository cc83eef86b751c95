import CaptureDrivers
import Foundation

/// Measurements on virtual camera frames: the frame index and flash markers, and the optics (brightness, object
/// size, focus, colour), read from pixels.
///
/// Works on our frames (`CVPixelBuffer`s in NV12, full-range NV12, YUYV or 8-bit grey) and on frames decoded from
/// a movie, given as a raw 8-bit luma plane (`ffmpeg -pix_fmt gray` makes one; `-pix_fmt nv12` and `yuv420p`
/// start with one). The frame-index code survives H.264 at default bit rates and scaling down to cells of about 3
/// pixels; a damaged code reads as nil, never as a wrong index.
///
/// Stateless; safe to use from any thread. Reading a YUYV buffer copies its luma; everything else reads in place.
/// Meant for tests, not the capture path.
public enum VirtualFrameReader {
    /// Which levels a luma plane uses.
    public enum LumaRange: Sendable, Hashable {
        /// Black 16, white 235: our frames, and movies decoded to NV12 or YUV 4:2:0.
        case video
        /// Black 0, white 255: what `ffmpeg -pix_fmt gray` makes of a video-range movie.
        case full

        var driverRange: VirtualLumaRange { self == .video ? .video : .full }
    }

    // MARK: Markers

    /// The frame index written in the frame's top-left corner (the device's sequence number when it rendered the
    /// frame, counting from 0 at the start of streaming), or nil for a flash frame or an unreadable code.
    public static func readFrameIndex(from pixelBuffer: CVPixelBuffer) -> UInt32? {
        withLuma(of: pixelBuffer) { plane, _ in VirtualPictureReader.readFrameIndex(plane) }
    }

    /// The frame index in a raw 8-bit luma plane: `height` rows of `width` bytes, `bytesPerRow` apart.
    public static func readFrameIndex(
        fromLuma luma: UnsafeBufferPointer<UInt8>, width: Int, height: Int, bytesPerRow: Int
    ) -> UInt32? {
        VirtualPictureReader.readFrameIndex(plane(luma, width, height, bytesPerRow))
    }

    /// The frame index in a raw 8-bit luma plane, tightly packed unless `bytesPerRow` is given.
    public static func readFrameIndex(
        fromLuma luma: [UInt8], width: Int, height: Int, bytesPerRow: Int? = nil
    )
        -> UInt32?
    {
        luma.withUnsafeBufferPointer {
            readFrameIndex(fromLuma: $0, width: width, height: height, bytesPerRow: bytesPerRow ?? width)
        }
    }

    /// Whether the frame is the flash frame of a whole second: white all over (a mean level of 225 or more and
    /// almost no pixel below 200), whatever the exposure. Exactly one frame per second of the device clock
    /// flashes: the one whose interval `[pts, pts + duration)` holds the whole second.
    public static func isFlashFrame(_ pixelBuffer: CVPixelBuffer) -> Bool {
        withLuma(of: pixelBuffer) { plane, _ in VirtualPictureReader.isFlashFrame(plane) }
    }

    /// Whether a raw 8-bit luma plane is a flash frame (see `isFlashFrame(_:)`).
    public static func isFlashFrame(
        luma: UnsafeBufferPointer<UInt8>, width: Int, height: Int, bytesPerRow: Int
    )
        -> Bool
    {
        VirtualPictureReader.isFlashFrame(plane(luma, width, height, bytesPerRow))
    }

    /// Whether a raw 8-bit luma plane, tightly packed unless `bytesPerRow` is given, is a flash frame.
    public static func isFlashFrame(luma: [UInt8], width: Int, height: Int, bytesPerRow: Int? = nil) -> Bool {
        luma.withUnsafeBufferPointer {
            isFlashFrame(luma: $0, width: width, height: height, bytesPerRow: bytesPerRow ?? width)
        }
    }

    // MARK: Optics

    /// The linear light (0 ... 1) of the grey patch: 0.18 for the normal scene at the default exposure; doubling
    /// the light, the exposure or the bias (+1 EV) doubles it until it clips. Nil when zoomed past the patch.
    /// `zoomFactor` is the camera's `videoZoomFactor` when the frame was taken.
    public static func measureGrayPatchBrightness(in pixelBuffer: CVPixelBuffer, zoomFactor: Double = 1) -> Double? {
        withLuma(of: pixelBuffer) { plane, range in
            let layout = VirtualFrameLayout(width: plane.width, height: plane.height, zoomFactor: zoomFactor)
            return layout.grayPatchRect.flatMap {
                VirtualPictureReader.measureLinearBrightness(plane, in: $0, range: range.driverRange)
            }
        }
    }

    /// The grey patch's linear light in a raw 8-bit luma plane (see `measureGrayPatchBrightness(in:zoomFactor:)`).
    public static func measureGrayPatchBrightness(
        luma: UnsafeBufferPointer<UInt8>, width: Int, height: Int, bytesPerRow: Int, zoomFactor: Double = 1,
        range: LumaRange = .video
    ) -> Double? {
        let layout = VirtualFrameLayout(width: width, height: height, zoomFactor: zoomFactor)
        return layout.grayPatchRect.flatMap {
            VirtualPictureReader.measureLinearBrightness(
                plane(luma, width, height, bytesPerRow), in: $0, range: range.driverRange)
        }
    }

    /// The linear light of the mean level in `region` (meant for uniform regions: the grey patch, a colour bar);
    /// nil when the region is outside the frame.
    public static func measureLinearBrightness(in pixelBuffer: CVPixelBuffer, region: VirtualFrameRegion) -> Double? {
        withLuma(of: pixelBuffer) { plane, range in
            VirtualPictureReader.measureLinearBrightness(plane, in: region.pixelRect, range: range.driverRange)
        }
    }

    /// The moving object's width in pixels, measured along its centre row: 0.2 × frame height × zoom when the
    /// whole object is in the frame. Needs the frame's presentation time (where the object is) and the zoom
    /// factor and mirroring it was taken with; nil when the row shows no object.
    public static func measureObjectSize(
        in pixelBuffer: CVPixelBuffer, at presentationTime: CMTime, zoomFactor: Double = 1, isMirrored: Bool = false
    ) -> Double? {
        withLuma(of: pixelBuffer) { plane, _ in
            objectSize(plane, presentationTime, zoomFactor, isMirrored)
        }
    }

    /// The moving object's width in a raw 8-bit luma plane (see `measureObjectSize(in:at:zoomFactor:isMirrored:)`).
    public static func measureObjectSize(
        luma: UnsafeBufferPointer<UInt8>, width: Int, height: Int, bytesPerRow: Int, at presentationTime: CMTime,
        zoomFactor: Double = 1, isMirrored: Bool = false
    ) -> Double? {
        objectSize(plane(luma, width, height, bytesPerRow), presentationTime, zoomFactor, isMirrored)
    }

    /// How sharp the focus target is: the steepest step between neighbouring pixels across its stripes, in levels
    /// per pixel, averaged over its rows. In focus the stripes step black to white in about a pixel; a lens away
    /// from the target's position spreads each edge and the figure falls. Nil when zoomed past the target.
    public static func measureFocusSharpness(in pixelBuffer: CVPixelBuffer, zoomFactor: Double = 1) -> Double? {
        withLuma(of: pixelBuffer) { plane, _ in
            VirtualFrameLayout(width: plane.width, height: plane.height, zoomFactor: zoomFactor).focusTargetRect
                .map { VirtualPictureReader.measureFocusSharpness(plane, in: $0) }
        }
    }

    /// The focus target's sharpness in a raw 8-bit luma plane (see `measureFocusSharpness(in:zoomFactor:)`).
    public static func measureFocusSharpness(
        luma: UnsafeBufferPointer<UInt8>, width: Int, height: Int, bytesPerRow: Int, zoomFactor: Double = 1
    ) -> Double? {
        VirtualFrameLayout(width: width, height: height, zoomFactor: zoomFactor).focusTargetRect.map {
            VirtualPictureReader.measureFocusSharpness(plane(luma, width, height, bytesPerRow), in: $0)
        }
    }

    /// The mean Cb and Cr (128 is neutral) of an NV12 frame over `region` (in luma pixels); nil for other pixel
    /// formats. A grey patch under a warm light reads Cr above 128 until white balance corrects it.
    public static func measureMeanChroma(
        in pixelBuffer: CVPixelBuffer, region: VirtualFrameRegion
    )
        -> (cb: Double, cr: Double)?
    {
        let format = CVPixelBufferGetPixelFormatType(pixelBuffer)
        guard
            format == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
                || format == kCVPixelFormatType_420YpCbCr8BiPlanarFullRange
        else { return nil }
        let clipped = region.pixelRect.clipped(
            width: CVPixelBufferGetWidth(pixelBuffer), height: CVPixelBufferGetHeight(pixelBuffer))
        guard let clipped else { return nil }
        return pixelBuffer.withUnsafePlane(1) { bytes, bytesPerRow in
            VirtualPictureReader.measureMeanChroma(
                bytes.bindMemory(to: UInt8.self), stride: bytesPerRow, in: clipped)
        }
    }

    // MARK: Planes

    private static func plane(
        _ luma: UnsafeBufferPointer<UInt8>, _ width: Int, _ height: Int, _ bytesPerRow: Int
    )
        -> VirtualLumaPlane
    {
        VirtualLumaPlane(pixels: luma, width: width, height: height, stride: bytesPerRow)
    }

    private static func objectSize(
        _ plane: VirtualLumaPlane, _ time: CMTime, _ zoomFactor: Double, _ isMirrored: Bool
    ) -> Double? {
        let layout = VirtualFrameLayout(
            width: plane.width, height: plane.height, zoomFactor: zoomFactor, isMirrored: isMirrored)
        let object = layout.object(atSeconds: time.seconds)
        let row = Int(object.centerY.rounded(.down))
        let reach = object.diameter
        let columns = Int((object.centerX - reach).rounded(.down))..<Int((object.centerX + reach).rounded(.up))
        return VirtualPictureReader.measureObjectSize(plane, row: row, columns: columns)
    }

    /// Calls `body` with the buffer's luma as a plane and its range: plane 0 of NV12 and grey buffers in place,
    /// YUYV's luma copied out. Traps for pixel formats without 8-bit luma (RGB).
    static func withLuma<Result>(
        of pixelBuffer: CVPixelBuffer, _ body: (VirtualLumaPlane, LumaRange) -> Result
    ) -> Result {
        let format = CVPixelBufferGetPixelFormatType(pixelBuffer)
        let width = CVPixelBufferGetWidth(pixelBuffer)
        let height = CVPixelBufferGetHeight(pixelBuffer)
        switch format {
        case kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr8Planar:
            return pixelBuffer.withUnsafePlane(0) { bytes, bytesPerRow in
                body(plane(bytes.bindMemory(to: UInt8.self), width, height, bytesPerRow), .video)
            }
        case kCVPixelFormatType_420YpCbCr8BiPlanarFullRange, kCVPixelFormatType_420YpCbCr8PlanarFullRange,
            kCVPixelFormatType_OneComponent8:
            return pixelBuffer.withUnsafePlane(0) { bytes, bytesPerRow in
                body(plane(bytes.bindMemory(to: UInt8.self), width, height, bytesPerRow), .full)
            }
        case kCVPixelFormatType_422YpCbCr8_yuvs, kCVPixelFormatType_422YpCbCr8FullRange, kCVPixelFormatType_422YpCbCr8:
            // Packed 4:2:2: luma is every other byte, from byte 0 (YUYV) or byte 1 (UYVY, '2vuy').
            let offset = format == kCVPixelFormatType_422YpCbCr8 ? 1 : 0
            let range: LumaRange = format == kCVPixelFormatType_422YpCbCr8FullRange ? .full : .video
            var luma = [UInt8](repeating: 0, count: width * height)
            pixelBuffer.withUnsafePlane(0) { bytes, bytesPerRow in
                for y in 0..<height {
                    for x in 0..<width { luma[y * width + x] = bytes[y * bytesPerRow + 2 * x + offset] }
                }
            }
            return luma.withUnsafeBufferPointer { body(plane($0, width, height, width), range) }
        default:
            preconditionFailure("VirtualFrameReader: pixel format \(format) has no 8-bit luma to read")
        }
    }
}

extension VirtualPixelRect {
    /// The part inside a `width` by `height` frame, nil when none is.
    fileprivate func clipped(width frameWidth: Int, height frameHeight: Int) -> VirtualPixelRect? {
        let x0 = max(0, x)
        let y0 = max(0, y)
        let x1 = min(frameWidth, x + width)
        let y1 = min(frameHeight, y + height)
        guard x1 > x0, y1 > y0 else { return nil }
        return VirtualPixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }
}
