// AVCaptureMultiCamSession with the virtual back and front cameras, the USB webcam and the microphone: Apple's rules
// for inputs, presets and connections made by hand, the hidden microphone ports, and the hardware cost.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing
import TestSupport

@Suite(.serialized) struct MultiCamSessionTests {
    @Test("several cameras take a multi-camera session; a plain one takes one camera, as on iOS")
    func inputsAndPresets() throws {
        #expect(AVCaptureMultiCamSession.isMultiCamSupported)
        let session = AVCaptureMultiCamSession()
        #expect(session.sessionPreset == .inputPriority)
        #expect(session.canSetSessionPreset(.inputPriority))
        #expect(!session.canSetSessionPreset(.high) && !session.canSetSessionPreset(.vga640x480))
        let (back, front, webcam, microphone) =
            (VirtualDevices.back, VirtualDevices.front, VirtualDevices.webcam, VirtualDevices.microphone)
        for camera in [back, front, webcam] {
            #expect(camera.formats.allSatisfy { $0.isMultiCamSupported }, "\(camera.localizedName)")
        }
        #expect(!microphone.formats.contains { $0.isMultiCamSupported })
        session.beginConfiguration()
        for device in [back, front, webcam, microphone] {
            let input = try AVCaptureDeviceInput(device: device)
            #expect(session.canAddInput(input), "\(device.localizedName)")
            session.addInputWithNoConnections(input)
        }
        // A device is used by one input only.
        #expect(!session.canAddInput(try AVCaptureDeviceInput(device: front)))
        session.commitConfiguration()
        #expect(session.inputs.count == 4 && session.connections.isEmpty)
        #expect(session.sessionPreset == .inputPriority)

        let plain = AVCaptureSession()
        plain.addInput(try AVCaptureDeviceInput(device: back))
        #expect(!plain.canAddInput(try AVCaptureDeviceInput(device: front)), "Apple's plain session takes one camera")
        #expect(plain.canAddInput(try AVCaptureDeviceInput(device: microphone)))
    }

    @Test("ports(for:sourceDeviceType:sourceDevicePosition:) finds each camera's port and the microphone's beams")
    func sourcePorts() throws {
        let back = try AVCaptureDeviceInput(device: VirtualDevices.back)
        let microphone = try AVCaptureDeviceInput(device: VirtualDevices.microphone)
        let backPort = try #require(back.ports.first)
        #expect(backPort.sourceDeviceType == .builtInWideAngleCamera && backPort.sourceDevicePosition == .back)
        #expect(back.ports(for: .video, sourceDeviceType: .builtInWideAngleCamera, sourceDevicePosition: .back) == [backPort])
        #expect(back.ports(for: nil, sourceDeviceType: nil, sourceDevicePosition: .unspecified) == [backPort])
        #expect(back.ports(for: .video, sourceDeviceType: .builtInWideAngleCamera, sourceDevicePosition: .front).isEmpty)
        #expect(back.ports(for: .audio, sourceDeviceType: nil, sourceDevicePosition: .unspecified).isEmpty)
        #expect(back.ports(for: .video, sourceDeviceType: .external, sourceDevicePosition: .unspecified).isEmpty)

        let type = VirtualDevices.microphone.deviceType
        #expect(microphone.ports.count == 1, "the beams are hidden ports, as Apple's")
        let omni = try #require(microphone.ports(for: .audio, sourceDeviceType: type, sourceDevicePosition: .unspecified).first)
        let front = try #require(microphone.ports(for: .audio, sourceDeviceType: type, sourceDevicePosition: .front).first)
        let rear = try #require(microphone.ports(for: .audio, sourceDeviceType: type, sourceDevicePosition: .back).first)
        #expect(omni === microphone.ports[0])
        #expect(front.sourceDevicePosition == .front && rear.sourceDevicePosition == .back)
        #expect(Set([omni, front, rear].map(ObjectIdentifier.init)).count == 3)
        #expect(front.input === microphone && rear.formatDescription == omni.formatDescription)
    }

