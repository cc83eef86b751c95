// What cutting a recording into segments costs the frames around each cut. The goal (issue 19): no frame lost, and a
// switch adds at most one frame interval of latency.
//
//   One recording of the virtual back camera (--size, default 1920x1080, at 30 fps, H.264) and the virtual
//   microphone, cut into segments of --segment seconds (default 1) for --seconds (default 12). A sample-accurate
//   AVCaptureFileOutputDelegate sees every buffer on the output's work queue, just before the engine handles it; a
//   video frame's latency there is the host time of that call less the frame's capture time (its presentation
//   time, on the host clock). A cut is made while the engine handles the frame that opens the next segment (the
//   new writer and encoder are made then, the old segment finished), so what it costs shows as extra latency of
//   the frames that come after it.
//   Baseline, in the same run: the median latency of the frames away from any cut (more than 3 frames after one).
//   Reported: per cut, the largest latency of the 3 frames after it less the baseline, in ms and in frame
//   intervals; the frames in the segments against the frames the camera delivered (a video data output counts them).
//   What this does not see: the encoding after the hand-off to the writer, on the writer's own queue (a new
//   segment's encoder starts on its first frame, in parallel with the old segment's last ones).
//
// Run: OPENAV_DEVICES=virtual swift run -c release SegmentSwitchLatency [--seconds 12] [--segment 1] [--size 1920x1080]

import Foundation
import OpenAVCapture
import Synchronization

let arguments = CommandLine.arguments
func argument(_ name: String) -> String? { arguments.firstIndex(of: name).map { arguments[$0 + 1] } }
let seconds = argument("--seconds").flatMap(Double.init) ?? 12
let segmentSeconds = argument("--segment").flatMap(Double.init) ?? 1
let size = argument("--size") ?? "1920x1080"
let framesAfterCut = 3

func now() -> Double { CMClockGetTime(CMClockGetHostTimeClock()).seconds }

/// Every video buffer's latency on the work queue, and which segment file it arrived during.
final class Watcher: NSObject, AVCaptureFileOutputDelegate, AVCaptureFileOutputRecordingDelegate,
    AVCaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable
{
    struct Arrival { var latency: Double; var segment: Int }
    let arrivals = Mutex<[Arrival]>([])
    let segmentsStarted = Mutex<Int>(0)
    let framesDelivered = Mutex<Int>(0)
    let finished = DispatchSemaphore(value: 0)
    let segmentsFinished = Mutex<[URL]>([])

    func fileOutputShouldProvideSampleAccurateRecordingStart(_ output: AVCaptureFileOutput) -> Bool { true }
    func fileOutput(
        _ output: AVCaptureOutput, didOutputSampleBuffer sampleBuffer: CMSampleBuffer,
        from connection: AVCaptureConnection
    ) {
        guard sampleBuffer.imageBuffer != nil else { return }
        let latency = now() - sampleBuffer.presentationTimeStamp.seconds
        let segment = segmentsStarted.withLock { $0 }
        arrivals.withLock { $0.append(Arrival(latency: latency, segment: segment)) }
    }
    func fileOutput(
        _ output: AVCaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [AVCaptureConnection]
    ) {
        segmentsStarted.withLock { $0 += 1 }
    }
    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?
    ) {
        if let error, (error as NSError).userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool != true {
            print("a segment ended with \(error)")
        }
        segmentsFinished.withLock { $0.append(outputFileURL) }
    }
    func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        framesDelivered.withLock { $0 += 1 }
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
            && $0.videoSupportedFrameRateRanges.contains { $0.maxFrameRate >= 30 }
    })
else { fatalError("the virtual camera has no \(size) format at 30 fps") }

let directory = FileManager.default.temporaryDirectory.path + "/segment-switch-\(getpid())"
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: directory) }

