// The public API called at random from 8 threads at once: sessions started and stopped, inputs and outputs added and
// removed, devices reconfigured, recordings started, switched, paused and stopped, photos taken. 10 s in `make test`,
// 60 s in `make soak`, where it also runs built with the thread sanitizer (`swift build --sanitize=thread`).

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import TestSupport
import Testing

/// What the stress test's threads share: two sessions, the virtual devices' inputs, a few outputs, and the lock an
/// app would hold around a check and the change it guards (`canAddInput` then `addInput`): the session is thread
/// safe, but a check another thread can invalidate before the change is the app's to serialize, as AVCam does.
final class StressRig: @unchecked Sendable {
    let sessions = [AVCaptureSession(), AVCaptureSession()]
    let inputs: [AVCaptureDeviceInput]
    let movie = AVCaptureMovieFileOutput()
    let photo = AVCapturePhotoOutput()
    let frames = AVCaptureVideoDataOutput()
    let sound = AVCaptureAudioDataOutput()
    let topology = NSLock()
    let directory: URL
    let recordings = Mutex<[URL]>([])
    let delegate = StressRecordingDelegate()
    let photos = StressPhotoDelegate()
    let operations = Mutex<[String: Int]>([:])

    init(directory: URL) throws {
        self.directory = directory
        inputs = try [VirtualDevices.back, VirtualDevices.front, VirtualDevices.microphone].map {
            try AVCaptureDeviceInput(device: $0)
        }
        movie.movieFragmentInterval = CMTime(value: 1, timescale: 2)
        frames.setSampleBufferDelegate(StressSink.shared, queue: DispatchQueue(label: "stress-frames"))
        sound.setSampleBufferDelegate(StressSink.shared, queue: DispatchQueue(label: "stress-sound"))
    }

    private var outputs: [AVCaptureOutput] { [movie, photo, frames, sound] }

    /// One random operation of the public API.
    func step() {
        let session = sessions.randomElement()!
        let name: String
        switch Int.random(in: 0..<12) {
        case 0:
            name = "startRunning"
            session.startRunning()
        case 1:
            name = "stopRunning"
            session.stopRunning()
        case 2:
            name = "add or remove an input"
            topology.withLock {
                let input = inputs.randomElement()!
                session.beginConfiguration()
                if session.inputs.contains(input) {
                    session.removeInput(input)
                } else if session.canAddInput(input) {
                    session.addInput(input)
                }
                session.commitConfiguration()
            }
        case 3:
            name = "add or remove an output"
            topology.withLock {
                let output = outputs.randomElement()!
                if session.outputs.contains(output) {
                    session.removeOutput(output)
                } else if session.canAddOutput(output) {
                    session.addOutput(output)
                }
            }
        case 4:
            name = "set a preset"
            topology.withLock {
                let preset = [AVCaptureSession.Preset.qvga320x240, .vga640x480, .low].randomElement()!
                if session.canSetSessionPreset(preset) { session.sessionPreset = preset }
            }
        case 5:
            name = "reconfigure a device"
            let device = [VirtualDevices.back, VirtualDevices.front].randomElement()!
            if (try? device.lockForConfiguration()) != nil {
                let formats = device.formats.filter {
                    CMVideoFormatDescriptionGetDimensions($0.formatDescription).width <= 640
                }
                if let format = formats.randomElement() { device.activeFormat = format }
                device.videoZoomFactor = CGFloat.random(in: 1...min(2, device.activeFormat.videoMaxZoomFactor))
                device.unlockForConfiguration()
            }
        case 6, 7:
            // Starting while recording switches files, as Apple's does.
            name = "start or switch a recording"
            let url = directory.appendingPathComponent("take-\(UUID().uuidString.prefix(8)).mov")
            recordings.withLock { $0.append(url) }
            movie.startRecording(to: url, recordingDelegate: delegate)
        case 8:
            name = "stop a recording"
            movie.stopRecording()
        case 9:
            name = "pause or resume"
            if movie.isRecordingPaused { movie.resumeRecording() } else { movie.pauseRecording() }
        case 10:
            name = "take a photo"
            topology.withLock {
                guard photo.session != nil, let connection = photo.connection(with: .video), connection.isEnabled,
                    connection.isActive
                else { return }
                photo.capturePhoto(with: AVCapturePhotoSettings(), delegate: photos)
            }
        default:
            name = "read state"
            _ = (session.isRunning, session.inputs.count, session.outputs.count, session.connections.count)
            _ = (movie.isRecording, movie.recordedDuration, movie.recordedFileSize, movie.recordingStatistics)
        }
        operations.withLock { $0[name, default: 0] += 1 }
    }

