// Asking the data outputs for writer settings that match the capture format.
import OpenAVCaptureShim

enum WriterSettingsAdvisor {
    static func videoSettings(from output: AVCaptureVideoDataOutput) -> [String: Any]? {
        output.recommendedVideoSettingsForAssetWriter(writingTo: .mov)
    }

    static func audioSettings(from output: AVCaptureAudioDataOutput) -> [String: Any]? {
        output.recommendedAudioSettingsForAssetWriter(writingTo: .mov) as? [String: Any]
    }

    static func fallbackVideoSettings(width: Int, height: Int) -> [String: Any] {
        [
            AVVideoCodecKey: AVVideoCodecType.h264,
            AVVideoWidthKey: width,
            AVVideoHeightKey: height,
            AVVideoCompressionPropertiesKey: [
                AVVideoAverageBitRateKey: width * height * 4,
                AVVideoMaxKeyFrameIntervalKey: 60,
                AVVideoProfileLevelKey: AVVideoProfileLevelH264HighAutoLevel,
            ],
        ]
    }

    static func pcmSettings() -> [String: Any] {
        [
            AVFormatIDKey: kAudioFormatLinearPCM,
            AVSampleRateKey: 48_000,
            AVNumberOfChannelsKey: 2,
            AVLinearPCMBitDepthKey: 16,
            AVLinearPCMIsFloatKey: false,
            AVLinearPCMIsBigEndianKey: false,
            AVLinearPCMIsNonInterleaved: false,
        ]
    }
}
