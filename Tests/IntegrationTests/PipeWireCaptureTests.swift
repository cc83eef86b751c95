// Cameras and microphones of a real PipeWire daemon: a headless session (dbus, pipewire, wireplumber) the tests
// start, GStreamer's pipewiresink publishing the virtual camera's frames as a camera node, pw-loopback with a tone
// as a microphone node. What we record is read back by ffprobe and ffmpeg.

@testable import CaptureDrivers
import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing
import TestSupport

@Suite(
    "PipeWire capture", .serialized,
    .enabled(if: PipeWireTestSession.unavailableReason == nil, "\(PipeWireTestSession.unavailableReason ?? "")"))
struct PipeWireCaptureTests {
    static let cameraName = "openav-test-camera"
    static let cameraDescription = "OpenAV PipeWire Camera"
    static let microphoneName = "openav-test-microphone"
    static let microphoneDescription = "OpenAV PipeWire Microphone"

    /// A session with a camera node playing `frames` of the virtual camera's 320x240 frames at 30 fps as NV12,
    /// and, when asked, a microphone node playing a 1 kHz tone.
    static func session(frames: Int = 900, microphone: Bool = false) throws -> (PipeWireTestSession, ChildProcess) {
        let session = try PipeWireTestSession.start()
        let clip = try scratchURL("pipewire-clip-\(frames).nv12", suite: "pipewire")
        if !FileManager.default.fileExists(atPath: clip.path) {
            try writeVirtualClipNV12(to: clip, width: 320, height: 240, frameRate: 30, frames: frames)
        }
        let camera = try session.publishCamera(
            name: cameraName, description: cameraDescription, clip: clip, width: 320, height: 240, frameRate: 30)
        try session.waitForNode(cameraName)
        if microphone {
            try session.publishMicrophone(name: microphoneName, description: microphoneDescription, frequency: 1000)
            try session.waitForNode(microphoneName)
        }
        return (session, camera)
    }

    /// The driver's device named `name`, waiting (bounded) for its formats to be readable.
    static func device(_ driver: PipeWireDeviceDriver, named name: String) throws -> any CaptureBackend {
        // The daemon links and configures the node's port in its own time.
        var found: (any CaptureBackend)?
        try waitUntil("\(name) shows up with formats") {
            found = driver.discoverDevices().first { $0.identity.localizedName == name }
            return found != nil
        }
        return found!
    }

    @Test("discovery: nodes named by their description, formats from EnumFormat, node added and removed")
    func discoveryAndHotPlug() throws {
        let (session, camera) = try Self.session(microphone: true)
        defer { session.stop() }
        let registry = DeviceRegistry(drivers: [], selection: .all)
        let events = Mutex<[String]>([])
        _ = registry.addListener { event in
            let kind =
                switch event {
                case .connected: "connected"
                case .disconnected: "disconnected"
                case .availabilityChanged: "availability"
                }
            events.withLock { $0.append("\(kind) \(event.backend.identity.localizedName)") }
        }
        let driver = PipeWireDeviceDriver(registry: registry)
        let cameraDevice = try Self.device(driver, named: Self.cameraDescription)
        #expect(cameraDevice.identity.media == .video)
        #expect(cameraDevice.identity.uniqueID == "pipewire:\(Self.cameraName)")
        let sizes = cameraDevice.formats.compactMap { format -> String? in
            guard case .video(let video) = format else { return nil }
            return "\(video.width)x\(video.height) \(video.mediaSubType == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange ? "NV12" : "?") \(video.maxFrameRate)"
        }
        #expect(sizes == ["320x240 NV12 30.0"])
        let microphone = try Self.device(driver, named: Self.microphoneDescription)
        #expect(microphone.identity.media == .audio)
        #expect(microphone.formats.contains(.audio(AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .float32))))
        #expect(events.withLock { $0 }.isEmpty, "nodes present at the first discovery are not arrivals")

        // A node added while connected arrives; killed, it goes.
        let second = try session.publishTestCamera(
            name: "openav-second", description: "Second Camera",
            caps: "video/x-raw,format=YUY2,width=640,height=480,framerate=15/1")
        try waitUntil("the second camera arrives") { events.withLock { $0 }.contains("connected Second Camera") }
        let secondDevice = try #require(driver.discoverDevices().first { $0.identity.localizedName == "Second Camera" })
        #expect(secondDevice.formats.count == 1)
        session.kill(second)
        try waitUntil("the second camera goes") { events.withLock { $0 }.contains("disconnected Second Camera") }
        #expect(!secondDevice.isConnected)
        #expect(!driver.discoverDevices().contains { $0.identity.localizedName == "Second Camera" })
        withExtendedLifetime(camera) {}
    }

