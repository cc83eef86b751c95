// How soon a recording that survives disconnection (AVCaptureMovieFileOutput.survivesDisconnection) resumes once
// the device is back. The goal (issue 19): the first frame after the gap reaches the file at most 1 s after the
// device reappears.
//
//   One recording of the virtual back camera (1280x720 at 30 fps, H.264) and the virtual microphone. The camera is
//   unplugged and replugged --rounds times (default 5), 1 s away each time, 1.5 s between. Measured for each
//   return, on the host clock: from AVCaptureDevice.wasConnectedNotification (the device reappears) to the
//   session's interruptionEndedNotification (its stream restarted) and to the delegate's didRegainDevice (the
//   first frame after the gap handed to the file's writer). Baseline, in the same run: a fresh session's
//   startRunning() to its recording's didStartRecording (a cold start: the camera opened, the encoder made).
//   Reported: medians and maxima, the ratio reconnect / cold start, and the ratio reconnect / the 1 s goal.
//
// Run: swift run -c release ReconnectDelay [--rounds 5]

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization

let arguments = CommandLine.arguments
let rounds = arguments.firstIndex(of: "--rounds").flatMap { Int(arguments[$0 + 1]) } ?? 5

func now() -> Double { CMClockGetTime(CMClockGetHostTimeClock()).seconds }

/// The recording's callbacks, each with the host time it came at.
final class Watcher: NSObject, AVCaptureFileOutputDisconnectionDelegate, @unchecked Sendable {
    let started = DispatchSemaphore(value: 0)
    let regained = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    let startTime = Mutex<Double>(0)
    let regainTimes = Mutex<[Double]>([])

    func fileOutput(_ output: AVCaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [AVCaptureConnection]) {
        startTime.withLock { $0 = now() }
        started.signal()
    }
    func fileOutput(
        _ output: AVCaptureFileOutput, recordingTo fileURL: URL, didRegainDevice device: AVCaptureDevice, gap: CMTimeRange
    ) {
        let time = now()
        regainTimes.withLock { $0.append(time) }
        regained.signal()
    }
    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?
    ) {
        if let error { print("the recording ended with \(error)") }
        finished.signal()
    }
}

/// Host times of a notification's posts.
final class Posts: @unchecked Sendable {
    let times = Mutex<[Double]>([])
    var token: (any NSObjectProtocol)?
    init(_ name: NSNotification.Name, object: AnyObject?) {
        token = NotificationCenter.default.addObserver(forName: name, object: object, queue: nil) { [weak self] _ in
            self?.times.withLock { $0.append(now()) }
        }
    }
}

guard let camera = AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back),
    let controller = camera.virtualCamera, let microphone = AVCaptureDevice.default(for: .audio)
else { fatalError("run with OPENAV_DEVICES=virtual: the virtual back camera and microphone are needed") }

func makeSession(_ output: AVCaptureMovieFileOutput) throws -> AVCaptureSession {
    let session = AVCaptureSession()
    session.beginConfiguration()
    session.sessionPreset = .hd1280x720
    session.addInput(try AVCaptureDeviceInput(device: camera))
    session.addInput(try AVCaptureDeviceInput(device: microphone))
    session.addOutput(output)
    session.commitConfiguration()
    return session
}

let directory = FileManager.default.temporaryDirectory.path + "/reconnect-delay-\(getpid())"
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: directory) }

// Baseline: cold starts, as many as the rounds.
var coldStarts: [Double] = []
for round in 0..<rounds {
    let output = AVCaptureMovieFileOutput()
    let session = try makeSession(output)
    let watcher = Watcher()
    output.startRecording(to: URL(fileURLWithPath: directory + "/cold-\(round).mov"), recordingDelegate: watcher)
    let begin = now()
    session.startRunning()
    guard watcher.started.wait(timeout: .now() + 10) == .success else { fatalError("a cold start never recorded") }
    coldStarts.append(watcher.startTime.withLock { $0 } - begin)
    output.stopRecording()
    _ = watcher.finished.wait(timeout: .now() + 10)
    session.stopRunning()
}

// Reconnections in one recording.
let output = AVCaptureMovieFileOutput()
output.survivesDisconnection = true
let session = try makeSession(output)
let connected = Posts(AVCaptureDevice.wasConnectedNotification, object: camera)
let resumed = Posts(AVCaptureSession.interruptionEndedNotification, object: session)
let watcher = Watcher()
session.startRunning()
output.startRecording(to: URL(fileURLWithPath: directory + "/reconnected.mov"), recordingDelegate: watcher)
guard watcher.started.wait(timeout: .now() + 10) == .success else { fatalError("the recording never started") }
for _ in 0..<rounds {
    Thread.sleep(forTimeInterval: 1.5)
    controller.unplug()
    Thread.sleep(forTimeInterval: 1.0)
    controller.replug()
    guard watcher.regained.wait(timeout: .now() + 10) == .success else { fatalError("the camera never came back") }
}
Thread.sleep(forTimeInterval: 0.5)
output.stopRecording()
_ = watcher.finished.wait(timeout: .now() + 15)
session.stopRunning()
controller.restoreDefaults()

let back = connected.times.withLock { $0 }
let restarted = resumed.times.withLock { $0 }
let written = watcher.regainTimes.withLock { $0 }
guard back.count == rounds, written.count == rounds, restarted.count == rounds else {
    fatalError("\(back.count) returns, \(restarted.count) restarts, \(written.count) resumptions for \(rounds) rounds")
}
let toRestart = zip(back, restarted).map { $1 - $0 }
let toFrame = zip(back, written).map { $1 - $0 }

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}
func ms(_ value: Double) -> String { String(format: "%.1f ms", value * 1000) }

print("Reconnect delay, virtual back camera 1280x720@30 + microphone, \(rounds) rounds")
print("  device back -> session stream restarted: median \(ms(median(toRestart))), max \(ms(toRestart.max()!))")
print("  device back -> first frame after the gap written: median \(ms(median(toFrame))), max \(ms(toFrame.max()!))")
print("  baseline, cold start (startRunning -> first frame written): median \(ms(median(coldStarts)))")
print(String(format: "  ratio reconnect / cold start: %.2f", median(toFrame) / median(coldStarts)))
print(String(format: "  ratio worst reconnect / 1 s goal: %.3f (%@)", toFrame.max()!, toFrame.max()! <= 1 ? "met" : "MISSED"))
