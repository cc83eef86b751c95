import CFFmpeg

extension VideoEncoder {
    /// What an H.264 stream may be restricted to: the profile x264 writes (`profile`) and the level it signals.
    ///
    /// Threading: a value; `Sendable`.
    package enum H264Profile: String, Hashable, Sendable {
        case baseline, main, high
    }

    /// How H.264 codes its numbers: CAVLC (variable-length codes, every profile) or CABAC (arithmetic coding, Main
    /// and High). libx264's `coder` option.
    package enum H264Entropy: String, Hashable, Sendable {
        case cavlc, cabac
    }

    /// The colour primaries a stream is tagged with (the SPS's VUI, and the container's `colr` box).
    package enum ColorPrimaries: Hashable, Sendable {
        case bt709, smpteC, ebu3213, p3D65, bt2020

        var ffmpeg: AVColorPrimaries {
            switch self {
            case .bt709: AVCOL_PRI_BT709
            case .smpteC: AVCOL_PRI_SMPTE170M
            case .ebu3213: AVCOL_PRI_BT470BG
            case .p3D65: AVCOL_PRI_SMPTE432
            case .bt2020: AVCOL_PRI_BT2020
            }
        }
    }

    /// The transfer function a stream is tagged with.
    package enum TransferFunction: Hashable, Sendable {
        case bt709, smpte240M, pq, hlg, linear, sRGB

        var ffmpeg: AVColorTransferCharacteristic {
            switch self {
            case .bt709: AVCOL_TRC_BT709
            case .smpte240M: AVCOL_TRC_SMPTE240M
            case .pq: AVCOL_TRC_SMPTE2084
            case .hlg: AVCOL_TRC_ARIB_STD_B67
            case .linear: AVCOL_TRC_LINEAR
            case .sRGB: AVCOL_TRC_IEC61966_2_1
            }
        }
    }

    /// What a stream says about itself beyond its pictures, from an asset writer's output settings: the H.264
    /// profile, level and entropy coding, the pixel aspect ratio and the colour tags. Nil fields keep the
    /// encoder's defaults (High profile, the level x264 picks, CABAC, square pixels, tags by picture size).
    ///
    /// Threading: a value; `Sendable`.
    package struct StreamTags: Hashable, Sendable {
        package var h264Profile: H264Profile?
        /// The level as x264 spells it ("3.1"); nil lets x264 choose.
        package var h264Level: String?
        package var entropy: H264Entropy?
        /// The pixel aspect ratio, horizontal spacing to vertical spacing (1:1 is square).
        package var pixelAspectRatio: (horizontal: Int32, vertical: Int32)?
        package var colorPrimaries: ColorPrimaries?
        package var transferFunction: TransferFunction?
        /// The clean aperture as the pixels cut from each edge (even numbers, for 4:2:0): H.264's frame cropping, so
        /// decoders show only the aperture.
        package var cleanApertureCrop: (left: Int, top: Int, right: Int, bottom: Int)?

        package init() {}

        package static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.h264Profile == rhs.h264Profile && lhs.h264Level == rhs.h264Level && lhs.entropy == rhs.entropy
                && lhs.pixelAspectRatio?.horizontal == rhs.pixelAspectRatio?.horizontal
                && lhs.pixelAspectRatio?.vertical == rhs.pixelAspectRatio?.vertical
                && lhs.colorPrimaries == rhs.colorPrimaries && lhs.transferFunction == rhs.transferFunction
                && lhs.cropText == rhs.cropText
        }

        /// x264's `crop-rect` value ("left,top,right,bottom"), or nil.
        var cropText: String? {
            cleanApertureCrop.map { "\($0.left),\($0.top),\($0.right),\($0.bottom)" }
        }

        package func hash(into hasher: inout Hasher) {
            hasher.combine(h264Profile)
            hasher.combine(h264Level)
            hasher.combine(entropy)
            hasher.combine(pixelAspectRatio?.horizontal)
            hasher.combine(pixelAspectRatio?.vertical)
            hasher.combine(colorPrimaries)
            hasher.combine(transferFunction)
            hasher.combine(cropText)
        }

        /// Sets libx264's options for what these tags ask in `options` (the stream's colour tags and pixel shape
        /// are ``Configuration/streamDescription``'s, set on the context by the encoder).
        func apply(toX264Options options: inout OpaquePointer?, codec: Codec) {
            guard codec == .h264 else { return }
            if let h264Profile { setOption(&options, "profile", h264Profile.rawValue) }
            if let h264Level { setOption(&options, "level", h264Level) }
            if let entropy { setOption(&options, "coder", entropy.rawValue) }
            if let cropText {
                // Appended to the x264-params the encoder already set (its fixed GOP).
                let existing = av_dict_get(options, "x264-params", nil, 0).map { String(cString: $0.pointee.value) }
                setOption(&options, "x264-params", (existing.map { $0 + ":" } ?? "") + "crop-rect=\(cropText)")
            }
        }
    }
}

extension VideoEncoder.Configuration {
    /// What a stream coded from this configuration says of its pictures, whichever encoder codes it (libavcodec's,
    /// or a V4L2 device the muxer describes from the configuration): the colour tags and pixel aspect ratio asked
    /// for in ``tags``, else BT.709 primaries and transfer from 1280x720 up and SMPTE 170M below, square pixels;
    /// the matrix is ``streamMatrix``. One function, so a file's tags do not depend on which encoder ran.
    package var streamDescription: StreamDescription {
        let isHD = width >= 1280 || height >= 720
        return StreamDescription(
            primaries: tags.colorPrimaries?.ffmpeg ?? (isHD ? AVCOL_PRI_BT709 : AVCOL_PRI_SMPTE170M),
            transfer: tags.transferFunction?.ffmpeg ?? (isHD ? AVCOL_TRC_BT709 : AVCOL_TRC_SMPTE170M),
            matrix: streamMatrix.ffmpegColorspace,
            pixelAspectRatio: tags.pixelAspectRatio.map { AVRational(num: $0.horizontal, den: $0.vertical) }
                ?? AVRational(num: 1, den: 1))
    }

    /// The colour tags and pixel shape of a coded stream, as libavcodec names them.
    ///
    /// Threading: a value; `Sendable`.
    package struct StreamDescription: Sendable {
        package var primaries: AVColorPrimaries
        package var transfer: AVColorTransferCharacteristic
        package var matrix: AVColorSpace
        package var pixelAspectRatio: AVRational
    }
}
