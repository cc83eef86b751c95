import CSDL2
import OpenAVCapture

/// The pixel formats an SDL texture takes as they are, so a frame is uploaded without a conversion on our side.
enum TextureFormat {
    /// CoreVideo's format to SDL's. Both NV12 ranges are NV12 to SDL (the range sets the YUV conversion mode).
    static let all: [OSType: SDL_PixelFormatEnum] = [
        kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange: SDL_PIXELFORMAT_NV12,
        kCVPixelFormatType_420YpCbCr8BiPlanarFullRange: SDL_PIXELFORMAT_NV12,
        kCVPixelFormatType_420YpCbCr8Planar: SDL_PIXELFORMAT_IYUV,
        kCVPixelFormatType_422YpCbCr8_yuvs: SDL_PIXELFORMAT_YUY2,
        kCVPixelFormatType_422YpCbCr8: SDL_PIXELFORMAT_UYVY,
        // Byte orders: BGRA is B,G,R,A in memory, ARGB is A,R,G,B; SDL's *32 names are byte orders too.
        kCVPixelFormatType_32BGRA: SDL_PIXELFORMAT_BGRA32,
        kCVPixelFormatType_32ARGB: SDL_PIXELFORMAT_ARGB32,
        kCVPixelFormatType_24RGB: SDL_PIXELFORMAT_RGB24,
    ]
}

/// One streaming SDL texture, remade when the frame's format or size changes.
///
/// Threading: the window's thread only (SDL's rule).
struct Texture {
    private(set) var handle: OpaquePointer?
    private var key: (format: OSType, width: Int, height: Int)?

    /// Copies the frame's planes into the texture (one copy, no colour conversion); false when it cannot.
    /// `sdlFormat` overrides the texture's format when the same bytes are better named by another (32BGRA bytes are
    /// an XRGB8888 window's own, and a texture of the window's format is drawn by a plain copy).
    mutating func upload(
        _ image: CVPixelBuffer, renderer: OpaquePointer, as sdlFormat: SDL_PixelFormatEnum? = nil
    ) -> Bool {
        let format = CVPixelBufferGetPixelFormatType(image)
        let width = CVPixelBufferGetWidth(image)
        let height = CVPixelBufferGetHeight(image)
        guard let sdlFormat = sdlFormat ?? TextureFormat.all[format] else { return false }
        if key == nil || key! != (format, width, height) {
            destroy()
            // The YUV matrix and range SDL's shaders use, fixed when the texture is made.
            let fullRange = format == kCVPixelFormatType_420YpCbCr8BiPlanarFullRange
            SDL_SetYUVConversionMode(fullRange ? SDL_YUV_CONVERSION_JPEG : SDL_YUV_CONVERSION_AUTOMATIC)
            handle = SDL_CreateTexture(
                renderer, sdlFormat.rawValue, Int32(SDL_TEXTUREACCESS_STREAMING.rawValue), Int32(width), Int32(height))
            guard handle != nil else { return false }
            // Video is opaque: copied, not blended (SDL blends textures of formats with alpha by default, a
            // per-pixel read of the destination too).
            SDL_SetTextureBlendMode(handle, SDL_BLENDMODE_NONE)
            key = (format, width, height)
        }
        CVPixelBufferLockBaseAddress(image, .readOnly)
        defer { CVPixelBufferUnlockBaseAddress(image, .readOnly) }
        let result: Int32
        switch sdlFormat {
        case SDL_PIXELFORMAT_NV12:
            result = SDL_UpdateNVTexture(
                handle, nil, plane(image, 0), pitch(image, 0), plane(image, 1), pitch(image, 1))
        case SDL_PIXELFORMAT_IYUV:
            result = SDL_UpdateYUVTexture(
                handle, nil, plane(image, 0), pitch(image, 0), plane(image, 1), pitch(image, 1), plane(image, 2),
                pitch(image, 2))
        default:
            result = SDL_UpdateTexture(
                handle, nil, CVPixelBufferGetBaseAddress(image), Int32(CVPixelBufferGetBytesPerRow(image)))
        }
        return result == 0
    }

    private func plane(_ image: CVPixelBuffer, _ index: Int) -> UnsafePointer<UInt8>? {
        CVPixelBufferGetBaseAddressOfPlane(image, index).map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) }
    }

    private func pitch(_ image: CVPixelBuffer, _ index: Int) -> Int32 {
        Int32(CVPixelBufferGetBytesPerRowOfPlane(image, index))
    }

    mutating func destroy() {
        if let handle { SDL_DestroyTexture(handle) }
        handle = nil
        key = nil
    }
}

/// The texture a frame is drawn from: the frame as it is (a GPU converts and scales it), or, where SDL draws on
/// the CPU, the frame converted and scaled to its place on the screen first (``ScaledTexture``).
///
/// Threading: the window's thread only (SDL's rule).
struct FrameTexture {
    private let drawsOnCPU: Bool
    private var asItIs = Texture()
    private var scaled = ScaledTexture()

    init(drawsOnCPU: Bool) { self.drawsOnCPU = drawsOnCPU }

    var handle: OpaquePointer? { drawsOnCPU ? scaled.handle : asItIs.handle }

    /// Uploads `image` for drawing at `placement`; false when it cannot.
    mutating func upload(_ image: CVPixelBuffer, for placement: TexturePlacement, renderer: OpaquePointer) -> Bool {
        guard drawsOnCPU else { return asItIs.upload(image, renderer: renderer) }
        // The picture is scaled into the destination before it is turned: its pixels are the destination's size.
        let width = Int(placement.destination.width.rounded())
        let height = Int(placement.destination.height.rounded())
        return scaled.upload(image, width: width, height: height, renderer: renderer)
    }

    mutating func destroy() {
        asItIs.destroy()
        scaled.destroy()
    }
}
