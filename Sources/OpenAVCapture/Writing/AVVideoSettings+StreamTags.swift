// The video settings keys that describe the stream rather than its pictures: H.264 profile, level and entropy
// coding, pixel aspect ratio, clean aperture and colour properties (AVVideoSettings.h), and how the writer reads them.

import MediaCodecs

// MARK: H.264 profiles and levels (AVVideoProfileLevelKey values)

/// H.264 Baseline profile, level 3.0.
public let AVVideoProfileLevelH264Baseline30 = "H264_Baseline_3_0"
/// H.264 Baseline profile, level 3.1.
public let AVVideoProfileLevelH264Baseline31 = "H264_Baseline_3_1"
/// H.264 Baseline profile, level 4.1.
public let AVVideoProfileLevelH264Baseline41 = "H264_Baseline_4_1"
/// H.264 Main profile, level 3.0.
public let AVVideoProfileLevelH264Main30 = "H264_Main_3_0"
/// H.264 Main profile, level 3.1.
public let AVVideoProfileLevelH264Main31 = "H264_Main_3_1"
/// H.264 Main profile, level 3.2.
public let AVVideoProfileLevelH264Main32 = "H264_Main_3_2"
/// H.264 Main profile, level 4.1.
public let AVVideoProfileLevelH264Main41 = "H264_Main_4_1"
/// H.264 High profile, level 4.0.
public let AVVideoProfileLevelH264High40 = "H264_High_4_0"
/// H.264 High profile, level 4.1.
public let AVVideoProfileLevelH264High41 = "H264_High_4_1"
/// HEVC Main 10 profile, level chosen by the encoder. Not written here (the HEVC encoder writes 8-bit Main).
public let kVTProfileLevel_HEVC_Main10_AutoLevel = "HEVC_Main10_AutoLevel"

// MARK: Entropy coding and frame dropping (compression properties)

/// The H.264 entropy coding: ``AVVideoH264EntropyModeCAVLC`` or ``AVVideoH264EntropyModeCABAC``.
public let AVVideoH264EntropyModeKey = "H264EntropyMode"
/// Context-adaptive variable-length coding: every profile, less work to decode.
public let AVVideoH264EntropyModeCAVLC = "CAVLC"
/// Context-adaptive binary arithmetic coding: Main and High profiles, smaller files.
public let AVVideoH264EntropyModeCABAC = "CABAC"
/// The average rate of frames no other frame depends on being dropped, per second.
public let AVVideoAverageNonDroppableFrameRateKey = "AverageNonDroppableFrameRate"

// MARK: Pixel aspect ratio and clean aperture (video settings)

/// The shape of a pixel: a dictionary of ``AVVideoPixelAspectRatioHorizontalSpacingKey`` and
/// ``AVVideoPixelAspectRatioVerticalSpacingKey``.
public let AVVideoPixelAspectRatioKey = "PixelAspectRatio"
/// A pixel's relative width.
public let AVVideoPixelAspectRatioHorizontalSpacingKey = "HorizontalSpacing"
/// A pixel's relative height.
public let AVVideoPixelAspectRatioVerticalSpacingKey = "VerticalSpacing"
/// The clean aperture: a dictionary of width, height and offsets of the picture area meant to be shown.
public let AVVideoCleanApertureKey = "CleanAperture"
/// The clean aperture's width in pixels.
public let AVVideoCleanApertureWidthKey = "Width"
/// The clean aperture's height in pixels.
public let AVVideoCleanApertureHeightKey = "Height"
/// The clean aperture centre's horizontal offset from the picture's centre, in pixels.
public let AVVideoCleanApertureHorizontalOffsetKey = "HorizontalOffset"
/// The clean aperture centre's vertical offset from the picture's centre, in pixels.
public let AVVideoCleanApertureVerticalOffsetKey = "VerticalOffset"

// MARK: Colour properties (video settings)

