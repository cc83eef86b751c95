import CLinuxMedia
import OpenCoreMedia
import SystemPackage

/// What a V4L2 memory-to-memory encoder is asked for: the pictures it takes, the codec it gives, the size, and the
/// rate control it is told where it has the controls.
///
/// Value type; safe to use from any thread.
package struct V4L2EncoderSettings: Sendable, Hashable {
    /// The raw format pictures are queued in (OUTPUT queue): `.nv12`, `.yuv420`, `.yuyv`, `.grey`, or the
    /// multi-planar `.nv12m` / `.yuv420m`.
    package var pictureFormat: V4L2PixelFormat
    /// The coded format (CAPTURE queue): `.h264`, `.hevc`, or `.fwht` on vicodec.
    package var codedFormat: V4L2PixelFormat
    package var width: Int
    package var height: Int
    /// Pictures from one key frame to the next (`V4L2_CID_MPEG_VIDEO_GOP_SIZE`, and `…_H264_I_PERIOD` where the
    /// driver has it); nil leaves the driver's default.
    package var keyFrameInterval: Int?
    /// Bits per second (`V4L2_CID_MPEG_VIDEO_BITRATE`); nil leaves the driver's default.
    package var averageBitRate: Int?
    /// Buffers on each queue: enough that the device works on one picture while we fill the next.
    package var bufferCount: Int

    package init(
        pictureFormat: V4L2PixelFormat, codedFormat: V4L2PixelFormat, width: Int, height: Int,
        keyFrameInterval: Int? = nil, averageBitRate: Int? = nil, bufferCount: Int = 4
    ) {
        self.pictureFormat = pictureFormat
        self.codedFormat = codedFormat
        self.width = width
        self.height = height
        self.keyFrameInterval = keyFrameInterval
        self.averageBitRate = averageBitRate
        self.bufferCount = bufferCount
    }
}

/// One coded picture out of the encoder: its bytes (for H.264 and HEVC an Annex B byte stream whose first packet
/// carries the parameter sets), the presentation time of the picture it came from, and whether it is a key frame.
///
/// Value type; safe to use from any thread.
package struct V4L2EncodedPacket: Sendable {
    package var data: [UInt8]
    package var presentationTime: CMTime
    package var isKeyFrame: Bool
    /// The driver's count of coded pictures (`v4l2_buffer.sequence`): a gap is a picture the device dropped.
    package var sequence: UInt32
}

/// Why a V4L2 encoder could not do what was asked; each says what to do about it.
///
/// Value type; safe to use from any thread.
package enum V4L2EncoderError: Error, Sendable, Equatable, CustomStringConvertible {
    /// open(2) failed.
    case cannotOpen(path: String, Errno)
    /// The node is not a streaming memory-to-memory device.
    case notAMemoryToMemoryDevice(path: String)
    /// The queue does not list the format (VIDIOC_ENUM_FMT), or S_FMT chose another one.
    case formatNotOffered(V4L2PixelFormat, queue: String, offered: [V4L2PixelFormat])
    /// S_FMT adjusted the size: the device cannot encode this one.
    case sizeNotTaken(requested: String, taken: String)
    /// The picture handed in is not in the negotiated format or size.
    case pictureMismatch(String)
    /// A call the encoder needed failed.
    case device(operation: String, Errno)
    /// The device did not finish within the time a drain may take.
    case drainTimedOut(seconds: Int)
    /// `encode` after `finish`, before `reconfigure`.
    case notRunning

    package var description: String {
        switch self {
        case .cannotOpen(let path, let error):
            "cannot open the encoder \(path): \(error) (check that it exists and that this user may open it)"
        case .notAMemoryToMemoryDevice(let path):
            "\(path) is not a memory-to-memory device (no V4L2_CAP_VIDEO_M2M): choose an encoder node from "
                + "V4L2EncoderDiscovery"
        case .formatNotOffered(let format, let queue, let offered):
            "the encoder does not take \(format) on its \(queue) queue; it offers "
                + (offered.isEmpty ? "nothing" : offered.map(\.description).joined(separator: ", "))
        case .sizeNotTaken(let requested, let taken):
            "the encoder cannot encode \(requested) (it would take \(taken)): scale the pictures to a size it takes"
        case .pictureMismatch(let what): "the picture does not match the encoder's settings: \(what)"
        case .device(let operation, let error): "the encoder failed at \(operation): \(error)"
        case .drainTimedOut(let seconds):
            "the encoder did not give its last packet within \(seconds) s of being told to stop (a hung device?)"
        case .notRunning: "the encoder was finished: reconfigure it before encoding more pictures"
        }
    }
}

/// Annex B byte streams (H.264, HEVC): whether a packet holds a coded picture or only parameter sets and SEI,
/// which some drivers (`HEADER_MODE_SEPARATE`) give in a buffer of their own ahead of the first picture.
package enum AnnexBProbe {
    /// Whether a packet of `codedFormat` is a key picture, read from its bytes: an IDR slice (H.264 type 5), an
    /// IRAP one (HEVC types 16-23), or an FWHT frame whose header has `V4L2_FWHT_FL_I_FRAME` (bit 10 of the
    /// big-endian flags at byte 20, after the magic `4F4F4F4F FFFFFFFF`, version, width and height).
    package static func isKeyPicture(_ bytes: [UInt8], codedFormat: V4L2PixelFormat) -> Bool {
        switch codedFormat {
        case .h264: return nalTypes(bytes, hevc: false).contains(5)
        case .hevc: return nalTypes(bytes, hevc: true).contains { (16...23).contains($0) }
        case .fwht:
            guard bytes.count >= 24, bytes[0..<4].allSatisfy({ $0 == 0x4F }) else { return false }
            let flags = bytes[20..<24].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            return flags & (1 << 10) != 0
        default: return true  // JPEG: every frame stands alone.
        }
    }

    /// Whether `bytes` has at least one NAL unit of a coded slice (H.264 types 1-5, HEVC types 0-31).
    package static func containsPicture(_ bytes: [UInt8], hevc: Bool) -> Bool {
        nalTypes(bytes, hevc: hevc).contains { hevc ? $0 <= 31 : (1...5).contains($0) }
    }

    /// The parameter sets in a packet (H.264 SPS and PPS, types 7 and 8; HEVC VPS, SPS and PPS, types 32-34), each
    /// after a 4-byte start code, in their order: the out-of-band header a muxer writes as `avcC`/`hvcC`.
    package static func parameterSets(_ bytes: [UInt8], hevc: Bool) -> [UInt8] {
        var sets: [UInt8] = []
        bytes.withUnsafeBytes { buffer in
            H264Bitstream.forEachNALUnit(inAnnexB: buffer) { range in
                guard (hevc ? 32...34 : 7...8).contains(nalType(buffer[range.lowerBound], hevc: hevc)) else { return }
                sets += [0, 0, 0, 1] + buffer[range]
            }
        }
        return sets
    }

    /// The type of each NAL unit in an Annex B byte stream (the units as `H264Bitstream.forEachNALUnit` finds them:
    /// Annex B framing is the same for HEVC).
    private static func nalTypes(_ bytes: [UInt8], hevc: Bool) -> [Int] {
        var types: [Int] = []
        bytes.withUnsafeBytes { buffer in
            H264Bitstream.forEachNALUnit(inAnnexB: buffer) { types.append(nalType(buffer[$0.lowerBound], hevc: hevc)) }
        }
        return types
    }

    /// The NAL unit type in a unit's first header byte.
    private static func nalType(_ header: UInt8, hevc: Bool) -> Int {
        hevc ? Int(header >> 1) & 0x3F : Int(header) & 0x1F
    }
}
