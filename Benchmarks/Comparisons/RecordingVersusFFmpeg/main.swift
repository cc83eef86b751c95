// Recording cost against ffmpeg, in one run on one machine (the ratio is what counts; machines are shared):
//
//   ours:   AVCaptureMovieFileOutput records N s of 1920x1080 at 30 fps + AAC from the virtual camera and
//           microphone (CPU of this process while recording, minus the devices' own cost measured alone)
//   ffmpeg: the same frames and sound, written once to y4m + wav, encoded with the same libx264 and AAC settings
//           (CPU of the ffmpeg child)
//
// Also the peak resident set size of each, and with --minutes M a long recording whose RSS is sampled every 10 s
// (flat means no growth with time).
//
// Run: swift run -c release RecordingVersusFFmpeg [--seconds 10] [--rounds 2] [--minutes M [--free-running] [--no-huge-pages]]

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting

let arguments = CommandLine.arguments
func option(_ name: String, _ fallback: Double) -> Double {
    arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? Double(arguments[$0 + 1]) : nil }
        ?? fallback
}
let seconds = option("--seconds", 10)
let rounds = Int(option("--rounds", 2))
let minutes = option("--minutes", 0)
let width = 1920
let height = 1080
let bitRate = Int(Double(width * height) * 30 * 0.1)  // what AVCaptureMovieFileOutput picks for 1080p30

setenv("OPENAV_DEVICES", "virtual", 1)

// MARK: Measuring

struct CPU {
    var user: Double
    var system: Double
    var total: Double { user + system }

    static func now(_ who: Int32) -> CPU {
        var usage = rusage()
        getrusage(who, &usage)
        return CPU(
            user: Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6,
            system: Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6)
    }

    static func - (a: CPU, b: CPU) -> CPU { CPU(user: a.user - b.user, system: a.system - b.system) }
}

/// VmRSS or VmHWM of this process, in MiB.
func memory(_ field: String) -> Double {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
    return (Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
}

final class FinishWaiter: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
    let done = DispatchSemaphore(value: 0)
    var error: (any Error)?
    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?
    ) {
        self.error = error
        done.signal()
    }
}

func makeSession(outputs: [AVCaptureOutput]) -> AVCaptureSession {
    let session = AVCaptureSession()
    session.beginConfiguration()
    session.sessionPreset = .hd1920x1080
    for device in [AVCaptureDevice.default(for: .video)!, AVCaptureDevice.default(for: .audio)!] {
        session.addInput(try! AVCaptureDeviceInput(device: device))
    }
    for output in outputs { session.addOutput(output) }
    session.commitConfiguration()
    return session
}

/// CPU the running devices cost alone for `duration` (rendering frames, synthesizing sound, routing).
func devicesAlone(for duration: Double) -> CPU {
    let session = makeSession(outputs: [])
    session.startRunning()
    let start = CPU.now(RUSAGE_SELF.rawValue)
    Thread.sleep(forTimeInterval: duration)
    let cost = CPU.now(RUSAGE_SELF.rawValue) - start
    session.stopRunning()
    return cost
}

/// CPU of recording `duration` seconds (devices included), the file written, and this process's peak RSS.
func ourRecording(for duration: Double, to url: URL, sampleRSS: Bool = false) -> (CPU, Double) {
    try? FileManager.default.removeItem(at: url)
    let output = AVCaptureMovieFileOutput()
    output.maxRecordedDuration = CMTime(seconds: duration, preferredTimescale: 600)
    let session = makeSession(outputs: [output])
    session.startRunning()
    let waiter = FinishWaiter()
    let start = CPU.now(RUSAGE_SELF.rawValue)
    output.startRecording(to: url, recordingDelegate: waiter)
    if sampleRSS {
        var elapsed = 0
        while waiter.done.wait(timeout: .now() + 10) == .timedOut {
            elapsed += 10
            print(String(format: "  %4d s  RSS %6.1f MiB  peak %6.1f MiB", elapsed, memory("VmRSS"), memory("VmHWM")))
        }
    } else {
        waiter.done.wait()
    }
    let cost = CPU.now(RUSAGE_SELF.rawValue) - start
    session.stopRunning()
    if let error = waiter.error as NSError?, error.userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool != true {
        fatalError("our recording failed: \(error)")
    }
    return (cost, memory("VmHWM"))
}

