import OpenCoreMedia

/// A range of frame durations a video format can stream at (`AVFrameRateRange`).
///
/// Durations are exact (a V4L2 camera reports 1001/30000 s); rates are derived.
/// Value type; safe to use from any thread.
package struct FrameDurationRange: Sendable, Hashable {
    /// The shortest frame duration: the highest frame rate.
    package var minFrameDuration: CMTime
    /// The longest frame duration: the lowest frame rate.
    package var maxFrameDuration: CMTime

    package init(minFrameDuration: CMTime, maxFrameDuration: CMTime) {
        self.minFrameDuration = minFrameDuration
        self.maxFrameDuration = maxFrameDuration
    }

    /// From frame rates, as whole frames per second: 1...30 fps is durations 1/30 s ... 1/1 s.
    package init(minFrameRate: Int32, maxFrameRate: Int32) {
        self.init(
            minFrameDuration: CMTime(value: 1, timescale: maxFrameRate),
            maxFrameDuration: CMTime(value: 1, timescale: minFrameRate))
    }

    package var minFrameRate: Double { 1 / maxFrameDuration.seconds }
    package var maxFrameRate: Double { 1 / minFrameDuration.seconds }

    /// Whether a frame duration lies inside the range (both ends included).
    package func contains(_ duration: CMTime) -> Bool {
        duration >= minFrameDuration && duration <= maxFrameDuration
    }
}

/// A video format a device can stream: size, what the device delivers, and the frame rates it allows.
///
/// Value type; safe to use from any thread.
package struct VideoFormat: Sendable, Hashable {
    package var width: Int32
    package var height: Int32
    /// What the device delivers: a pixel format (`'420v'`, `'yuvs'`) or a codec (`'jpeg'`, `'avc1'`).
    package var mediaSubType: FourCharCode
    package var frameDurationRanges: [FrameDurationRange]
    /// Horizontal field of view in degrees.
    package var fieldOfView: Float
    /// The largest `videoZoomFactor` this format allows.
    package var maxZoomFactor: Double
    /// The size of a high-resolution still taken while streaming this format.
    package var highResolutionStillDimensions: CMVideoDimensions
    /// A format meant for stills (the `.photo` preset's), not for video.
    package var isPhotoFormat: Bool

    package init(
        width: Int32, height: Int32, mediaSubType: FourCharCode, frameDurationRanges: [FrameDurationRange],
        fieldOfView: Float, maxZoomFactor: Double, highResolutionStillDimensions: CMVideoDimensions? = nil,
        isPhotoFormat: Bool = false
    ) {
        self.width = width
        self.height = height
        self.mediaSubType = mediaSubType
        self.frameDurationRanges = frameDurationRanges
        self.fieldOfView = fieldOfView
        self.maxZoomFactor = maxZoomFactor
        self.highResolutionStillDimensions =
            highResolutionStillDimensions ?? CMVideoDimensions(width: width, height: height)
        self.isPhotoFormat = isPhotoFormat
    }

    /// The highest frame rate any range allows.
    package var maxFrameRate: Double { frameDurationRanges.map(\.maxFrameRate).max() ?? 0 }

    /// Whether some range allows this frame duration.
    package func supports(frameDuration: CMTime) -> Bool {
        frameDurationRanges.contains { $0.contains(frameDuration) }
    }
}

/// The sample format of an audio stream.
package enum AudioSampleFormat: String, Sendable, Hashable {
    case int16
    case int32
    case float32

    package var bitsPerSample: UInt32 { self == .int16 ? 16 : 32 }
}

/// An audio format a device can stream.
///
/// Value type; safe to use from any thread.
package struct AudioFormat: Sendable, Hashable {
    package var sampleRate: Double
    package var channels: Int
    package var sampleFormat: AudioSampleFormat

    package init(sampleRate: Double, channels: Int, sampleFormat: AudioSampleFormat) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.sampleFormat = sampleFormat
    }

    /// The stream description CoreMedia uses for interleaved PCM in this format.
    package var streamDescription: AudioStreamBasicDescription {
        .linearPCM(
            sampleRate: sampleRate, channels: UInt32(channels), bitsPerChannel: sampleFormat.bitsPerSample,
            isFloat: sampleFormat == .float32)
    }
}

/// One format of a device.
package enum DeviceFormat: Sendable, Hashable {
    case video(VideoFormat)
    case audio(AudioFormat)

    package var media: DeviceMedia {
        switch self {
        case .video: .video
        case .audio: .audio
        }
    }
}
