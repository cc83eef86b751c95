import CaptureDrivers
import Dispatch
import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Synchronization
import SystemPackage
import Testing

/// The virtual USB webcam as a capture backend: identity, formats, compressed delivery through the compressor seam
/// (with a compressor of the test's own, since CaptureDrivers has no codecs), slots, faults.
@Suite("Virtual USB webcam as a capture backend")
struct VirtualWebcamTests {
    @Test("identity: external, no position, after the front camera and before the microphone in discovery")
    func identity() {
        let driver = VirtualDeviceDriver(registry: DeviceRegistry(drivers: [], selection: .all))
        let webcam = driver.usbWebcam
        #expect(webcam.identity.uniqueID == "virtual:usb-webcam")
        #expect(webcam.identity.localizedName == "Virtual USB Webcam")
        #expect(webcam.identity.kind == .external && webcam.identity.position == .unspecified)
        #expect(webcam.identity.media == .video && webcam.identity.origin == .virtual)
        #expect(driver.discoverDevices().map(\.identity.uniqueID).firstIndex(of: "virtual:usb-webcam") == 2)
        let capabilities = webcam.cameraControls.capabilities
        #expect(!capabilities.hasFlash && !capabilities.hasTorch)
        #expect(capabilities.exposureModes.contains(.continuousAutoExposure))
    }

