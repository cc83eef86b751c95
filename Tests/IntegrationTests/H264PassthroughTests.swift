import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing

import TestSupport

/// A camera that sends H.264, recorded as H.264 with no other settings, goes into the movie as it comes: the movie's
/// packets are the camera's, byte for byte, from a key frame on; the data outputs still get decoded frames. Read
/// back by ffmpeg and ffprobe; the camera's own bytes come from a tap on the device.
@Suite(.serialized) struct H264PassthroughTests {
    /// The virtual USB webcam in its H.264 1920x1080 format at 15 fps. Restore its defaults after.
    static func webcamAt1080pH264() throws -> AVCaptureDevice {
        let webcam = try #require(AVCaptureDevice.default(.external, for: .video, position: .unspecified))
        let h264 = try #require(
            webcam.formats.first { $0.formatDescription.mediaSubType.rawValue == kCMVideoCodecType_H264 })
        try webcam.lockForConfiguration()
        webcam.activeFormat = h264
        webcam.activeVideoMinFrameDuration = CMTime(value: 1, timescale: 15)
        webcam.activeVideoMaxFrameDuration = CMTime(value: 1, timescale: 15)
        webcam.unlockForConfiguration()
        return webcam
    }

    /// Records `seconds` of `webcam` with `settings` (nil: the defaults) while a tap keeps the NAL units of every
    /// frame the camera sent; the recording starts after the camera has run for a while, so mid-GOP.
    private func recordWebcam(
        _ webcam: AVCaptureDevice, name: String, settings: [String: Any]?, dataOutput: AVCaptureVideoDataOutput? = nil
    ) throws -> (url: URL, cameraFrames: [[[UInt8]]], movie: AVCaptureMovieFileOutput) {
        // Stepped a frame at a time, the outputs caught up before the next (a debug build decodes 1080p H.264 for
        // the data output slower than real time on a loaded machine): every output sees every frame. Set before
        // the tap starts the camera: a camera takes its clock as it starts.
        try withManualClock([webcam]) { clock in
            let cameraFrames = Mutex<[[[UInt8]]]>([])
            let tap = CaptureDeviceTap(device: webcam) { event in
                guard case .sample(let sample, _) = event, let data = sample.dataBuffer else { return }
                let units = data.withUnsafeBytes { annexB in annexBUnits(annexB) }
                cameraFrames.withLock { $0.append(units) }
            }
            try tap.start()
            defer { tap.stop() }
            let movie = AVCaptureMovieFileOutput()
            let session = try makeSession(
                preset: .inputPriority, devices: [webcam], outputs: [movie] + (dataOutput.map { [$0] } ?? []))
            if let settings { movie.setOutputSettings(settings, for: try #require(movie.connection(with: .video))) }
            movie.maxRecordedDuration = CMTime(value: 2, timescale: 1)
            let frame = webcam.activeVideoMinFrameDuration
            let outputs = session.outputs
            session.startRunning()
            defer { session.stopRunning() }
            // Past the first key frame, so the recording is asked for in the middle of a group of pictures.
            while cameraFrames.withLock({ $0.count }) < 5, clock.elapsed.seconds < 5 {
                #expect(clock.advance(by: frame, step: frame, settling: outputs))
            }
            let url = try scratchURL(name)
            let recording = MovieRecordingDelegate()
            movie.startRecording(to: url, recordingDelegate: recording)
            // On to the recording's limit, and a little past it: the file ends there by itself.
            let limit = clock.elapsed.seconds + 3
            while !recording.events.contains("didFinish"), clock.elapsed.seconds < limit {
                #expect(clock.advance(by: frame, step: frame, settling: outputs))
            }
            #expect(recording.waitForFinish(timeout: 90), "the movie did not finish")
            #expect(recording.avError?.code == .maximumDurationReached, "\(String(describing: recording.error))")
            session.stopRunning()
            tap.stop()
            return (url, cameraFrames.withLock { $0 }, movie)
        }
    }

    @Test("The webcam's H.264 goes into the movie as it comes: a key frame first, every packet the camera's own")
    func webcamH264IsWrittenAsItComes() throws {
        guard MediaTool.available([.ffmpeg, .ffprobe], for: "webcam H.264 passthrough") else { return }
        let webcam = try Self.webcamAt1080pH264()
        defer { webcam.virtualCamera?.restoreDefaults() }
        let data = AVCaptureVideoDataOutput()
        let decoded = MovieFrameCollector()
        data.setSampleBufferDelegate(decoded, queue: DispatchQueue(label: "webcam decoded frames"))
        let (url, cameraFrames, _) = try recordWebcam(
            webcam, name: "webcam-h264-as-it-comes.mov", settings: nil, dataOutput: data)

        let video = try #require(try FFprobeReport(url).stream("video"))
        #expect(video["codec_name"] as? String == "h264")
        #expect(video["width"] as? Int == 1920 && video["height"] as? Int == 1080)
        #expect(try ffmpegDecodeErrors(url).isEmpty, "ffmpeg found decode errors")
        let packets = try moviePackets(url)
        #expect(packets.count >= 20, "\(packets.count) packets in 2 s at 15 fps")
        #expect(packets.first?.isKey == true, "the movie does not start at a key frame")
        // Each packet is one of the camera's frames, in the camera's order.
        var next = 0
        for (n, packet) in packets.enumerated() {
            guard let match = cameraFrames[next...].firstIndex(of: packet.units) else {
                Issue.record("packet \(n) (\(packet.units.map(\.count)) bytes per NAL unit) is no frame the camera sent")
                break
            }
            next = match + 1
        }
        let indices = try decodedFrameIndices(url).compactMap { $0 }
        #expect(zip(indices, indices.dropFirst()).allSatisfy { $0 < $1 }, "indices out of order: \(indices)")
        // The data output got decoded pictures all along.
        #expect(decoded.received.count >= 20 && decoded.received.allSatisfy { $0.index != nil || $0.isFlash },
                "\(decoded.received.count) decoded frames")
    }

    @Test("Asked for a bit rate, the webcam's H.264 is decoded and encoded again: no packet is the camera's")
    func compressionPropertiesReencode() throws {
        guard MediaTool.available([.ffmpeg, .ffprobe], for: "webcam H.264 re-encode") else { return }
        let webcam = try Self.webcamAt1080pH264()
        defer { webcam.virtualCamera?.restoreDefaults() }
        let settings: [String: Any] = [
            AVVideoCodecKey: AVVideoCodecType.h264,
            AVVideoCompressionPropertiesKey: [AVVideoAverageBitRateKey: 2_000_000],
        ]
        let (url, cameraFrames, _) = try recordWebcam(webcam, name: "webcam-h264-reencoded.mov", settings: settings)
        #expect(try ffmpegDecodeErrors(url).isEmpty, "ffmpeg found decode errors")
        let packets = try moviePackets(url)
        #expect(packets.count >= 20)
        let camera = Set(cameraFrames)
        #expect(packets.allSatisfy { !camera.contains($0.units) }, "a packet was the camera's own")
    }

    @Test("An H.264 movie played as a camera records as it comes: the same packets and the same decoded pictures",
          arguments: ["baseline", "high"])
    func movieFileH264IsCopied(profile: String) throws {
        guard MediaTool.available([.ffmpeg, .ffprobe], for: "movie file H.264 passthrough") else { return }
        let source = try scratchURL("h264-source-\(profile).mp4")
        try? FileManager.default.removeItem(at: source)
        // High profile with B-frames (decode order differs from presentation order), baseline without.
        let made = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-t", "2", "-c:v",
            "libx264", "-profile:v", profile, "-g", "15", "-pix_fmt", "yuv420p", source.path,
        ])
        try #require(made.status == 0, "ffmpeg: \(made.error)")
        let camera = try #require(try MovieFileDevice(url: source).camera)
        let session = try makeSession(preset: .inputPriority, devices: [camera], outputs: [])
        let movie = AVCaptureMovieFileOutput()
        session.addOutput(movie)
        let url = try scratchURL("h264-copied-\(profile).mov")
        try? FileManager.default.removeItem(at: url)
        let recording = MovieRecordingDelegate()
        movie.startRecording(to: url, recordingDelegate: recording)
        session.startRunning()
        #expect(recording.waitForFinish(timeout: 30), "the recording did not end with the input")
        session.stopRunning()
        #expect(recording.avError?.code == .deviceWasDisconnected, "\(String(describing: recording.error))")

        #expect(try ffmpegDecodeErrors(url).isEmpty, "ffmpeg found decode errors")
        #expect(try videoPacketBytes(url) == videoPacketBytes(source), "the movie's packets are not the source's")
        #expect(try frameHashes(url) == frameHashes(source), "the decoded pictures differ")
    }
}