    @Test("connections by hand: a camera feeds one output of each kind and one preview; the microphone feeds all")
    func connectionRules() throws {
        let session = AVCaptureMultiCamSession()
        session.beginConfiguration()
        defer { session.commitConfiguration() }
        let back = try AVCaptureDeviceInput(device: VirtualDevices.back)
        let front = try AVCaptureDeviceInput(device: VirtualDevices.front)
        let microphone = try AVCaptureDeviceInput(device: VirtualDevices.microphone)
        [back, front, microphone].forEach(session.addInputWithNoConnections)
        let (backVideo, frontVideo, extraVideo) = (AVCaptureVideoDataOutput(), AVCaptureVideoDataOutput(), AVCaptureVideoDataOutput())
        let (backMovie, frontMovie) = (AVCaptureMovieFileOutput(), AVCaptureMovieFileOutput())
        let (backAudio, frontAudio) = (AVCaptureAudioDataOutput(), AVCaptureAudioDataOutput())
        for output in [backVideo, frontVideo, extraVideo, backMovie, frontMovie, backAudio, frontAudio] as [AVCaptureOutput] {
            #expect(session.canAddOutput(output))
            session.addOutputWithNoConnections(output)
        }
        #expect(session.connections.isEmpty)
        try connectCamera(back, to: backVideo, in: session)
        try connectCamera(front, to: frontVideo, in: session)
        try connectCamera(back, to: backMovie, in: session)
        try connectCamera(front, to: frontMovie, in: session)
        // No cloning a camera to a second output of the same kind.
        #expect(!session.canAddConnection(AVCaptureConnection(inputPorts: back.ports, output: extraVideo)))
        // An output takes one video connection: the front camera cannot join the back camera's movie.
        #expect(!session.canAddConnection(AVCaptureConnection(inputPorts: front.ports, output: backMovie)))

        // The microphone: each beam to its camera's audio output, and the one microphone into both movies.
        let type = VirtualDevices.microphone.deviceType
        let rear = try #require(microphone.ports(for: .audio, sourceDeviceType: type, sourceDevicePosition: .back).first)
        let ahead = try #require(microphone.ports(for: .audio, sourceDeviceType: type, sourceDevicePosition: .front).first)
        for connection in [
            AVCaptureConnection(inputPorts: [rear], output: backAudio),
            AVCaptureConnection(inputPorts: [ahead], output: frontAudio),
            AVCaptureConnection(inputPorts: microphone.ports, output: backMovie),
            AVCaptureConnection(inputPorts: microphone.ports, output: frontMovie),
        ] {
            #expect(session.canAddConnection(connection))
            session.addConnection(connection)
        }
        #expect(backMovie.connection(with: .audio) != nil && frontMovie.connection(with: .audio) != nil)

        // One preview per camera.
        let backLayer = AVCaptureVideoPreviewLayer(sessionWithNoConnection: session)
        let secondLayer = AVCaptureVideoPreviewLayer(sessionWithNoConnection: session)
        let frontLayer = AVCaptureVideoPreviewLayer(sessionWithNoConnection: session)
        let backPreview = AVCaptureConnection(inputPort: back.ports[0], videoPreviewLayer: backLayer)
        #expect(session.canAddConnection(backPreview))
        session.addConnection(backPreview)
        #expect(!session.canAddConnection(AVCaptureConnection(inputPort: back.ports[0], videoPreviewLayer: secondLayer)))
        #expect(session.canAddConnection(AVCaptureConnection(inputPort: front.ports[0], videoPreviewLayer: frontLayer)))
        #expect(session.connections.count == 9)
    }