    @Test("formats: YUYV at 320x240 and 640x480, MJPEG at 720p and 1080p, H.264 at 1080p, each at 30 and 15 fps")
    func formats() {
        let webcam = VirtualCamera.usbWebcam()
        let described = webcam.formats.map { format -> String in
            guard case .video(let video) = format else { return "audio" }
            return "\(video.width)x\(video.height) \(fourCC(video.mediaSubType))"
        }
        #expect(
            described == ["320x240 yuvs", "640x480 yuvs", "1280x720 jpeg", "1920x1080 jpeg", "1920x1080 avc1"])
        for format in webcam.formats {
            guard case .video(let video) = format else { continue }
            #expect(
                video.frameDurationRanges.map(\.minFrameDuration) == [
                    CMTime(value: 1, timescale: 30), CMTime(value: 1, timescale: 15),
                ])
            #expect(video.supports(frameDuration: CMTime(value: 1, timescale: 15)))
            #expect(!video.supports(frameDuration: CMTime(value: 1, timescale: 20)))
            #expect(!video.isPhotoFormat)
        }
    }

    @Test(
        "compressed formats arrive compressed: no image buffer, the codec's description, the compressor's bytes",
        arguments: [
            (Int32(1280), Int32(720), VirtualCompressedFormat.mjpeg), (1920, 1080, VirtualCompressedFormat.h264),
        ])
    func compressedDelivery(width: Int32, height: Int32, codec: FourCharCode) throws {
        let made = Mutex<[VirtualCompressedFormat]>([])
        let webcam = VirtualCamera.usbWebcam(compressors: { format in
            made.withLock { $0.append(format) }
            return LumaCopyCompressor()
        })
        webcam.clockMode = .freeRunning
        let sink = CompressedFrameSink()
        try webcam.start(webcam.configuration(width, height, fps: 15, codec), sink: sink.sink)
        let arrived = sink.wait(forFrames: 20)
        webcam.stop()
        #expect(arrived)
        #expect(
            made.withLock { $0 }
                == [VirtualCompressedFormat(codec: codec, width: Int(width), height: Int(height), frameRate: 15)])
        let frames = sink.frames
        try #require(frames.count >= 20)
        let first = frames[0].presentationTime
        for (n, frame) in frames.enumerated() {
            #expect(!frame.hasImageBuffer)
            #expect(frame.codec == codec && frame.width == width && frame.height == height)
            // What the camera rendered for the compressor: YUYV for MJPEG (4:2:2), NV12 for H.264.
            let rendered =
                codec == VirtualCompressedFormat.mjpeg
                ? kCVPixelFormatType_422YpCbCr8_yuvs : kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
            #expect(frame.renderedPixelFormat == rendered)
            #expect(frame.sequence == UInt64(n))
            #expect(frame.presentationTime == CMTime(value: first.value + Int64(n), timescale: 15))
            #expect(frame.duration == CMTime(value: 1, timescale: 15))
            // The bitstream is the frame rendered for this sequence number: its index, or the flash of a second.
            if frame.presentationTime.value % 15 == 0 {
                #expect(frame.isFlash && frame.frameIndex == nil)
            } else {
                #expect(frame.frameIndex == UInt32(n))
            }
        }
    }

    @Test("the YUYV formats need no compressor and deliver pixel buffers")
    func rawFormatsNeedNoCompressor() throws {
        let webcam = VirtualCamera.usbWebcam()
        #expect(!webcam.hasFrameCompressors)
        webcam.clockMode = .freeRunning
        let recorder = StreamRecorder()
        let yuyv = webcam.configuration(640, 480, fps: 30, kCVPixelFormatType_422YpCbCr8_yuvs)
        try webcam.start(yuyv, sink: recorder.sink)
        let arrived = recorder.wait(forEvents: 5)
        webcam.stop()
        #expect(arrived)
        let frames = recorder.frames
        try #require(frames.count >= 5)
        #expect(frames.allSatisfy { $0.pixelFormat == kCVPixelFormatType_422YpCbCr8_yuvs && $0.width == 640 })
        #expect(frames.filter { !$0.isFlash }.allSatisfy { $0.frameIndex == UInt32($0.sequence) })
    }

    @Test("a compressed format without a compressor, or whose compressor cannot be made, fails start and says why")
    func missingCompressor() {
        let bare = VirtualCamera.usbWebcam()
        let configuration = bare.configuration(1280, 720, fps: 30, VirtualCompressedFormat.mjpeg)
        #expect(throws: DeviceFault.self) { try bare.start(configuration, sink: { _ in }) }
        do {
            try bare.start(configuration, sink: { _ in })
            Issue.record("start without a compressor succeeded")
        } catch {
            #expect(error.kind == .io(.notSupported))
            #expect(error.advice?.contains("no frame compressor") == true)
        }
        #expect(!bare.isStreaming)
        struct NoEncoder: Error, CustomStringConvertible { var description: String { "this FFmpeg has no libx264" } }
        let failing = VirtualCamera.usbWebcam(compressors: { _ in throw NoEncoder() })
        do {
            try failing.start(configuration, sink: { _ in })
            Issue.record("start with a failing compressor factory succeeded")
        } catch {
            #expect(error.kind == .io(.notSupported))
            #expect(error.advice?.contains("this FFmpeg has no libx264") == true)
        }
        #expect(!failing.isStreaming)
        // Installing one later makes the same camera stream.
        bare.installFrameCompressors { _ in LumaCopyCompressor() }
        #expect(bare.hasFrameCompressors)
        let sink = CompressedFrameSink()
        #expect(throws: Never.self) { try bare.start(configuration, sink: sink.sink) }
        #expect(sink.wait(forFrames: 2))
        bare.stop()
    }

    @Test("when consumers hold every bitstream slot, frames drop as OutOfBuffers; released slots are reused")
    func slotsRunDry() throws {
        let webcam = VirtualCamera.usbWebcam(compressors: { _ in LumaCopyCompressor() })
        webcam.clockMode = .freeRunning
        let sink = CompressedFrameSink(holdsSamples: true)
        try webcam.start(webcam.configuration(1280, 720, fps: 30, VirtualCompressedFormat.mjpeg), sink: sink.sink)
        let starved = sink.wait { $0.drops.contains { $0 == .outOfBuffers } }
        #expect(starved)
        #expect(sink.frames.count == VirtualCamera.poolAllocationThreshold)
        let before = sink.frames.count
        sink.releaseSamples()
        let resumed = sink.wait { $0.frames.count >= before + 3 }
        webcam.stop()
        #expect(resumed)
        // Every frame or drop has its own sequence number, none missing.
        let sequences = sink.sequences
        #expect(sequences == Array(0..<UInt64(sequences.count)))
    }

    @Test("unplug and replug: a stream faults as disconnected, start fails while unplugged, the registry hears both")
    func unplugAndReplug() throws {
        let connections = ConnectionRecorder()
        let webcam = VirtualCamera.usbWebcam(registry: connections.registry, compressors: { _ in LumaCopyCompressor() })
        let sink = CompressedFrameSink()
        try webcam.start(webcam.configuration(1280, 720, fps: 30, VirtualCompressedFormat.mjpeg), sink: sink.sink)
        #expect(sink.wait(forFrames: 1))
        webcam.simulateUnplug()
        #expect(sink.faults == [.disconnected])
        #expect(!webcam.isConnected && !webcam.isStreaming)
        #expect(throws: DeviceFault.disconnected) {
            try webcam.start(
                webcam.configuration(320, 240, fps: 30, kCVPixelFormatType_422YpCbCr8_yuvs), sink: { _ in })
        }
        // A compressed format too: the disconnection, not an encoder, is what start reports.
        #expect(throws: DeviceFault.disconnected) {
            try webcam.start(webcam.configuration(1280, 720, fps: 30, VirtualCompressedFormat.mjpeg), sink: { _ in })
        }
        webcam.simulateReplug()
        #expect(webcam.isConnected)
        #expect(connections.kinds(for: webcam) == ["disconnected", "connected"])
        let again = CompressedFrameSink()
        try webcam.start(webcam.configuration(1280, 720, fps: 30, VirtualCompressedFormat.mjpeg), sink: again.sink)
        #expect(again.wait(forFrames: 1))
        webcam.stop()
    }
}

