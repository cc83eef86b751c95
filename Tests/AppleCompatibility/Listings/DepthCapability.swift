// Offering depth only where the camera has it; everything else takes the no-depth path.
import OpenAVCaptureShim

final class DepthCapability: NSObject, AVCaptureDepthDataOutputDelegate {
    let depthOutput = AVCaptureDepthDataOutput()
    private let depthQueue = DispatchQueue(label: "depth.queue")
    private(set) var isDepthEnabled = false

    func enableIfAvailable(session: AVCaptureSession, device: AVCaptureDevice) {
        let depthFormats = device.activeFormat.supportedDepthDataFormats.filter {
            CMFormatDescriptionGetMediaSubType($0.formatDescription) == kCVPixelFormatType_DepthFloat32
        }
        guard let depthFormat = depthFormats.last, session.canAddOutput(depthOutput) else {
            isDepthEnabled = false
            return
        }
        session.addOutput(depthOutput)
        depthOutput.isFilteringEnabled = true
        depthOutput.setDelegate(self, callbackQueue: depthQueue)
        do {
            try device.lockForConfiguration()
            device.activeDepthDataFormat = depthFormat
            device.unlockForConfiguration()
            isDepthEnabled = true
        } catch {
            isDepthEnabled = false
        }
    }

    func depthDataOutput(
        _ output: AVCaptureDepthDataOutput, didOutput depthData: AVDepthData, timestamp: CMTime,
        connection: AVCaptureConnection
    ) {
        let map = depthData.depthDataMap
        _ = (CVPixelBufferGetWidth(map), depthData.depthDataType == kCVPixelFormatType_DisparityFloat32)
    }

    func depthDataOutput(
        _ output: AVCaptureDepthDataOutput, didDrop depthData: AVDepthData, timestamp: CMTime,
        connection: AVCaptureConnection, reason: AVCaptureOutput.DataDroppedReason
    ) {
        if reason == .lateData { print("depth late at \(timestamp.seconds)") }
    }
}
