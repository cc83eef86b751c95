// The AVFoundation error a writer reports for a MediaCodecs failure.

import Foundation
import MediaCodecs

extension AVError {
    /// The AVFoundation error for a codec or file failure while writing `path`.
    init(_ failure: MediaCodecsError, writing path: String) {
        let underlying: [String: Any] = [
            NSUnderlyingErrorKey: NSError(
                domain: "OpenAVCapture.MediaCodecs", code: Int(failure.ffmpegCode ?? -1),
                userInfo: [NSLocalizedDescriptionKey: failure.description])
        ]
        switch failure.kind {
        case .diskFull:
            self.init(
                .diskFull, "The disk is full: \(failure.description)", suggestion: "Free some space and record again.",
                extra: underlying)
        case .fileAlreadyExists:
            self.init(
                .fileAlreadyExists, "A file already exists at \(path).", suggestion: "Remove it or choose another URL.",
                extra: underlying)
        case .segmentStartedWithNonSyncSample:
            self.init(
                .segmentStartedWithNonSyncSample, "A segment would start with a video frame that is not a key frame.",
                suggestion: "Call flushSegment() just before appending a key frame.", extra: underlying)
        case .unsupportedConfiguration:
            self.init(
                .unsupportedOutputSettings, "The output settings cannot be written: \(failure.description)",
                suggestion: "Check the codec, the size and the file type.", extra: underlying)
        case .encoderNotFound:
            // VideoToolbox's kVTCouldNotFindVideoEncoderErr (-12908) underneath, as Apple's writer reports it.
            self.init(
                .encoderNotFound, "No encoder could be found: \(failure.description)",
                suggestion: "Leave out kVTVideoEncoderSpecification_RequireHardwareAcceleratedVideoEncoder to let the "
                    + "writer fall back to software.",
                extra: [
                    NSUnderlyingErrorKey: NSError(
                        domain: NSOSStatusErrorDomain, code: -12908,
                        userInfo: [NSLocalizedDescriptionKey: failure.description])
                ])
        default:
            self.init(.unknown, "Writing \(path) failed: \(failure.description)", extra: underlying)
        }
    }
}