    /// Stops everything and waits for every recording to finish.
    func windDown() {
        movie.stopRecording()
        for session in sessions { session.stopRunning() }
    }
}

final class StressSink: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate,
    AVCaptureAudioDataOutputSampleBufferDelegate, @unchecked Sendable
{
    static let shared = StressSink()
    let received = Atomic<Int>(0)
    func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        received.add(1, ordering: .relaxed)
    }
}

final class StressRecordingDelegate: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
    let finished = Mutex<[(URL, (any Error)?)]>([])
    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?
    ) {
        finished.withLock { $0.append((outputFileURL, error)) }
    }
}

final class StressPhotoDelegate: NSObject, AVCapturePhotoCaptureDelegate, @unchecked Sendable {
    let finished = Atomic<Int>(0)
    func photoOutput(
        _ output: AVCapturePhotoOutput, didFinishCaptureFor resolvedSettings: AVCaptureResolvedPhotoSettings,
        error: (any Error)?
    ) {
        finished.add(1, ordering: .relaxed)
    }
}

@Suite("The public API from 8 threads at random", .serialized)
struct APIStressTests {
    @Test("8 threads call the API at random; nothing traps or hangs, every finished recording's file plays")
    func eightThreads() throws {
        let seconds: Double = isSoak ? 60 : 10
        let directory = try scratchURL("stress", suite: "api-stress")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let rig = try StressRig(directory: directory)
        // The devices are process-wide: their formats, zoom and controls go back as they were for the suites after.
        let cameras = [VirtualDevices.back, VirtualDevices.front]
        let formats = cameras.map(\.activeFormat)
        defer {
            for (camera, format) in zip(cameras, formats) {
                VirtualCameraController(camera)?.restoreDefaults()
                if (try? camera.lockForConfiguration()) != nil {
                    camera.activeFormat = format
                    camera.unlockForConfiguration()
                }
            }
        }
        let deadline = Date().addingTimeInterval(seconds)
        let done = DispatchGroup()
        for thread in 0..<8 {
            done.enter()
            Thread.detachNewThread {
                Thread.current.name = "stress-\(thread)"
                while Date() < deadline {
                    rig.step()
                    // A few hundred calls a second per thread: enough to interleave everything, few enough that
                    // recordings and photos get to run between them.
                    usleep(UInt32.random(in: 0...20_000))
                }
                done.leave()
            }
        }
        // A thread stuck for a minute past the end is a deadlock.
        try #require(done.wait(timeout: .now() + seconds + 60) == .success, "a thread never came back (deadlock?)")
        rig.windDown()
        // Every recording started gets its didFinish (some end at once: no session, no data).
        let started = rig.recordings.withLock { $0.count }
        _ = waitUntil(timeout: 60, every: 0.05) { rig.delegate.finished.withLock({ $0.count }) >= started }
        let finished = rig.delegate.finished.withLock { $0 }
        print(
            "API stress, \(seconds) s: \(rig.operations.withLock { $0 }.sorted { $0.key < $1.key }), "
                + "\(finished.count) recordings finished, \(rig.photos.finished.load(ordering: .relaxed)) photos, "
                + "\(StressSink.shared.received.load(ordering: .relaxed)) buffers delivered")
        #expect(finished.count == started, "\(started) recordings started, \(finished.count) finished")
        // Each file a recording reports as usable plays.
        guard MediaTool.available(for: "APIStressTests.eightThreads") else { return }
        var checked = 0
        for (url, error) in finished {
            let usable =
                error == nil
                || (error as NSError?)?.userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool == true
            guard usable, FileManager.default.fileExists(atPath: url.path) else { continue }
            #expect(try ffmpegDecodeErrors(url).isEmpty, "\(url.lastPathComponent)")
            checked += 1
        }
        print("API stress: \(checked) finished files decoded cleanly")
    }
}
