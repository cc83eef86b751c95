import CLinuxMedia
import CaptureDrivers
import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Testing

/// The V4L2 driver against `vivid` loaded as a multi-planar device (`modprobe vivid multiplanar=2`: its capture
/// node speaks only `V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE`, as SoC and ISP drivers do). `make test-kernel` boots the
/// VM a third time for these; elsewhere, and in the boots with a single-planar vivid, they skip, saying why.
@Suite(.serialized, .enabled(if: MultiplanarVivid.camera != nil, MultiplanarVivid.skipReason))
struct V4L2MultiplanarKernelTests {
    var camera: V4L2Camera { MultiplanarVivid.camera! }

    @Test func aMultiplanarNodeIsDiscoveredWithTheFormatsItLists() throws {
        #expect(camera.bufferType == .videoCaptureMultiplanar)
        #expect(camera.identity.modelID == "vivid:vivid")
        let listed = Set(
            camera.formats.compactMap { format -> String? in
                guard case .video(let video) = format else { return nil }
                return "\(video.mediaSubType) \(video.width)x\(video.height)"
            })
        for subType in [
            kCVPixelFormatType_422YpCbCr8_yuvs, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
            kCVPixelFormatType_420YpCbCr8Planar,
        ] {
            #expect(listed.contains("\(subType) 640x480"), "\(fourCharCodeDescription(subType)) 640x480")
        }
        // v4l2-ctl, read independently, lists the same pixel formats and sizes for the ones we map (NM12 and YM12
        // are '420v' and 'y420' as NV12 and YU12 are).
        guard let listing = Tool.run("v4l2-ctl", ["-d", camera.path, "--list-formats-ext"]) else {
            print("v4l2-ctl is not installed: the format list is not cross-checked")
            return
        }
        #expect(listing.contains("Video Capture Multiplanar"))
        let theirs = v4l2CtlFormats(listing)
        #expect(!theirs.isEmpty)
        #expect(theirs == listed)
    }

    @Test func streamsYUYVFromAMultiplanarQueue() throws {
        let frames = try stream(camera, .yuyv, kCVPixelFormatType_422YpCbCr8_yuvs, planes: 1) { image in
            image.withUnsafePlane(0) { bytes, bytesPerRow in
                let row = 240 * bytesPerRow
                return Bars(white: bytes[row + 2 * 20], black: bytes[row + 2 * 620], chroma: [])
            }
        }
        #expect(frames.allSatisfy { $0.white > 150 && $0.black < 40 })
    }

    @Test func streamsNV12MWithLumaAndChromaInTheirOwnBuffers() throws {
        let camera = try cameraOffering(.nv12m)
        let frames = try stream(camera, .nv12m, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, planes: 2) { image in
            let luma = image.withUnsafePlane(0) { bytes, bytesPerRow in
                (bytes[240 * bytesPerRow + 20], bytes[240 * bytesPerRow + 620])
            }
            // Cb and Cr interleaved, one pair per two pixels: the white bar (x 20) and the yellow one (x 120).
            let chroma = image.withUnsafePlane(1) { bytes, bytesPerRow in
                [bytes[120 * bytesPerRow + 20], bytes[120 * bytesPerRow + 21], bytes[120 * bytesPerRow + 120]]
            }
            return Bars(white: luma.0, black: luma.1, chroma: chroma)
        }
        for frame in frames {
            #expect(frame.white > 150 && frame.black < 40)
            // White has no colour (Cb, Cr near 128); yellow has little blue (Cb well below 128).
            #expect(abs(Int(frame.chroma[0]) - 128) < 12 && abs(Int(frame.chroma[1]) - 128) < 12, "\(frame.chroma)")
            #expect(frame.chroma[2] < 90, "yellow's Cb: \(frame.chroma)")
        }
    }

    @Test func streamsYUV420MWithEachPlaneInItsOwnBuffer() throws {
        let camera = try cameraOffering(.yuv420m)
        let frames = try stream(camera, .yuv420m, kCVPixelFormatType_420YpCbCr8Planar, planes: 3) { image in
            let luma = image.withUnsafePlane(0) { bytes, bytesPerRow in
                (bytes[240 * bytesPerRow + 20], bytes[240 * bytesPerRow + 620])
            }
            let cb = image.withUnsafePlane(1) { bytes, bytesPerRow in
                [bytes[120 * bytesPerRow + 10], bytes[120 * bytesPerRow + 60]]
            }
            let cr = image.withUnsafePlane(2) { bytes, bytesPerRow in bytes[120 * bytesPerRow + 10] }
            return Bars(white: luma.0, black: luma.1, chroma: cb + [cr])
        }
        for frame in frames {
            #expect(frame.white > 150 && frame.black < 40)
            #expect(abs(Int(frame.chroma[0]) - 128) < 12 && abs(Int(frame.chroma[2]) - 128) < 12, "\(frame.chroma)")
            #expect(frame.chroma[1] < 90, "yellow's Cb: \(frame.chroma)")
        }
    }

    /// What a test reads of vivid's 75 % colour bars: luma on the white and black bars, and chroma samples.
    struct Bars: Sendable {
        var white: UInt8
        var black: UInt8
        var chroma: [UInt8]
    }

