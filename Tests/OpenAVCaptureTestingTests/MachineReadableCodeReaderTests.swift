import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Testing

/// The metadata output's reading step on frames of the virtual scene with a code shown (what the benchmark measures).
@Suite struct MachineReadableCodeReaderTests {
    @Test func aCodeShownOnAFullHDFrameIsRead() throws {
        let source = VirtualFrameSource(width: 1920, height: 1080)
        source.showCode("benchmark frame", type: .qr, in: CGRect(x: 0.6, y: 0.3, width: 0.225, height: 0.4))
        var created: CVPixelBuffer?
        CVPixelBufferCreate(nil, 1920, 1080, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &created)
        let frame = try #require(created)
        source.render(frameIndex: 7, into: frame)
        let reader = MachineReadableCodeReader(types: [.qr])
        let codes = reader.read(frame)
        #expect(codes.map(\.stringValue) == ["benchmark frame"])
        #expect(reader.read(frame, rectOfInterest: CGRect(x: 0, y: 0, width: 0.5, height: 1)).isEmpty)
        #expect(MachineReadableCodeReader(types: [.ean13]).read(frame).isEmpty)
    }
}