// MARK: Our writer on the same frames

/// Renders the frames and sound ffmpeg gets (VirtualFrameSource and VirtualSoundSource, the same functions that
/// wrote the y4m and wav); with `write`, appends them to an AVAssetWriter with the movie output's settings.
/// Returns the CPU used: run once without writing to know the rendering's own cost.
func writerOnSameFrames(duration: Double, write: Bool, to url: URL) throws -> CPU {
    try? FileManager.default.removeItem(at: url)
    let frames = Int(duration * 30)
    let frameSource = VirtualFrameSource(width: width, height: height)
    let soundSource = VirtualSoundSource(sampleRate: 48_000, channelCount: 1)
    let writer = try AVAssetWriter(outputURL: url, fileType: .mov)
    let video = AVAssetWriterInput(
        mediaType: .video,
        outputSettings: [
            AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: width, AVVideoHeightKey: height,
            AVVideoCompressionPropertiesKey: [
                AVVideoAverageBitRateKey: bitRate, AVVideoMaxKeyFrameIntervalKey: 30,
                AVVideoAllowFrameReorderingKey: false, AVVideoExpectedSourceFrameRateKey: 30,
            ] as [String: Any],
        ])
    let audio = AVAssetWriterInput(
        mediaType: .audio,
        outputSettings: [
            AVFormatIDKey: kAudioFormatMPEG4AAC, AVSampleRateKey: 48_000, AVNumberOfChannelsKey: 1,
            AVEncoderBitRateKey: 64_000,
        ])
    let adaptor = AVAssetWriterInputPixelBufferAdaptor(assetWriterInput: video, sourcePixelBufferAttributes: [
        kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
        kCVPixelBufferWidthKey: width, kCVPixelBufferHeightKey: height,
    ])
    writer.add(video)
    writer.add(audio)
    if write {
        precondition(writer.startWriting(), "startWriting: \(String(describing: writer.error))")
        writer.startSession(atSourceTime: .zero)
    }
    let description = try CMFormatDescription(
        audioStreamBasicDescription: AudioStreamBasicDescription(
            mSampleRate: 48_000, mFormatID: kAudioFormatLinearPCM,
            mFormatFlags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked, mBytesPerPacket: 4, mFramesPerPacket: 1,
            mBytesPerFrame: 4, mChannelsPerFrame: 1, mBitsPerChannel: 32, mReserved: 0))
    var pool: CVPixelBufferPool?
    CVPixelBufferPoolCreate(nil, nil, [
        kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
        kCVPixelBufferWidthKey: width, kCVPixelBufferHeightKey: height,
    ], &pool)
    let start = CPU.now(RUSAGE_SELF.rawValue)
    for index in 0..<frames {
        var buffer: CVPixelBuffer?
        CVPixelBufferPoolCreatePixelBuffer(nil, (write ? adaptor.pixelBufferPool : nil) ?? pool!, &buffer)
        frameSource.render(frameIndex: UInt32(index), into: buffer!)
        let block = CMBlockBuffer(length: 1600 * 4)
        block.withUnsafeMutableBytes { bytes in
            soundSource.render(startingAt: Int64(index * 1600), frameCount: 1600, into: bytes.bindMemory(to: Float.self))
        }
        guard write else { continue }
        while !video.isReadyForMoreMediaData || !audio.isReadyForMoreMediaData { usleep(200) }
        _ = adaptor.append(buffer!, withPresentationTime: CMTime(value: Int64(index), timescale: 30))
        let sound = try CMSampleBuffer(
            dataBuffer: block, formatDescription: description, numSamples: 1600,
            sampleTimings: [
                CMSampleTimingInfo(
                    duration: CMTime(value: 1, timescale: 48_000),
                    presentationTimeStamp: CMTime(value: Int64(index * 1600), timescale: 48_000), decodeTimeStamp: .invalid)
            ], sampleSizes: [4])
        _ = audio.append(sound)
    }
    if write {
        video.markAsFinished()
        audio.markAsFinished()
        let done = DispatchSemaphore(value: 0)
        writer.finishWriting { done.signal() }
        done.wait()
        precondition(writer.status == .completed, "writer: \(String(describing: writer.error))")
    }
    return CPU.now(RUSAGE_SELF.rawValue) - start
}

