import CaptureDrivers
import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo

/// Real H.264 for `SimulatedV4L2Encoder`: codes each NV12 picture the simulated device read with libx264, key
/// frames only where the device asks, so a movie muxed from the device's packets can be played back and counted.
///
/// Threading: thread safe; a lock guards the encoder (the device calls it under its own lock anyway).
final class X264PictureCoder: @unchecked Sendable {
    let width: Int
    let height: Int
    /// libx264's SPS and PPS (Annex B), which the device gives ahead of its first picture.
    let parameterSets: [UInt8]
    private let encoder: VideoEncoder
    private let lock = NSLock()
    private var count: Int64 = 0

    init(width: Int, height: Int) throws {
        self.width = width
        self.height = height
        var configuration = VideoEncoder.Configuration(codec: .h264, width: width, height: height)
        configuration.maxKeyFrameInterval = 10_000  // Key frames where the device says, nowhere else.
        encoder = try VideoEncoder(configuration)
        parameterSets = AnnexBProbe.parameterSets(encoder.extradata, hevc: false)
    }

    /// The slice of one picture laid out as the device's OUTPUT buffer is.
    func code(_ picture: [UInt8], bytesPerLine: Int, key: Bool) -> [UInt8] {
        lock.lock()
        defer { lock.unlock() }
        var created: CVPixelBuffer?
        let status = CVPixelBufferCreate(
            nil, width, height, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &created)
        guard status == kCVReturnSuccess, let buffer = created else { return [] }
        buffer.withLockedPlanes([]) { planes in
            for (plane, rows, offset) in [(0, height, 0), (1, height / 2, bytesPerLine * height)] {
                for row in 0..<rows {
                    let start = offset + row * bytesPerLine
                    planes[plane].row(row).copyBytes(from: picture[start..<(start + width)])
                }
            }
        }
        count += 1
        do {
            try encoder.send(buffer, presentationTime: CMTime(value: count, timescale: 30), forcingKeyFrame: key)
            guard case .packet(let packet) = try encoder.receivePacket() else { return [] }
            return packet.data.withUnsafeBytes { Array($0.bindMemory(to: UInt8.self)) }
        } catch {
            return []
        }
    }
}
