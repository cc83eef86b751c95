import CaptureDrivers
import MediaCodecs

/// The virtual USB webcam's frame compressors, on MediaCodecs: the implementation of CaptureDrivers'
/// `VirtualFrameCompressor` seam, so the driver sends MJPEG and H.264 without importing MediaCodecs.
///
/// - MJPEG: `MJPEGEncoder` (TurboJPEG), baseline JFIF 4:2:2 from the YUYV the camera renders (BT.709 video range,
///   rewritten as JFIF's full-range BT.601), as UVC webcams send.
/// - H.264: `VideoEncoder` (libx264 with the recording defaults: `superfast`, `zerolatency`, one key frame a second)
///   from NV12, in Annex B with the SPS and PPS before every key frame, as UVC H.264 cameras send, so a decoder can
///   start at any key frame without an `avcC`.
///
/// Threading: the factory is `Sendable`; each compressor is thread-bound to the capture thread of its stream.
enum VirtualWebcamCompressors {
    /// Makes the compressor of one stream.
    static let factory: VirtualFrameCompressorFactory = { format in
        switch format.codec {
        case VirtualCompressedFormat.mjpeg: return try MJPEGFrameCompressor()
        case VirtualCompressedFormat.h264: return try H264FrameCompressor(format)
        default:
            throw MediaCodecsError(
                .unsupportedConfiguration, while: "making a frame compressor for the virtual webcam",
                message: "no compressor for codec \(format.codec)")
        }
    }

    /// Installs `factory` on the shared driver's webcam, once; `DeviceDirectory.shared` does this before it lists
    /// a device, so every `AVCaptureDevice` of the webcam can stream its compressed formats.
    static let installedOnSharedWebcam: Void = {
        VirtualDeviceDriver.shared.usbWebcam.installFrameCompressors(factory)
    }()
}

/// MJPEG frames with TurboJPEG. Thread-bound.
private final class MJPEGFrameCompressor: VirtualFrameCompressor {
    private let encoder: MJPEGEncoder

    init() throws(MediaCodecsError) {
        encoder = try MJPEGEncoder()
    }

    func compress(_ frame: CVPixelBuffer, presentationTime: CMTime, _ body: (UnsafeRawBufferPointer) -> Void) throws {
        // The virtual cameras encode BT.709 at every size (`VirtualColorEncoding`).
        try encoder.encode(frame, matrix: .itu709, body)
    }
}

/// H.264 access units in Annex B with libx264. Thread-bound.
private final class H264FrameCompressor: VirtualFrameCompressor {
    private let encoder: VideoEncoder
    /// The parameter sets (Annex B) followed by a key frame: reused so key frames allocate nothing once grown.
    private var keyFrame: [UInt8] = []

    init(_ format: VirtualCompressedFormat) throws(MediaCodecsError) {
        encoder = try VideoEncoder(
            VideoEncoder.Configuration(
                codec: .h264, width: format.width, height: format.height, frameRate: format.frameRate,
                pixelFormat: format.renderedPixelFormat))
    }

    func compress(_ frame: CVPixelBuffer, presentationTime: CMTime, _ body: (UnsafeRawBufferPointer) -> Void) throws {
        try encoder.send(frame, presentationTime: presentationTime)
        // `zerolatency`: the frame's packet comes out of this send, before the next.
        while case .packet(let packet) = try encoder.receivePacket() {
            packet.data.withUnsafeBytes { bytes in
                guard packet.isKeyFrame else { return body(bytes) }
                // The encoder keeps its parameter sets out of band (global header); a camera sends them in band.
                keyFrame.removeAll(keepingCapacity: true)
                keyFrame.append(contentsOf: encoder.extradata)
                keyFrame.append(contentsOf: bytes)
                keyFrame.withUnsafeBytes(body)
            }
        }
    }
}