// MARK: ffmpeg's side

/// The virtual devices' frames and sound for `duration`, as y4m (I420) and wav (s16), written once.
func writeSources(duration: Double, in directory: URL) throws -> (URL, URL) {
    let frames = Int(duration * 30)
    let video = directory.appendingPathComponent("source.y4m")
    let audio = directory.appendingPathComponent("source.wav")
    _ = FileManager.default.createFile(atPath: video.path, contents: nil)
    let handle = try FileHandle(forWritingTo: video)
    try handle.write(contentsOf: Data("YUV4MPEG2 W\(width) H\(height) F30:1 Ip A1:1 C420mpeg2 XCOLORRANGE=LIMITED\n".utf8))
    let source = VirtualFrameSource(width: width, height: height)
    var created: CVPixelBuffer?
    CVPixelBufferCreate(nil, width, height, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &created)
    let buffer = created!
    var frame = [UInt8](repeating: 0, count: width * height * 3 / 2)
    for index in 0..<frames {
        source.render(frameIndex: UInt32(index), into: buffer)
        buffer.withLockedPlanes { planes in
            let luma = planes[0]
            let chroma = planes[1]
            for row in 0..<height {
                let from = luma.baseAddress.advanced(by: row * luma.bytesPerRow).assumingMemoryBound(to: UInt8.self)
                for x in 0..<width { frame[row * width + x] = from[x] }
            }
            let quarter = width * height / 4
            for row in 0..<height / 2 {
                let from = chroma.baseAddress.advanced(by: row * chroma.bytesPerRow).assumingMemoryBound(to: UInt8.self)
                for x in 0..<width / 2 {
                    frame[width * height + row * width / 2 + x] = from[2 * x]
                    frame[width * height + quarter + row * width / 2 + x] = from[2 * x + 1]
                }
            }
        }
        try handle.write(contentsOf: Data("FRAME\n".utf8))
        try handle.write(contentsOf: Data(frame))
    }
    try handle.close()

    let sound = VirtualSoundSource(sampleRate: 48_000, channelCount: 1)
    let sampleCount = Int(duration * 48_000)
    var samples = [Int16](repeating: 0, count: sampleCount)
    samples.withUnsafeMutableBufferPointer { sound.render(startingAt: 0, frameCount: sampleCount, into: $0) }
    var wav = Data("RIFF".utf8)
    func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { wav.append(contentsOf: $0) } }
    append(UInt32(36 + sampleCount * 2))
    wav.append(Data("WAVEfmt ".utf8))
    append(UInt32(16)); append(UInt16(1)); append(UInt16(1)); append(UInt32(48_000)); append(UInt32(96_000))
    append(UInt16(2)); append(UInt16(16))
    wav.append(Data("data".utf8))
    append(UInt32(sampleCount * 2))
    samples.withUnsafeBytes { wav.append(contentsOf: $0) }
    try wav.write(to: audio)
    return (video, audio)
}

/// CPU and peak RSS of ffmpeg encoding the sources with our settings.
func ffmpegRecording(video: URL, audio: URL, to output: URL) -> (CPU, Double) {
    try? FileManager.default.removeItem(at: output)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
    process.arguments = [
        "-nostdin", "-v", "error", "-i", video.path, "-i", audio.path,
        "-c:v", "libx264", "-preset", "superfast", "-tune", "zerolatency", "-profile:v", "high", "-threads", "1",
        "-g", "30", "-b:v", "\(bitRate)", "-maxrate", "\(bitRate * 3 / 2)", "-bufsize", "\(bitRate * 3 / 2)",
        "-x264-params", "scenecut=0", "-c:a", "aac", "-b:a", "64000", output.path,
    ]
    let before = CPU.now(RUSAGE_CHILDREN.rawValue)
    try! process.run()
    process.waitUntilExit()
    precondition(process.terminationStatus == 0, "ffmpeg failed")
    var usage = rusage()
    getrusage(RUSAGE_CHILDREN.rawValue, &usage)
    return (CPU.now(RUSAGE_CHILDREN.rawValue) - before, Double(usage.ru_maxrss) / 1024)
}

