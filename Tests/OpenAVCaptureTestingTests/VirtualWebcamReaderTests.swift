import OpenAVCaptureTesting
import Synchronization
import Testing

/// Tests that stream from "Virtual USB Webcam".
@Suite(.serialized, .timeLimit(.minutes(2))) enum WebcamTests {}

extension WebcamTests {
    /// The webcam's MJPEG and H.264 arrive compressed; once decoded (`CompressedFrameDecoder`, the session's decode
    /// stage), `VirtualFrameReader` still reads the frame index, the flash of each whole second and the grey patch.
    @Suite struct MarkersAfterDecoding {
        struct Observation: Sendable {
            var time: CMTime
            var index: UInt32?
            var isFlash: Bool
            var grayBrightness: Double?
            var pixelFormat: OSType
        }

        /// Decodes on the tap's capture thread (as a session does) and keeps what the reader finds.
        final class Reader: @unchecked Sendable {
            /// Used only on the capture thread.
            private let decoder = CompressedFrameDecoder()
            let observations = Mutex<[Observation]>([])
            let compressed = Mutex<[Bool]>([])

            func read(_ sample: CMSampleBuffer) -> Int {
                compressed.withLock { $0.append(sample.imageBuffer == nil) }
                let frames = decoder.decode(sample).compactMap { frame in
                    frame.imageBuffer.map { image in
                        Observation(
                            time: frame.presentationTimeStamp, index: VirtualFrameReader.readFrameIndex(from: image),
                            isFlash: VirtualFrameReader.isFlashFrame(image),
                            grayBrightness: VirtualFrameReader.measureGrayPatchBrightness(in: image),
                            pixelFormat: CVPixelBufferGetPixelFormatType(image))
                    }
                }
                return observations.withLock { observations in
                    observations += frames
                    return observations.count
                }
            }
        }

        @Test(arguments: ["1280x720 jpeg", "1920x1080 jpeg", "1920x1080 avc1"])
        func theMarkersReadBackAfterDecoding(format name: String) async throws {
            let webcam = try #require(AVCaptureDevice.default(.external, for: .video, position: .unspecified))
            let controller = try #require(webcam.virtualCamera)
            defer { controller.restoreDefaults() }
            let format = try #require(
                webcam.formats.first { format in
                    let size = format.formatDescription.dimensions
                    let code = format.formatDescription.mediaSubType.rawValue
                    let fourCC = String(
                        decoding: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: code >> $0) }, as: UTF8.self)
                    return "\(size.width)x\(size.height) \(fourCC)" == name
                })
            try webcam.configure { device in
                device.activeFormat = format
                device.activeVideoMinFrameDuration = CMTime(value: 1, timescale: 30)
            }
            // Free-running: 40 frames (over a second of device time, so a flash) as fast as they are made.
            controller.clockMode = .freeRunning
            let reader = Reader()
            let enough = AsyncStream<Void>.makeStream()
            let tap = CaptureDeviceTap(device: webcam) { event in
                guard let sample = event.sample else { return }
                if reader.read(sample) >= 40 { enough.continuation.finish() }
            }
            try tap.start()
            for await _ in enough.stream {}
            tap.stop()

            #expect(reader.compressed.withLock { $0 }.allSatisfy { $0 }, "the webcam delivered an image buffer")
            let frames = reader.observations.withLock { $0 }
            try #require(frames.count >= 40)
            let expectedFormat =
                name.hasSuffix("jpeg")
                ? kCVPixelFormatType_420YpCbCr8BiPlanarFullRange : kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
            #expect(frames.allSatisfy { $0.pixelFormat == expectedFormat })
            func slot(_ time: CMTime) -> Int64 {
                CMTimeConvertScale(time, timescale: 30, method: .roundHalfAwayFromZero).value
            }
            // Each decoded frame, in order, one frame interval after the last.
            #expect(zip(frames, frames.dropFirst()).allSatisfy { slot($1.time) == slot($0.time) + 1 })
            // The index drawn is the frame's sequence number: slot − index is the same for every frame.
            let offsets = Set(frames.compactMap { frame in frame.index.map { slot(frame.time) - Int64($0) } })
            #expect(offsets.count == 1, "indices disagree with timestamps: offsets \(offsets)")
            for frame in frames {
                let holdsSecond = slot(frame.time) % 30 == 0
                #expect(frame.isFlash == holdsSecond, "frame at \(frame.time.seconds) s: flash \(frame.isFlash)")
                #expect(frame.isFlash || frame.index != nil, "no index in the frame at \(frame.time.seconds) s")
                if !frame.isFlash {
                    let brightness = try #require(frame.grayBrightness)
                    #expect(abs(brightness - 0.18) < 0.02, "grey patch \(brightness) at \(frame.time.seconds) s")
                }
            }
            #expect(frames.contains { $0.isFlash })
        }
    }
}
