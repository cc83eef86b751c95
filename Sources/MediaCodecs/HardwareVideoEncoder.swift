// HardwareVideoEncoder: the hardware H.264/HEVC encoders FFmpeg drives, and whether a writer may or must use one.

import CFFmpeg

/// Whether a video encoder may or must be a hardware one: Apple's encoder specification
/// (`kVTVideoEncoderSpecification_EnableHardwareAcceleratedVideoEncoder` / `…Require…`) as a value.
///
/// Threading: a value; `Sendable`.
package enum HardwareEncoderPolicy: Hashable, Sendable {
    /// Software only (libx264, libx265): no specification, or Enable = false.
    case software
    /// Hardware where one works, else software (Enable = true).
    case preferHardware
    /// Hardware or nothing: the writer fails when none works (Require = true).
    case requireHardware
}

/// A hardware encoder FFmpeg drives, for ``VideoEncoder/Configuration/hardware``.
///
/// Threading: a value; `Sendable`.
package enum HardwareVideoEncoder: Hashable, Sendable, CustomStringConvertible {
    /// VA-API (Intel, AMD) on a DRM render node (`/dev/dri/renderD128`): FFmpeg's `h264_vaapi` / `hevc_vaapi`, the
    /// picture uploaded into a VA surface (`av_hwframe_transfer_data`).
    case vaapi(device: String)
    /// NVIDIA's NVENC: FFmpeg's `h264_nvenc` / `hevc_nvenc`, which take NV12 from system memory.
    case nvenc

    /// FFmpeg's encoder for `codec`, or nil (JPEG and ProRes have no hardware path here).
    package func encoderName(for codec: VideoEncoder.Codec) -> String? {
        switch (self, codec) {
        case (.vaapi, .h264): "h264_vaapi"
        case (.vaapi, .hevc): "hevc_vaapi"
        case (.nvenc, .h264): "h264_nvenc"
        case (.nvenc, .hevc): "hevc_nvenc"
        default: nil
        }
    }

    /// Whether this FFmpeg was built with `self`'s H.264 encoder (Debian's has both; a distribution's may not).
    package var isInThisFFmpeg: Bool {
        encoderName(for: .h264).map { avcodec_find_encoder_by_name($0) != nil } ?? false
    }

    package var description: String {
        switch self {
        case .vaapi(let device): "VA-API on \(device)"
        case .nvenc: "NVENC"
        }
    }
}

/// A VA-API device and its pool of surfaces for one size, made for an encoder (`av_hwdevice_ctx_create`,
/// `av_hwframe_ctx_alloc`, `av_hwframe_ctx_init`); freed with it.
///
/// Threading: thread-bound, as the encoder that owns it.
final class VAAPISurfaces {
    private var device: UnsafeMutablePointer<AVBufferRef>?
    private(set) var frames: UnsafeMutablePointer<AVBufferRef>?
    private var upload: UnsafeMutablePointer<AVFrame>?

    /// Opens the VA-API device at `path` and a pool of NV12 surfaces of `width` x `height`.
    init(path: String, width: Int, height: Int, operation: String) throws(MediaCodecsError) {
        let opened = av_hwdevice_ctx_create(&device, AV_HWDEVICE_TYPE_VAAPI, path, nil, 0)
        guard opened >= 0, let device else {
            throw .ffmpeg(opened, while: "\(operation) (av_hwdevice_ctx_create VAAPI \(path))")
        }
        frames = av_hwframe_ctx_alloc(device)
        upload = av_frame_alloc()
        guard let frames,
            let context = frames.pointee.data?.withMemoryRebound(to: AVHWFramesContext.self, capacity: 1, { $0 }),
            upload != nil
        else {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "no VA-API frames context")
        }
        context.pointee.format = AV_PIX_FMT_VAAPI
        context.pointee.sw_format = AV_PIX_FMT_NV12
        context.pointee.width = Int32(width)
        context.pointee.height = Int32(height)
        context.pointee.initial_pool_size = 8
        let initialised = av_hwframe_ctx_init(frames)
        guard initialised >= 0 else { throw .ffmpeg(initialised, while: "\(operation) (av_hwframe_ctx_init)") }
    }

    deinit {
        av_frame_free(&upload)
        av_buffer_unref(&frames)
        av_buffer_unref(&device)
    }

    /// `picture` (NV12 in system memory) copied into a surface of the pool, with its timestamp and picture type.
    func uploaded(
        _ picture: UnsafeMutablePointer<AVFrame>, operation: String
    ) throws(MediaCodecsError)
        -> UnsafeMutablePointer<AVFrame>
    {
        guard let upload else { throw MediaCodecsError(.invalidState, while: operation, message: "no frame") }
        av_frame_unref(upload)
        let got = av_hwframe_get_buffer(frames, upload, 0)
        guard got >= 0 else { throw .ffmpeg(got, while: "\(operation) (av_hwframe_get_buffer)") }
        let copied = av_hwframe_transfer_data(upload, picture, 0)
        guard copied >= 0 else { throw .ffmpeg(copied, while: "\(operation) (av_hwframe_transfer_data)") }
        upload.pointee.pts = picture.pointee.pts
        upload.pointee.pict_type = picture.pointee.pict_type
        return upload
    }
}