/// The NAL units of an Annex B access unit, split at its start codes (the test's own reading, not the library's).
private func annexBUnits(_ bytes: UnsafeRawBufferPointer) -> [[UInt8]] {
    var starts: [(code: Int, payload: Int)] = []
    var i = 0
    while i + 2 < bytes.count {
        if bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 {
            starts.append((i > 0 && bytes[i - 1] == 0 ? i - 1 : i, i + 3))
            i += 3
        } else {
            i += 1
        }
    }
    return starts.enumerated().map { n, start in
        let end = n + 1 < starts.count ? starts[n + 1].code : bytes.count
        return [UInt8](bytes[start.payload..<end])
    }
}

/// The movie's video packets, as ffprobe sizes and flags them, each split into its length-prefixed NAL units.
private func moviePackets(_ url: URL) throws -> [(isKey: Bool, units: [[UInt8]])] {
    let probe = try MediaTool.ffprobe.run([
        "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=size,flags", "-of", "csv=p=0", url.path,
    ])
    try #require(probe.status == 0, "ffprobe: \(probe.error)")
    let rows = String(decoding: probe.output, as: UTF8.self).split(separator: "\n").map { $0.split(separator: ",") }
    let bytes = try videoPacketBytes(url)
    var packets: [(Bool, [[UInt8]])] = []
    var offset = 0
    for row in rows {
        guard let size = Int(row[0]) else { continue }
        var units: [[UInt8]] = []
        var position = offset
        while position + 4 <= offset + size {
            let length = bytes[position..<position + 4].reduce(0) { $0 << 8 | Int($1) }
            units.append([UInt8](bytes[(position + 4)..<min(position + 4 + length, bytes.count)]))
            position += 4 + length
        }
        packets.append((row.count > 1 && row[1].hasPrefix("K"), units))
        offset += size
    }
    return packets
}

/// Every video packet's bytes, in file order, as ffmpeg copies them out.
private func videoPacketBytes(_ url: URL) throws -> [UInt8] {
    let result = try MediaTool.ffmpeg.run([
        "-nostdin", "-v", "error", "-i", url.path, "-map", "0:v:0", "-c", "copy", "-f", "rawvideo", "-",
    ])
    try #require(result.status == 0, "ffmpeg: \(result.error)")
    return [UInt8](result.output)
}

/// The MD5 of every decoded picture, in order.
private func frameHashes(_ url: URL) throws -> [String] {
    let result = try MediaTool.ffmpeg.run([
        "-nostdin", "-v", "error", "-i", url.path, "-map", "0:v:0", "-f", "framemd5", "-",
    ])
    try #require(result.status == 0, "ffmpeg: \(result.error)")
    return String(decoding: result.output, as: UTF8.self).split(separator: "\n")
        .filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last.map(String.init) }
}
