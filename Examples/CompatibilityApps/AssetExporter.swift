// What a video editor does with a clip the user picked: load its properties asynchronously, count its frames with
// an asset reader, then export its first second at 640x480 with an export session.
import OpenAVCaptureShim

struct AssetExporter {
    let asset: AVURLAsset

    /// The inspector's panel: duration, tracks, and the video track's size, rate and codec.
    func inspect() async throws -> [String: Any] {
        let (duration, tracks) = try await asset.load(.duration, .tracks)
        var report: [String: Any] = ["duration": duration.seconds, "trackCount": tracks.count]
        if let video = try await asset.loadTracks(withMediaType: .video).first {
            let (size, frameRate, descriptions) = try await video.load(
                .naturalSize, .nominalFrameRate, .formatDescriptions)
            report["width"] = Double(size.width)
            report["height"] = Double(size.height)
            report["nominalFrameRate"] = Double(frameRate)
            if let description = descriptions.first {
                let codec = CMFormatDescriptionGetMediaSubType(description)
                report["codec"] = String(
                    (0..<4).map { Character(UnicodeScalar(UInt8(truncatingIfNeeded: codec >> (24 - 8 * $0)))) })
            }
            report["videoFrames"] = try countFrames(of: video)
        }
        if let audio = try await asset.loadTracks(withMediaType: .audio).first {
            report["audioSamples"] = try countAudioSamples(of: audio)
        }
        return report
    }

    /// Every frame of the track decoded, as a player would, and counted.
    private func countFrames(of track: AVAssetTrack) throws -> Int {
        let reader = try AVAssetReader(asset: asset)
        let output = AVAssetReaderTrackOutput(
            track: track,
            outputSettings: [
                kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
            ])
        output.alwaysCopiesSampleData = false
        guard reader.canAdd(output) else { throw AppFailure("the reader refused the video output") }
        reader.add(output)
        guard reader.startReading() else { throw reader.error ?? AppFailure("the reader did not start") }
        var frames = 0
        while let sampleBuffer = output.copyNextSampleBuffer() {
            if CMSampleBufferGetImageBuffer(sampleBuffer) != nil { frames += 1 }
        }
        guard reader.status == .completed else { throw reader.error ?? AppFailure("reading stopped early") }
        return frames
    }

    /// The sound decoded to 16-bit PCM and its sample frames counted.
    private func countAudioSamples(of track: AVAssetTrack) throws -> Int {
        let reader = try AVAssetReader(asset: asset)
        let output = AVAssetReaderTrackOutput(
            track: track,
            outputSettings: [
                AVFormatIDKey: kAudioFormatLinearPCM, AVLinearPCMBitDepthKey: 16,
                AVLinearPCMIsFloatKey: false, AVLinearPCMIsBigEndianKey: false,
            ])
        guard reader.canAdd(output) else { throw AppFailure("the reader refused the audio output") }
        reader.add(output)
        guard reader.startReading() else { throw reader.error ?? AppFailure("the reader did not start") }
        var samples = 0
        while let sampleBuffer = output.copyNextSampleBuffer() {
            samples += CMSampleBufferGetNumSamples(sampleBuffer)
        }
        return samples
    }

    /// The first second, scaled to fit 640x480, as MPEG-4: the completion-handler API most apps still use.
    func exportFirstSecond(to url: URL) async throws {
        guard let export = AVAssetExportSession(asset: asset, presetName: AVAssetExportPreset640x480) else {
            throw AppFailure("the 640x480 preset is not available for this asset")
        }
        guard export.supportedFileTypes.contains(.mp4) else { throw AppFailure("cannot export MPEG-4") }
        try? FileManager.default.removeItem(at: url)
        export.outputURL = url
        export.outputFileType = .mp4
        export.timeRange = CMTimeRange(start: .zero, duration: CMTime(value: 1, timescale: 1))
        export.shouldOptimizeForNetworkUse = true
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            export.exportAsynchronously {
                switch export.status {
                case .completed: continuation.resume()
                case .failed, .cancelled: continuation.resume(throwing: export.error ?? AppFailure("export failed"))
                default: continuation.resume(throwing: AppFailure("export ended in state \(export.status.rawValue)"))
                }
            }
        }
    }

    /// `compat-apps asset-exporter IN-MOVIE OUT.mp4`: the inspection as JSON on standard output, then the export.
    static func main(_ arguments: [String]) async throws {
        let arguments = Arguments(arguments)
        let exporter = AssetExporter(asset: AVURLAsset(url: try arguments.url(0, "the movie to read")))
        let report = try await exporter.inspect()
        print(
            String(decoding: try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys]), as: UTF8.self))
        try await exporter.exportFirstSecond(to: try arguments.url(1, "the export's path"))
    }
}
