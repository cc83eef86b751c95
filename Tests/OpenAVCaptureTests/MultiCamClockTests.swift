// One clock for every camera of a multi-camera session: the virtual back and front cameras and the USB webcam,
// started together on a manual clock, stamp their frames on the host clock, their first frames within a frame
// interval, and AVCaptureDataOutputSynchronizer pairs their frames across the cameras.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing
import TestSupport

/// The three virtual cameras at 640x480, 30 fps, each into a video data output of its own, connected by hand.
private struct ThreeCameras {
    let session = AVCaptureMultiCamSession()
    let cameras = [VirtualDevices.back, VirtualDevices.front, VirtualDevices.webcam]
    var outputs: [AVCaptureVideoDataOutput] = []
    var inputs: [AVCaptureDeviceInput] = []

    init() throws {
        session.beginConfiguration()
        defer { session.commitConfiguration() }
        for camera in cameras {
            let input = try AVCaptureDeviceInput(device: camera)
            let output = AVCaptureVideoDataOutput()
            // Stepped a frame at a time, a frame may arrive while the one before is being handed over: it waits.
            output.alwaysDiscardsLateVideoFrames = false
            session.addInputWithNoConnections(input)
            session.addOutputWithNoConnections(output)
            try connectCamera(input, to: output, in: session)
            inputs.append(input)
            outputs.append(output)
        }
    }
}

/// Frame indices read from the pictures a delegate got, with their times.
private final class IndexedFrames: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    private let frames = Mutex<[(time: CMTime, index: UInt32?)]>([])
    var received: [(time: CMTime, index: UInt32?)] { frames.withLock { $0 } }

    func captureOutput(_ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        let index = sampleBuffer.imageBuffer.flatMap { VirtualFrameReader.readFrameIndex(from: $0) }
        frames.withLock { $0.append((sampleBuffer.presentationTimeStamp, index)) }
    }
}

/// The synchronizer's collections: for each, the time of each output's frame (nil where it had none or dropped it).
private final class SynchronizedTimes: NSObject, AVCaptureDataOutputSynchronizerDelegate, @unchecked Sendable {
    private let collections = Mutex<[[ObjectIdentifier: CMTime]]>([])
    var received: [[ObjectIdentifier: CMTime]] { collections.withLock { $0 } }

    func dataOutputSynchronizer(
        _ synchronizer: AVCaptureDataOutputSynchronizer, didOutput collection: AVCaptureSynchronizedDataCollection
    ) {
        var times: [ObjectIdentifier: CMTime] = [:]
        for output in synchronizer.dataOutputs {
            guard let data = collection.synchronizedData(for: output) as? AVCaptureSynchronizedSampleBufferData,
                !data.sampleBufferWasDropped
            else { continue }
            times[ObjectIdentifier(output)] = data.timestamp
        }
        collections.withLock { $0.append(times) }
    }
}

@Suite(.serialized) struct MultiCamClockTests {
    private let frameTime = CMTime(value: 1, timescale: 30)

    private func withThreeCameras(_ body: (ThreeCameras, VirtualDeviceClock) throws -> Void) throws {
        let restores = try [
            useFormat(VirtualDevices.back, width: 640, height: 480),
            useFormat(VirtualDevices.front, width: 640, height: 480),
            useFormat(VirtualDevices.webcam, width: 640, height: 480),
        ]
        defer { restores.reversed().forEach { $0() } }
        let rig = try ThreeCameras()
        try withManualClock(rig.cameras) { clock in try body(rig, clock) }
    }

    @Test("three cameras started together: frames on the host clock, first frames within one frame interval")
    func oneClock() throws {
        try withThreeCameras { rig, clock in
            #expect(rig.session.synchronizationClock === CMClock.hostTimeClock)
            for input in rig.inputs {
                let clock = try #require(input.ports.first?.clock)
                #expect(CMSyncConvertTime(frameTime, from: clock, to: rig.session.synchronizationClock!) == frameTime)
            }
            let delegates = rig.outputs.map { _ in IndexedFrames() }
            for (output, delegate) in zip(rig.outputs, delegates) {
                output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "multicam-clock"))
            }
            rig.session.startRunning()
            defer { rig.session.stopRunning() }
            #expect(clock.advance(by: CMTime(value: 10, timescale: 30), step: frameTime, settling: rig.outputs))
            let received = delegates.map(\.received)
            for (camera, frames) in zip(rig.cameras, received) {
                // Every frame once, a frame time apart, its index (read from the picture) counting from 0.
                #expect(frames.count == 11, "\(camera.localizedName): \(frames.count) frames")
                // A whole second's flash frame carries no code (at most one in 11 frames).
                let indices = frames.map(\.index)
                #expect(indices.enumerated().allSatisfy { $1 == nil || $1 == UInt32($0) }, "\(camera.localizedName): \(indices)")
                #expect(indices.filter { $0 == nil }.count <= 1, "\(camera.localizedName): \(indices)")
                #expect(zip(frames, frames.dropFirst()).allSatisfy { $1.time - $0.time == frameTime })
            }
            let firsts = received.compactMap(\.first?.time)
            try #require(firsts.count == 3)
            let spread = CMTimeMaximum(CMTimeMaximum(firsts[0], firsts[1]), firsts[2])
                - CMTimeMinimum(CMTimeMinimum(firsts[0], firsts[1]), firsts[2])
            #expect(spread <= frameTime, "first frames \(firsts.map(\.seconds)) are \(spread.seconds) s apart")
        }
    }

    @Test("AVCaptureDataOutputSynchronizer pairs the three cameras' frames of each moment")
    func synchronizerAcrossCameras() throws {
        try withThreeCameras { rig, clock in
            let synchronizer = AVCaptureDataOutputSynchronizer(dataOutputs: rig.outputs)
            let times = SynchronizedTimes()
            synchronizer.setDelegate(times, queue: DispatchQueue(label: "multicam-synchronized"))
            rig.session.startRunning()
            defer { rig.session.stopRunning() }
            let steps = 20
            #expect(clock.advance(by: CMTimeMultiply(frameTime, multiplier: Int32(steps)), step: frameTime, settling: rig.outputs))
            // The master's last frame waits for its successor; the cameras' first frames may fall a frame apart.
            #expect(waitUntil { times.received.count >= steps - 1 })
            let collections = times.received
            let master = ObjectIdentifier(rig.outputs[0])
            let complete = collections.filter { $0.count == 3 }
            #expect(complete.count >= steps - 2, "\(complete.count) of \(collections.count) collections hold all three")
            for collection in complete {
                let time = try #require(collection[master])
                for (_, other) in collection {
                    #expect(CMTimeAbsoluteValue(other - time) < CMTimeMultiplyByRatio(frameTime, multiplier: 1, divisor: 2))
                }
            }
        }
    }
}
