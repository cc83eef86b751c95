import CLinuxMedia
import CaptureDrivers
import OpenCoreMedia
import OpenCoreVideo
import Testing

/// The memory-to-memory encoder driver against a simulated H.264 VPU (`SimulatedV4L2Encoder`): the order of the
/// calls the kernel's encoder interface prescribes, the controls, the parameter sets a driver gives apart joined to
/// the first picture, the picture copied by the format's row length, and the drain. vicodec in the VM
/// (VicodecKernelTests) is the real device; this is what FWHT cannot show.
@Suite struct V4L2EncoderTraceTests {
    let kernel = SimulatedV4L2Encoder()

    private func makeEncoder(keyFrameInterval: Int? = 3, bitRate: Int? = 2_000_000) throws -> V4L2MemoryToMemoryEncoder
    {
        try V4L2MemoryToMemoryEncoder(
            path: kernel.path,
            settings: V4L2EncoderSettings(
                pictureFormat: .nv12, codedFormat: .h264, width: 320, height: 240, keyFrameInterval: keyFrameInterval,
                averageBitRate: bitRate),
            system: kernel.system)
    }

    @Test func negotiatesCaptureFirstThenOutputThenControlsThenBuffers() throws {
        let encoder = try makeEncoder()
        let trace = kernel.trace
        let firstSetFormat = try #require(trace.firstIndex(of: "S_FMT"))
        let controls = trace.indices.filter { trace[$0].hasPrefix("S_CTRL") }
        let requests = trace.indices.filter { trace[$0] == "REQBUFS" }
        #expect(trace.filter { $0 == "S_FMT" }.count == 2)
        #expect(controls.allSatisfy { $0 > firstSetFormat } && controls.allSatisfy { $0 < requests[0] })
        #expect(trace.last == "STREAMON")
        // The GOP through both controls the driver has, the bit rate, parameter sets at every key frame; no
        // header mode (this driver has none).
        #expect(kernel.controls[UInt32(V4L2_CID_MPEG_VIDEO_GOP_SIZE)] == 3)
        #expect(kernel.controls[UInt32(V4L2_CID_MPEG_VIDEO_H264_I_PERIOD)] == 3)
        #expect(kernel.controls[UInt32(V4L2_CID_MPEG_VIDEO_BITRATE)] == 2_000_000)
        #expect(kernel.controls[UInt32(V4L2_CID_MPEG_VIDEO_REPEAT_SEQ_HEADER)] == 1)
        #expect(
            encoder.appliedControls.keys.sorted() == ["bitrate", "gop_size", "h264_i_period", "repeat_sequence_header"])
    }

    @Test func parameterSetsGivenApartComeWithTheFirstPicture() throws {
        let encoder = try makeEncoder()
        var packets: [V4L2EncodedPacket] = []
        for index in 0..<7 {
            packets += try encoder.encode(
                try flatPicture(luma: UInt8(10 + index)), presentationTime: CMTime(value: Int64(index), timescale: 30))
        }
        packets += try encoder.finish()
        #expect(packets.count == 7)
        let first = try #require(packets.first)
        #expect(
            Array(first.data.prefix(SimulatedV4L2Encoder.parameterSets.count)) == SimulatedV4L2Encoder.parameterSets)
        #expect(first.data.dropFirst(SimulatedV4L2Encoder.parameterSets.count).starts(with: [0, 0, 0, 1, 0x65]))
        #expect(packets.dropFirst().allSatisfy { $0.data.starts(with: [0, 0, 0, 1]) })
        #expect(packets.map(\.isKeyFrame) == [true, false, false, true, false, false, true])
        #expect(packets.map(\.presentationTime) == (0..<7).map { CMTime(value: Int64($0), timescale: 30) })
        // The last byte of each packet is the first luma byte the device read: the pictures in order.
        #expect(packets.map { $0.data.last } == (0..<7).map { UInt8(10 + $0) })
    }

    @Test func picturesAreCopiedByTheDriversRowLength() throws {
        let encoder = try makeEncoder()
        _ = try encoder.encode(try flatPicture(luma: 50, chroma: 200), presentationTime: .zero)
        _ = try encoder.finish()
        let bytes = try #require(kernel.pictures.first)
        let line = kernel.bytesPerLine
        #expect(line == 320 + Int(SimulatedV4L2Encoder.rowPadding))
        #expect(bytes.count == line * 240 * 3 / 2)
        // Luma rows `line` apart, then the chroma plane at line × height, its rows as long.
        #expect(bytes[0] == 50 && bytes[319] == 50 && bytes[line] == 50 && bytes[line * 239 + 319] == 50)
        #expect(bytes[line * 240] == 200 && bytes[line * 240 + line * 119 + 319] == 200)
    }

    @Test func aSizeCodedInWholeBlocksIsCroppedToThePicture() throws {
        let kernel = SimulatedV4L2Encoder(takesCrop: true)
        let encoder = try V4L2MemoryToMemoryEncoder(
            path: kernel.path,
            settings: V4L2EncoderSettings(pictureFormat: .nv12, codedFormat: .h264, width: 1920, height: 1080),
            system: kernel.system)
        let crop = try #require(kernel.crop)
        #expect((crop.left, crop.top, crop.width, crop.height) == (0, 0, 1920, 1080))
        _ = try encoder.encode(
            try flatPicture(luma: 70, chroma: 150, width: 1920, height: 1080), presentationTime: .zero)
        _ = try encoder.finish()
        let bytes = try #require(kernel.pictures.first)
        let line = kernel.bytesPerLine
        // Chroma starts after the coded 1088 rows, not the picture's 1080; the rows between are left alone.
        #expect(bytes[line * 1079 + 1919] == 70 && bytes[line * 1088] == 150 && bytes[line * 1088 + line * 539] == 150)
        #expect(bytes[line * 1080] != 70)
    }

    @Test func finishDrainsAndEncodeAfterItIsAnError() throws {
        let encoder = try makeEncoder()
        _ = try encoder.encode(try flatPicture(luma: 1), presentationTime: .zero)
        let drained = try encoder.finish()
        #expect(kernel.trace.contains("ENCODER_CMD"))
        #expect(kernel.trace.suffix(2) == ["STREAMOFF", "STREAMOFF"])
        #expect(drained.isEmpty || drained.count == 1)
        #expect(try encoder.finish().isEmpty)
        #expect(throws: V4L2EncoderError.notRunning) {
            try encoder.encode(try flatPicture(luma: 1), presentationTime: .zero)
        }
    }

    @Test func errorsSayWhatTheDeviceHas() throws {
        #expect(throws: V4L2EncoderError.formatNotOffered(.hevc, queue: "capture", offered: [.h264])) {
            try V4L2MemoryToMemoryEncoder(
                path: kernel.path,
                settings: V4L2EncoderSettings(pictureFormat: .nv12, codedFormat: .hevc, width: 320, height: 240),
                system: kernel.system)
        }
        // 100x100 is not whole macroblocks: the driver would take 112x112.
        #expect(throws: V4L2EncoderError.sizeNotTaken(requested: "100x100", taken: "112x112")) {
            try V4L2MemoryToMemoryEncoder(
                path: kernel.path,
                settings: V4L2EncoderSettings(pictureFormat: .nv12, codedFormat: .h264, width: 100, height: 100),
                system: kernel.system)
        }
        let encoder = try makeEncoder()
        #expect(throws: V4L2EncoderError.self) {
            try encoder.encode(try flatPicture(luma: 1, width: 640, height: 480), presentationTime: .zero)
        }
        #expect(
            V4L2EncoderError.formatNotOffered(.p010, queue: "output", offered: [.nv12]).description
                == "the encoder does not take P010 on its output queue; it offers NV12")
        #expect(throws: V4L2EncoderError.cannotOpen(path: "/dev/nothing", .noSuchFileOrDirectory)) {
            try V4L2MemoryToMemoryEncoder(
                path: "/dev/nothing",
                settings: V4L2EncoderSettings(pictureFormat: .nv12, codedFormat: .h264, width: 320, height: 240),
                system: kernel.system)
        }
    }

    @Test func annexBPacketsOfParameterSetsAloneAreToldFromPictures() {
        #expect(!AnnexBProbe.containsPicture([0, 0, 0, 1, 0x67, 1, 0, 0, 1, 0x68, 2], hevc: false))
        #expect(AnnexBProbe.containsPicture([0, 0, 1, 0x67, 1, 0, 0, 1, 0x65, 2], hevc: false))
        // HEVC: VPS (32), SPS (33), PPS (34) alone, then an IDR_W_RADL (19).
        #expect(!AnnexBProbe.containsPicture([0, 0, 1, 0x40, 1, 0, 0, 1, 0x42, 1, 0, 0, 1, 0x44, 1], hevc: true))
        #expect(AnnexBProbe.containsPicture([0, 0, 1, 0x26, 1, 0], hevc: true))
        // Key pictures, for drivers that flag no frame type: an IDR (5) but not a non-IDR slice (1); an HEVC
        // IDR_W_RADL (19) but not a TRAIL_R (1); an FWHT header with V4L2_FWHT_FL_I_FRAME (bit 10 of byte 20's word).
        #expect(AnnexBProbe.isKeyPicture([0, 0, 0, 1, 0x67, 1, 0, 0, 1, 0x65, 2], codedFormat: .h264))
        #expect(!AnnexBProbe.isKeyPicture([0, 0, 0, 1, 0x41, 2], codedFormat: .h264))
        #expect(AnnexBProbe.isKeyPicture([0, 0, 1, 0x26, 1, 0], codedFormat: .hevc))
        #expect(!AnnexBProbe.isKeyPicture([0, 0, 1, 0x02, 1, 0], codedFormat: .hevc))
        var fwht =
            [UInt8](repeating: 0x4F, count: 4) + [UInt8](repeating: 0xFF, count: 4) + [UInt8](repeating: 0, count: 36)
        #expect(!AnnexBProbe.isKeyPicture(fwht, codedFormat: .fwht))
        fwht[22] = 0x04
        #expect(AnnexBProbe.isKeyPicture(fwht, codedFormat: .fwht))
    }
}