let watcher = Watcher()
let session = AVCaptureSession()
let output = AVCaptureMovieFileOutput()
let counter = AVCaptureVideoDataOutput()
counter.setSampleBufferDelegate(watcher, queue: DispatchQueue(label: "counter"))
session.beginConfiguration()
session.addInput(try AVCaptureDeviceInput(device: camera))
session.addInput(try AVCaptureDeviceInput(device: microphone))
session.addOutput(output)
session.addOutput(counter)
try camera.lockForConfiguration()
camera.activeFormat = format
camera.activeVideoMinFrameDuration = CMTime(value: 1, timescale: 30)
camera.activeVideoMaxFrameDuration = CMTime(value: 1, timescale: 30)
camera.unlockForConfiguration()
session.commitConfiguration()
output.delegate = watcher

session.startRunning()
// A second for the encoder and the clocks to settle before anything is measured.
Thread.sleep(forTimeInterval: 1)
let segments = AVCaptureRecordingSegments(
    pattern: directory + "/segment-%Y%m%d-%H%M%S-%f.mov",
    duration: CMTime(seconds: segmentSeconds, preferredTimescale: 600))
let deliveredBefore = watcher.framesDelivered.withLock { $0 }
output.startRecording(segments: segments, recordingDelegate: watcher)
Thread.sleep(forTimeInterval: seconds)
output.stopRecording()
let deliveredAfter = watcher.framesDelivered.withLock { $0 }
let deadline = Date().addingTimeInterval(30)
while !segments.isComplete, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
session.stopRunning()

// Frames in the files, counted by ffprobe (every segment decoded).
var framesInFiles = 0
for url in segments.finishedFiles {
    let probe = Process()
    probe.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
    probe.arguments = [
        "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames", "-of",
        "csv=p=0", url.path,
    ]
    let pipe = Pipe()
    probe.standardOutput = pipe
    try probe.run()
    let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    probe.waitUntilExit()
    framesInFiles += Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
}

// Latency: away from cuts (the baseline) and just after each.
let arrivals = watcher.arrivals.withLock { $0 }
var afterCut: [[Double]] = []
var steady: [Double] = []
var sinceCut = Int.max
for (index, arrival) in arrivals.enumerated() {
    if index > 0, arrivals[index - 1].segment >= 1, arrival.segment != arrivals[index - 1].segment {
        // A cut (not the first segment's start): the frame whose handling made it arrived before the counter moved,
        // so the frames from here on are the ones that waited for it.
        sinceCut = 0
        afterCut.append([])
    }
    if sinceCut < framesAfterCut {
        afterCut[afterCut.count - 1].append(arrival.latency)
        sinceCut += 1
    } else if arrival.segment >= 1 {
        steady.append(arrival.latency)
        sinceCut = sinceCut == Int.max ? Int.max : sinceCut + 1
    }
}
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}
let baseline = median(steady)
let interval = 1.0 / 30
let extras = afterCut.filter { !$0.isEmpty }.map { ($0.max() ?? 0) - baseline }
print(
    String(
        format: "%@ at 30 fps, %.0f s cut every %.1f s: %d segments, %d cuts measured", size, seconds, segmentSeconds,
        segments.finishedFiles.count, extras.count))
print(
    String(
        format: "baseline: a frame's median latency on the output's queue away from cuts: %.2f ms (%d frames)",
        baseline * 1000, steady.count))
for (index, extra) in extras.enumerated() {
    print(
        String(
            format: "cut %2d: the 3 frames after it waited at most %+.2f ms more (%.2f frame intervals)", index + 1,
            extra * 1000, extra / interval))
}
let worst = extras.max() ?? .nan
print(
    String(
        format: "median extra %.2f ms, worst %.2f ms = %.2f× the frame interval (goal: at most 1×)",
        median(extras) * 1000, worst * 1000, worst / interval))
print(
    "frames in the segments (ffprobe): \(framesInFiles); delivered while recording: \(deliveredAfter - deliveredBefore)"
        + " (the two counts' windows differ by the start and stop requests' queue hops)")
