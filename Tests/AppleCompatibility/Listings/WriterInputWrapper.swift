// Protocol wrappers over NSObject-based AVFoundation types, used to fake writers in unit tests.
import OpenAVCaptureShim

protocol PixelBufferAppending: NSObjectProtocol {
    var pixelBufferPool: CVPixelBufferPool? { get }
    func append(_ pixelBuffer: CVPixelBuffer, withPresentationTime presentationTime: CMTime) -> Bool
}

extension AVAssetWriterInputPixelBufferAdaptor: PixelBufferAppending {}

protocol SampleAppending: NSObjectProtocol {
    var isReadyForMoreMediaData: Bool { get }
    func append(_ sampleBuffer: CMSampleBuffer) -> Bool
}

extension AVAssetWriterInput: SampleAppending {}

final class FrameSink {
    let target: PixelBufferAppending

    init(target: PixelBufferAppending) {
        self.target = target
    }

    func push(_ buffer: CVPixelBuffer, at time: CMTime) -> Bool {
        target.append(buffer, withPresentationTime: time)
    }
}
