import CLinuxMedia
import CaptureDrivers
import Dispatch
import OpenCoreMedia
import OpenCoreVideo
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The V4L2 driver against a mock multi-planar kernel (`V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE`, as SoC and ISP drivers
/// are): the calls in order, each with the multi-planar structures (the mock answers EINVAL to a single-planar
/// call, as the kernel does), one mapping per plane, and frames that point into each plane's memory.
@Suite struct V4L2MultiplanarTraceTests {
    static let nv12 = kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
    static let planar = kCVPixelFormatType_420YpCbCr8Planar
    static let yuyv = kCVPixelFormatType_422YpCbCr8_yuvs

    func socCamera(dataOffset: Int = 0) -> SimulatedV4L2Kernel {
        SimulatedV4L2Kernel(
            card: "SoC ISP", busInfo: "platform:isp0",
            formats: [
                .discrete(.nv12m, [(640, 480)]),
                .discrete(.yuv420m, [(320, 240)]),
                .discrete(.yuyv, [(640, 480)]),
                .discrete(.mjpeg, [(1280, 720)]),
            ], multiplanar: true, dataOffset: dataOffset)
    }

    /// Swift's import of the packed multi-planar structures has the kernel's layout (sizes and offsets from
    /// <linux/videodev2.h> on 64-bit Linux): a wrong one would make the real kernel read garbage.
    @Test func theMultiplanarStructuresHaveTheKernelsLayout() {
        #expect(MemoryLayout<v4l2_plane_pix_format>.size == 20)
        #expect(MemoryLayout<v4l2_pix_format_mplane>.size == 192)
        #expect(MemoryLayout<v4l2_pix_format_mplane>.offset(of: \.plane_fmt) == 20)
        #expect(MemoryLayout<v4l2_pix_format_mplane>.offset(of: \.num_planes) == 180)
        #expect(MemoryLayout<v4l2_format>.size == 208)
        #expect(MemoryLayout<v4l2_plane>.size == 64)
        #expect(MemoryLayout<v4l2_plane>.offset(of: \.data_offset) == 16)
        #expect(MemoryLayout<v4l2_buffer>.size == 88)
    }

    @Test func aMultiplanarNodeIsDiscoveredWithItsFormats() throws {
        let kernel = socCamera()
        let camera = try makeCamera(kernel)
        #expect(camera.bufferType == .videoCaptureMultiplanar)
        #expect(camera.identity.kind == .builtInWideAngleCamera)
        let listed = camera.formats.compactMap { format -> String? in
            guard case .video(let video) = format else { return nil }
            return "\(video.width)x\(video.height) \(fourCharCodeDescription(video.mediaSubType))"
        }
        #expect(listed == ["320x240 'y420'", "640x480 '420v'", "640x480 'yuvs'", "1280x720 'jpeg'"])
        #expect(camera.pixelFormats == [.yuv420m, .nv12m, .yuyv, .mjpeg])
        #expect(kernel.trace.prefix(3) == ["open", "QUERYCAP", "ENUM_FMT"])
        #expect(kernel.openDescriptorCount == 0, "discovery closes the node")
    }

    @Test func nv12mMapsEachPlaneAndWrapsBothInOnePixelBuffer() throws {
        let kernel = socCamera()
        let camera = try makeCamera(kernel)
        kernel.clearTrace()
        let recorder = PlaneRecorder()
        try camera.start(try configuration(camera, 640, 480, Self.nv12), sink: recorder.sink)
        #expect(recorder.wait(forFrames: 12))
        let luma = Set((0..<4).compactMap { kernel.bufferAddress($0, plane: 0).map { UInt(bitPattern: $0) } })
        let chroma = Set((0..<4).compactMap { kernel.bufferAddress($0, plane: 1).map { UInt(bitPattern: $0) } })
        camera.stop()
        let setup = Array(kernel.trace.prefix { $0 != "poll" })
        #expect(
            setup == ["open", "S_FMT", "S_PARM", "REQBUFS"]
                + Array(repeating: ["QUERYBUF", "mmap", "mmap"], count: 4).flatMap { $0 }
                + Array(repeating: "QBUF", count: 4) + ["STREAMON"])
        let frames = recorder.frames
        #expect(frames.count >= 12)
        for frame in frames {
            #expect(frame.subType == Self.nv12)
            #expect(frame.planes.count == 2)
            guard frame.planes.count == 2 else { continue }
            #expect(luma.contains(frame.planes[0].address), "plane 0 is the kernel's first plane, in place")
            #expect(chroma.contains(frame.planes[1].address), "plane 1 is the kernel's second plane, in place")
            #expect(frame.planes[0].firstByte == UInt8(truncatingIfNeeded: frame.sequence))
            #expect(frame.planes[1].firstByte == 0x81)
            #expect(frame.planes.map(\.bytesPerRow) == [640, 640])
        }
        // 12 frames through 4 buffers: each went back to the kernel (QBUF with its planes) once released.
        #expect(frames.prefix(12).map(\.sequence) == Array(0..<12))
        let teardown = kernel.trace.drop { $0 != "STREAMOFF" }
        #expect(teardown.starts(with: ["STREAMOFF", "REQBUFS"]))
        #expect(eventually { kernel.mappedCount == 0 && kernel.openDescriptorCount == 0 })
        #expect(kernel.trace.filter { $0 == "munmap" }.count == 8, "two mappings per buffer")
    }

    @Test func yuv420mWrapsThreePlanesWithTheirOwnRowLengths() throws {
        let kernel = socCamera()
        let camera = try makeCamera(kernel)
        kernel.clearTrace()
        let recorder = PlaneRecorder()
        try camera.start(try configuration(camera, 320, 240, Self.planar), sink: recorder.sink)
        #expect(recorder.wait(forFrames: 6))
        let planes = (0..<3).map { plane in
            Set((0..<4).compactMap { kernel.bufferAddress($0, plane: plane).map { UInt(bitPattern: $0) } })
        }
        camera.stop()
        #expect(kernel.trace.filter { $0 == "mmap" }.count == 12, "three mappings per buffer")
        for frame in recorder.frames {
            #expect(frame.planes.count == 3)
            guard frame.planes.count == 3 else { continue }
            for plane in 0..<3 { #expect(planes[plane].contains(frame.planes[plane].address)) }
            #expect(frame.planes.map(\.bytesPerRow) == [320, 160, 160])
            #expect(frame.planes.map(\.firstByte).dropFirst() == [0x81, 0x82])
        }
    }

    @Test func aSinglePlaneFormatOnAMultiplanarNodeIsAnOrdinaryPixelBuffer() throws {
        let kernel = socCamera()
        let camera = try makeCamera(kernel)
        let recorder = PlaneRecorder()
        try camera.start(try configuration(camera, 640, 480, Self.yuyv), sink: recorder.sink)
        #expect(recorder.wait(forFrames: 6))
        let buffers = Set((0..<4).compactMap { kernel.bufferAddress($0).map { UInt(bitPattern: $0) } })
        camera.stop()
        for frame in recorder.frames {
            #expect(frame.subType == Self.yuyv)
            #expect(frame.planes.count == 1)
            #expect(frame.planes.first.map { buffers.contains($0.address) } == true)
            #expect(frame.planes.first?.firstByte == UInt8(truncatingIfNeeded: frame.sequence))
        }
        #expect(eventually { kernel.mappedCount == 0 })
    }

    @Test func mjpegOnAMultiplanarNodeIsABlockBufferOfThePlanesBytes() throws {
        let kernel = socCamera()
        let camera = try makeCamera(kernel)
        let recorder = V4L2Recorder()
        try camera.start(try configuration(camera, 1280, 720, kCMVideoCodecType_JPEG), sink: recorder.sink)
        #expect(recorder.wait(forFrames: 10))
        camera.stop()
        for case .frame(let sequence, _, let subType, let address, let bytes) in recorder.events {
            #expect(subType == kCMVideoCodecType_JPEG)
            #expect(address == nil)
            // The plane's `bytesused`, not the buffer's (which a multi-planar kernel leaves unset).
            #expect(bytes.count == SimulatedV4L2Kernel.compressedFrameLength)
            #expect(bytes.first == UInt8(truncatingIfNeeded: sequence))
        }
    }

    @Test func anImageThatStartsAtADataOffsetIsWrappedFromThere() throws {
        let kernel = socCamera(dataOffset: 128)
        let camera = try makeCamera(kernel)
        let recorder = PlaneRecorder()
        try camera.start(try configuration(camera, 640, 480, Self.nv12), sink: recorder.sink)
        // More frames than buffers: frames wrapped one at a time go back to the kernel when released too.
        #expect(recorder.wait(forFrames: 12))
        let luma = Set((0..<4).compactMap { kernel.bufferAddress($0, plane: 0).map { UInt(bitPattern: $0) + 128 } })
        camera.stop()
        let frames = recorder.frames
        #expect(frames.prefix(12).map(\.sequence) == Array(0..<12))
        for frame in frames {
            #expect(frame.planes.first.map { luma.contains($0.address) } == true, "plane 0 starts at the offset")
            #expect(frame.planes.first?.firstByte == UInt8(truncatingIfNeeded: frame.sequence))
        }
        #expect(eventually { kernel.mappedCount == 0 && kernel.openDescriptorCount == 0 })
    }

    @Test func aMultiplanarNodesFailuresAreExplainedAsOnAnyNode() throws {
        let kernel = socCamera()
        let camera = try makeCamera(kernel)
        // QBUF fails once every plane of every buffer is mapped: the start throws and unmaps them all.
        kernel.fail("QBUF", with: EINVAL)
        #expect(throws: DeviceFault.self) {
            try camera.start(try configuration(camera, 640, 480, Self.nv12), sink: { _ in })
        }
        #expect(kernel.trace.filter { $0 == "mmap" }.count == 8)
        #expect(eventually { kernel.mappedCount == 0 }, "nothing stays mapped after a failed start")
        #expect(eventually { kernel.openDescriptorCount == 0 })
        // Once the failure passes, the same camera starts.
        let recorder = PlaneRecorder()
        try camera.start(try configuration(camera, 640, 480, Self.nv12), sink: recorder.sink)
        #expect(recorder.wait(forFrames: 2))
        camera.stop()
    }
}

