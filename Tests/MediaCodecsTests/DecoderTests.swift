import CTurboJPEG
import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo
import Testing

/// Plane `index` of `buffer`, row by row without padding.
private func planeBytes(_ buffer: CVPixelBuffer, _ index: Int) -> (bytes: [UInt8], width: Int, height: Int) {
    buffer.withLockedPlanes(.readOnly) { planes in
        let plane = planes[index]
        let chromaPairs = CVPixelBufferGetPlaneCount(buffer) == 3 ? 1 : 2  // I420's chroma planes, NV12's pairs
        let rowBytes =
            index == 0 ? CVPixelBufferGetWidth(buffer) : chromaPairs * ((CVPixelBufferGetWidth(buffer) + 1) / 2)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(rowBytes * plane.height)
        for y in 0..<plane.height { bytes.append(contentsOf: plane.row(y).prefix(rowBytes)) }
        return (bytes, rowBytes, plane.height)
    }
}

/// Every frame a video decoder gives until it asks for input.
private func drainFrames(_ decoder: VideoDecoder) throws -> [DecodedFrame] {
    var frames: [DecodedFrame] = []
    while case .frame(let frame) = try decoder.receiveFrame() { frames.append(frame) }
    return frames
}

/// The luma `makeMovingFrame` wrote on row `y` of frame `index` (video range).
private func movingLuma(row y: Int, frame index: Int) -> Int { 16 + (y + index * 4) % 200 }

/// Each row's mean luma, mapped to video range when the buffer is full range.
private func rowMeans(_ buffer: CVPixelBuffer) -> [Double] {
    let luma = planeBytes(buffer, 0)
    let fullRange = CVPixelBufferGetPixelFormatType(buffer) == kCVPixelFormatType_420YpCbCr8BiPlanarFullRange
    return (0..<luma.height).map { y in
        let mean =
            Double(luma.bytes[(y * luma.width)..<(y * luma.width + luma.width)].reduce(0) { $0 + Int($1) })
            / Double(luma.width)
        return fullRange ? mean * 219 / 255 + 16 : mean
    }
}

/// The mean absolute difference between decoded rows and the moving gradient of frame `index`, over rows away from
/// the gradient's wrap (where lossy codecs ring).
private func gradientError(_ means: [Double], frame index: Int) -> Double {
    var total = 0.0
    var count = 0
    for (y, mean) in means.enumerated() {
        let expected = movingLuma(row: y, frame: index)
        guard expected > 24 && expected < 208 else { continue }
        total += abs(mean - Double(expected))
        count += 1
    }
    return total / Double(max(count, 1))
}

private func gradientError(_ buffer: CVPixelBuffer, frame index: Int) -> Double {
    gradientError(rowMeans(buffer), frame: index)
}

/// The frame index whose gradient the decoded luma shows (within 3 codes), or nil.
private func decodedIndex(_ buffer: CVPixelBuffer) -> Int? {
    let means = rowMeans(buffer)
    let best = (0..<50).min { gradientError(means, frame: $0) < gradientError(means, frame: $1) }!
    return gradientError(means, frame: best) < 3 ? best : nil
}

@Suite("Video and audio decoders")
struct DecoderTests {
    /// One JPEG image of the moving gradient, from our own mjpeg encoder (4:2:0, full range).
    private func jpegFrame(_ index: Int, width: Int = 640, height: Int = 480) throws -> EncodedPacket {
        let encoder = try VideoEncoder(VideoEncoder.Configuration(codec: .jpeg, width: width, height: height))
        try encoder.send(
            try makeMovingFrame(
                index, width: width, height: height, pixelFormat: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange),
            presentationTime: CMTime(value: Int64(index), timescale: 30))
        try encoder.finish()
        guard case .packet(let packet) = try encoder.receivePacket() else {
            throw MediaCodecsError(.invalidState, while: "test", message: "no JPEG packet")
        }
        return packet
    }