    @Test("a camera recorded through the public API: every frame in order (ffprobe, ffmpeg)")
    func recordsCamera() throws {
        let (session, _) = try Self.session()
        defer { session.stop() }
        let driver = PipeWireDeviceDriver(registry: DeviceRegistry(drivers: [], selection: .all))
        let camera = DeviceDirectory.shared.device(for: try Self.device(driver, named: Self.cameraDescription))
        let url = try Self.record(devices: [camera], to: "pipewire-camera.mov")
        let probe = try FFprobeReport(url)
        let video = try #require(probe.stream("video"))
        #expect(video["width"] as? Int == 320 && video["height"] as? Int == 240)
        #expect(try ffmpegDecodeErrors(url).isEmpty)
        let indices = try decodedFrameIndices(url)
        #expect(indices.count >= 50)
        #expect(indexSteps(indices).isEmpty, "frames skipped or repeated: \(indexSteps(indices))")
    }

    @Test("a microphone recorded through the public API: the tone at 1 kHz, for the whole recording")
    func recordsMicrophone() throws {
        let session = try PipeWireTestSession.start()
        defer { session.stop() }
        try session.publishMicrophone(name: Self.microphoneName, description: Self.microphoneDescription, frequency: 1000)
        try session.waitForNode(Self.microphoneName)
        let driver = PipeWireDeviceDriver(registry: DeviceRegistry(drivers: [], selection: .all))
        let microphone = DeviceDirectory.shared.device(for: try Self.device(driver, named: Self.microphoneDescription))
        let url = try Self.record(devices: [microphone], to: "pipewire-microphone.m4a", output: AVCaptureAudioFileOutput())
        let audio = try #require(try FFprobeReport(url).stream("audio"))
        #expect(audio["channels"] as? Int == 2)
        let frequency = try dominantFrequency(of: url)
        #expect(abs(frequency - 1000) < 25, "the tone came out at \(frequency) Hz")
        #expect(try #require(FFprobeReport.number(audio["duration"])) > 1.8)
    }

    /// Records two seconds from `devices` with `output` (a movie file output by default) into a new scratch file.
    static func record(
        devices: [AVCaptureDevice], to name: String, output: AVCaptureFileOutput = AVCaptureMovieFileOutput()
    ) throws -> URL {
        let capture = try makeSession(preset: .qvga320x240, devices: devices, outputs: [output])
        capture.startRunning()
        defer { capture.stopRunning() }
        let url = try scratchURL(name, suite: "pipewire")
        try? FileManager.default.removeItem(at: url)
        let delegate = MovieRecordingDelegate()
        if let audioOutput = output as? AVCaptureAudioFileOutput {
            audioOutput.startRecording(to: url, outputFileType: .m4a, recordingDelegate: delegate)
        } else {
            output.startRecording(to: url, recordingDelegate: delegate)
        }
        #expect(delegate.waitForStart())
        try waitUntil("two seconds recorded", timeout: 15) { output.recordedDuration.seconds >= 2 }
        output.stopRecording()
        #expect(delegate.waitForFinish())
        #expect(delegate.error == nil)
        return url
    }

