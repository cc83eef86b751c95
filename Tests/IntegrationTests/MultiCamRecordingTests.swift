// Several cameras recorded at once in an AVCaptureMultiCamSession: a movie file output per camera with the one
// microphone in each, an unplugged camera ending only its own file, and bad input that loses nothing already
// recording. Files read back frame by frame with ffmpeg and ffprobe.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing
import TestSupport

/// The virtual back and front cameras and the USB webcam at 640x480, 30 fps, each into a movie file output of its
/// own, the microphone into all three: connected by hand, as AVMultiCamPiP does.
struct MultiCamMovieRig {
    let session = AVCaptureMultiCamSession()
    let cameras = [VirtualDevices.back, VirtualDevices.front, VirtualDevices.webcam]
    let outputs = [AVCaptureMovieFileOutput(), AVCaptureMovieFileOutput(), AVCaptureMovieFileOutput()]
    let delegates = [MovieRecordingDelegate(), MovieRecordingDelegate(), MovieRecordingDelegate()]
    let urls: [URL]
    private let restores: [() -> Void]

    init(name: String) throws {
        restores = try [
            useFormat(VirtualDevices.back, width: 640, height: 480),
            useFormat(VirtualDevices.front, width: 640, height: 480),
            useFormat(VirtualDevices.webcam, width: 640, height: 480),
        ]
        urls = try (1...3).map { try movieScratchURL("\(name)-cam-\($0).mov") }
        session.beginConfiguration()
        defer { session.commitConfiguration() }
        let microphone = try AVCaptureDeviceInput(device: VirtualDevices.microphone)
        session.addInputWithNoConnections(microphone)
        for (camera, output) in zip(cameras, outputs) {
            let input = try AVCaptureDeviceInput(device: camera)
            session.addInputWithNoConnections(input)
            session.addOutputWithNoConnections(output)
            try connectCamera(input, to: output, in: session)
            let sound = AVCaptureConnection(inputPorts: microphone.ports, output: output)
            try #require(session.canAddConnection(sound), "one microphone feeds every camera's movie")
            session.addConnection(sound)
        }
    }

    func restoreFormats() { restores.reversed().forEach { $0() } }

    var devices: [AVCaptureDevice] { cameras + [VirtualDevices.microphone] }

    /// Starts every recording once the cameras' first frames (delivered as they start) are handed over, so each
    /// file starts with the frame of the clock's next step, the same moment for every camera.
    func startRecording(on clock: VirtualDeviceClock) {
        #expect(clock.advance(by: .zero, step: CMTime(value: 1, timescale: 30), settling: outputs))
        for (output, (url, delegate)) in zip(outputs, zip(urls, delegates)) {
            output.startRecording(to: url, recordingDelegate: delegate)
        }
    }
}

@Suite("Several cameras recorded at once", .serialized)
struct MultiCamRecordingTests {
    private let frameTime = CMTime(value: 1, timescale: 30)

    @Test("a movie per camera, the microphone in each: every frame once, all three files on one time base")
    func moviePerCamera() throws {
        guard MediaTool.available(for: "MultiCamRecordingTests.moviePerCamera") else { return }
        let rig = try MultiCamMovieRig(name: "per-camera")
        defer { rig.restoreFormats() }
        try withManualClock(rig.devices) { clock in
            rig.session.startRunning()
            defer { rig.session.stopRunning() }
            #expect(rig.session.isRunning && rig.session.hardwareCost <= 1)
            // Asked for before the clock moves: each file starts with the same moment's frame.
            rig.startRecording(on: clock)
            #expect(clock.advance(by: CMTime(value: 2, timescale: 1), step: frameTime, settling: rig.outputs))
            rig.outputs.forEach { $0.stopRecording() }
            #expect(rig.delegates.allSatisfy { $0.waitForFinish() })
        }
        var firstIndices: [UInt32] = []
        var counts: [Int] = []
        for (url, (delegate, output)) in zip(rig.urls, zip(rig.delegates, rig.outputs)) {
            #expect(delegate.error == nil, "\(url.lastPathComponent): \(String(describing: delegate.error))")
            let probe = try FFprobeReport(url)
            #expect(probe.stream("audio") != nil, "\(url.lastPathComponent) has the microphone")
            #expect(try ffmpegDecodeErrors(url).isEmpty)
            let indices = try decodedFrameIndices(url)
            #expect(indexSteps(indices).isEmpty, "\(url.lastPathComponent): frames missing or repeated")
            // What the kernel test requires of real cameras, held here too: no camera ran out of buffers, and every
            // frame the recording took reached the file.
            let statistics = output.recordingStatistics
            #expect(statistics.droppedVideoFrames["OutOfBuffers"] == nil, "\(statistics)")
            #expect(indices.count == statistics.videoFramesWritten, "\(url.lastPathComponent): \(statistics)")
            // The first frame's index, from the first readable one (a whole second's flash frame carries none).
            let (position, index) = try #require(indices.enumerated().first { $0.element != nil })
            firstIndices.append(index! - UInt32(position))
            counts.append(indices.count)
        }
        // Each camera counts its frames from 0 at the moment they all started: the same first index and the same
        // number of frames in every file is the same stretch of time.
        #expect(Set(firstIndices).count == 1, "first frame indices \(firstIndices)")
        #expect(Set(counts).count == 1 && counts.first.map { $0 >= 58 } == true, "frame counts \(counts)")
    }