/// The colour tags written into the stream: a dictionary of ``AVVideoColorPrimariesKey``,
/// ``AVVideoTransferFunctionKey`` and ``AVVideoYCbCrMatrixKey``.
public let AVVideoColorPropertiesKey = "AVVideoColorPropertiesKey"
/// The colour primaries: one of the `AVVideoColorPrimaries_…` values.
public let AVVideoColorPrimariesKey = "ColorPrimaries"
/// The transfer function: one of the `AVVideoTransferFunction_…` values.
public let AVVideoTransferFunctionKey = "TransferFunction"
/// The Y'CbCr matrix: one of the `AVVideoYCbCrMatrix_…` values.
public let AVVideoYCbCrMatrixKey = "YCbCrMatrix"
/// BT.709 primaries (HD).
public let AVVideoColorPrimaries_ITU_R_709_2 = "ITU_R_709_2"
/// EBU 3213 primaries (PAL).
public let AVVideoColorPrimaries_EBU_3213 = "EBU_3213"
/// SMPTE C primaries (NTSC).
public let AVVideoColorPrimaries_SMPTE_C = "SMPTE_C"
/// Display P3 primaries with a D65 white point.
public let AVVideoColorPrimaries_P3_D65 = "P3_D65"
/// BT.2020 primaries (UHD, HDR).
public let AVVideoColorPrimaries_ITU_R_2020 = "ITU_R_2020"
/// The BT.709 transfer function.
public let AVVideoTransferFunction_ITU_R_709_2 = "ITU_R_709_2"
/// The SMPTE 240M transfer function.
public let AVVideoTransferFunction_SMPTE_240M_1995 = "SMPTE_240M_1995"
/// SMPTE ST 2084 (PQ), HDR10's transfer function.
public let AVVideoTransferFunction_SMPTE_ST_2084_PQ = "SMPTE_ST_2084_PQ"
/// ITU-R BT.2100 HLG, hybrid log-gamma.
public let AVVideoTransferFunction_ITU_R_2100_HLG = "ITU_R_2100_HLG"
/// Linear light.
public let AVVideoTransferFunction_Linear = "Linear"
/// The sRGB transfer function (IEC 61966-2-1).
public let AVVideoTransferFunction_IEC_sRGB = "IEC_sRGB"
/// The BT.709 Y'CbCr matrix.
public let AVVideoYCbCrMatrix_ITU_R_709_2 = "ITU_R_709_2"
/// The BT.601 Y'CbCr matrix.
public let AVVideoYCbCrMatrix_ITU_R_601_4 = "ITU_R_601_4"
/// The BT.2020 (non-constant luminance) Y'CbCr matrix.
public let AVVideoYCbCrMatrix_ITU_R_2020 = "ITU_R_2020"

extension WriterTrackSettings {
    /// The video settings keys read here, beside the ones of the main reader.
    static let streamTagKeys: Set<String> = [AVVideoPixelAspectRatioKey, AVVideoCleanApertureKey, AVVideoColorPropertiesKey]
    /// The compression properties read here.
    static let streamTagCompressionKeys: Set<String> = [
        AVVideoProfileLevelKey, AVVideoH264EntropyModeKey, AVVideoAverageNonDroppableFrameRateKey,
    ]

