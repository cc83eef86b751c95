// A multi-planar V4L2 camera (vivid loaded with `multiplanar=2`, as SoC and ISP drivers are) recorded through the
// public API into AVCaptureMovieFileOutput; the movie read back by ffprobe and decoded in full by ffmpeg.

import Foundation
import OpenAVCapture
import Testing
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// vivid, where it was loaded multi-planar (the VM boot of `make test-kernel` with `vivid multiplanar=2`).
enum MultiplanarVividDevice {
    /// Whether vivid's first instance is multi-planar: its module parameter, one value per instance.
    static var isLoadedMultiplanar: Bool {
        let parameter = try? String(contentsOfFile: "/sys/module/vivid/parameters/multiplanar", encoding: .utf8)
        return parameter?.split(separator: ",").first?.trimmingCharacters(in: .whitespacesAndNewlines) == "2"
    }

    static var device: AVCaptureDevice? {
        guard isLoadedMultiplanar else { return nil }
        return AVCaptureDevice.DiscoverySession(
            deviceTypes: [.builtInWideAngleCamera, .external], mediaType: .video, position: .unspecified
        ).devices.first { $0.modelID.hasPrefix("vivid:") }
    }

    static let skipReason: Comment =
        "no multi-planar vivid here: this runs in the VM boot of `make test-kernel` that loads `vivid multiplanar=2`"
}

@Suite(.serialized, .enabled(if: MultiplanarVividDevice.device != nil, MultiplanarVividDevice.skipReason))
struct V4L2MultiplanarRecordingKernelTests {
    @Test func aMultiplanarCameraRecordsAMovieFFmpegDecodes() throws {
        let device = try #require(MultiplanarVividDevice.device)
        // NV12, the format SoC pipelines deliver most, small and slow enough (320x180, the rate nearest 10 fps)
        // that libx264 keeps up on the VM's emulated CPU: at 640x480 and 25 fps most frames were left out for want
        // of buffers, and timestamps that far apart made `ffmpeg -f null` complain of the null muxer's rounding.
        let format = try #require(
            device.formats.first { format in
                let dimensions = CMVideoFormatDescriptionGetDimensions(format.formatDescription)
                return dimensions.width == 320 && dimensions.height == 180
                    && CMFormatDescriptionGetMediaSubType(format.formatDescription)
                        == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
            })
        let rate = try #require(
            format.videoSupportedFrameRateRanges.min { abs($0.maxFrameRate - 10) < abs($1.maxFrameRate - 10) })
        try device.lockForConfiguration()
        device.activeFormat = format
        device.activeVideoMinFrameDuration = rate.minFrameDuration
        device.activeVideoMaxFrameDuration = rate.minFrameDuration
        device.unlockForConfiguration()

        let output = AVCaptureMovieFileOutput()
        let session = try makeSession(preset: .inputPriority, devices: [device], outputs: [output])
        session.startRunning()
        defer { session.stopRunning() }
        let url = try scratchURL("multiplanar.mov", suite: "openav-multiplanar")
        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        #expect(delegate.waitForStart(timeout: 60))
        // Two seconds of video, however long vivid takes to render them on the emulated CPU.
        _ = waitUntil(timeout: 120, every: 0.05) { output.recordedDuration.seconds >= 2 }
        #expect(output.recordedDuration.seconds >= 2)
        output.stopRecording()
        #expect(delegate.waitForFinish(timeout: 60))
        #expect(delegate.error == nil || delegate.successfullyFinished == true, "\(String(describing: delegate.error))")

        // ffprobe reads an H.264 track of the camera's size with every frame decodable.
        let probe = try #require(
            spawnOutput(
                "ffprobe", [
                    "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                    "stream=codec_name,width,height,nb_read_frames", "-of", "default=noprint_wrappers=1", url.path,
                ]))
        print(
            "multi-planar vivid recording at \(rate.maxFrameRate) fps: "
                + "\(probe.split(separator: "\n").joined(separator: ", ")); \(output.recordingStatistics)")
        #expect(probe.contains("codec_name=h264"))
        #expect(probe.contains("width=320") && probe.contains("height=180"))
        let frames = probe.split(separator: "\n").first { $0.hasPrefix("nb_read_frames=") }
            .flatMap { Int($0.dropFirst("nb_read_frames=".count)) }
        #expect((frames ?? 0) > 0, "frames decoded: \(String(describing: frames))")
        // A full decode prints nothing.
        let errors = spawnOutput("ffmpeg", ["-nostdin", "-v", "error", "-i", url.path, "-f", "null", "-"], errors: true)
        #expect(errors == "", "ffmpeg: \(String(describing: errors))")
        // And the picture is vivid's: the first frame's middle row has the white bar left and the black bar right.
        let gray = try #require(
            spawnBytes(
                "ffmpeg", [
                    "-nostdin", "-v", "error", "-i", url.path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray",
                    "-",
                ]))
        try #require(gray.count == 320 * 180)
        let (white, black) = (gray[90 * 320 + 10], gray[90 * 320 + 310])
        #expect(white > 150 && black < 40, "white bar \(white), black bar \(black)")
    }
}

/// A tool's standard output (or, with `errors`, its standard error) as text; nil when it fails to run or exits
/// non-zero (with `errors`, any exit status).
func spawnOutput(_ tool: String, _ arguments: [String], errors: Bool = false) -> String? {
    spawnBytes(tool, arguments, errors: errors).map { String(decoding: $0, as: UTF8.self) }
}

/// Runs `/usr/bin/<tool>` with posix_spawn (Foundation's `Process` cannot make its run-loop socket pair in the VM)
/// and returns what it wrote on standard output (standard error with `errors`); nil when it does not run, or, for
/// standard output, exits non-zero.
func spawnBytes(_ tool: String, _ arguments: [String], errors: Bool = false) -> [UInt8]? {
    let path = "/usr/bin/\(tool)"
    guard FileManager.default.isExecutableFile(atPath: path) else { return nil }
    var pipeEnds: [Int32] = [0, 0]
    guard pipe(&pipeEnds) == 0 else { return nil }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], errors ? 2 : 1)
    posix_spawn_file_actions_addopen(&actions, errors ? 1 : 2, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addclose(&actions, pipeEnds[0])
    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var child: pid_t = 0
    let spawned = posix_spawn(&child, path, &actions, nil, argv, environ)
    close(pipeEnds[1])
    defer { close(pipeEnds[0]) }
    guard spawned == 0 else { return nil }
    var output = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = read(pipeEnds[0], &chunk, chunk.count)
        if count > 0 { output += chunk[..<count] } else if count == 0 || errno != EINTR { break }
    }
    var status: Int32 = 0
    while waitpid(child, &status, 0) < 0 && errno == EINTR {}
    let exitedCleanly = status & 0x7f == 0 && (status >> 8) & 0xff == 0
    return errors || exitedCleanly ? output : nil
}