    @Test("a video data output gets the node's NV12 frames in order, lent without a copy")
    func dataOutput() throws {
        let (session, _) = try Self.session()
        defer { session.stop() }
        let driver = PipeWireDeviceDriver(registry: DeviceRegistry(drivers: [], selection: .all))
        let camera = DeviceDirectory.shared.device(for: try Self.device(driver, named: Self.cameraDescription))
        let indices = Mutex<[UInt32?]>([])
        let memory = Mutex<[String]>([])
        let delegate = RecordingDelegate { sample, _ in
            let index = sample.imageBuffer.flatMap(VirtualFrameReader.readFrameIndex(from:))
            indices.withLock { $0.append(index) }
            // Where the first frames' pixels live, as the kernel says (/proc/self/maps): lent frames are the node's
            // shared memory (a memfd), copies are this process's anonymous memory.
            guard memory.withLock({ $0.count }) < 20, let image = sample.imageBuffer else { return }
            CVPixelBufferLockBaseAddress(image, .readOnly)
            let address = CVPixelBufferGetBaseAddressOfPlane(image, 0)
            CVPixelBufferUnlockBaseAddress(image, .readOnly)
            let mapping = address.flatMap { Self.mappedFileName(containing: UInt(bitPattern: $0)) } ?? "(anonymous)"
            memory.withLock { $0.append(mapping) }
        }
        let output = AVCaptureVideoDataOutput()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "pipewire data output"))
        let capture = try makeSession(preset: .qvga320x240, devices: [camera], outputs: [output])
        capture.startRunning()
        #expect(delegate.wait(for: 45))
        capture.stopRunning()
        let frames = delegate.received
        #expect(frames.allSatisfy { $0.width == 320 && $0.height == 240 })
        #expect(frames.first?.pixelFormat == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
        let read = indices.withLock { $0 }.compactMap { $0 }
        #expect(read.count >= 40)
        #expect(zip(read, read.dropFirst()).allSatisfy { $1 > $0 }, "indices out of order: \(read)")
        let times = frames.map(\.time.seconds)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 > $0 })
        // Stamped on the host clock, as every device's frames are.
        #expect(abs((times.last ?? 0) - CMClock.hostTimeClock.time.seconds) < 5)
        let mappings = memory.withLock { $0 }
        #expect(mappings.count == 20 && mappings.allSatisfy { $0.hasPrefix("/memfd:") }, "frames copied: \(mappings)")
    }

    /// The file of the mapping of this process that holds `address` ("/memfd:…" for shared memory), or nil for
    /// anonymous memory and addresses mapped nowhere.
    static func mappedFileName(containing address: UInt) -> String? {
        // Read to the end: String(contentsOfFile:) stops short on a /proc file this long.
        guard let data = try? FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/self/maps")).readToEnd(),
            let maps = String(data: data, encoding: .utf8)
        else { return nil }
        for line in maps.split(separator: "\n") {
            // start-end perms offset dev inode [path]
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            let range = fields.first?.split(separator: "-").compactMap { UInt($0, radix: 16) } ?? []
            guard range.count == 2, (range[0]..<range[1]).contains(address) else { continue }
            return fields.count == 6 ? fields[5].trimmingCharacters(in: .whitespaces) : nil
        }
        return nil
    }

    @Test("the node killed mid-recording: the recording ends as an unplugged camera's, in a playable file")
    func nodeKilledMidRecording() throws {
        let (session, camera) = try Self.session()
        defer { session.stop() }
        let driver = PipeWireDeviceDriver(registry: DeviceRegistry(drivers: [], selection: .all))
        let device = DeviceDirectory.shared.device(for: try Self.device(driver, named: Self.cameraDescription))
        let output = AVCaptureMovieFileOutput()
        let capture = try makeSession(preset: .qvga320x240, devices: [device], outputs: [output])
        capture.startRunning()
        defer { capture.stopRunning() }
        let url = try scratchURL("pipewire-killed.mov", suite: "pipewire")
        try? FileManager.default.removeItem(at: url)
        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        #expect(delegate.waitForStart())
        try waitUntil("a second recorded", timeout: 15) { output.recordedDuration.seconds >= 1 }
        session.kill(camera)
        #expect(delegate.waitForFinish())
        #expect(delegate.avError?.code == .deviceWasDisconnected)
        #expect(delegate.successfullyFinished == true)
        #expect(try ffmpegDecodeErrors(url).isEmpty)
        let indices = try decodedFrameIndices(url)
        #expect(indices.count >= 25)
        #expect(indexSteps(indices).isEmpty)
    }

    @Test("a format the node does not take: start fails with an error that says so, in bounded time")
    func formatTheNodeRefuses() throws {
        let (session, _) = try Self.session()
        defer { session.stop() }
        let driver = PipeWireDeviceDriver(registry: DeviceRegistry(drivers: [], selection: .all))
        let camera = try Self.device(driver, named: Self.cameraDescription)
        let connection = try PipeWireConnection(onEvent: { _ in })
        let node = try #require(connection.nodes.first { $0.properties["node.name"] == Self.cameraName })
        let unoffered = VideoFormat(
            width: 1280, height: 720, mediaSubType: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
            frameDurationRanges: [FrameDurationRange(minFrameRate: 30, maxFrameRate: 30)], fieldOfView: 0,
            maxZoomFactor: 1)
        let stream = try PipeWireCaptureStream(
            connection: connection, node: node, format: .video(unoffered), frameDuration: CMTime(value: 1, timescale: 30),
            sink: { _ in })
        do {
            try stream.start()
            Issue.record("a format the node never offered streamed")
        } catch {
            #expect(error.advice?.contains("did not agree to stream NV12 1280x720") == true, "\(error)")
        }
        // The node is still there and still streams what it offers.
        #expect(camera.isConnected)
    }

    @Test("avcapture devices lists the nodes once each and records from them")
    func commandLine() throws {
        let (session, _) = try Self.session(microphone: true)
        defer { session.stop() }
        let directory = try scratchURL("pipewire-cli", suite: "pipewire")
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let devices = try avcapture(["devices"], in: directory, devices: "real", environment: session.environment)
        #expect(devices.status == 0, "\(devices.error)")
        #expect(devices.outputText.components(separatedBy: Self.cameraDescription).count == 2, "\(devices.outputText)")
        #expect(devices.outputText.components(separatedBy: Self.microphoneDescription).count == 2)
        let video = try avcapture(
            ["record", "clip.mov", "--video", Self.cameraDescription, "--audio", "none", "--duration", "2"],
            in: directory, devices: "real", environment: session.environment)
        #expect(video.status == 0, "\(video.error)")
        let clip = directory.appendingPathComponent("clip.mov")
        #expect(try ffmpegDecodeErrors(clip).isEmpty)
        #expect(indexSteps(try decodedFrameIndices(clip)).isEmpty)
        let audio = try avcapture(
            ["record", "tone.m4a", "--video", "none", "--audio", Self.microphoneDescription, "--duration", "2"],
            in: directory, devices: "real", environment: session.environment)
        #expect(audio.status == 0, "\(audio.error)")
        #expect(abs(try dominantFrequency(of: directory.appendingPathComponent("tone.m4a")) - 1000) < 25)
    }
}

