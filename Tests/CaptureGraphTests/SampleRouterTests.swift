// The graph's router with sinks of the test's own: no session, no device, no clock. What each sink is given is
// read back from the buffers themselves (their image buffers, pixel formats and times).

import CaptureDrivers
import CaptureGraph
import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo
import Synchronization
import Testing

/// A sink that records what it was given, with the answers the test sets.
private final class RecordingSink: CaptureSink, @unchecked Sendable {
    struct Log {
        var received: [CMSampleBuffer] = []
        var drops: [(time: CMTime, reason: DropReason, format: CMFormatDescription?)] = []
        var metered = 0
    }
    let log = Mutex(Log())
    let enabled = Atomic<Bool>(true)
    /// Whether the sink would use a frame now (an idle movie file output would not).
    let wants = Atomic<Bool>(true)
    let demand: VideoFormatDemand?
    let takesCompressed: Bool
    let readsOnly: Bool
    let sourceFormat: CMFormatDescription?

    init(
        demand: VideoFormatDemand? = nil, takesCompressed: Bool = false, readsOnly: Bool = true,
        sourceFormat: CMFormatDescription? = nil
    ) {
        self.demand = demand
        self.takesCompressed = takesCompressed
        self.readsOnly = readsOnly
        self.sourceFormat = sourceFormat
    }

    var isEnabled: Bool { enabled.load(ordering: .relaxed) }
    var videoDemand: VideoFormatDemand? { demand }
    var takesLentPictures: Bool { readsOnly }
    var wantsVideoFrames: Bool { wants.load(ordering: .relaxed) }
    func takesCompressedVideo(_ format: CMFormatDescription) -> Bool { takesCompressed }
    func receive(_ sampleBuffer: CMSampleBuffer) { log.withLock { $0.received.append(sampleBuffer) } }
    func receiveDrop(presentationTime: CMTime, reason: DropReason, format: CMFormatDescription?) {
        log.withLock { $0.drops.append((presentationTime, reason, format)) }
    }
    func meter(_ sampleBuffer: CMSampleBuffer) { log.withLock { $0.metered += 1 } }

    var received: [CMSampleBuffer] { log.withLock { $0.received } }
}

/// The faults a router reported.
private final class FaultLog: Sendable {
    let faults = Mutex<[DeviceFault]>([])
}

@Suite("Sample router")
struct SampleRouterTests {
    private func router(_ sinks: [RecordingSink], faults: FaultLog? = nil) -> SampleRouter {
        let table = RouteTable()
        table.replace(with: sinks)
        return SampleRouter(table: table) { fault in faults?.faults.withLock { $0.append(fault) } }
    }

    private func raw(at index: Int) throws -> CMSampleBuffer {
        let image = try nv12Picture(width: 64, height: 48)
        let format = try CMFormatDescription(imageBuffer: image)
        let timing = CMSampleTimingInfo(
            duration: CMTime(value: 1, timescale: 30), presentationTimeStamp: CMTime(value: Int64(index), timescale: 30),
            decodeTimeStamp: .invalid)
        return try CMSampleBuffer(imageBuffer: image, formatDescription: format, sampleTiming: timing)
    }

    @Test("raw frames go as they are to sinks asking nothing, converted once for sinks asking another format")
    func conversionByDemand() throws {
        let plain = RecordingSink()
        let bgra = RecordingSink(demand: VideoFormatDemand(pixelFormats: [kCVPixelFormatType_32BGRA]))
        let alsoBGRA = RecordingSink(demand: VideoFormatDemand(pixelFormats: [kCVPixelFormatType_32BGRA]))
        let router = router([plain, bgra, alsoBGRA])
        let frame = try raw(at: 3)
        router.handle(.output(frame, sequence: 0))
        #expect(plain.received.count == 1)
        #expect(plain.received.first?.imageBuffer === frame.imageBuffer)
        let converted = try #require(bgra.received.first?.imageBuffer)
        #expect(CVPixelBufferGetPixelFormatType(converted) == kCVPixelFormatType_32BGRA)
        #expect(bgra.received.first?.presentationTimeStamp == CMTime(value: 3, timescale: 30))
        // The same target is converted once and shared.
        #expect(alsoBGRA.received.first?.imageBuffer === converted)
    }