    @Test("MJPEG 4:2:0: TurboJPEG and FFmpeg give the same full-range NV12, close to the source")
    func mjpeg420() throws {
        let packet = try jpegFrame(7)
        let turbo = try MJPEGDecoder().decode(packet.data)
        let ffmpeg = try VideoDecoder(VideoDecoder.Configuration(codecName: "mjpeg"))
        try ffmpeg.send(packet.data, presentationTime: packet.presentationTime, duration: packet.duration)
        let frames = try drainFrames(ffmpeg)
        try #require(frames.count == 1)
        let viaFFmpeg = frames[0].pixelBuffer
        #expect(frames[0].presentationTime == packet.presentationTime)
        for buffer in [turbo, viaFFmpeg] {
            #expect(CVPixelBufferGetPixelFormatType(buffer) == kCVPixelFormatType_420YpCbCr8BiPlanarFullRange)
            #expect(CVPixelBufferGetWidth(buffer) == 640 && CVPixelBufferGetHeight(buffer) == 480)
            #expect(gradientError(buffer, frame: 7) < 2, "\(gradientError(buffer, frame: 7))")
        }
        for plane in 0..<2 {
            let a = planeBytes(turbo, plane).bytes
            let b = planeBytes(viaFFmpeg, plane).bytes
            #expect(a.count == b.count)
            let worst = zip(a, b).map { abs(Int($0) - Int($1)) }.max() ?? 0
            #expect(worst <= 2, "plane \(plane): the two IDCTs differ by up to \(worst)")
        }
    }

