// Writing rendered frames through a pixel buffer adaptor and its pool (timelapse and screen recorders).
import OpenAVCaptureShim

final class PixelBufferWriter {
    let writer: AVAssetWriter
    let input: AVAssetWriterInput
    let adaptor: AVAssetWriterInputPixelBufferAdaptor
    private var frameIndex: Int64 = 0

    init(url: URL, width: Int, height: Int) throws {
        writer = try AVAssetWriter(outputURL: url, fileType: .mp4)
        input = AVAssetWriterInput(
            mediaType: .video,
            outputSettings: [
                AVVideoCodecKey: AVVideoCodecType.h264,
                AVVideoWidthKey: width,
                AVVideoHeightKey: height,
                AVVideoCompressionPropertiesKey: [AVVideoAverageBitRateKey: 4_000_000],
            ])
        input.naturalSize = CGSize(width: width, height: height)
        let attributes: [String: Any] = [
            kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA,
            kCVPixelBufferWidthKey as String: width,
            kCVPixelBufferHeightKey as String: height,
        ]
        adaptor = AVAssetWriterInputPixelBufferAdaptor(assetWriterInput: input, sourcePixelBufferAttributes: attributes)
        writer.add(input)
    }

    func begin() -> Bool {
        guard writer.startWriting() else { return false }
        writer.startSession(atSourceTime: .zero)
        return true
    }

    func appendFrame(fill: (UnsafeMutableRawPointer, Int) -> Void) -> Bool {
        guard let pool = adaptor.pixelBufferPool, input.isReadyForMoreMediaData else { return false }
        var buffer: CVPixelBuffer?
        CVPixelBufferPoolCreatePixelBuffer(kCFAllocatorDefault, pool, &buffer)
        guard let pixelBuffer = buffer else { return false }
        CVPixelBufferLockBaseAddress(pixelBuffer, [])
        if let base = CVPixelBufferGetBaseAddress(pixelBuffer) {
            fill(base, CVPixelBufferGetBytesPerRow(pixelBuffer))
        }
        CVPixelBufferUnlockBaseAddress(pixelBuffer, [])
        let time = CMTime(value: frameIndex, timescale: 30)
        frameIndex += 1
        return adaptor.append(pixelBuffer, withPresentationTime: time)
    }
}
