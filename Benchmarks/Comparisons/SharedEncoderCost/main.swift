// What the shared encoder saves (issue 33): one session on the virtual back camera and microphone at --size (default
// 1920x1080, 30 fps) for --seconds (default 10) of real time, in one of three modes:
//
//   movie     an AVCaptureMovieFileOutput recording alone: the baseline;
//   shared    an AVCapturePublishingOutput publishing HLS into a scratch directory and the movie file output
//             recording the same camera with default settings, so it takes the publishing output's H.264 packets
//             (one encoder for both);
//   separate  the same two outputs, but the movie asks for its own bit rate (AVVideoCompressionPropertiesKey), so
//             it cannot share and encodes the camera a second time.
//
// Each mode is its own process: Benchmarks/Scripts/shared-encoder-cost.sh runs them in alternating rounds and
// compares their CPU (rusage of the child), which is the figure that counts on a shared machine. This program only
// prints the frames the movie wrote, so a run that dropped frames shows.
//
// Run: OPENAV_DEVICES=virtual .build/release/SharedEncoderCost movie|shared|separate [--seconds 10] [--size WxH]
//      [--scratch DIR]

import Foundation
import OpenAVCapture

let arguments = CommandLine.arguments
func argument(_ name: String) -> String? { arguments.firstIndex(of: name).map { arguments[$0 + 1] } }
let mode = arguments.count > 1 ? arguments[1] : "movie"
let seconds = argument("--seconds").flatMap(Double.init) ?? 10
let size = argument("--size") ?? "1920x1080"
let scratch = URL(fileURLWithPath: argument("--scratch") ?? NSTemporaryDirectory())
    .appendingPathComponent("shared-encoder-cost-\(mode)-\(getpid())")
guard ["movie", "shared", "separate"].contains(mode) else { fatalError("mode: movie, shared or separate") }

/// Signals when the recording has finished.
final class Finish: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
    let done = DispatchSemaphore(value: 0)
    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?
    ) {
        if let error, (error as NSError).userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool != true {
            print("the recording ended with \(error)")
        }
        done.signal()
    }
}

guard let camera = AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back),
    let microphone = AVCaptureDevice.default(for: .audio), camera.localizedName.hasPrefix("Virtual")
else { fatalError("run with OPENAV_DEVICES=virtual: the virtual back camera and microphone are needed") }
let dimensions = size.split(separator: "x").compactMap { Int32($0) }
guard dimensions.count == 2,
    let format = camera.formats.first(where: {
        let d = CMVideoFormatDescriptionGetDimensions($0.formatDescription)
        return d.width == dimensions[0] && d.height == dimensions[1]
    })
else { fatalError("the virtual camera has no \(size) format") }
try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: scratch) }

let session = AVCaptureSession()
session.beginConfiguration()
try camera.lockForConfiguration()
camera.activeFormat = format
camera.unlockForConfiguration()
session.addInput(try AVCaptureDeviceInput(device: camera))
session.addInput(try AVCaptureDeviceInput(device: microphone))
let movie = AVCaptureMovieFileOutput()
session.addOutput(movie)
var publisher: AVCapturePublishingOutput?
if mode != "movie" {
    let output = AVCapturePublishingOutput(url: scratch.appendingPathComponent("live.m3u8").path)
    session.addOutput(output)
    publisher = output
}
session.commitConfiguration()
if mode == "separate", let connection = movie.connection(with: .video) {
    // A bit rate of its own: the movie's encoder cannot be the publishing output's.
    movie.setOutputSettings(
        [AVVideoCodecKey: AVVideoCodecType.h264, AVVideoCompressionPropertiesKey: [AVVideoAverageBitRateKey: 6_000_000]],
        for: connection)
}
session.startRunning()
let finish = Finish()
movie.startRecording(to: scratch.appendingPathComponent("movie.mov"), recordingDelegate: finish)
// The cost of real-time capture is what is measured: the camera runs on the host clock for this long.
Thread.sleep(forTimeInterval: seconds)
movie.stopRecording()
_ = finish.done.wait(timeout: .now() + 30)
publisher?.stopPublishing()
session.stopRunning()
print("\(mode): \(movie.recordingStatistics.videoFramesWritten) frames written in \(seconds) s at \(size)")
