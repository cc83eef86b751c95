// Media as drivers deliver it, made in the test: compressed packets of a real encoder and blank NV12 pictures.

import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo
import Testing

/// `frames` compressed sample buffers of `codec`, each a packet of a moving grey level.
func compressedVideo(_ codec: VideoEncoder.Codec, frames: Int) throws -> [CMSampleBuffer] {
    let encoder = try VideoEncoder(VideoEncoder.Configuration(codec: codec, width: 160, height: 120))
    let description = try CMFormatDescription(videoCodecType: codec.codecType, width: 160, height: 120)
    var packets: [EncodedPacket] = []
    for index in 0..<frames {
        let image = try nv12Picture(width: 160, height: 120)
        image.withLockedPlanes { planes in
            for (plane, layout) in planes.enumerated() {
                for y in 0..<layout.height {
                    layout.row(y).initializeMemory(
                        as: UInt8.self, repeating: plane == 0 ? UInt8(40 + index * 20) : 128)
                }
            }
        }
        try encoder.send(image, presentationTime: CMTime(value: Int64(index), timescale: 30))
        while case .packet(let packet) = try encoder.receivePacket() { packets.append(packet) }
    }
    try encoder.finish()
    while case .packet(let packet) = try encoder.receivePacket() { packets.append(packet) }
    var first = true
    return try packets.map { packet in
        var data = packet.data
        if first && !encoder.extradata.isEmpty {
            var bytes = encoder.extradata
            packet.data.withUnsafeBytes { bytes.append(contentsOf: $0) }
            data = CMBlockBuffer(copying: Data(bytes))
        }
        first = false
        let timing = CMSampleTimingInfo(
            duration: CMTime(value: 1, timescale: 30), presentationTimeStamp: packet.presentationTime,
            decodeTimeStamp: .invalid)
        return try CMSampleBuffer(
            dataBuffer: data, formatDescription: description, numSamples: 1, sampleTimings: [timing],
            sampleSizes: [data.dataLength])
    }
}

func nv12Picture(width: Int, height: Int) throws -> CVPixelBuffer {
    var buffer: CVPixelBuffer?
    try #require(
        CVPixelBufferCreate(nil, width, height, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &buffer)
            == kCVReturnSuccess)
    return try #require(buffer)
}
