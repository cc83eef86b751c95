// The demuxer and decoders behind AVURLAsset and AVAssetReader (and `file:` devices), fed arbitrary bytes as a
// movie, an MPEG-4 audio file, a WAVE, AIFF or CAF file (the first byte picks the extension: libavformat probes
// the content, but the extension weighs in).

import Foundation
import FuzzSupport
import OpenAVCapture

let extensions = ["mov", "mp4", "m4a", "wav", "aiff", "caf", "ts", "mkv"]

/// Opens the input as a file and reads every sample of every track, decoded.
func readMedia(_ data: Data) {
    guard let first = data.first else { return }
    withScratchFile(data.dropFirst(), extension: extensions[Int(first) % extensions.count]) { url in
        let asset = AVURLAsset(url: url)
        guard let reader = try? AVAssetReader(asset: asset) else { return }
        for track in asset.tracks where track.mediaType == .video || track.mediaType == .audio {
            let settings: [String: Any] =
                track.mediaType == .video
                ? [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange]
                : [AVFormatIDKey: kAudioFormatLinearPCM]
            let output = AVAssetReaderTrackOutput(track: track, outputSettings: settings)
            if reader.canAdd(output) { reader.add(output) }
        }
        guard !reader.outputs.isEmpty, reader.startReading() else { return }
        // At most a few hundred samples: a fuzzed header can claim hours of media.
        for output in reader.outputs {
            var count = 0
            while count < 300, output.copyNextSampleBuffer() != nil { count += 1 }
        }
        reader.cancelReading()
    }
}

#if FUZZING
    import CFuzzDriver

    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
        readMedia(Data(bytes: bytes, count: count))
        return 0
    }

    /// SwiftPM links an executable's `main` as `DemuxerFuzzer_main`: it hands the command line to libFuzzer's driver.
    @_cdecl("DemuxerFuzzer_main")
    public func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        var count = argc
        var arguments = argv
        return LLVMFuzzerRunDriver(&count, &arguments) { data, size in
            guard let data else { return 0 }
            readMedia(Data(bytes: data, count: size))
            return 0
        }
    }
#else
    @main struct DemuxerCorpus {
        static func main() { runCorpus(named: "demuxer", readMedia) }
    }
#endif
