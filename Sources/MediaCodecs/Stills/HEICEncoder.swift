// HEICEncoder: still images to HEIC (HEVC in HEIF) with libheif and its x265 plugin, EXIF in an Exif item.

import CHeif
import Foundation
import OpenCoreVideo

/// Encodes NV12 pixel buffers as HEIC files with libheif.
///
/// Availability: only where libheif has an HEVC encoder (`heif_have_encoder_for_format(heif_compression_HEVC)`);
/// Debian 12's libheif 1.15 links x265, so it has one. ``isAvailable`` says; where it is false the photo output
/// lists no `.hevc` codec and `AVCapturePhotoSettings(format:)` with HEVC traps, as Apple's does for a codec not
/// in `availablePhotoCodecTypes`.
///
/// Colour: HEIF can say what the pixels are (an `nclx` colour box), so the camera's planes go in unchanged, only
/// the chroma de-interleaved: BT.709 primaries, transfer and matrix, video or full range as the buffer says.
/// Orientation: the pixels stay as captured; `orientation` becomes libheif's `irot`/`imir` boxes and the EXIF
/// `Orientation` (the same value, as Apple's HEIC files carry both).
///
/// Wraps `heif_context_alloc`, `heif_context_get_encoder_for_format`, `heif_image_create`, `heif_image_add_plane`,
/// `heif_context_encode_image`, `heif_context_add_exif_metadata`, `heif_context_write`; everything allocated is
/// released before a call returns.
///
/// Threading: stateless between calls; each call is independent, so any thread may encode.
package enum HEICEncoder {
    /// Whether libheif can encode HEVC here.
    package static var isAvailable: Bool { heif_have_encoder_for_format(heif_compression_HEVC) != 0 }

    /// The HEIC file of `image` (NV12, '420v' or '420f') at `quality` (0...1), with `exif` (an APP1-style payload
    /// starting "Exif\0\0") as its Exif item when given, displayed turned by EXIF `orientation` (1...8).
    package static func encode(
        _ image: CVPixelBuffer, quality: Double, orientation: Int = 1, exif: [UInt8]? = nil
    ) throws(MediaCodecsError) -> Data {
        let width = CVPixelBufferGetWidth(image)
        let height = CVPixelBufferGetHeight(image)
        let format = CVPixelBufferGetPixelFormatType(image)
        let operation = "encoding a \(width)x\(height) \(fourCharCodeDescription(format)) image as HEIC"
        guard
            format == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
                || format == kCVPixelFormatType_420YpCbCr8BiPlanarFullRange
        else {
            throw MediaCodecsError(
                .unsupportedConversion, while: operation, message: "libheif is fed NV12; convert first")
        }
        func check(_ error: heif_error) throws(MediaCodecsError) {
            guard error.code != heif_error_Ok else { return }
            throw MediaCodecsError(.unsupportedConfiguration, while: operation, message: String(cString: error.message))
        }
        guard let context = heif_context_alloc() else {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "heif_context_alloc failed")
        }
        defer { heif_context_free(context) }
        var encoder: OpaquePointer?
        try check(heif_context_get_encoder_for_format(context, heif_compression_HEVC, &encoder))
        guard let encoder else {
            throw MediaCodecsError(.unsupportedConfiguration, while: operation, message: "libheif has no HEVC encoder")
        }
        defer { heif_encoder_release(encoder) }
        try check(heif_encoder_set_lossy_quality(encoder, Int32(min(100, max(0, (quality * 100).rounded())))))
        // x265's medium preset takes seconds at 12 MP on two cores; "faster" keeps a still under a second.
        _ = heif_encoder_set_parameter_string(encoder, "preset", "faster")

        var picture: OpaquePointer?
        try check(heif_image_create(Int32(width), Int32(height), heif_colorspace_YCbCr, heif_chroma_420, &picture))
        guard let picture else {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "heif_image_create failed")
        }
        defer { heif_image_release(picture) }
        try copyPlanes(of: image, into: picture, check: check)

        guard let nclx = heif_nclx_color_profile_alloc() else {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "heif_nclx_color_profile_alloc failed")
        }
        defer { heif_nclx_color_profile_free(nclx) }
        nclx.pointee.color_primaries = heif_color_primaries_ITU_R_BT_709_5
        nclx.pointee.transfer_characteristics = heif_transfer_characteristic_ITU_R_BT_709_5
        // The numbers' own matrix (BT.601 from a JPEG camera), so a reader turns them into the right colours.
        nclx.pointee.matrix_coefficients =
            YCbCrMatrix.of(image) == .itu601 ? heif_matrix_coefficients_ITU_R_BT_601_6 : heif_matrix_coefficients_ITU_R_BT_709_5
        nclx.pointee.full_range_flag = format == kCVPixelFormatType_420YpCbCr8BiPlanarFullRange ? 1 : 0
        try check(heif_image_set_nclx_color_profile(picture, nclx))

        guard let options = heif_encoding_options_alloc() else {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "heif_encoding_options_alloc failed")
        }
        defer { heif_encoding_options_free(options) }
        options.pointee.output_nclx_profile = nclx
        options.pointee.image_orientation = heif_orientation(rawValue: UInt32(min(8, max(1, orientation))))

        var handle: OpaquePointer?
        try check(heif_context_encode_image(context, picture, encoder, options, &handle))
        defer { if let handle { heif_image_handle_release(handle) } }
        if let exif, let handle {
            try check(heif_context_add_exif_metadata(context, handle, exif, Int32(exif.count)))
        }
        let sink = HEIFOutput()
        var writer = heif_writer(writer_api_version: 1) { _, data, size, userdata in
            let sink = Unmanaged<HEIFOutput>.fromOpaque(userdata!).takeUnretainedValue()
            if let data { sink.data.append(data.assumingMemoryBound(to: UInt8.self), count: size) }
            return heif_error(code: heif_error_Ok, subcode: heif_suberror_Unspecified, message: nil)
        }
        try check(heif_context_write(context, &writer, Unmanaged.passUnretained(sink).toOpaque()))
        return sink.data
    }

    /// The luma plane as is and the interleaved chroma split into Cb and Cr.
    private static func copyPlanes(
        of image: CVPixelBuffer, into picture: OpaquePointer, check: (heif_error) throws(MediaCodecsError) -> Void
    ) throws(MediaCodecsError) {
        let width = CVPixelBufferGetWidth(image)
        let height = CVPixelBufferGetHeight(image)
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        try check(heif_image_add_plane(picture, heif_channel_Y, Int32(width), Int32(height), 8))
        try check(heif_image_add_plane(picture, heif_channel_Cb, Int32(chromaWidth), Int32(chromaHeight), 8))
        try check(heif_image_add_plane(picture, heif_channel_Cr, Int32(chromaWidth), Int32(chromaHeight), 8))
        var lumaStride: Int32 = 0
        var cbStride: Int32 = 0
        var crStride: Int32 = 0
        guard let luma = heif_image_get_plane(picture, heif_channel_Y, &lumaStride),
            let cb = heif_image_get_plane(picture, heif_channel_Cb, &cbStride),
            let cr = heif_image_get_plane(picture, heif_channel_Cr, &crStride)
        else { return }
        image.withLockedPlanes(.readOnly) { planes in
            let sourceLuma = planes[0]
            for row in 0..<height {
                (luma + row * Int(lumaStride)).update(
                    from: (sourceLuma.baseAddress + row * sourceLuma.bytesPerRow).assumingMemoryBound(to: UInt8.self),
                    count: width)
            }
            let chroma = planes[1]
            splitChroma(
                chroma.baseAddress.assumingMemoryBound(to: UInt8.self), stride: chroma.bytesPerRow,
                columns: chromaWidth, rows: chromaHeight, cb: cb, cbStride: Int(cbStride), cr: cr,
                crStride: Int(crStride))
        }
    }
}

/// Collects the bytes `heif_context_write` hands its writer.
private final class HEIFOutput {
    var data = Data()
}
