import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo

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