    @Test("a sink taking the camera's compressed frames gets them; when it alone is enabled, no decoded frame goes out")
    func compressedTakers() throws {
        let packets = try compressedVideo(.jpeg, frames: 2)
        let writer = RecordingSink(takesCompressed: true)
        let viewer = RecordingSink()
        let both = router([writer, viewer])
        both.handle(.output(packets[0], sequence: 0))
        #expect(writer.received.count == 1 && writer.received[0].imageBuffer == nil, "the writer gets the packet")
        #expect(viewer.received.count == 1 && viewer.received[0].imageBuffer != nil, "the viewer a decoded frame")

        // The viewer disabled: the writer alone takes the packet, and no decoded frame goes anywhere.
        viewer.enabled.store(false, ordering: .relaxed)
        both.handle(.output(packets[1], sequence: 1))
        #expect(writer.received.count == 2 && writer.received[1].imageBuffer == nil)
        #expect(viewer.received.count == 1)
    }

    @Test("a compressed frame no enabled sink would use is not decoded; once one would, it is")
    func noDecodeForNobody() throws {
        let packets = try compressedVideo(.jpeg, frames: 2)
        // A damaged frame shows whether the decoder saw it: decoding it fails, which every sink hears as a drop.
        let timing = CMSampleTimingInfo(
            duration: .invalid, presentationTimeStamp: CMTime(value: 9, timescale: 30), decodeTimeStamp: .invalid)
        let damaged = try CMSampleBuffer(
            dataBuffer: CMBlockBuffer(copying: Data(repeating: 0x5A, count: 512)),
            formatDescription: packets[0].formatDescription, numSamples: 1, sampleTimings: [timing],
            sampleSizes: [512])
        let idle = RecordingSink()
        idle.wants.store(false, ordering: .relaxed)
        let router = router([idle])
        router.handle(.output(packets[0], sequence: 0))
        router.handle(.output(damaged, sequence: 1))
        #expect(idle.received.isEmpty, "no decoded frame for a sink that would not use it")
        #expect(idle.log.withLock { $0.drops.isEmpty }, "the damaged frame was not decoded either")

        // The sink starts recording: the next frames are decoded for it, the damaged one a drop.
        idle.wants.store(true, ordering: .relaxed)
        router.handle(.output(damaged, sequence: 2))
        router.handle(.output(packets[1], sequence: 3))
        #expect(idle.log.withLock { $0.drops.map(\.reason) } == [.discontinuity])
        #expect(idle.received.count == 1 && idle.received.first?.imageBuffer != nil)
    }

    @Test("drops reach the enabled sinks in the first route's format; a fault reaches the session")
    func dropsAndFaults() throws {
        let format = try CMFormatDescription(imageBuffer: try nv12Picture(width: 64, height: 48))
        let first = RecordingSink(sourceFormat: format)
        let disabled = RecordingSink()
        disabled.enabled.store(false, ordering: .relaxed)
        let faults = FaultLog()
        let router = router([first, disabled], faults: faults)
        let time = CMTime(value: 7, timescale: 30)
        router.handle(.dropped(sequence: 7, presentationTime: time, reason: .discontinuity))
        let drops = first.log.withLock { $0.drops }
        #expect(drops.count == 1)
        #expect(drops.first?.time == time && drops.first?.reason == .discontinuity && drops.first?.format === format)
        #expect(disabled.log.withLock { $0.drops.isEmpty })
        router.handle(.fault(.disconnected))
        #expect(faults.faults.withLock { $0 } == [DeviceFault.disconnected])
    }

    @Test("audio is metered on its way to each sink; video is not")
    func metering() throws {
        let sink = RecordingSink()
        let router = router([sink])
        let description = try CMFormatDescription(
            audioStreamBasicDescription: AudioStreamBasicDescription(
                mSampleRate: 48_000, mFormatID: kAudioFormatLinearPCM,
                mFormatFlags: kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked, mBytesPerPacket: 2,
                mFramesPerPacket: 1, mBytesPerFrame: 2, mChannelsPerFrame: 1, mBitsPerChannel: 16, mReserved: 0))
        let block = CMBlockBuffer(length: 960)
        let timing = CMSampleTimingInfo(
            duration: CMTime(value: 1, timescale: 48_000), presentationTimeStamp: .zero, decodeTimeStamp: .invalid)
        let audio = try CMSampleBuffer(
            dataBuffer: block, formatDescription: description, numSamples: 480, sampleTimings: [timing],
            sampleSizes: [2])
        router.handle(.output(audio, sequence: 0))
        router.handle(.output(try raw(at: 0), sequence: 0))
        #expect(sink.log.withLock { $0.metered } == 1)
        #expect(sink.received.count == 2)
    }
}