    @Test("an unplugged camera ends its own file; the others record on, and every file is finalized")
    func unpluggedCamera() throws {
        guard MediaTool.available(for: "MultiCamRecordingTests.unpluggedCamera") else { return }
        let rig = try MultiCamMovieRig(name: "unplug")
        defer { rig.restoreFormats() }
        let webcam = try #require(VirtualCameraController(VirtualDevices.webcam))
        defer { webcam.replug() }
        try withManualClock(rig.devices) { clock in
            rig.session.startRunning()
            defer { rig.session.stopRunning() }
            rig.startRecording(on: clock)
            #expect(clock.advance(by: CMTime(value: 1, timescale: 1), step: frameTime, settling: rig.outputs))
            webcam.unplug()
            #expect(rig.delegates[2].waitForFinish(), "the webcam's recording ends")
            #expect(clock.advance(by: CMTime(value: 1, timescale: 1), step: frameTime, settling: rig.outputs))
            #expect(!rig.delegates[0].events.contains("didFinish") && !rig.delegates[1].events.contains("didFinish"))
            rig.outputs[0...1].forEach { $0.stopRecording() }
            #expect(rig.delegates[0...1].allSatisfy { $0.waitForFinish() })
        }
        let lost = try #require(rig.delegates[2].avError)
        #expect(lost.code == .deviceWasDisconnected && rig.delegates[2].successfullyFinished == true)
        var counts: [Int] = []
        for (url, delegate) in zip(rig.urls, rig.delegates) {
            #expect(try ffmpegDecodeErrors(url).isEmpty, "\(url.lastPathComponent) decodes on its own")
            let indices = try decodedFrameIndices(url)
            #expect(indexSteps(indices).isEmpty, "\(url.lastPathComponent): frames missing or repeated")
            if delegate !== rig.delegates[2] { #expect(delegate.error == nil) }
            counts.append(indices.count)
        }
        // Two seconds from the cameras still plugged in, about one from the webcam.
        #expect(counts[0] == counts[1] && counts[0] >= 58, "\(counts)")
        #expect(counts[2] < counts[0] - 20 && counts[2] >= 28, "\(counts)")
    }

    @Test("bad input while recording: the same camera twice, a second camera in a plain session, a cost over budget")
    func badInputLosesNothing() throws {
        guard MediaTool.available(for: "MultiCamRecordingTests.badInputLosesNothing") else { return }
        // A plain session recording the back camera refuses the same camera again and a second camera.
        let url = try movieScratchURL("plain-refuses.mov")
        let output = AVCaptureMovieFileOutput()
        let session = try makeSession(preset: .vga640x480, devices: [VirtualDevices.back], outputs: [output])
        let delegate = MovieRecordingDelegate()
        try withManualClock([VirtualDevices.back]) { clock in
            session.startRunning()
            defer { session.stopRunning() }
            output.startRecording(to: url, recordingDelegate: delegate)
            #expect(clock.advance(by: CMTime(value: 1, timescale: 2), step: frameTime, settling: [output]))
            let sameCamera = try AVCaptureDeviceInput(device: VirtualDevices.back)
            let secondCamera = try AVCaptureDeviceInput(device: VirtualDevices.front)
            #expect(!session.canAddInput(sameCamera))
            #expect(!session.canAddInput(secondCamera), "Apple's plain session takes one camera")
            #expect(clock.advance(by: CMTime(value: 1, timescale: 2), step: frameTime, settling: [output]))
            output.stopRecording()
            #expect(delegate.waitForFinish())
        }
        #expect(delegate.error == nil && session.inputs.count == 1)
        let indices = try decodedFrameIndices(url)
        #expect(indexSteps(indices).isEmpty && indices.count >= 29, "\(indices.count) frames")

        // A multi-camera session taken over budget while recording stops with Apple's error; the files are whole.
        let rig = try MultiCamMovieRig(name: "over-budget")
        defer { rig.restoreFormats() }
        let stopped = NotificationRecorder(
            [.AVCaptureSessionRuntimeError, .AVCaptureSessionDidStopRunning], object: rig.session)
        let errors = Mutex<[AVError]>([])
        let token = NotificationCenter.default.addObserver(
            forName: .AVCaptureSessionRuntimeError, object: rig.session, queue: nil
        ) { note in
            if let error = note.userInfo?[AVCaptureSessionErrorKey] as? AVError { errors.withLock { $0.append(error) } }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        var bigger: [() -> Void] = []
        defer { bigger.reversed().forEach { $0() } }
        try withManualClock(rig.devices) { clock in
            rig.session.startRunning()
            defer { rig.session.stopRunning() }
            rig.startRecording(on: clock)
            #expect(clock.advance(by: CMTime(value: 1, timescale: 2), step: frameTime, settling: rig.outputs))
            rig.session.beginConfiguration()
            bigger = try [
                useFormat(VirtualDevices.back, width: 3840, height: 2160),
                useFormat(VirtualDevices.front, width: 3840, height: 2160),
                useFormat(VirtualDevices.webcam, width: 1920, height: 1080, pixelFormat: kCMVideoCodecType_JPEG),
            ]
            rig.session.commitConfiguration()
            #expect(rig.delegates.allSatisfy { $0.waitForFinish() })
        }
        try waitUntil("the session says why it stopped") { stopped.recorded.count == 2 }
        #expect(!rig.session.isRunning)
        #expect(errors.withLock { $0.first?.code } == .sessionHardwareCostOverage)
        for url in rig.urls {
            #expect(try ffmpegDecodeErrors(url).isEmpty, "\(url.lastPathComponent) decodes on its own")
            let indices = try decodedFrameIndices(url)
            #expect(indexSteps(indices).isEmpty && indices.count >= 14, "\(url.lastPathComponent): \(indices.count)")
        }
    }
}
