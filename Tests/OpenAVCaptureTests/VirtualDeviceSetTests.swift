// A test's own virtual devices (OpenAVCaptureTesting's VirtualDeviceSet): discovery answers from the set made
// current, what a test does to its set reaches no other set and not the process's devices, and a session keeps the
// set it was made in for the events it handles on its own queues.

import Foundation
import OpenAVCaptureTesting
import Synchronization
import Testing
import TestSupport

@Suite struct VirtualDeviceSetTests {
    private static func backCamera() -> AVCaptureDevice? {
        AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back)
    }

    @Test("discovery answers from the current set, and from the process's devices outside it")
    func discoveryFollowsTheCurrentSet() throws {
        let devices = VirtualDeviceSet()
        let outside = try #require(Self.backCamera())
        #expect(VirtualDeviceSet.current == nil)
        try devices.withCurrent {
            #expect(VirtualDeviceSet.current === devices)
            let inside = try #require(Self.backCamera())
            #expect(inside === devices.backCamera)
            #expect(inside !== outside, "the set's camera is the process's")
            #expect(inside.uniqueID == outside.uniqueID && inside.localizedName == outside.localizedName)
            #expect(AVCaptureDevice.default(for: .audio) === devices.microphone)
            #expect(AVCaptureDevice(uniqueID: outside.uniqueID) === inside)
            let all = AVCaptureDevice.DiscoverySession(
                deviceTypes: [.builtInWideAngleCamera, .external, .microphone], mediaType: nil, position: .unspecified)
            #expect(all.devices.map(ObjectIdentifier.init) == devices.devices.map(ObjectIdentifier.init))
        }
        #expect(Self.backCamera() === outside)
    }

    @Test("an unplug in one set: that set's camera alone goes, with its own notification")
    func faultsStayInTheirSet() throws {
        let first = VirtualDeviceSet()
        let second = VirtualDeviceSet()
        let camera = first.backCamera
        let recorder = NotificationRecorder([.AVCaptureDeviceWasDisconnected], object: camera)
        let anyDisconnection = NotificationRecorder([.AVCaptureDeviceWasDisconnected], object: second.backCamera)
        let controller = try #require(camera.virtualCamera)
        controller.unplug()
        defer { controller.replug() }
        #expect(!camera.isConnected)
        #expect(recorder.recorded == ["AVCaptureDeviceWasDisconnectedNotification"])
        #expect(anyDisconnection.recorded.isEmpty)
        #expect(second.backCamera.isConnected)
        #expect(try #require(Self.backCamera()).isConnected, "the process's back camera went too")
        first.withCurrent { #expect(Self.backCamera() == nil, "discovery still lists the unplugged camera") }
        second.withCurrent { #expect(Self.backCamera() === second.backCamera) }
    }

    @Test("a session made in a set hears that set's camera come back, from another thread")
    func sessionsKeepTheirSet() throws {
        let devices = VirtualDeviceSet()
        let controller = try #require(devices.frontCamera.virtualCamera)
        let output = AVCaptureVideoDataOutput()
        let delegate = RecordingDelegate()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "set-session"))
        let session = try devices.withCurrent {
            try makeSession(preset: .qvga320x240, devices: [devices.frontCamera], outputs: [output])
        }
        session.startRunning()
        defer { session.stopRunning() }
        #expect(delegate.wait(for: 3))
        // Outside the set's task scope, on another thread: the session's own queues have no task either.
        Thread.detachNewThread { controller.setBusy(true) }
        #expect(waitUntil { session.isInterrupted })
        let beforeRelease = delegate.received.count
        Thread.detachNewThread { controller.setBusy(false) }
        #expect(waitUntil { !session.isInterrupted }, "the session never heard its camera come back")
        #expect(delegate.wait(for: beforeRelease + 3), "frames flow again")
    }

    @Test("two sets' clocks: each camera delivers exactly what its own clock was moved on")
    func setsHaveTheirOwnClocks() throws {
        let moved = VirtualDeviceSet()
        let still = VirtualDeviceSet()
        let frame = CMTime(value: 1, timescale: 30)
        var runs: [(AVCaptureSession, AVCaptureVideoDataOutput, RecordingDelegate)] = []
        for devices in [moved, still] {
            devices.useManualClock()
            let output = AVCaptureVideoDataOutput()
            output.alwaysDiscardsLateVideoFrames = false
            let delegate = RecordingDelegate()
            output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "set-clock"))
            let session = try makeSession(preset: .qvga320x240, devices: [devices.backCamera], outputs: [output])
            session.startRunning()
            runs.append((session, output, delegate))
        }
        defer { for (session, _, _) in runs { session.stopRunning() } }
        #expect(moved.clock.advance(by: CMTime(value: 1, timescale: 1), step: frame, settling: [runs[0].1]))
        #expect(still.clock.advance(by: .zero, step: frame, settling: [runs[1].1]))
        #expect(runs[0].2.received.count == 31, "\(runs[0].2.received.count) frames")
        #expect(runs[1].2.received.count == 1, "\(runs[1].2.received.count) frames")
        #expect(still.clock.elapsed == .zero)
    }
}

/// The trait: every test of the suite gets a set of its own, current for its body.
@Suite(.ownVirtualDevices) struct OwnVirtualDevicesTraitTests {
    /// The sets the cases ran in, kept so no two can share an identity.
    static let seen = Mutex<[VirtualDeviceSet]>([])

    @Test("each case runs in a set of its own", arguments: 0..<4)
    func eachCaseHasItsOwnSet(_ index: Int) throws {
        let devices = try #require(VirtualDeviceSet.current)
        #expect(VirtualDevices.back === devices.backCamera)
        let earlier = Self.seen.withLock { seen in
            defer { seen.append(devices) }
            return seen
        }
        #expect(!earlier.contains { $0 === devices }, "case \(index) ran in a set an earlier case had")
    }
}
