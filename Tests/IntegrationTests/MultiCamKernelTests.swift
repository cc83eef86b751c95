// Several real cameras at once in one AVCaptureMultiCamSession: two vivid instances (`n_devs=2`) and the USB webcam
// emulator plugged in over USB/IP (uvcvideo), each recorded into a movie file output of its own, connected by hand.
// ffprobe reads every file back; video data outputs beside the vivid cameras' movies show that their frames are
// stamped on the one host clock. Only in the VM boot of `make test-kernel` that loads vivid with two instances.

import Foundation
import OpenAVCapture
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// vivid's capture devices, as discovery lists them (two where vivid was loaded with `n_devs=2`).
enum VividInstances {
    static var cameras: [AVCaptureDevice] {
        AVCaptureDevice.DiscoverySession(
            deviceTypes: [.builtInWideAngleCamera, .external], mediaType: .video, position: .unspecified
        ).devices.filter { $0.modelID.hasPrefix("vivid:") }.sorted { $0.uniqueID < $1.uniqueID }
    }

    /// Why the suite cannot run here; nil when it can.
    static var unavailableReason: String? {
        if let reason = USBWebcam.unavailableReason { return reason }
        let count = cameras.count
        return count >= 2 ? nil : "\(count) vivid camera(s) here: this runs in the VM boot that loads `vivid n_devs=2`"
    }
}

/// Each frame's presentation time, as a video data output delivers them.
private final class FrameTimes: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    private let times = Mutex<[CMTime]>([])
    var all: [CMTime] { times.withLock { $0 } }

    func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        times.withLock { $0.append(sampleBuffer.presentationTimeStamp) }
    }
}

@Suite(
    .serialized,
    .enabled(if: VividInstances.unavailableReason == nil, Comment(rawValue: VividInstances.unavailableReason ?? "")))
final class MultiCamKernelTests {
    /// The webcam is unplugged when the test ends, so the suites after this one see the VM's devices as they were.
    deinit { USBWebcam.unplug() }

