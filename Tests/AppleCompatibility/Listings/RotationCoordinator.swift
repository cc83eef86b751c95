// Rotating output connections by angle (iOS 17) with a fallback to the older orientation enum.
import OpenAVCaptureShim

enum RotationCoordinator {
    static func apply(angle: CGFloat, to output: AVCaptureOutput) {
        guard let connection = output.connection(with: .video) else { return }
        if connection.isVideoRotationAngleSupported(angle) {
            connection.videoRotationAngle = angle
        } else if connection.isVideoOrientationSupported {
            connection.videoOrientation = orientation(for: angle)
        }
    }

    static func orientation(for angle: CGFloat) -> AVCaptureVideoOrientation {
        switch Int(angle) % 360 {
        case 90: return .portrait
        case 180: return .landscapeLeft
        case 270: return .portraitUpsideDown
        default: return .landscapeRight
        }
    }

    static func stabilize(_ connection: AVCaptureConnection) {
        if connection.isVideoStabilizationSupported {
            connection.preferredVideoStabilizationMode = .auto
        }
    }
}