    /// Reads the stream-describing keys of `settings` and its compression `properties` into `configuration`, or
    /// stops the program naming what is wrong (AVAssetWriterInput.h: the initializer "throws an exception" for
    /// settings that do not fit).
    static func readStreamTags(
        _ settings: [String: Any], properties: [String: Any], into configuration: inout VideoEncoder.Configuration
    ) {
        let codec = configuration.codec
        var tags = VideoEncoder.StreamTags()
        if let raw = properties[AVVideoProfileLevelKey] {
            guard let profile = raw as? String else { invalid("'\(AVVideoProfileLevelKey)' must be a String, not \(raw)") }
            (tags.h264Profile, tags.h264Level) = profileAndLevel(profile, codec: codec)
        }
        if let raw = properties[AVVideoH264EntropyModeKey] {
            guard codec == .h264 else { invalid("'\(AVVideoH264EntropyModeKey)' applies to H.264, not \(codec)") }
            switch raw as? String {
            case AVVideoH264EntropyModeCAVLC: tags.entropy = .cavlc
            case AVVideoH264EntropyModeCABAC:
                guard tags.h264Profile != .baseline else {
                    invalid("CABAC is not part of the H.264 Baseline profile; use CAVLC or the Main or High profile")
                }
                tags.entropy = .cabac
            default:
                invalid("'\(AVVideoH264EntropyModeKey)' must be AVVideoH264EntropyModeCAVLC or …CABAC, not \(raw)")
            }
        }
        if let raw = properties[AVVideoAverageNonDroppableFrameRateKey] {
            // Every frame here is a reference frame (the encoders make no B-frames), so the stream's non-droppable
            // rate is its frame rate: any rate up to it is met.
            guard codec == .h264 || codec == .hevc, let rate = doubleSetting(raw), rate > 0,
                rate <= Double(configuration.frameRate)
            else {
                invalid(
                    "'\(AVVideoAverageNonDroppableFrameRateKey)' must be a rate in (0, \(configuration.frameRate)] "
                        + "for H.264 or HEVC, not \(raw)")
            }
        }
        if let raw = settings[AVVideoPixelAspectRatioKey] {
            guard let ratio = raw as? [String: Any],
                let horizontal = integerSetting(ratio[AVVideoPixelAspectRatioHorizontalSpacingKey]),
                let vertical = integerSetting(ratio[AVVideoPixelAspectRatioVerticalSpacingKey]),
                (1...65535).contains(horizontal), (1...65535).contains(vertical), ratio.count == 2
            else {
                invalid("'\(AVVideoPixelAspectRatioKey)' must hold positive HorizontalSpacing and VerticalSpacing, not \(raw)")
            }
            tags.pixelAspectRatio = (Int32(horizontal), Int32(vertical))
        }
        if let raw = settings[AVVideoCleanApertureKey] {
            let keys = [
                AVVideoCleanApertureWidthKey, AVVideoCleanApertureHeightKey, AVVideoCleanApertureHorizontalOffsetKey,
                AVVideoCleanApertureVerticalOffsetKey,
            ]
            guard let aperture = raw as? [String: Any], Set(aperture.keys) == Set(keys),
                let width = integerSetting(aperture[AVVideoCleanApertureWidthKey]),
                let height = integerSetting(aperture[AVVideoCleanApertureHeightKey]),
                let horizontal = integerSetting(aperture[AVVideoCleanApertureHorizontalOffsetKey]),
                let vertical = integerSetting(aperture[AVVideoCleanApertureVerticalOffsetKey])
            else {
                invalid("'\(AVVideoCleanApertureKey)' must hold Width, Height and both offsets, not \(raw)")
            }
            // The offsets move the aperture's centre from the picture's: what is cut from each edge follows.
            let left = (configuration.width - width) / 2 + horizontal
            let top = (configuration.height - height) / 2 + vertical
            let (right, bottom) = (configuration.width - width - left, configuration.height - height - top)
            guard width > 0, height > 0, [left, top, right, bottom].allSatisfy({ $0 >= 0 && $0 % 2 == 0 }) else {
                invalid(
                    "'\(AVVideoCleanApertureKey)' must lie inside the \(configuration.width)x\(configuration.height) "
                        + "picture with even edges (4:2:0), not \(raw)")
            }
            if codec == .h264, [left, top, right, bottom] != [0, 0, 0, 0] {
                tags.cleanApertureCrop = (left, top, right, bottom)
            }
        }
        if let raw = settings[AVVideoColorPropertiesKey] {
            guard let colour = raw as? [String: Any] else {
                invalid("'\(AVVideoColorPropertiesKey)' must be a dictionary, not \(raw)")
            }
            readColor(colour, into: &tags, configuration: &configuration)
        }
        configuration.tags = tags
    }

