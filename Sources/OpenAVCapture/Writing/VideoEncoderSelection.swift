// VideoEncoderSelection: the encoder a video track gets, hardware or software, by its encoder specification.

import CaptureDrivers
import Foundation
import Logging
import MediaCodecs
import Synchronization

/// Makes a track's video encoder as its ``HardwareEncoderPolicy`` says (Apple's `AVVideoEncoderSpecificationKey`):
/// software alone; hardware where one works, else libx264/libx265 with one warning naming what each candidate
/// said; or hardware or nothing (`.encoderNotFound`, which the writer reports as `AVError.encoderNotFound`).
///
/// Candidates, in order, for H.264 and HEVC:
/// 1. V4L2 memory-to-memory encoders coding the track's codec (`V4L2EncoderDiscovery`: a Raspberry Pi's
///    `bcm2835-codec`, a SoC's VPU), through ``V4L2VideoEncoder``. One that fails while encoding is replaced by
///    VA-API or NVENC below, else software (with Enable's one warning), or fails the writer (Require).
/// 2. VA-API on each DRM render node (`/dev/dri/renderD*`, or the one path in `OPENAV_VAAPI_DEVICE`), through FFmpeg's
///    `h264_vaapi` / `hevc_vaapi`.
/// 3. NVENC through FFmpeg's `h264_nvenc` / `hevc_nvenc`, where this FFmpeg has them.
///
/// A candidate works when it opens for the track's size and rate (`avcodec_open2`; a V4L2 device must also code a
/// first picture and give its parameter sets): a device that is there but cannot start (a render node without a VA
/// driver, NVENC without a GPU) is a failure, not a hang.
///
/// Threading: stateless but for the record of fallbacks (a mutex); callable from any thread.
package enum VideoEncoderSelection {
    private static let logger = Logger(label: "OpenAVCapture")
    private static let fallbacks = Mutex<[String]>([])

    /// The fallback warnings logged so far in this process, for tests.
    package static var loggedFallbacks: [String] { fallbacks.withLock { $0 } }

    /// The encoder for `configuration`, chosen by its ``VideoEncoder/Configuration/hardwarePolicy``.
    package static func makeEncoder(
        _ configuration: VideoEncoder.Configuration
    ) throws(MediaCodecsError) -> any VideoPacketEncoder {
        let codec = configuration.codec
        guard configuration.hardwarePolicy != .software, codec == .h264 || codec == .hevc else {
            if configuration.hardwarePolicy == .requireHardware {
                throw notFound(configuration, reasons: ["no hardware path for \(codec) here"])
            }
            return try VideoEncoder(configuration)
        }
        let coded: V4L2PixelFormat = codec == .h264 ? .h264 : .hevc
        var reasons: [String] = []
        for device in V4L2EncoderDiscovery().encoders(coding: coded) {
            let name = "\(device.driver) at \(device.path)"
            do throws(MediaCodecsError) {
                return try V4L2VideoEncoder(
                    path: device.path, codedFormat: coded, offeredPictureFormats: device.pictureFormats,
                    configuration: configuration
                ) { (reason: String) throws(MediaCodecsError) -> VideoEncoder in
                    try ffmpegOrSoftware(configuration, reasons: ["\(device.driver) at \(reason)"])
                }
            } catch {
                reasons.append("\(name): \(error.message)")
            }
        }
        return try ffmpegOrSoftware(configuration, reasons: reasons)
    }

    /// VA-API, then NVENC, then (Enable) libx264/libx265 with one warning naming `reasons` and what each of those
    /// said; with Require, `.encoderNotFound` instead of software.
    private static func ffmpegOrSoftware(
        _ configuration: VideoEncoder.Configuration, reasons earlier: [String]
    ) throws(MediaCodecsError) -> VideoEncoder {
        var reasons = earlier
        for hardware in ffmpegCandidates() {
            var attempt = configuration
            attempt.hardware = hardware
            do throws(MediaCodecsError) {
                return try VideoEncoder(attempt)
            } catch {
                reasons.append("\(hardware): \(error.message)")
            }
        }
        if reasons.isEmpty { reasons = ["no V4L2 encoder, VA-API render node or NVENC found"] }
        if configuration.hardwarePolicy == .requireHardware { throw notFound(configuration, reasons: reasons) }
        let codec = configuration.codec
        let message =
            "no hardware \(codec == .h264 ? "H.264" : "HEVC") encoder works (\(reasons.joined(separator: "; "))): "
            + "encoding with \(codec.encoderName)"
        fallbacks.withLock { $0.append(message) }
        logger.warning("\(message)")
        return try VideoEncoder(configuration)
    }

    /// The FFmpeg hardware encoders to try, in order: VA-API on each render node, then NVENC.
    private static func ffmpegCandidates() -> [HardwareVideoEncoder] {
        var candidates: [HardwareVideoEncoder] = []
        if let override = ProcessInfo.processInfo.environment["OPENAV_VAAPI_DEVICE"], !override.isEmpty {
            candidates.append(.vaapi(device: override))
        } else {
            let nodes = (try? FileManager.default.contentsOfDirectory(atPath: "/dev/dri")) ?? []
            candidates += nodes.filter { $0.hasPrefix("renderD") }.sorted().map { .vaapi(device: "/dev/dri/\($0)") }
        }
        if HardwareVideoEncoder.nvenc.isInThisFFmpeg { candidates.append(.nvenc) }
        return candidates
    }

    private static func notFound(_ configuration: VideoEncoder.Configuration, reasons: [String]) -> MediaCodecsError {
        MediaCodecsError(
            .encoderNotFound,
            while: "choosing a hardware \(configuration.codec) encoder for "
                + "\(configuration.width)x\(configuration.height)",
            message: "kVTVideoEncoderSpecification_RequireHardwareAcceleratedVideoEncoder is set and no hardware "
                + "encoder works: \(reasons.joined(separator: "; "))")
    }
}
