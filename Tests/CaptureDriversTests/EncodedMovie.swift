import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo
import Testing

/// Codes `count` pictures, `picture(index)` at 30 fps, with `encoder` into a QuickTime movie at `file`, draining the
/// encoder into the muxer after each picture and at the end, as the writer does.
func writeMovie(
    _ file: URL, from encoder: any VideoPacketEncoder, count: Int, picture: (Int) throws -> CVPixelBuffer
) throws {
    let muxer = try Muxer(path: file.path, fileType: .mov)
    let stream = try muxer.addVideoStream(from: encoder)
    try muxer.start(atSourceTime: .zero)
    for index in 0..<count {
        try encoder.send(
            picture(index), presentationTime: CMTime(value: Int64(index), timescale: 30), forcingKeyFrame: false)
        while case .packet(let packet) = try encoder.receivePacket() { try muxer.write(packet, stream: stream) }
    }
    try encoder.finish()
    while case .packet(let packet) = try encoder.receivePacket() { try muxer.write(packet, stream: stream) }
    try muxer.finish()
}

/// An NV12 picture (video range) of one luma and one chroma value.
func flatPicture(luma: UInt8, chroma: UInt8 = 128, width: Int = 320, height: Int = 240) throws -> CVPixelBuffer {
    var buffer: CVPixelBuffer?
    #expect(
        CVPixelBufferCreate(nil, width, height, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &buffer)
            == kCVReturnSuccess)
    let pixelBuffer = try #require(buffer)
    pixelBuffer.withLockedPlanes([]) { planes in
        planes[0].bytes.initializeMemory(as: UInt8.self, repeating: luma)
        planes[1].bytes.initializeMemory(as: UInt8.self, repeating: chroma)
    }
    return pixelBuffer
}
