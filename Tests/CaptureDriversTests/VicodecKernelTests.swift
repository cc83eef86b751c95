import CaptureDrivers
import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Testing

/// The V4L2 memory-to-memory encoder driver against the kernel's virtual stateful codec `vicodec` (FWHT), built out
/// of tree by `make vicodec-module` and loaded in a VM boot of its own by `make test-kernel`. Pictures of known
/// content go through our encoder; vicodec's stateful *decoder* node decodes the packets back, driven by `v4l2-ctl`
/// (none of our code), and the pictures that come out are compared with the ones that went in. Elsewhere the suite
/// skips, saying why.
@Suite(.serialized, .enabled(if: Vicodec.encoder != nil, Vicodec.skipReason))
struct VicodecKernelTests {
    var encoder: V4L2EncoderDevice { Vicodec.encoder! }

    @Test func discoveryFindsTheStatefulEncoderAndNotTheDecoder() throws {
        let found = V4L2EncoderDiscovery().encoders()
        #expect(found.map(\.driver) == ["vicodec"], "\(found)")
        #expect(encoder.codedFormats == [.fwht])
        #expect(Vicodec.nodeName(encoder.path) == "stateful-encoder")
        #expect(V4L2EncoderDiscovery().encoders(coding: .h264).isEmpty)
        // v4l2-ctl reads the node's OUTPUT queue independently: the same raw formats, in the same order.
        let listing = try #require(Tool.run("v4l2-ctl", ["-d", encoder.path, "--list-formats-out"]))
        let theirs = listing.split(separator: "\n").compactMap { line -> String? in
            guard let open = line.firstIndex(of: "'"), let close = line.lastIndex(of: "'"), open < close else {
                return nil
            }
            return String(line[line.index(after: open)..<close])
        }
        #expect(theirs == encoder.pictureFormats.map(\.description))
    }

    @Test func picturesComeBackThroughVicodecsDecoderAsTheyWent() throws {
        let settings = V4L2EncoderSettings(
            pictureFormat: .yuv420, codedFormat: .fwht, width: 640, height: 480, keyFrameInterval: 4)
        let encoding = try V4L2MemoryToMemoryEncoder(path: encoder.path, settings: settings)
        #expect(encoding.appliedControls["gop_size"] == 4)
        let pictures = (0..<10).map { TestPicture(frame: $0, width: 640, height: 480) }
        var packets: [V4L2EncodedPacket] = []
        for (index, picture) in pictures.enumerated() {
            packets += try encoding.encode(
                picture.pixelBuffer(), presentationTime: CMTime(value: Int64(index), timescale: 30))
        }
        packets += try encoding.finish()
        #expect(packets.count == pictures.count)
        #expect(packets.map(\.presentationTime) == (0..<10).map { CMTime(value: Int64($0), timescale: 30) })
        // Key frames as the packets' FWHT headers say (vicodec's encoder sets no frame-type flag on its buffers).
        #expect(packets.map(\.isKeyFrame) == packets.map { FWHTHeader($0.data)?.isIntra ?? false })
        #expect(packets.first?.isKeyFrame == true)
        let decoded = try Vicodec.decode(packets, width: 640, height: 480)
        #expect(decoded.count == pictures.count)
        for (picture, frame) in zip(pictures, decoded) {
            picture.expectMatches(frame)
        }
    }

    @Test func theKeyFrameIntervalAskedForIsHonoured() throws {
        // A textured picture that does not change: vicodec codes a block from the one before (P) where that costs
        // less than coding it alone, which for a flat block it never does (the first VM run, with TestPicture's
        // flat quadrants, had every frame intra). So the key frames are where the interval puts them only.
        let settings = V4L2EncoderSettings(
            pictureFormat: .yuv420, codedFormat: .fwht, width: 640, height: 480, keyFrameInterval: 4)
        let encoding = try V4L2MemoryToMemoryEncoder(path: encoder.path, settings: settings)
        var created: CVPixelBuffer?
        let status = CVPixelBufferCreate(nil, 640, 480, kCVPixelFormatType_420YpCbCr8Planar, nil, &created)
        #expect(status == kCVReturnSuccess)
        let picture = try #require(created)
        picture.withLockedPlanes([]) { planes in
            var noise: UInt32 = 12345
            for plane in 0..<3 {
                let bytes = planes[plane].bytes
                for index in 0..<bytes.count {
                    noise = noise &* 1_103_515_245 &+ 12345  // A fixed pseudo-random texture (an LCG).
                    bytes[index] = plane == 0 ? UInt8(truncatingIfNeeded: noise >> 16) : 128
                }
            }
        }
        var packets: [V4L2EncodedPacket] = []
        for index in 0..<9 {
            packets += try encoding.encode(picture, presentationTime: CMTime(value: Int64(index), timescale: 30))
        }
        packets += try encoding.finish()
        let expected = (0..<9).map { $0 % 4 == 0 }
        #expect(packets.map { FWHTHeader($0.data)?.isIntra } == expected.map(Optional.some))
        #expect(packets.map(\.isKeyFrame) == expected)
    }

