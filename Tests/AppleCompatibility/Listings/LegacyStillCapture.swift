// The pre-iOS 10 still image output, still found in older open-source scanners and camera kits.
import OpenAVCaptureShim

final class LegacyStillCapture {
    let stillImageOutput = AVCaptureStillImageOutput()

    init() {
        stillImageOutput.outputSettings = [AVVideoCodecKey: AVVideoCodecType.jpeg]
    }

    func capture(completion: @escaping @Sendable (Data?) -> Void) {
        guard let connection = stillImageOutput.connection(with: .video) else {
            completion(nil)
            return
        }
        stillImageOutput.captureStillImageAsynchronously(from: connection) { sampleBuffer, error in
            guard let sampleBuffer = sampleBuffer, error == nil else {
                completion(nil)
                return
            }
            completion(AVCaptureStillImageOutput.jpegStillImageNSDataRepresentation(sampleBuffer))
        }
    }
}