/// A stand-in codec: the "bitstream" is the rendered pixel format's code, then the frame's luma, so a test can
/// read back which frame was compressed. Thread-bound, as a real compressor.
final class LumaCopyCompressor: VirtualFrameCompressor {
    func compress(_ frame: CVPixelBuffer, presentationTime: CMTime, _ body: (UnsafeRawBufferPointer) -> Void) {
        let width = CVPixelBufferGetWidth(frame)
        let height = CVPixelBufferGetHeight(frame)
        let format = CVPixelBufferGetPixelFormatType(frame)
        let step = format == kCVPixelFormatType_422YpCbCr8_yuvs ? 2 : 1
        var bytes = withUnsafeBytes(of: format.bigEndian) { Array($0) }
        bytes.reserveCapacity(4 + width * height)
        frame.withUnsafePlane(0) { plane, bytesPerRow in
            for row in 0..<height {
                for x in 0..<width { bytes.append(plane[row * bytesPerRow + x * step]) }
            }
        }
        bytes.withUnsafeBytes(body)
    }
}

/// What a test keeps of one compressed frame, read on the capture thread.
struct CompressedFrame: Sendable {
    var sequence: UInt64
    var presentationTime: CMTime
    var duration: CMTime
    var hasImageBuffer: Bool
    var codec: FourCharCode
    var width: Int32
    var height: Int32
    /// The pixel format `LumaCopyCompressor` was given.
    var renderedPixelFormat: OSType
    var frameIndex: UInt32?
    var isFlash: Bool
}

/// Records a compressed stream (frames decoded from `LumaCopyCompressor`'s bytes, drops, faults); lets a test wait.
/// Thread safe: a mutex guards the record, a semaphore wakes waiters.
final class CompressedFrameSink: Sendable {
    struct Record {
        var frames: [CompressedFrame] = []
        var drops: [DropReason] = []
        var faults: [DeviceFault] = []
        var sequences: [UInt64] = []
        var held: [CMSampleBuffer] = []
    }

    private let record = Mutex(Record())
    private let arrivals = DispatchSemaphore(value: 0)
    private let holdsSamples: Bool

    init(holdsSamples: Bool = false) {
        self.holdsSamples = holdsSamples
    }

    var sink: StreamSink {
        { [self] event in
            switch event {
            case .output(let sample, let sequence):
                let frame = Self.frame(sample, sequence: sequence)
                record.withLock { record in
                    record.frames.append(frame)
                    record.sequences.append(sequence)
                    if holdsSamples { record.held.append(sample) }
                }
            case .dropped(let sequence, _, let reason):
                record.withLock { record in
                    record.drops.append(reason)
                    record.sequences.append(sequence)
                }
            case .fault(let fault):
                record.withLock { $0.faults.append(fault) }
            }
            arrivals.signal()
        }
    }

    var frames: [CompressedFrame] { record.withLock { $0.frames } }
    var faults: [DeviceFault] { record.withLock { $0.faults } }
    var sequences: [UInt64] { record.withLock { $0.sequences } }

    func releaseSamples() {
        let held = record.withLock { record in
            defer { record.held = [] }
            return record.held
        }
        _ = held.count
    }

    /// Waits up to `timeout` seconds for `predicate` to hold; returns whether it did.
    func wait(timeout: Double = 20, until predicate: (Record) -> Bool) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while true {
            if record.withLock({ predicate($0) }) { return true }
            if arrivals.wait(timeout: deadline) == .timedOut { return record.withLock { predicate($0) } }
        }
    }

    func wait(forFrames count: Int) -> Bool { wait { $0.frames.count >= count } }

    private static func frame(_ sample: CMSampleBuffer, sequence: UInt64) -> CompressedFrame {
        let description = sample.formatDescription
        let dimensions = description?.dimensions ?? CMVideoDimensions(width: 0, height: 0)
        let width = Int(dimensions.width)
        let height = Int(dimensions.height)
        var rendered: OSType = 0
        var index: UInt32?
        var isFlash = false
        sample.dataBuffer?.withUnsafeBytes { bytes in
            guard bytes.count == 4 + width * height else { return }
            rendered = bytes.prefix(4).reduce(0) { $0 << 8 | OSType($1) }
            let luma = Array(bytes.dropFirst(4))
            VirtualLumaPlane.with(luma, width: width, height: height) { plane in
                index = VirtualPictureReader.readFrameIndex(plane)
                isFlash = VirtualPictureReader.isFlashFrame(plane)
            }
        }
        return CompressedFrame(
            sequence: sequence, presentationTime: sample.presentationTimeStamp, duration: sample.duration,
            hasImageBuffer: sample.imageBuffer != nil, codec: description?.mediaSubType.rawValue ?? 0,
            width: dimensions.width, height: dimensions.height, renderedPixelFormat: rendered, frameIndex: index,
            isFlash: isFlash)
    }
}

private func fourCC(_ code: FourCharCode) -> String {
    String(decoding: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: code >> $0) }, as: UTF8.self)
}