    @Test("hardwareCost over 1: the session does not run and says sessionHardwareCostOverage; within budget it runs")
    func costOverBudget() throws {
        let (back, front, webcam) = (VirtualDevices.back, VirtualDevices.front, VirtualDevices.webcam)
        let restores = try [
            useFormat(back, width: 3840, height: 2160), useFormat(front, width: 3840, height: 2160),
            useFormat(webcam, width: 1920, height: 1080, pixelFormat: kCMVideoCodecType_JPEG),
        ]
        defer { restores.reversed().forEach { $0() } }
        let session = AVCaptureMultiCamSession()
        #expect(session.hardwareCost == 0 && session.systemPressureCost == 0)
        session.beginConfiguration()
        // Each camera into a data output of its own (a camera without a connection does not stream, costs nothing);
        // the webcam's frames are watched.
        let frames = RecordingDelegate()
        for camera in [back, front, webcam] {
            let input = try AVCaptureDeviceInput(device: camera)
            let output = AVCaptureVideoDataOutput()
            if camera === webcam { output.setSampleBufferDelegate(frames, queue: DispatchQueue(label: "multicam-cost")) }
            session.addInputWithNoConnections(input)
            session.addOutputWithNoConnections(output)
            try connectCamera(input, to: output, in: session)
        }
        session.commitConfiguration()
        let overBudget = session.hardwareCost
        #expect(overBudget > 1, "three cameras at 4K, 4K and 1080p: \(overBudget)")
        #expect(session.systemPressureCost > 0)

        let errors = Mutex<[AVError]>([])
        let token = NotificationCenter.default.addObserver(
            forName: .AVCaptureSessionRuntimeError, object: session, queue: nil
        ) { note in
            if let error = note.userInfo?[AVCaptureSessionErrorKey] as? AVError { errors.withLock { $0.append(error) } }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        session.startRunning()
        #expect(!session.isRunning)
        let error = try #require(errors.withLock { $0.first })
        #expect(error.code == .sessionHardwareCostOverage && error.errorCode == -11872)
        #expect((error.userInfo[NSLocalizedRecoverySuggestionErrorKey] as? String)?.contains("smaller") == true)
        #expect(frames.received.isEmpty)

        // Smaller formats for the two big cameras: within budget, the session runs and the webcam's frames come.
        let smaller = try [useFormat(back, width: 640, height: 480), useFormat(front, width: 640, height: 480)]
        defer { smaller.reversed().forEach { $0() } }
        #expect(session.hardwareCost < overBudget)
        #expect(session.hardwareCost <= 1, "\(session.hardwareCost)")
        session.startRunning()
        defer { session.stopRunning() }
        #expect(session.isRunning)
        #expect(frames.wait(for: 2))
    }

    @Test("disabling a camera's connections stops that camera only; enabling one starts it again")
    func disablingACamera() throws {
        let session = AVCaptureMultiCamSession()
        session.beginConfiguration()
        var connections: [AVCaptureConnection] = []
        let frames = RecordingDelegate()
        for camera in [VirtualDevices.back, VirtualDevices.webcam] {
            let input = try AVCaptureDeviceInput(device: camera)
            let output = AVCaptureVideoDataOutput()
            if camera === VirtualDevices.back { output.setSampleBufferDelegate(frames, queue: DispatchQueue(label: "kept")) }
            session.addInputWithNoConnections(input)
            session.addOutputWithNoConnections(output)
            connections.append(try connectCamera(input, to: output, in: session))
        }
        // A camera with no connection is not streamed: only these two are.
        session.addInputWithNoConnections(try AVCaptureDeviceInput(device: VirtualDevices.front))
        session.commitConfiguration()
        let (back, webcam, front) = try (
            #require(VirtualDevices.back.virtualCamera), #require(VirtualDevices.webcam.virtualCamera),
            #require(VirtualDevices.front.virtualCamera)
        )
        session.startRunning()
        defer { session.stopRunning() }
        #expect(back.isStreaming && webcam.isStreaming && !front.isStreaming)
        let bothCost = session.hardwareCost
        connections[1].isEnabled = false
        try waitUntil("the webcam stops") { !webcam.isStreaming }
        #expect(back.isStreaming && session.hardwareCost < bothCost)
        let before = frames.received.count
        #expect(frames.wait(for: before + 3), "the back camera streams on")
        connections[1].isEnabled = true
        try waitUntil("the webcam streams again") { webcam.isStreaming }
        // The port says the same as its connections.
        connections[1].inputPorts[0].isEnabled = false
        try waitUntil("the webcam stops") { !webcam.isStreaming }
        connections[1].inputPorts[0].isEnabled = true
        try waitUntil("the webcam streams again") { webcam.isStreaming }
        #expect(session.isRunning && back.isStreaming)
    }
}
