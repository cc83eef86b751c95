// AVAssetExportSession's presets: what each one writes.

import Foundation
import MediaCodecs
import OpenCoreMedia

/// Copies the samples as stored: no decoding, no encoding; a composition's scaled edits become retimed samples.
public let AVAssetExportPresetPassthrough = "AVAssetExportPresetPassthrough"
/// H.264 fitting 320×240, AAC: small files.
public let AVAssetExportPresetLowQuality = "AVAssetExportPresetLowQuality"
/// H.264 fitting 640×480, AAC.
public let AVAssetExportPresetMediumQuality = "AVAssetExportPresetMediumQuality"
/// H.264 at the source's size, AAC.
public let AVAssetExportPresetHighestQuality = "AVAssetExportPresetHighestQuality"
/// H.264 fitting 640×480, AAC.
public let AVAssetExportPreset640x480 = "AVAssetExportPreset640x480"
/// H.264 fitting 960×540, AAC.
public let AVAssetExportPreset960x540 = "AVAssetExportPreset960x540"
/// H.264 fitting 1280×720, AAC.
public let AVAssetExportPreset1280x720 = "AVAssetExportPreset1280x720"
/// H.264 fitting 1920×1080, AAC.
public let AVAssetExportPreset1920x1080 = "AVAssetExportPreset1920x1080"
/// H.264 fitting 3840×2160, AAC.
public let AVAssetExportPreset3840x2160 = "AVAssetExportPreset3840x2160"
/// HEVC at the source's size, AAC.
public let AVAssetExportPresetHEVCHighestQuality = "AVAssetExportPresetHEVCHighestQuality"
/// HEVC fitting 1920×1080, AAC.
public let AVAssetExportPresetHEVC1920x1080 = "AVAssetExportPresetHEVC1920x1080"
/// HEVC fitting 3840×2160, AAC.
public let AVAssetExportPresetHEVC3840x2160 = "AVAssetExportPresetHEVC3840x2160"
/// Sound only, AAC in an .m4a file.
public let AVAssetExportPresetAppleM4A = "AVAssetExportPresetAppleM4A"

/// What a preset writes: passthrough, or video encoded with a codec within a box (pictures are scaled down to fit,
/// keeping their aspect, never up) and AAC sound.
///
/// Threading: a value; `Sendable`.
struct ExportPreset: Sendable {
    var name: String
    var isPassthrough = false
    /// nil: no video (AppleM4A).
    var codec: AVVideoCodecType?
    /// The largest picture; nil keeps the source's size.
    var box: (width: Int, height: Int)?
    /// The video bit rate as a fraction of the encoder's default for the size and rate (Low and Medium save).
    var bitRateFraction = 1.0
    var fileTypes: [AVFileType]

    static let all: [ExportPreset] = [
        ExportPreset(name: AVAssetExportPresetPassthrough, isPassthrough: true, fileTypes: [.mov, .mp4, .m4v]),
        ExportPreset(
            name: AVAssetExportPresetLowQuality, codec: .h264, box: (320, 240), bitRateFraction: 0.4,
            fileTypes: [.mov, .mp4, .m4v]),
        ExportPreset(
            name: AVAssetExportPresetMediumQuality, codec: .h264, box: (640, 480), bitRateFraction: 0.6,
            fileTypes: [.mov, .mp4, .m4v]),
        ExportPreset(name: AVAssetExportPresetHighestQuality, codec: .h264, fileTypes: [.mov, .mp4, .m4v]),
        ExportPreset(name: AVAssetExportPreset640x480, codec: .h264, box: (640, 480), fileTypes: [.mov, .mp4, .m4v]),
        ExportPreset(name: AVAssetExportPreset960x540, codec: .h264, box: (960, 540), fileTypes: [.mov, .mp4, .m4v]),
        ExportPreset(name: AVAssetExportPreset1280x720, codec: .h264, box: (1280, 720), fileTypes: [.mov, .mp4, .m4v]),
        ExportPreset(
            name: AVAssetExportPreset1920x1080, codec: .h264, box: (1920, 1080), fileTypes: [.mov, .mp4, .m4v]),
        ExportPreset(
            name: AVAssetExportPreset3840x2160, codec: .h264, box: (3840, 2160), fileTypes: [.mov, .mp4, .m4v]),
        ExportPreset(name: AVAssetExportPresetHEVCHighestQuality, codec: .hevc, fileTypes: [.mov, .mp4, .m4v]),
        ExportPreset(
            name: AVAssetExportPresetHEVC1920x1080, codec: .hevc, box: (1920, 1080), fileTypes: [.mov, .mp4, .m4v]),
        ExportPreset(
            name: AVAssetExportPresetHEVC3840x2160, codec: .hevc, box: (3840, 2160), fileTypes: [.mov, .mp4, .m4v]),
        ExportPreset(name: AVAssetExportPresetAppleM4A, fileTypes: [.m4a]),
    ]

    static func named(_ name: String) -> ExportPreset? { all.first { $0.name == name } }

    /// Whether this FFmpeg can write it (HEVC needs libx265).
    var isAvailable: Bool {
        guard codec == .hevc else { return true }
        return VideoEncoder.isAvailable(.hevc)
    }

    /// The encoded picture size for a source of `size`: fitted into the box, even (4:2:0 needs it).
    func outputSize(for size: CGSize) -> (width: Int, height: Int) {
        var width = Double(size.width)
        var height = Double(size.height)
        if let box {
            // A portrait source fits the box turned.
            let (boxWidth, boxHeight) =
                height > width ? (Double(box.height), Double(box.width)) : (Double(box.width), Double(box.height))
            let scale = min(1, boxWidth / width, boxHeight / height)
            width *= scale
            height *= scale
        }
        func even(_ value: Double) -> Int { max(2, Int((value / 2).rounded()) * 2) }
        return (even(width), even(height))
    }
}
