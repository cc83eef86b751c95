import Foundation

/// The orientation of video, with Apple's raw values. `.landscapeRight` is the sensor's own orientation
/// (rotation 0°); the others are clockwise rotations of it: `.portrait` 90°, `.landscapeLeft` 180°,
/// `.portraitUpsideDown` 270°.
public enum AVCaptureVideoOrientation: Int, Sendable, Hashable, CaseIterable {
    case portrait = 1
    case portraitUpsideDown = 2
    case landscapeRight = 3
    case landscapeLeft = 4

    /// The clockwise rotation from the sensor's orientation, in degrees.
    public var rotationAngle: CGFloat {
        switch self {
        case .landscapeRight: 0
        case .portrait: 90
        case .landscapeLeft: 180
        case .portraitUpsideDown: 270
        }
    }

    /// The orientation of a rotation angle of 0, 90, 180 or 270 degrees.
    public init?(rotationAngle: CGFloat) {
        guard let match = Self.allCases.first(where: { $0.rotationAngle == rotationAngle }) else { return nil }
        self = match
    }
}