    @Test("MJPEG 4:2:2 (what USB cameras send): chroma rows averaged into NV12; both decoders agree")
    func mjpeg422() throws {
        // A 4:2:2 JPEG made by TurboJPEG itself: left half red, right half blue, on a grey ramp.
        let width = 320
        let height = 240
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let offset = (y * width + x) * 3
                rgb[offset] = x < width / 2 ? 200 : 40
                rgb[offset + 1] = UInt8(40 + y / 4)
                rgb[offset + 2] = x < width / 2 ? 40 : 200
            }
        }
        let compressor = try #require(tjInitCompress())
        defer { tjDestroy(compressor) }
        var jpeg: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        let status = tjCompress2(
            compressor, rgb, Int32(width), 0, Int32(height), Int32(TJPF_RGB.rawValue), &jpeg, &size,
            Int32(TJSAMP_422.rawValue), 95, 0)
        try #require(status == 0, "tjCompress2")
        defer { tjFree(jpeg) }
        let block = CMBlockBuffer(copying: Data(bytes: jpeg!, count: Int(size)))

        let turbo = try MJPEGDecoder().decode(block)
        let ffmpeg = try VideoDecoder(VideoDecoder.Configuration(codecName: "mjpeg"))
        try ffmpeg.send(block, presentationTime: .zero, duration: .invalid)
        let viaFFmpeg = try #require(try drainFrames(ffmpeg).first).pixelBuffer
        let chroma = planeBytes(turbo, 1)
        #expect(chroma.height == height / 2 && chroma.width == width)
        // Cb high on the blue side, low on the red side; Cr the other way round (full range, neutral 128).
        let row = chroma.bytes[(60 * chroma.width)..<(61 * chroma.width)].map { Int($0) }
        #expect(row[0 * 2] < 110 && row[0 * 2 + 1] > 150, "red: Cb \(row[0]) Cr \(row[1])")
        let last = width - 2
        #expect(row[last] > 150 && row[last + 1] < 110, "blue: Cb \(row[last]) Cr \(row[last + 1])")
        for plane in 0..<2 {
            let a = planeBytes(turbo, plane).bytes
            let b = planeBytes(viaFFmpeg, plane).bytes
            let worst = zip(a, b).map { abs(Int($0) - Int($1)) }.max() ?? 0
            #expect(worst <= 3, "plane \(plane): TurboJPEG and FFmpeg differ by up to \(worst)")
        }
    }

    @Test(
        "MJPEG chroma into NV12 exactly: 4:2:0 as it is, 4:2:2 rows averaged, widths 16-pair vectors do not divide",
        arguments: [(TJSAMP_420, 362), (TJSAMP_422, 362), (TJSAMP_422, 34)])
    func mjpegChromaExactly(sampling: TJSAMP, width: Int) throws {
        // Noise in every channel, so each pair differs from its neighbours and a misplaced byte shows.
        let height = 22
        var generator = SystemRandomNumberGenerator()
        let rgb = (0..<(width * height * 3)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let compressor = try #require(tjInitCompress())
        defer { tjDestroy(compressor) }
        var jpeg: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        try #require(
            tjCompress2(
                compressor, rgb, Int32(width), 0, Int32(height), Int32(TJPF_RGB.rawValue), &jpeg, &size,
                Int32(sampling.rawValue), 90, 0) == 0)
        defer { tjFree(jpeg) }

        // TurboJPEG's own Cb and Cr planes, and the NV12 rows they must make, computed byte by byte here.
        let decompressor = try #require(tjInitDecompress())
        defer { tjDestroy(decompressor) }
        let chromaWidth = Int(tjPlaneWidth(1, Int32(width), Int32(sampling.rawValue)))
        let chromaHeight = Int(tjPlaneHeight(1, Int32(height), Int32(sampling.rawValue)))
        var luma = [UInt8](repeating: 0, count: width * height)
        var cb = [UInt8](repeating: 0, count: chromaWidth * chromaHeight)
        var cr = cb
        let status = luma.withUnsafeMutableBufferPointer { y in
            cb.withUnsafeMutableBufferPointer { u in
                cr.withUnsafeMutableBufferPointer { v in
                    var planes: [UnsafeMutablePointer<UInt8>?] = [y.baseAddress, u.baseAddress, v.baseAddress]
                    var strides = [Int32(width), Int32(chromaWidth), Int32(chromaWidth)]
                    return tjDecompressToYUVPlanes(
                        decompressor, jpeg, size, &planes, Int32(width), &strides, Int32(height), 0)
                }
            }
        }
        try #require(status == 0)
        var expected: [UInt8] = []
        for row in 0..<(height / 2) {
            let rows = sampling == TJSAMP_420 ? [row, row] : [2 * row, 2 * row + 1]
            for x in 0..<(width / 2) {
                for plane in [cb, cr] {
                    let a = Int(plane[rows[0] * chromaWidth + x])
                    let b = Int(plane[rows[1] * chromaWidth + x])
                    expected.append(UInt8((a + b + 1) / 2))
                }
            }
        }

        let block = CMBlockBuffer(copying: Data(bytes: jpeg!, count: Int(size)))
        let decoded = try MJPEGDecoder().decode(block)
        #expect(planeBytes(decoded, 0).bytes == luma)
        let chroma = planeBytes(decoded, 1).bytes
        #expect(chroma.count == expected.count)
        let wrong = zip(chroma, expected).enumerated().filter { $0.element.0 != $0.element.1 }.map(\.offset)
        let differing = wrong.count
        #expect(differing == 0, "chroma bytes differ, the first at offsets \(wrong.prefix(4))")
    }

    @Test("a damaged JPEG is an error value, and the next image decodes")
    func damagedJPEG() throws {
        let decoder = try MJPEGDecoder()
        #expect(throws: MediaCodecsError.self) {
            try decoder.decode(CMBlockBuffer(copying: Data([0xFF, 0xD8, 0, 1, 2])))
        }
        #expect(gradientError(try decoder.decode(try jpegFrame(3).data), frame: 3) < 2)
    }

    @Test("held buffers exhaust the pool: outOfBuffers, then decoding resumes once they are released")
    func poolLimit() throws {
        let packet = try jpegFrame(1, width: 64, height: 48)
        let decoder = try MJPEGDecoder(bufferLimit: 2)
        var held = [try decoder.decode(packet.data), try decoder.decode(packet.data)]
        #expect {
            try decoder.decode(packet.data)
        } throws: { ($0 as? MediaCodecsError)?.kind == .outOfBuffers }
        held.removeAll()
        _ = try decoder.decode(packet.data)
        #expect(held.isEmpty)
    }

    @Test("H.264 Annex B with in-band parameter sets (a camera's stream): every frame, in order, exact times")
    func h264AnnexB() throws {
        let encoder = try VideoEncoder(VideoEncoder.Configuration(codec: .h264, width: 320, height: 240))
        let decoder = try VideoDecoder(VideoDecoder.Configuration(codecName: "h264", bufferLimit: 100))
        var decoded: [DecodedFrame] = []
        var first = true
        func pass(_ packet: EncodedPacket) throws {
            var data = packet.data
            if first {
                // The encoder keeps SPS/PPS out of band (global header); a camera sends them in-band.
                var bytes = encoder.extradata
                packet.data.withUnsafeBytes { bytes.append(contentsOf: $0) }
                data = CMBlockBuffer(copying: Data(bytes))
                first = false
            }
            try decoder.send(data, presentationTime: packet.presentationTime, duration: packet.duration)
            decoded += try drainFrames(decoder)
        }
        for index in 0..<30 {
            try encoder.send(
                try makeMovingFrame(
                    index, width: 320, height: 240, pixelFormat: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange),
                presentationTime: CMTime(value: Int64(index), timescale: 30))
            while case .packet(let packet) = try encoder.receivePacket() { try pass(packet) }
        }
        try encoder.finish()
        while case .packet(let packet) = try encoder.receivePacket() { try pass(packet) }
        try decoder.finish()
        decoded += try drainFrames(decoder)
        #expect(try decoder.receiveFrame().isEndOfStream)
        try #require(decoded.count == 30)
        for (index, frame) in decoded.enumerated() {
            #expect(
                CVPixelBufferGetPixelFormatType(frame.pixelBuffer) == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
            #expect(frame.presentationTime == CMTime(value: Int64(index * 3000), timescale: 90000))
            #expect(decodedIndex(frame.pixelBuffer) == index, "frame \(index)")
        }
    }

    /// 30 frames of the moving gradient as H.264 (one key frame, then P-frames), and the encoder's `avcC`.
    private func h264Packets() throws -> (packets: [EncodedPacket], extradata: [UInt8]) {
        let encoder = try VideoEncoder(VideoEncoder.Configuration(codec: .h264, width: 320, height: 240))
        var packets: [EncodedPacket] = []
        for index in 0..<30 {
            try encoder.send(
                try makeMovingFrame(
                    index, width: 320, height: 240, pixelFormat: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange),
                presentationTime: CMTime(value: Int64(index), timescale: 30))
            while case .packet(let packet) = try encoder.receivePacket() { packets.append(packet) }
        }
        try encoder.finish()
        while case .packet(let packet) = try encoder.receivePacket() { packets.append(packet) }
        return (packets, encoder.extradata)
    }

    @Test("H.264 lent without a copy: the same pictures as copied, valid after the decoder is gone, bounded, freed")
    func lentFrames() throws {
        let (packets, extradata) = try h264Packets()
        func decodeAll(lending: Bool) throws -> (frames: [DecodedFrame], decoder: VideoDecoder) {
            var configuration = VideoDecoder.Configuration(
                codecName: "h264", extradata: extradata, pixelFormat: kCVPixelFormatType_420YpCbCr8Planar,
                bufferLimit: lending ? 16 : 30)
            configuration.lendsFrames = lending
            let decoder = try VideoDecoder(configuration)
            var frames: [DecodedFrame] = []
            for packet in packets {
                try decoder.send(packet.data, presentationTime: packet.presentationTime, duration: packet.duration)
                frames += try drainFrames(decoder)
            }
            try decoder.finish()
            frames += try drainFrames(decoder)
            return (frames, decoder)
        }
        let copied = try decodeAll(lending: false)
        #expect(copied.decoder.lentFrameCount == 0)
        // Held, all 30: the first 16 lent, the rest copied into the pool; given back as their buffers die.
        var counted = try decodeAll(lending: true)
        #expect(counted.decoder.lentFrameCount == 16)
        counted.frames.removeAll()
        #expect(counted.decoder.lentFrameCount == 0, "every lent frame is given back when its buffer dies")
        // The decoder gone, its lent pictures are still there, equal to the copied ones plane for plane.
        let lent = try decodeAll(lending: true).frames
        try #require(lent.count == 30 && copied.frames.count == 30)
        for (index, (mine, theirs)) in zip(lent, copied.frames).enumerated() {
            #expect(CVPixelBufferGetPixelFormatType(mine.pixelBuffer) == kCVPixelFormatType_420YpCbCr8Planar)
            #expect(mine.presentationTime == theirs.presentationTime)
            for plane in 0..<3 {
                #expect(
                    planeBytes(mine.pixelBuffer, plane).bytes == planeBytes(theirs.pixelBuffer, plane).bytes,
                    "frame \(index) plane \(plane)")
            }
            #expect(decodedIndex(mine.pixelBuffer) == index, "frame \(index)")
        }
    }

    @Test("H.264 switched between lent planar pictures and NV12 copies at P-frames: the same pictures throughout")
    func lendingSwitchedBetweenFrames() throws {
        let (packets, extradata) = try h264Packets()
        let configuration = VideoDecoder.Configuration(codecName: "h264", extradata: extradata, bufferLimit: 30)
        let reference = try VideoDecoder(configuration)
        let switching = try VideoDecoder(configuration)
        var expected: [DecodedFrame] = []
        var frames: [(frame: DecodedFrame, lending: Bool)] = []
        for (index, packet) in packets.enumerated() {
            // Lent for frames 0–9 and 20–29, copied for 10–19; only frame 0 is a key frame.
            let lending = (index / 10) % 2 == 0
            switching.lendsPlanarFrames = lending
            for decoder in [reference, switching] {
                try decoder.send(packet.data, presentationTime: packet.presentationTime, duration: packet.duration)
            }
            expected += try drainFrames(reference)
            frames += try drainFrames(switching).map { ($0, lending) }
        }
        try #require(frames.count == 30 && expected.count == 30)
        #expect(switching.lentFrameCount == frames.filter(\.lending).count)
        for (index, ((frame, lending), theirs)) in zip(frames, expected).enumerated() {
            let format = CVPixelBufferGetPixelFormatType(frame.pixelBuffer)
            #expect(
                format
                    == (lending
                        ? kCVPixelFormatType_420YpCbCr8Planar : kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange),
                "frame \(index)")
            #expect(
                planeBytes(frame.pixelBuffer, 0).bytes == planeBytes(theirs.pixelBuffer, 0).bytes, "frame \(index) luma"
            )
            let pairs = planeBytes(theirs.pixelBuffer, 1).bytes
            let chroma =
                lending
                ? zip(planeBytes(frame.pixelBuffer, 1).bytes, planeBytes(frame.pixelBuffer, 2).bytes).flatMap {
                    [$0, $1]
                }
                : planeBytes(frame.pixelBuffer, 1).bytes
            #expect(chroma == pairs, "frame \(index) chroma")
        }
        frames.removeAll()
        #expect(switching.lentFrameCount == 0, "every lent frame is given back when its buffer dies")
    }

    @Test("H.264 and AAC from a QuickTime movie (AVCC with avcC, AudioSpecificConfig): frames and tone back")
    func movie() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("decoder-\(UUID()).mov").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try record(to: path, fileType: .mov, video: .h264, audio: .aac, frames: 45, width: 320, height: 240)
        let demuxer = try Demuxer(path: path)
        let videoStream = try #require(demuxer.streams.first { $0.mediaType == .video })
        let audioStream = try #require(demuxer.streams.first { $0.mediaType == .audio })
        #expect(!videoStream.extradata.isEmpty && videoStream.extradata[0] == 1, "avcC starts with version 1")
        let video = try VideoDecoder(
            VideoDecoder.Configuration(
                codecName: videoStream.codecName, extradata: videoStream.extradata, bufferLimit: 100))
        let audio = try AudioDecoder(
            AudioDecoder.Configuration(
                codecName: audioStream.codecName, sampleRate: audioStream.sampleRate,
                channelCount: audioStream.channelCount, extradata: audioStream.extradata))
        var frames: [DecodedFrame] = []
        var samples: [Float] = []
        var audioTimes: [CMTime] = []
        func drainAudio() throws {
            while case .samples(let buffer) = try audio.receive() {
                audioTimes.append(buffer.presentationTimeStamp)
                let asbd = try #require(buffer.formatDescription?.audioStreamBasicDescription)
                #expect(asbd.mChannelsPerFrame == 2 && asbd.mBitsPerChannel == 32 && asbd.mSampleRate == 48000)
                buffer.dataBuffer?.withUnsafeBytes { samples += $0.bindMemory(to: Float.self) }
            }
        }
        while case .packet(let packet, let stream) = try demuxer.readPacket() {
            if stream == videoStream.index {
                try video.send(
                    packet.data, presentationTime: packet.presentationTime, decodeTime: packet.decodeTime,
                    duration: packet.duration)
                frames += try drainFrames(video)
            } else if stream == audioStream.index {
                try audio.send(packet.data, presentationTime: packet.presentationTime, duration: packet.duration)
                try drainAudio()
            }
        }
        try video.finish()
        frames += try drainFrames(video)
        try audio.finish()
        try drainAudio()
        try #require(frames.count == 45)
        for (index, frame) in frames.enumerated() {
            #expect(decodedIndex(frame.pixelBuffer) == index, "frame \(index)")
            if index > 0 { #expect(frame.presentationTime > frames[index - 1].presentationTime) }
        }
        // 45 frames of 1600 stereo samples of a 0.5-amplitude sine, priming included: RMS 0.354 in the middle.
        let left = stride(from: 0, to: samples.count, by: 2).map { samples[$0] }
        #expect(abs(left.count - 45 * 1600) <= 2048, "\(left.count) samples")
        let middle = left[left.count / 4..<left.count * 3 / 4]
        let rms = (middle.reduce(0) { $0 + Double($1 * $1) } / Double(middle.count)).squareRoot()
        #expect(abs(rms - 0.3536) < 0.01, "RMS \(rms)")
        #expect(zip(audioTimes, audioTimes.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test("the decoder chosen from a format description: codec types and avcC atoms")
    func configurationFromDescription() throws {
        let avcC: [UInt8] = [1, 0x64, 0, 0x1F, 0xFF, 0xE0, 0]
        let description = try CMFormatDescription(
            videoCodecType: .h264, width: 1920, height: 1080,
            extensions: [kCMFormatDescriptionExtension_SampleDescriptionExtensionAtoms: ["avcC": avcC]])
        let configuration = try #require(VideoDecoder.Configuration(formatDescription: description))
        #expect(configuration.codecName == "h264" && configuration.extradata == avcC)
        #expect(
            VideoDecoder.Configuration(
                formatDescription: try CMFormatDescription(videoCodecType: .jpeg, width: 640, height: 480))?.codecName
                == "mjpeg")
        let nv12 = try CMFormatDescription(
            videoCodecType: .init(rawValue: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange), width: 64, height: 64)
        #expect(VideoDecoder.Configuration(formatDescription: nv12) == nil, "pixel formats need no decoder")
        #expect(VideoDecoder.decoderName(for: kCMVideoCodecType_HEVC) == "hevc")
    }
}

extension DecoderOutput {
    var isEndOfStream: Bool {
        if case .endOfStream = self { return true }
        return false
    }
}