/// A sink that keeps, for each raw frame, every plane's address, row length and first byte.
///
/// Thread safe: a mutex guards the list, a semaphore wakes waiters.
final class PlaneRecorder: Sendable {
    struct Plane: Sendable {
        var address: UInt
        var bytesPerRow: Int
        var firstByte: UInt8
    }

    struct Frame: Sendable {
        var sequence: UInt64
        var subType: FourCharCode
        var planes: [Plane]
    }

    private let stored = Mutex<[Frame]>([])
    private let arrivals = DispatchSemaphore(value: 0)

    var sink: StreamSink {
        { [self] event in
            guard case .output(let sample, let sequence) = event, let image = sample.imageBuffer else { return }
            CVPixelBufferLockBaseAddress(image, .readOnly)
            defer { CVPixelBufferUnlockBaseAddress(image, .readOnly) }
            let planes: [Plane] =
                if CVPixelBufferIsPlanar(image) {
                    (0..<CVPixelBufferGetPlaneCount(image)).compactMap { plane in
                        CVPixelBufferGetBaseAddressOfPlane(image, plane).map { address in
                            Plane(
                                address: UInt(bitPattern: address),
                                bytesPerRow: CVPixelBufferGetBytesPerRowOfPlane(image, plane),
                                firstByte: address.load(as: UInt8.self))
                        }
                    }
                } else {
                    CVPixelBufferGetBaseAddress(image).map { address in
                        [
                            Plane(
                                address: UInt(bitPattern: address), bytesPerRow: CVPixelBufferGetBytesPerRow(image),
                                firstByte: address.load(as: UInt8.self))
                        ]
                    } ?? []
                }
            let frame = Frame(
                sequence: sequence, subType: CVPixelBufferGetPixelFormatType(image), planes: planes)
            stored.withLock { $0.append(frame) }
            arrivals.signal()
        }
    }

    var frames: [Frame] { stored.withLock { $0 } }

    /// Waits until `count` frames have arrived, up to `timeout` seconds; returns whether they did.
    func wait(forFrames count: Int, timeout: Double = 10) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while stored.withLock({ $0.count }) < count {
            if arrivals.wait(timeout: deadline) == .timedOut { return stored.withLock { $0.count } >= count }
        }
        return true
    }
}
