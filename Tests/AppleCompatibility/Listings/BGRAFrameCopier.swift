// Copying BGRA frames into a byte array, as ML pipelines and image exporters do.
import OpenAVCaptureShim

enum BGRAFrameCopier {
    static func makeOutput() -> AVCaptureVideoDataOutput {
        let output = AVCaptureVideoDataOutput()
        output.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: Int(kCVPixelFormatType_32BGRA)]
        return output
    }

    static func pixels(of sampleBuffer: CMSampleBuffer) -> (width: Int, height: Int, bytes: [UInt8])? {
        guard let imageBuffer = sampleBuffer.imageBuffer else { return nil }
        guard CVPixelBufferGetPixelFormatType(imageBuffer) == kCVPixelFormatType_32BGRA else { return nil }
        guard CVPixelBufferLockBaseAddress(imageBuffer, .readOnly) == kCVReturnSuccess else { return nil }
        defer { CVPixelBufferUnlockBaseAddress(imageBuffer, .readOnly) }
        let width = CVPixelBufferGetWidth(imageBuffer)
        let height = CVPixelBufferGetHeight(imageBuffer)
        let bytesPerRow = CVPixelBufferGetBytesPerRow(imageBuffer)
        guard let baseAddress = CVPixelBufferGetBaseAddress(imageBuffer) else { return nil }
        var copy = [UInt8](repeating: 0, count: width * height * 4)
        for row in 0..<height {
            let source = baseAddress.advanced(by: row * bytesPerRow)
            copy.withUnsafeMutableBytes { destination in
                destination.baseAddress!.advanced(by: row * width * 4).copyMemory(from: source, byteCount: width * 4)
            }
        }
        return (width, height, copy)
    }
}
