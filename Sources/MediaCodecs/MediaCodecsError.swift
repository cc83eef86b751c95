// MediaCodecsError: what went wrong inside a converter, with FFmpeg's code and message and what was being done.

import CFFmpeg

/// A failure of a MediaCodecs type: which kind, FFmpeg's error code and message when FFmpeg reported it, and the
/// operation that was under way.
///
/// Every run-time failure of the converters is one of these, returned or thrown as a typed error; nothing in
/// MediaCodecs traps on a failure it can report. The public layer maps it to `AVError`.
///
/// FFmpeg's messages come from `av_make_error_string` (through the shim's `CFFmpeg_errorString`).
///
/// Threading: a value; `Sendable`.
package struct MediaCodecsError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure, for callers that react differently to each.
    package enum Kind: Hashable, Sendable {
        /// FFmpeg returned a negative error code; ``MediaCodecsError/ffmpegCode`` has it.
        case ffmpeg
        /// The source and destination formats cannot be converted (an unknown pixel format, an unsupported
        /// audio layout); decided when the converter is created.
        case unsupportedConversion
        /// A buffer handed to a converter does not have the format the converter was made for.
        case formatMismatch
        /// The converter's output pool has reached its limit of buffers held downstream (the graph reports the
        /// drop with reason `OutOfBuffers`).
        case outOfBuffers
        /// Memory could not be allocated.
        case allocationFailed
        /// An encoder or muxer cannot be set up as asked: the codec is missing from FFmpeg, the container cannot
        /// hold it, an option was not recognised, or a value is out of range.
        case unsupportedConfiguration
        /// A call came in a state that does not allow it (a frame sent after `finish()`, a packet written before
        /// the header).
        case invalidState
        /// The disk (or the quota) is full: FFmpeg reported `AVERROR(ENOSPC)` or `AVERROR(EDQUOT)` while writing;
        /// ``MediaCodecsError/ffmpegCode`` has the code.
        case diskFull
        /// The output file exists and the caller did not ask to overwrite it (`EEXIST`).
        case fileAlreadyExists
        /// A fragmented MPEG-4 segment would begin with a video sample that is not a key frame (a segment was ended
        /// on request just before one).
        case segmentStartedWithNonSyncSample
        /// No encoder can do what was required (a hardware encoder asked for with
        /// `kVTVideoEncoderSpecification_RequireHardwareAcceleratedVideoEncoder` where none works).
        case encoderNotFound
    }

    /// The kind of failure.
    package let kind: Kind
    /// FFmpeg's (negative) error code when ``kind`` is ``Kind/ffmpeg``, else `nil`.
    package let ffmpegCode: Int32?
    /// What was being done, such as "creating the scaler for 1920x1080 420v → 640x360 BGRA".
    package let operation: String
    /// Why it failed: FFmpeg's message for ``ffmpegCode``, or ours.
    package let message: String

    /// A failure described by its parts.
    package init(_ kind: Kind, while operation: String, message: String, ffmpegCode: Int32? = nil) {
        self.kind = kind
        self.operation = operation
        self.message = message
        self.ffmpegCode = ffmpegCode
    }

    /// FFmpeg's error `code` (negative, an `AVERROR`), with its message from `av_make_error_string`.
    package static func ffmpeg(_ code: Int32, while operation: String) -> MediaCodecsError {
        MediaCodecsError(.ffmpeg, while: operation, message: ffmpegErrorMessage(code), ffmpegCode: code)
    }

    /// "operation: message (FFmpeg error -22)".
    package var description: String {
        if let ffmpegCode { return "\(operation): \(message) (FFmpeg error \(ffmpegCode))" }
        return "\(operation): \(message)"
    }
}

/// FFmpeg's message for an error code: `av_err2str`, through `CFFmpeg_errorString`.
func ffmpegErrorMessage(_ code: Int32) -> String {
    let capacity = CFFmpeg_errorStringCapacity()
    return withUnsafeTemporaryAllocation(of: CChar.self, capacity: capacity) { buffer in
        String(cString: CFFmpeg_errorString(code, buffer.baseAddress, capacity))
    }
}