    @Test func finishDrainsEveryPictureUpToTheLastPacket() throws {
        let settings = V4L2EncoderSettings(pictureFormat: .nv12, codedFormat: .fwht, width: 640, height: 480)
        let encoding = try V4L2MemoryToMemoryEncoder(path: encoder.path, settings: settings)
        let pictures = (0..<6).map { TestPicture(frame: $0, width: 640, height: 480) }
        var early: [V4L2EncodedPacket] = []
        for (index, picture) in pictures.enumerated() {
            early += try encoding.encode(
                picture.pixelBuffer(nv12: true), presentationTime: CMTime(value: Int64(index), timescale: 30))
        }
        // Whatever the device had not finished comes out of the drain, up to the packet flagged LAST.
        let all = early + (try encoding.finish())
        #expect(all.count == 6)
        #expect(all.last?.presentationTime == CMTime(value: 5, timescale: 30))
        #expect(throws: V4L2EncoderError.notRunning) {
            try encoding.encode(pictures[0].pixelBuffer(nv12: true), presentationTime: .zero)
        }
        let decoded = try Vicodec.decode(all, width: 640, height: 480)
        #expect(decoded.count == 6)
        for (picture, frame) in zip(pictures, decoded) { picture.expectMatches(frame) }
    }

    @Test func aResolutionChangeGivesAKeyFrameAtTheNewSize() throws {
        let settings = V4L2EncoderSettings(pictureFormat: .yuv420, codedFormat: .fwht, width: 640, height: 480)
        let encoding = try V4L2MemoryToMemoryEncoder(path: encoder.path, settings: settings)
        let small = (0..<3).map { TestPicture(frame: $0, width: 640, height: 480) }
        let large = (3..<6).map { TestPicture(frame: $0, width: 1280, height: 720) }
        var before: [V4L2EncodedPacket] = []
        for (index, picture) in small.enumerated() {
            before += try encoding.encode(
                picture.pixelBuffer(), presentationTime: CMTime(value: Int64(index), timescale: 30))
        }
        before += try encoding.reconfigure(width: 1280, height: 720)
        var after: [V4L2EncodedPacket] = []
        for (index, picture) in large.enumerated() {
            after += try encoding.encode(
                picture.pixelBuffer(), presentationTime: CMTime(value: Int64(index + 3), timescale: 30))
        }
        after += try encoding.finish()
        #expect(
            before.map { FWHTHeader($0.data).map { "\($0.width)x\($0.height)" } }
                == Array(repeating: "640x480", count: 3))
        #expect(
            after.map { FWHTHeader($0.data).map { "\($0.width)x\($0.height)" } }
                == Array(repeating: "1280x720", count: 3))
        #expect(after.first?.isKeyFrame == true)
        // A picture of the old size is refused, with a message that names both sizes.
        #expect(throws: V4L2EncoderError.self) { try encoding.encode(small[0].pixelBuffer(), presentationTime: .zero) }
        for (pictures, packets) in [(small, before), (large, after)] {
            let decoded = try Vicodec.decode(packets, width: pictures[0].width, height: pictures[0].height)
            #expect(decoded.count == pictures.count)
            for (picture, frame) in zip(pictures, decoded) { picture.expectMatches(frame) }
        }
    }

    @Test func aFormatTheDeviceDoesNotHaveIsAnErrorNamingWhatItHas() throws {
        let p010 = V4L2EncoderSettings(pictureFormat: .p010, codedFormat: .fwht, width: 640, height: 480)
        do {
            _ = try V4L2MemoryToMemoryEncoder(path: encoder.path, settings: p010)
            Issue.record("P010 was accepted")
        } catch {
            guard case .formatNotOffered(.p010, _, let offered) = error else { throw error }
            #expect(offered.contains(.yuv420) && offered.contains(.nv12))
            #expect(error.description.contains("YU12"))
        }
        let h264 = V4L2EncoderSettings(pictureFormat: .nv12, codedFormat: .h264, width: 640, height: 480)
        #expect(throws: V4L2EncoderError.formatNotOffered(.h264, queue: "capture", offered: [.fwht])) {
            _ = try V4L2MemoryToMemoryEncoder(path: encoder.path, settings: h264)
        }
        // vicodec's smallest picture is 640x360 and a 4:2:0 one's height a multiple of 16: it would code 320x240
        // as 640x368, which the driver reports.
        let tiny = V4L2EncoderSettings(pictureFormat: .yuv420, codedFormat: .fwht, width: 320, height: 240)
        #expect(throws: V4L2EncoderError.sizeNotTaken(requested: "320x240", taken: "640x368")) {
            _ = try V4L2MemoryToMemoryEncoder(path: encoder.path, settings: tiny)
        }
        // The decoder node is no encoder.
        let decoder = try #require(Vicodec.node(named: "stateful-decoder"))
        do {
            _ = try V4L2MemoryToMemoryEncoder(
                path: decoder,
                settings: V4L2EncoderSettings(pictureFormat: .yuv420, codedFormat: .fwht, width: 640, height: 480))
            Issue.record("the decoder node was taken for an encoder")
        } catch {
            guard case .formatNotOffered(.fwht, "capture", let offered) = error else { throw error }
            #expect(offered.contains(.yuv420))
        }
    }
}