    /// The x264 profile and level an `AVVideoProfileLevel…` value names (nil level: x264 chooses).
    private static func profileAndLevel(
        _ value: String, codec: VideoEncoder.Codec
    ) -> (VideoEncoder.H264Profile?, String?) {
        switch codec {
        case .hevc:
            guard value == kVTProfileLevel_HEVC_Main_AutoLevel else {
                invalid("'\(AVVideoProfileLevelKey)' \(value) is not supported for HEVC: it is written in Main (8-bit)")
            }
            return (nil, nil)
        case .h264:
            let parts = value.split(separator: "_")
            guard parts.count >= 3, parts[0] == "H264",
                let profile = VideoEncoder.H264Profile(rawValue: parts[1].lowercased())
            else { invalid("'\(AVVideoProfileLevelKey)' \(value) is not an H.264 profile and level") }
            if parts[2] == "AutoLevel", parts.count == 3 { return (profile, nil) }
            guard parts.count == 4, let major = Int(parts[2]), let minor = Int(parts[3]) else {
                invalid("'\(AVVideoProfileLevelKey)' \(value) is not an H.264 profile and level")
            }
            return (profile, "\(major).\(minor)")
        case .jpeg, .proRes422:
            invalid("'\(AVVideoProfileLevelKey)' applies to H.264 and HEVC, not \(codec)")
        }
    }

    private static func readColor(
        _ colour: [String: Any], into tags: inout VideoEncoder.StreamTags,
        configuration: inout VideoEncoder.Configuration
    ) {
        let keys: Set<String> = [AVVideoColorPrimariesKey, AVVideoTransferFunctionKey, AVVideoYCbCrMatrixKey]
        guard Set(colour.keys) == keys else {
            invalid("'\(AVVideoColorPropertiesKey)' must hold ColorPrimaries, TransferFunction and YCbCrMatrix")
        }
        switch colour[AVVideoColorPrimariesKey] as? String {
        case AVVideoColorPrimaries_ITU_R_709_2: tags.colorPrimaries = .bt709
        case AVVideoColorPrimaries_SMPTE_C: tags.colorPrimaries = .smpteC
        case AVVideoColorPrimaries_EBU_3213: tags.colorPrimaries = .ebu3213
        case AVVideoColorPrimaries_P3_D65: tags.colorPrimaries = .p3D65
        case AVVideoColorPrimaries_ITU_R_2020: tags.colorPrimaries = .bt2020
        case let other: invalid("'\(AVVideoColorPrimariesKey)' \(String(describing: other)) is not one of AVVideoColorPrimaries_…")
        }
        switch colour[AVVideoTransferFunctionKey] as? String {
        case AVVideoTransferFunction_ITU_R_709_2: tags.transferFunction = .bt709
        case AVVideoTransferFunction_SMPTE_240M_1995: tags.transferFunction = .smpte240M
        case AVVideoTransferFunction_SMPTE_ST_2084_PQ: tags.transferFunction = .pq
        case AVVideoTransferFunction_ITU_R_2100_HLG: tags.transferFunction = .hlg
        case AVVideoTransferFunction_Linear: tags.transferFunction = .linear
        case AVVideoTransferFunction_IEC_sRGB: tags.transferFunction = .sRGB
        case let other:
            invalid("'\(AVVideoTransferFunctionKey)' \(String(describing: other)) is not one of AVVideoTransferFunction_…")
        }
        switch colour[AVVideoYCbCrMatrixKey] as? String {
        case AVVideoYCbCrMatrix_ITU_R_709_2: configuration.matrix = .itu709
        case AVVideoYCbCrMatrix_ITU_R_601_4: configuration.matrix = .itu601
        case AVVideoYCbCrMatrix_ITU_R_2020: configuration.matrix = .itu2020
        case let other: invalid("'\(AVVideoYCbCrMatrixKey)' \(String(describing: other)) is not one of AVVideoYCbCrMatrix_…")
        }
    }
}