    @Test func twoVividCamerasAndTheUSBWebcamRecordAMovieEachOnOneClock() throws {
        let (webcam, _) = try USBWebcam.plug()
        let vivids = Array(VividInstances.cameras.prefix(2))
        // Formats the VM's emulated CPU keeps up with for three cameras at once: vivid's NV12 320x180 at the rate
        // nearest 10 fps, encoded as Motion JPEG; the webcam's MJPEG 1280x720 at 15 fps, written as it comes.
        var sizes: [(width: Int, height: Int)] = []
        var rates: [Double] = []
        for vivid in vivids {
            let format = try #require(
                vivid.formats.first { format in
                    let size = CMVideoFormatDescriptionGetDimensions(format.formatDescription)
                    return size.width == 320 && size.height == 180
                        && CMFormatDescriptionGetMediaSubType(format.formatDescription)
                            == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
                }, "\(vivid.localizedName) has no NV12 320x180")
            let range = try #require(
                format.videoSupportedFrameRateRanges.min { abs($0.maxFrameRate - 10) < abs($1.maxFrameRate - 10) })
            try vivid.lockForConfiguration()
            vivid.activeFormat = format
            vivid.activeVideoMinFrameDuration = range.minFrameDuration
            vivid.activeVideoMaxFrameDuration = range.minFrameDuration
            vivid.unlockForConfiguration()
            sizes.append((320, 180))
            rates.append(range.maxFrameRate)
        }
        try USBWebcamKernelTests.configure(webcam, kCMVideoCodecType_JPEG, 1280, 720, fps: 15)
        sizes.append((1280, 720))
        rates.append(15)
        let cameras = vivids + [webcam]

        let session = AVCaptureMultiCamSession()
        let movies = cameras.map { _ in AVCaptureMovieFileOutput() }
        // Video data outputs on the vivid cameras only, whose NV12 needs no decoding: the webcam's movie takes its
        // MJPEG as it comes, and a data output would have every frame decoded, at about 100 ms a 720p frame under
        // the VM's emulation, on the webcam's capture thread.
        let frames = vivids.map { _ in AVCaptureVideoDataOutput() }
        let times = vivids.map { _ in FrameTimes() }
        session.beginConfiguration()
        for (index, camera) in cameras.enumerated() {
            let input = try AVCaptureDeviceInput(device: camera)
            try #require(session.canAddInput(input), "the session refuses \(camera.localizedName)")
            session.addInputWithNoConnections(input)
            session.addOutputWithNoConnections(movies[index])
            let movie = try connectCamera(input, to: movies[index], in: session)
            movies[index].setOutputSettings([AVVideoCodecKey: AVVideoCodecType.jpeg], for: movie)
            guard index < frames.count else { continue }
            session.addOutputWithNoConnections(frames[index])
            // Every frame kept, late or not: the first one after the start is the one measured.
            frames[index].alwaysDiscardsLateVideoFrames = false
            frames[index].setSampleBufferDelegate(times[index], queue: DispatchQueue(label: "multicam frames \(index)"))
            try connectCamera(input, to: frames[index], in: session)
        }
        session.commitConfiguration()
        print("multi-camera session: \(cameras.map(\.localizedName)), hardware cost \(session.hardwareCost)")
        #expect(session.hardwareCost <= 1)

        session.startRunning()
        defer { session.stopRunning() }
        try #require(session.isRunning, "the session did not run")
        // Every camera streaming before the recordings start, however long uvcvideo and vivid take to start here.
        try #require(
            waitUntil(timeout: 60, every: 0.05) { times.allSatisfy { !$0.all.isEmpty } },
            "frames from \(zip(vivids, times).filter { $1.all.isEmpty }.map { $0.0.localizedName })")
        let urls = try (1...cameras.count).map { try scratchURL("multicam-\($0).mov", suite: "openav-multicam") }
        let delegates = cameras.map { _ in MovieRecordingDelegate() }
        let start = CMClockGetTime(.hostTimeClock)
        let (cpuBefore, wallBefore) = (processCPUSeconds(), Date())
        for (movie, (url, delegate)) in zip(movies, zip(urls, delegates)) {
            movie.startRecording(to: url, recordingDelegate: delegate)
        }
        // Two seconds in every file, however long the emulated CPU takes to write them.
        _ = waitUntil(timeout: 120, every: 0.05) { movies.allSatisfy { $0.recordedDuration.seconds >= 2 } }
        movies.forEach { $0.stopRecording() }
        #expect(delegates.allSatisfy { $0.waitForFinish(timeout: 60) })
        // How busy the process was: near the VM's core count means the emulated CPU, not the buffers, set the pace.
        print(
            "multi-camera recording: process CPU "
                + String(
                    format: "%.2f s in %.2f s on %d cores", processCPUSeconds() - cpuBefore,
                    Date().timeIntervalSince(wallBefore), ProcessInfo.processInfo.activeProcessorCount))

        // One clock: the first frame each vivid camera delivered after the recordings started, on the host clock,
        // within about one frame interval (the slower camera's) of each other. Two instances of one driver, but each
        // its own device, node, buffers and capture thread: frames stamped on a clock of their own would be seconds
        // apart. The two cameras' phases are free, so by phase alone their first frames after an arbitrary instant
        // can be up to one interval apart; the emulated CPU's timers then move a vivid frame's stamp by several
        // milliseconds (8 ms in one CI run, which took one camera's frame from just before the start to 108 ms
        // after it). Half an interval more covers that jitter and still tells one clock from two.
        for (index, camera) in vivids.enumerated() {
            let all = times[index].all.map(\.seconds)
            let delivery = frames[index].deliveryStatistics
            print(
                "multi-camera frames of \(camera.localizedName): \(all.count), "
                    + String(
                        format: "first %.3f s, last %.3f s, recordings started at %.3f s", all.first ?? -1,
                        all.last ?? -1, start.seconds) + ", \(delivery)")
            // The data output keeps up (it only notes times): a camera that ran out of buffers while the movies
            // fell behind would show here too.
            #expect(delivery.droppedOutOfBuffers == 0, "\(camera.localizedName): \(delivery)")
        }
        let firsts = try times.map { camera in try #require(camera.all.first { $0 >= start }).seconds }
        let interval = 1 / (rates.prefix(2).min() ?? 1)
        print(
            "multi-camera first frames after the start: "
                + firsts.map { String(format: "%+.1f ms", ($0 - start.seconds) * 1000) }.joined(separator: ", ")
                + String(format: " (frame interval %.1f ms)", interval * 1000))
        let bound = interval * 1.5
        #expect(firsts.max()! - firsts.min()! <= bound, "first frames \(firsts) more than \(bound) s apart")
        for first in firsts {
            #expect(first - start.seconds <= bound, "a first frame \(first - start.seconds) s after the start")
        }

        for (index, url) in urls.enumerated() {
            let name = "\(cameras[index].localizedName) → \(url.lastPathComponent)"
            #expect(
                delegates[index].error == nil || delegates[index].successfullyFinished == true,
                "\(name): \(String(describing: delegates[index].error))")
            let probe = try #require(
                spawnOutput(
                    "ffprobe",
                    [
                        "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                        "stream=codec_name,width,height,nb_read_frames:format=duration", "-of",
                        "default=noprint_wrappers=1", url.path,
                    ]), "ffprobe cannot read \(name)")
            let fields = Dictionary(
                probe.split(separator: "\n").compactMap { line -> (String, String)? in
                    let parts = line.split(separator: "=", maxSplits: 1)
                    return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
                }, uniquingKeysWith: { first, _ in first })
            let count = Int(fields["nb_read_frames"] ?? "") ?? 0
            let duration = Double(fields["duration"] ?? "") ?? 0
            print("multi-camera recording \(name): \(fields), \(movies[index].recordingStatistics)")
            #expect(fields["codec_name"] == "mjpeg", "\(name)")
            #expect(
                fields["width"] == "\(sizes[index].width)" && fields["height"] == "\(sizes[index].height)", "\(name)")
            #expect(duration >= 1.9, "\(name): \(duration) s")
            // What can be required of a VM whose emulated CPU may not keep up with three cameras: no camera ran out
            // of buffers (consumers holding its few mapped buffers get copies instead; a frame lost for want of
            // buffers would be lost to every output of the camera), and every frame the recording took is in the
            // file. Frames the encoder had no time for are dropped as late, by the file alone, and only reported.
            let statistics = movies[index].recordingStatistics
            let expected = Int((duration * rates[index]).rounded())
            print(
                "multi-camera recording \(name): \(count) of about \(expected) frames in \(duration) s, "
                    + "\(statistics.droppedVideoFrames["FrameWasLate"] ?? 0) late")
            #expect(count > 0, "\(name): no frame decodes")
            #expect(statistics.droppedVideoFrames["OutOfBuffers"] == nil, "\(name): \(statistics.droppedVideoFrames)")
            #expect(count == statistics.videoFramesWritten, "\(name): \(count) frames in the file, \(statistics)")
            // Every frame decodes: ffprobe counted them by decoding them, and said nothing on its error output.
            let errors = spawnOutput(
                "ffprobe", ["-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", url.path],
                errors: true)
            #expect(errors == "", "\(name): ffprobe says \(String(describing: errors))")
        }
    }
}
