import ArgumentParser
import Foundation
import OpenAVCapture

/// `avcapture probe FILE`: what AVURLAsset sees in a file.
struct ProbeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe", abstract: "Show a file's tracks, durations, formats and metadata, as AVURLAsset reads them.")

    @OptionGroup var logging: LoggingOptions
    @Argument(help: "The movie or audio file to read.") var file: String
    @Flag(help: "Print JSON instead of text.") var json = false

    struct Track: Codable {
        var trackID: Int
        var mediaType: String
        var codec: String
        var start: Double
        var duration: Double
        var width: Int?
        var height: Int?
        var nominalFrameRate: Double?
        var sampleRate: Double?
        var channels: Int?
        var estimatedDataRate: Double
    }

    struct Report: Codable {
        var file: String
        var duration: Double
        var tracks: [Track]
        var metadata: [String: String]
    }

    func run() throws {
        try reportingFailures {
            guard FileManager.default.isReadableFile(atPath: file) else {
                throw ToolFailure(.noInput, "\(file) does not exist or cannot be read")
            }
            let asset = AVURLAsset(url: URL(fileURLWithPath: file))
            guard asset.isReadable else {
                throw ToolFailure(.noInput, "\(file) is not a movie or audio file FFmpeg can read")
            }
            let report = Report(
                file: file, duration: asset.duration.seconds, tracks: asset.tracks.map(Self.track),
                metadata: Self.metadata(of: asset))
            if json {
                print(try JSONOutput.string(report))
                return
            }
            print(String(format: "%@: %.3f s", file, report.duration))
            for (track, assetTrack) in zip(report.tracks, asset.tracks) {
                print(
                    "  track \(track.trackID): \(Self.trackSummary(assetTrack)), "
                        + String(format: "%.3f s from %.3f s, %.0f kbit/s", track.duration, track.start,
                            track.estimatedDataRate / 1000))
            }
            for (key, value) in report.metadata.sorted(by: { $0.key < $1.key }) { print("  \(key): \(value)") }
        }
    }

    static func track(_ track: AVAssetTrack) -> Track {
        let description = track.formatDescriptions.first as? CMFormatDescription
        let audio = description?.audioStreamBasicDescription
        let isVideo = track.mediaType == .video
        return Track(
            trackID: Int(track.trackID), mediaType: track.mediaType.rawValue, codec: codecName(description),
            start: track.timeRange.start.seconds, duration: track.timeRange.duration.seconds,
            width: isVideo ? Int(track.naturalSize.width) : nil, height: isVideo ? Int(track.naturalSize.height) : nil,
            nominalFrameRate: isVideo ? Double(track.nominalFrameRate) : nil, sampleRate: audio?.mSampleRate,
            channels: audio.map { Int($0.mChannelsPerFrame) }, estimatedDataRate: Double(track.estimatedDataRate))
    }

    /// "H.264 1920x1080 30 fps" or "AAC 48000 Hz 1 ch".
    static func trackSummary(_ assetTrack: AVAssetTrack) -> String {
        let track = track(assetTrack)
        if let width = track.width, let height = track.height {
            let rate = ((track.nominalFrameRate ?? 0) * 100).rounded() / 100
            return "\(track.codec) \(width)x\(height) \(FormatsCommand.number(rate)) fps"
        }
        if let rate = track.sampleRate { return "\(track.codec) \(Int(rate)) Hz \(track.channels ?? 0) ch" }
        return track.codec
    }

    static func codecName(_ description: CMFormatDescription?) -> String {
        guard let description else { return "unknown" }
        if let audio = description.audioStreamBasicDescription {
            switch audio.mFormatID {
            case kAudioFormatMPEG4AAC: return "AAC"
            case kAudioFormatAppleLossless: return "ALAC"
            case kAudioFormatLinearPCM:
                let float = audio.mFormatFlags & kAudioFormatFlagIsFloat != 0
                return "PCM \(audio.mBitsPerChannel)-bit \(float ? "float" : "integer")"
            default: return FormatsCommand.fourCharacters(audio.mFormatID)
            }
        }
        switch FormatsCommand.fourCharacters(description.mediaSubType.rawValue) {
        case "avc1": return "H.264"
        case "hvc1", "hev1": return "HEVC"
        case "jpeg": return "JPEG"
        case "apcn": return "ProRes 422"
        case let other: return other
        }
    }

    static func metadata(of asset: AVAsset) -> [String: String] {
        var result: [String: String] = [:]
        for item in asset.metadata {
            guard let value = item.stringValue ?? item.value.map({ "\($0)" }) else { continue }
            let key = item.identifier?.rawValue ?? item.commonKey?.rawValue ?? "unknown"
            result[key] = value
        }
        return result
    }
}
