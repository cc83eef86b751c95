// Logging dropped frames with their reason, for performance overlays.
import OpenAVCaptureShim

final class DroppedFrameLogger: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    private(set) var drops: [String: Int] = [:]

    func captureOutput(
        _ output: AVCaptureOutput, didDrop sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        let reason = CMGetAttachment(sampleBuffer, key: kCMSampleBufferAttachmentKey_DroppedFrameReason, attachmentModeOut: nil)
        let key = (reason as? String) ?? "unknown"
        drops[key, default: 0] += 1
    }

    static func reason(from string: String) -> AVCaptureOutput.DataDroppedReason {
        if string == (kCMSampleBufferDroppedFrameReason_FrameWasLate as String) { return .lateData }
        if string == (kCMSampleBufferDroppedFrameReason_OutOfBuffers as String) { return .outOfBuffers }
        if string == (kCMSampleBufferDroppedFrameReason_Discontinuity as String) { return .discontinuity }
        return .none
    }
}