    /// vivid's camera again, with only its 640x480 format in `pixelFormat` (NV12M or YUV420M, which discovery
    /// lists as the NV12 and YU12 that vivid names first), as a camera of its own.
    private func cameraOffering(_ pixelFormat: V4L2PixelFormat) throws -> V4L2Camera {
        let node = try V4L2Node(path: camera.path, system: .live)
        try #require(
            try node.pixelFormats(.videoCaptureMultiplanar).contains(pixelFormat), "vivid offers \(pixelFormat)")
        let location = V4L2NodeLocation(name: (camera.path as NSString).lastPathComponent, path: camera.path)
        var description = try #require(try V4L2DeviceDescription.read(location, system: .live))
        let base = try #require(
            description.formats.first { format in
                format.video.width == 640 && format.video.height == 480
                    && format.video.mediaSubType == pixelFormat.mediaSubType
            })
        description.formats = [V4L2Format(video: base.video, pixelFormat: pixelFormat)]
        return V4L2Camera(
            path: camera.path, description: description, system: .live,
            registry: DeviceRegistry(drivers: [], selection: .all))
    }

    /// Streams 20 frames of 640x480 `pixelFormat` at 25 fps and checks each: the format and plane count asked
    /// for, sequence numbers and times increasing, the kernel's few buffers reused in place; returns what `read`
    /// made of each.
    private func stream(
        _ camera: V4L2Camera, _ pixelFormat: V4L2PixelFormat, _ subType: FourCharCode, planes: Int,
        read: @escaping @Sendable (CVPixelBuffer) -> Bars
    ) throws -> [Bars] {
        let format = try #require(
            camera.formats.lazy.compactMap { format -> VideoFormat? in
                guard case .video(let video) = format, video.width == 640, video.height == 480,
                    video.mediaSubType == subType
                else { return nil }
                return video
            }.first)
        let index = try #require(camera.formats.firstIndex(of: .video(format)))
        #expect(camera.pixelFormats[index] == pixelFormat)
        let collected = Collected()
        let bars = BarsCollected()
        try camera.start(
            StreamConfiguration(format: .video(format), frameDuration: CMTime(value: 1, timescale: 25))
        ) { event in
            switch event {
            case .output(let sample, let sequence):
                guard let image = sample.imageBuffer else { return }
                CVPixelBufferLockBaseAddress(image, .readOnly)
                defer { CVPixelBufferUnlockBaseAddress(image, .readOnly) }
                let planeCount = CVPixelBufferIsPlanar(image) ? CVPixelBufferGetPlaneCount(image) : 1
                let ok =
                    CVPixelBufferGetWidth(image) == 640 && CVPixelBufferGetHeight(image) == 480
                    && CVPixelBufferGetPixelFormatType(image) == subType && planeCount == planes
                let address =
                    CVPixelBufferIsPlanar(image)
                    ? CVPixelBufferGetBaseAddressOfPlane(image, planes - 1) : CVPixelBufferGetBaseAddress(image)
                bars.add(read(image))
                collected.add(
                    V4L2KernelTests.StreamedFrame(
                        sequence: sequence, time: sample.presentationTimeStamp,
                        address: ok ? UInt(bitPattern: address) : 0, luma: (0, 0)))
            case .dropped(let sequence, _, let reason):
                collected.drop("\(sequence) \(reason)")
            case .fault(let fault):
                collected.drop("fault \(fault)")
            }
        }
        defer { camera.stop() }
        // Slack for software emulation: vivid renders every frame on the emulated CPU.
        #expect(collected.wait(for: 20, timeout: 120))
        let frames = collected.frames
        print("multi-planar vivid 640x480 \(pixelFormat): \(frames.count) frames, drops: \(collected.drops)")
        #expect(frames.count >= 20)
        #expect(frames.allSatisfy { $0.address != 0 }, "every frame has the size, format and planes asked for")
        for (earlier, later) in zip(frames, frames.dropFirst()) {
            #expect(earlier.time < later.time && earlier.sequence < later.sequence)
        }
        // Zero copy: the frames are the kernel's few buffers (their last plane's memory), over and over.
        #expect(Set(frames.map(\.address)).count <= Int(V4L2Camera.requestedBufferCount))
        return bars.values
    }
}

/// Values read on the capture thread, collected for the test's.
private final class BarsCollected: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [V4L2MultiplanarKernelTests.Bars] = []

    func add(_ value: V4L2MultiplanarKernelTests.Bars) {
        lock.lock()
        stored.append(value)
        lock.unlock()
    }

    var values: [V4L2MultiplanarKernelTests.Bars] {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }
}

/// vivid's capture node when vivid was loaded multi-planar, found once.
enum MultiplanarVivid {
    static let camera: V4L2Camera? = V4L2CameraDriver().discoverDevices().lazy.compactMap { $0 as? V4L2Camera }
        .first { $0.identity.modelID.hasPrefix("vivid:") && $0.bufferType == .videoCaptureMultiplanar }

    static let skipReason: Comment =
        "no multi-planar vivid here: these run in the VM boot of `make test-kernel` that loads `vivid multiplanar=2`"
}
