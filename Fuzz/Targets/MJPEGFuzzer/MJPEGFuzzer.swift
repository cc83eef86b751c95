// A camera's MJPEG frame decoded as sessions decode it (TurboJPEG through the decode stage), fed arbitrary bytes
// as the frame; the first two bytes pick the size the camera claims.

import Foundation
import FuzzSupport
import OpenAVCapture
import OpenAVCaptureTesting

let sizes = [(320, 240), (640, 480), (16, 16), (1280, 720)]

func decodeFrame(_ data: Data) {
    guard data.count > 2 else { return }
    let (width, height) = sizes[Int(data[data.startIndex]) % sizes.count]
    let frame = data.dropFirst(1)
    guard let format = try? CMFormatDescription(videoCodecType: .jpeg, width: width, height: height) else { return }
    let block = CMBlockBuffer(copying: frame)
    guard
        let sample = try? CMSampleBuffer(
            dataBuffer: block, formatDescription: format, numSamples: 1,
            sampleTimings: [
                CMSampleTimingInfo(
                    duration: CMTime(value: 1, timescale: 30), presentationTimeStamp: .zero, decodeTimeStamp: .invalid)
            ], sampleSizes: [frame.count])
    else { return }
    _ = CompressedFrameDecoder().decode(sample)
}

#if FUZZING
    import CFuzzDriver

    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
        decodeFrame(Data(bytes: bytes, count: count))
        return 0
    }

    /// SwiftPM links an executable's `main` as `MJPEGFuzzer_main`: it hands the command line to libFuzzer's driver.
    @_cdecl("MJPEGFuzzer_main")
    public func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        var count = argc
        var arguments = argv
        return LLVMFuzzerRunDriver(&count, &arguments) { data, size in
            guard let data else { return 0 }
            decodeFrame(Data(bytes: data, count: size))
            return 0
        }
    }
#else
    @main struct MJPEGCorpus {
        static func main() { runCorpus(named: "mjpeg", decodeFrame) }
    }
#endif
