import CLinuxMedia
import CaptureDrivers
import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The V4L2 driver against a mock kernel: the calls it makes, in order, and what it makes of every answer.
@Suite struct V4L2TraceTests {
    static let yuyv = kCVPixelFormatType_422YpCbCr8_yuvs
    static let nv12 = kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange

    func webcam(skipping skipped: Set<UInt32> = []) -> SimulatedV4L2Kernel {
        SimulatedV4L2Kernel(
            formats: [
                .discrete(.yuyv, [(640, 480), (320, 240)]),
                .discrete(.mjpeg, [(640, 480), (1280, 720)]),
                .discrete(.nv12, [(640, 480)]),
            ], skippedSequences: skipped)
    }

    // MARK: Discovery

    @Test func discoveryListsFormatsBySizeNativeFirst() throws {
        let kernel = SimulatedV4L2Kernel(
            formats: [
                .discrete(.mjpeg, [(640, 480), (1280, 720)]),
                .discrete(.yuyv, [(640, 480)]),
                .discrete(.h264, [(1280, 720)]),
                // A format we do not deliver is left out.
                .discrete(V4L2PixelFormat(rawValue: CLinuxMedia_V4L2_PIX_FMT_ABGR32), [(640, 480)]),
                SimulatedV4L2Kernel.Format(
                    pixelFormat: .nv12,
                    sizes: [
                        .stepwise(
                            minWidth: 320, maxWidth: 1280, widthStep: 16, minHeight: 240, maxHeight: 720,
                            heightStep: 8)
                    ],
                    durations: [CMTime(value: 1, timescale: 60)]),
            ])
        let camera = try makeCamera(kernel)
        let listed = camera.formats.compactMap { format -> String? in
            guard case .video(let video) = format else { return nil }
            return "\(video.width)x\(video.height) \(fourCharCodeDescription(video.mediaSubType))"
        }
        // Stepwise NV12 offers the common sizes on its 16x8 grid inside 320x240...1280x720 (not 960x540: 540 is off
        // the grid) and its largest.
        #expect(
            listed == [
                "320x240 '420v'", "352x288 '420v'", "640x360 '420v'", "640x480 '420v'", "640x480 'yuvs'",
                "640x480 'jpeg'", "800x600 '420v'", "1280x720 '420v'", "1280x720 'jpeg'", "1280x720 'avc1'",
            ])
        guard case .video(let first) = camera.formats[3] else { Issue.record("not video"); return }
        // Discrete intervals become one range each, shortest first.
        #expect(first.frameDurationRanges.map(\.minFrameDuration) == [CMTime(value: 1, timescale: 60)])
        #expect(camera.identity.localizedName == "Mock Camera")
        #expect(camera.identity.kind == .external)
        #expect(camera.identity.uniqueID == "v4l2:usb-0000:00:14.0-1:0")
        #expect(kernel.openDescriptorCount == 0, "discovery closes the node")
    }

    // MARK: Streaming

    @Test func configureAndStartMakeTheCallsInOrder() throws {
        let kernel = webcam()
        let camera = try makeCamera(kernel)
        kernel.clearTrace()
        let recorder = V4L2Recorder()
        try camera.start(try configuration(camera, 640, 480, Self.yuyv), sink: recorder.sink)
        #expect(recorder.wait(forFrames: 5))
        camera.stop()
        let trace = kernel.trace
        let setup = Array(trace.prefix { $0 != "poll" })
        #expect(
            setup == ["open", "S_FMT", "S_PARM", "REQBUFS"] + Array(repeating: ["QUERYBUF", "mmap"], count: 4).flatMap { $0 }
                + Array(repeating: "QBUF", count: 4) + ["STREAMON"])
        #expect(trace.contains("DQBUF"))
        // Stop gives the buffers back and frees the queue; the mappings go when the last frame is released.
        let teardown = trace.drop { $0 != "STREAMOFF" }
        #expect(teardown.starts(with: ["STREAMOFF", "REQBUFS"]))
        #expect(eventually { kernel.mappedCount == 0 && kernel.openDescriptorCount == 0 })
        #expect(kernel.trace.filter { $0 == "munmap" }.count == 4)
    }

    @Test func framesWrapTheKernelsMemoryWithoutACopy() throws {
        let kernel = webcam()
        let camera = try makeCamera(kernel)
        let recorder = V4L2Recorder()
        try camera.start(try configuration(camera, 640, 480, Self.yuyv), sink: recorder.sink)
        #expect(recorder.wait(forFrames: 12))
        let buffers = Set((0..<4).compactMap { kernel.bufferAddress($0).map { UInt(bitPattern: $0) } })
        camera.stop()
        var sequences: [UInt64] = []
        for case .frame(let sequence, _, let subType, let address, let bytes) in recorder.events {
            #expect(subType == Self.yuyv)
            #expect(address.map(buffers.contains) == true, "the pixel buffer points into a mapped kernel buffer")
            #expect(bytes.first == UInt8(truncatingIfNeeded: sequence), "the bytes are the kernel's frame")
            sequences.append(sequence)
        }
        // Buffers go back to the kernel as they are released: 12 frames through 4 buffers, numbered from 0.
        #expect(Array(sequences.prefix(12)) == Array(0..<12))
    }

    @Test func nv12AndPlanarFramesPointIntoTheKernelBuffer() throws {
        let kernel = webcam()
        let camera = try makeCamera(kernel)
        let recorder = V4L2Recorder()
        try camera.start(try configuration(camera, 640, 480, Self.nv12), sink: recorder.sink)
        #expect(recorder.wait(forFrames: 3))
        let buffers = (0..<4).compactMap { kernel.bufferAddress($0).map { UInt(bitPattern: $0) } }
        camera.stop()
        guard case .frame(_, _, let subType, let address, _) = recorder.events.first(where: \.isFrame) else {
            Issue.record("no frame")
            return
        }
        #expect(subType == Self.nv12)
        #expect(address.map(buffers.contains) == true)
    }

    @Test func mjpegArrivesCompressedInABlockBuffer() throws {
        let kernel = webcam()
        let camera = try makeCamera(kernel)
        let recorder = V4L2Recorder()
        try camera.start(try configuration(camera, 1280, 720, kCMVideoCodecType_JPEG), sink: recorder.sink)
        // More frames than buffers: released block buffers go back to the kernel.
        #expect(recorder.wait(forFrames: 10))
        camera.stop()
        guard case .frame(let sequence, _, let subType, let address, let bytes) = recorder.events.first(where: \.isFrame)
        else {
            Issue.record("no frame")
            return
        }
        #expect(subType == kCMVideoCodecType_JPEG)
        #expect(address == nil, "no image buffer: the decode stage makes one")
        #expect(bytes.count == SimulatedV4L2Kernel.compressedFrameLength, "bytesused bytes")
        #expect(bytes.first == UInt8(truncatingIfNeeded: sequence))
    }

    @Test func heldFramesAreCopiedUntilTheSparesRunOutThenTheKernelStarves() throws {
        let kernel = webcam()
        let camera = try makeCamera(kernel)
        let recorder = V4L2Recorder(holdsSamples: true)
        try camera.start(try configuration(camera, 640, 480, Self.yuyv), sink: recorder.sink)
        // Every frame held: the kernel's buffers are lent until it would keep fewer than its reserve, then frames
        // are copies (the buffer goes straight back) until the consumer holds every copy too; the last two buffers
        // are lent, and then the kernel has none: the frames it produces are lost.
        let reserve = V4L2SpareFrames.kernelReserve
        let held = 4 + V4L2SpareFrames.copyLimit
        #expect(recorder.wait(forFrames: held))
        #expect(eventually { kernel.sequencesProduced >= held + 6 })
        #expect(recorder.frameCount == held)
        let buffers = Set((0..<4).compactMap { kernel.bufferAddress($0).map { UInt(bitPattern: $0) } })
        var lent: [UInt64] = []
        for case .frame(let sequence, _, _, let address, let bytes) in recorder.events {
            #expect(bytes.first == UInt8(truncatingIfNeeded: sequence), "frame \(sequence) has the kernel's bytes")
            if let address, buffers.contains(address) { lent.append(sequence) }
        }
        // Lent: the first frames, while the kernel kept its reserve, and the last, once the copies were all held.
        let expected = Array(0..<UInt64(4 - reserve)) + Array(UInt64(held - reserve)..<UInt64(held))
        #expect(lent == expected, "frames in the kernel's memory: \(lent)")
        let lost = recorder.events.filter { if case .dropped = $0 { true } else { false } }
        #expect(lost.isEmpty, "nothing lost while copies last")

        recorder.release()
        #expect(
            recorder.wait { events in
                events.contains { if case .dropped(_, _, .outOfBuffers) = $0 { true } else { false } }
                    && events.count(where: \.isFrame) > held + 2
            })
        camera.stop()
        let sequences = recorder.events.compactMap { event -> UInt64? in
            switch event {
            case .frame(let sequence, _, _, _, _), .dropped(let sequence, _, _): sequence
            case .fault: nil
            }
        }
        #expect(sequences == Array(0..<UInt64(sequences.count)), "every sequence number once, frame or drop")
    }

    @Test func sequenceGapsAreDiscontinuities() throws {
        let kernel = webcam(skipping: [3, 4, 10])
        let camera = try makeCamera(kernel)
        let recorder = V4L2Recorder()
        try camera.start(try configuration(camera, 640, 480, Self.yuyv), sink: recorder.sink)
        #expect(recorder.wait(forFrames: 12))
        camera.stop()
        let drops = recorder.events.compactMap { event -> (UInt64, DropReason)? in
            if case .dropped(let sequence, _, let reason) = event { (sequence, reason) } else { nil }
        }
        #expect(drops.map(\.0) == [3, 4, 10])
        #expect(drops.allSatisfy { $0.1 == .discontinuity })
    }

    @Test func timestampsAreTheKernelsMonotonicTimes() throws {
        let kernel = webcam()
        let camera = try makeCamera(kernel)
        let recorder = V4L2Recorder()
        let before = CMClock.hostNanosecondsNow()
        try camera.start(try configuration(camera, 640, 480, Self.yuyv), sink: recorder.sink)
        #expect(recorder.wait(forFrames: 5))
        camera.stop()
        let after = CMClock.hostNanosecondsNow()
        let times = recorder.events.compactMap { event -> CMTime? in
            if case .frame(_, let time, _, _, _) = event { time } else { nil }
        }
        #expect(times.allSatisfy { $0.timescale == 1_000_000_000 })
        // The mock stamps with CLOCK_MONOTONIC at microsecond precision, as the kernel does.
        #expect(times.allSatisfy { $0.value >= before / 1000 * 1000 && $0.value <= after })
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 <= $1 })
    }

    // MARK: The funnel

    @Test func interruptedCallsAreRetried() throws {
        let kernel = webcam()
        let camera = try makeCamera(kernel)
        kernel.clearTrace()
        kernel.fail("S_FMT", with: EINTR, times: 2)
        kernel.fail("poll", with: EINTR)
        kernel.fail("open", with: EINTR)
        let recorder = V4L2Recorder()
        try camera.start(try configuration(camera, 640, 480, Self.yuyv), sink: recorder.sink)
        #expect(recorder.wait(forFrames: 3))
        camera.stop()
        #expect(kernel.trace.prefix(5) == ["open", "open", "S_FMT", "S_FMT", "S_FMT"])
        #expect(!recorder.events.contains { if case .fault = $0 { true } else { false } })
    }

    @Test func wouldBlockIsAValueNotAnError() throws {
        let kernel = webcam()
        let node = try V4L2Node(path: kernel.path, system: kernel.system)
        // Nothing streams: DQBUF has nothing done and says EAGAIN.
        guard case .wouldBlock = try node.dequeue(type: .videoCapture, planeCount: 1) else {
            Issue.record("DQBUF without a finished buffer is .wouldBlock")
            return
        }
        kernel.fail("G_CTRL", with: EAGAIN)
        var control = v4l2_control(id: 1, value: 0)
        guard case .wouldBlock = try kernel.system.ioctl(node.descriptor, .getControl, &control) else {
            Issue.record("EAGAIN is .wouldBlock")
            return
        }
    }

    @Test func badDescriptorsTrap() async {
        await #expect(processExitsWith: .failure) {
            let kernel = SimulatedV4L2Kernel(formats: [])
            var capability = v4l2_capability()
            _ = try? kernel.system.ioctl(4242, .queryCapability, &capability)
        }
    }

    // MARK: Errors that say what to do

    @Test func busyNamesTheProcessHoldingTheNode() throws {
        let kernel = webcam()
        let proc = try FakeProcessTable()
        try proc.add(processID: 4321, command: "ffmpeg", holding: kernel.path)
        try proc.add(processID: 99, command: "bash", holding: "/dev/null")
        let camera = try makeCamera(kernel, diagnosis: DeviceNodeDiagnosis(processRoot: proc.root, ownProcessID: 1))
        kernel.fail("S_FMT", with: EBUSY)
        let fault = startFault(camera)
        #expect(fault?.kind == .busy)
        #expect(fault?.advice?.contains("ffmpeg (pid 4321)") == true, "\(String(describing: fault))")
        #expect(fault?.advice?.contains("bash") == false)
        #expect(camera.isInUseByAnotherApplication)
        // The next start that works clears it.
        let recorder = V4L2Recorder()
        try camera.start(try configuration(camera, 640, 480, Self.yuyv), sink: recorder.sink)
        #expect(!camera.isInUseByAnotherApplication)
        camera.stop()
    }

    @Test func permissionDeniedNamesTheGroupToJoin() throws {
        let kernel = webcam()
        let camera = try makeCamera(kernel)
        kernel.fail("open", with: EACCES)
        let fault = startFault(camera)
        #expect(fault?.kind == .io(.permissionDenied))
        #expect(fault?.advice?.contains(kernel.path) == true)
        // The group comes from the node itself: a file of ours, group-readable and writable.
        let node = FileManager.default.temporaryDirectory.appendingPathComponent("v4l2-node-\(getpid())").path
        #expect(FileManager.default.createFile(atPath: node, contents: Data()))
        defer { try? FileManager.default.removeItem(atPath: node) }
        #expect(chmod(node, 0o660) == 0)
        let group = String(cString: getgrgid(getegid()).pointee.gr_name)
        #expect(DeviceNodeDiagnosis().accessAdvice(for: node).contains("`\(group)`"))
        #expect(DeviceNodeDiagnosis().accessAdvice(for: node).contains("usermod -aG \(group)"))
    }

    @Test func noSpaceOnStreamOnExplainsUSBBandwidth() throws {
        let kernel = webcam()
        let camera = try makeCamera(kernel)
        kernel.fail("STREAMON", with: ENOSPC)
        let fault = startFault(camera)
        #expect(fault?.kind == .io(.noSpace))
        #expect(fault?.advice?.contains("MJPEG") == true)
        #expect(fault?.advice?.contains("bandwidth") == true)
        // A failed start leaves nothing open or mapped behind.
        #expect(eventually { kernel.openDescriptorCount == 0 && kernel.mappedCount == 0 })
    }

    @Test func missingNodeIsDisconnected() throws {
        let kernel = webcam()
        let camera = try makeCamera(kernel)
        for errno in [ENOENT, ENODEV, ENXIO] {
            kernel.fail("open", with: errno)
            #expect(startFault(camera) == .disconnected)
        }
        kernel.fail("S_FMT", with: EINVAL)
        #expect(startFault(camera)?.kind == .io(.invalidArgument))
    }

    @Test func deviceGoneMidStreamIsADisconnect() throws {
        let kernel = webcam()
        let registry = DeviceRegistry(drivers: [], selection: .all)
        let heard = ConnectionLog(registry)
        let camera = try makeCamera(kernel, registry: registry)
        let recorder = V4L2Recorder()
        try camera.start(try configuration(camera, 640, 480, Self.yuyv), sink: recorder.sink)
        #expect(recorder.wait(forFrames: 3))
        kernel.disconnect()
        #expect(
            recorder.wait { events in events.contains { if case .fault(.disconnected) = $0 { true } else { false } } })
        #expect(!camera.isConnected)
        #expect(heard.kinds == ["disconnected"])
        camera.stop()
        #expect(startFault(camera) == .disconnected)
    }

    private func startFault(_ camera: V4L2Camera) -> DeviceFault? {
        do {
            try camera.start(try configuration(camera, 640, 480, Self.yuyv), sink: { _ in })
            camera.stop()
            return nil
        } catch let fault as DeviceFault {
            return fault
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }
}

/// Connection events heard from a registry.
final class ConnectionLog: Sendable {
    private let events = Mutex<[String]>([])

    init(_ registry: DeviceRegistry) {
        _ = registry.addListener { [weak self] event in
            let kind =
                switch event {
                case .connected: "connected"
                case .disconnected: "disconnected"
                case .availabilityChanged: "availabilityChanged"
                }
            self?.events.withLock { $0.append(kind) }
        }
    }

    var kinds: [String] { events.withLock { $0 } }
}

/// A stand-in for `/proc`: process folders with `comm` and `fd/N` links.
struct FakeProcessTable {
    let root: String

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("v4l2-proc-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    func add(processID: Int32, command: String, holding path: String) throws {
        let folder = "\(root)/\(processID)"
        try FileManager.default.createDirectory(atPath: "\(folder)/fd", withIntermediateDirectories: true)
        try "\(command)\n".write(toFile: "\(folder)/comm", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: "\(folder)/fd/3", withDestinationPath: path)
    }
}