// MARK: Run

let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("openav-recording-bench-\(getpid())")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }

if minutes > 0 {
    if arguments.contains("--no-huge-pages") {
        // What an application that prefers memory to TLB hits can do (docs/time-and-memory.md): libx264 then gets
        // no transparent huge pages.
        guard OpenAVCaptureProcess.disableTransparentHugePages() else { fatalError("prctl(PR_SET_THP_DISABLE) failed") }
    }
    if arguments.contains("--free-running") {
        // The camera as fast as the recording takes it (frames the encoder cannot take are dropped as late).
        AVCaptureDevice.default(for: .video)!.virtualCamera!.clockMode = .freeRunning
    }
    print(String(format: "RSS before any capture: %.1f MiB", memory("VmRSS")))
    do {
        let session = makeSession(outputs: [])
        session.startRunning()
        Thread.sleep(forTimeInterval: 3)
        print(String(format: "RSS with the 1080p camera and the microphone running, not recording: %.1f MiB", memory("VmRSS")))
        session.stopRunning()
    }
    print("Recording \(minutes) min of 1920x1080@30 + AAC; RSS every 10 s:")
    let (cpu, peak) = ourRecording(for: minutes * 60, to: directory.appendingPathComponent("long.mov"), sampleRSS: true)
    print(String(format: "CPU %.1f s for %.0f s recorded (%.0f%% of one core); peak RSS %.1f MiB", cpu.total,
        minutes * 60, cpu.total / (minutes * 60) * 100, peak))
    exit(0)
}

print("Writing \(seconds) s of sources for ffmpeg…")
let (video, audio) = try writeSources(duration: seconds, in: directory)
var ours: [CPU] = []
var alone: [CPU] = []
var theirs: [CPU] = []
var writerCosts: [CPU] = []
var renderCosts: [CPU] = []
var ourPeak = 0.0
var theirPeak = 0.0
for round in 1...rounds {
    let (cpu, peak) = ourRecording(for: seconds, to: directory.appendingPathComponent("ours.mov"))
    ours.append(cpu)
    ourPeak = max(ourPeak, peak)
    alone.append(devicesAlone(for: seconds))
    renderCosts.append(try writerOnSameFrames(duration: seconds, write: false, to: directory.appendingPathComponent("none.mov")))
    writerCosts.append(try writerOnSameFrames(duration: seconds, write: true, to: directory.appendingPathComponent("writer.mov")))
    let (ffmpegCPU, ffmpegPeak) = ffmpegRecording(video: video, audio: audio, to: directory.appendingPathComponent("ffmpeg.mov"))
    theirs.append(ffmpegCPU)
    theirPeak = max(theirPeak, ffmpegPeak)
    print(String(format: "round %d: ours %.2f s (devices alone %.2f s), writer on ffmpeg's frames %.2f s (rendering %.2f s), ffmpeg %.2f s CPU",
        round, cpu.total, alone.last!.total, writerCosts.last!.total, renderCosts.last!.total, ffmpegCPU.total))
}
let best = ours.map(\.total).min()!
let bestAlone = alone.map(\.total).min()!
let bestFFmpeg = theirs.map(\.total).min()!
let bestWriter = writerCosts.map(\.total).min()!
let bestRender = renderCosts.map(\.total).min()!
print(String(format: """
    %.0f s of 1920x1080@30 + AAC, best of %d rounds (CPU seconds, user + system):
      ours, recording (devices included)   %6.2f
      ours, devices alone                  %6.2f
      ours, recording minus devices        %6.2f
      ffmpeg, same frames and settings     %6.2f
      ratio (ours − devices) / ffmpeg      %6.2f
      ratio ours (all) / ffmpeg            %6.2f
      AVAssetWriter on ffmpeg's very frames, minus rendering them  %6.2f
      ratio (writer − rendering) / ffmpeg  %6.2f
      peak RSS: ours %.1f MiB (whole process), ffmpeg %.1f MiB
    """, seconds, rounds, best, bestAlone, best - bestAlone, bestFFmpeg, (best - bestAlone) / bestFFmpeg,
    best / bestFFmpeg, bestWriter - bestRender, (bestWriter - bestRender) / bestFFmpeg, ourPeak, theirPeak))
