// A real USB webcam and microphone under test: the project's USB/IP emulator (Tests/USBWebcamEmulator, built by
// `make usb-webcam-emulator`) plugged into the kernel's vhci-hcd with `usbip attach`, so uvcvideo and snd-usb-audio
// drive it as a webcam in a port. Only in the VM of `make test-kernel` (vhci-hcd loaded, Debian's usbip installed,
// OPENAV_DEVICES=all); everywhere else these skip, saying why.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The emulated webcam: the emulator process (started once per test process), its attachment, and its devices as
/// discovery lists them.
enum USBWebcam {
    /// The product name the emulator's device descriptor gives; uvcvideo and snd-usb-audio name the devices by it.
    static let productName = "OpenAV Test Webcam"

    /// The emulator binary, where `make usb-webcam-emulator` puts it under the package root.
    static let emulatorPath: String = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent(".build/usb-webcam-emulator/usb-webcam-emulator").path

    /// Why the suite cannot run here; nil when it can.
    static let unavailableReason: String? = {
        if access("/sys/devices/platform/vhci_hcd.0", F_OK) != 0 {
            return "vhci-hcd is not loaded: these run in the VM (`make test-kernel`)"
        }
        if access(emulatorPath, X_OK) != 0 { return "\(emulatorPath) is not built (`make usb-webcam-emulator`)" }
        if shell("command -v usbip >/dev/null") != 0 { return "Debian's usbip tool is not installed in the VM image" }
        if ProcessInfo.processInfo.environment["OPENAV_DEVICES"] != "all" {
            return "OPENAV_DEVICES is not `all`, so discovery lists no real devices"
        }
        return nil
    }()

    static var skipReason: Comment { Comment(rawValue: unavailableReason ?? "") }

    /// The emulator's process, started at first use; nil when it did not start.
    private static let emulator: pid_t? = {
        // The VM comes up with its loopback interface down; USB/IP runs over 127.0.0.1.
        shell("ip link set lo up 2>/dev/null || busybox ip link set lo up")
        var child: pid_t = 0
        let words = [emulatorPath]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { word in word.withCString { strdup($0) } } + [nil]
        defer { argv.forEach { free($0) } }
        guard posix_spawn(&child, emulatorPath, nil, nil, argv, environ) == 0 else { return nil }
        // Listening once a connection is accepted (the emulator reads the connection's operation, finds none and
        // closes it).
        guard waitUntil(timeout: 10, { canConnect(port: 3240) }) else { return nil }
        return child
    }()

    /// Plugs the webcam in (when it is not) and waits until discovery lists its camera and microphone.
    static func plug() throws -> (camera: AVCaptureDevice, microphone: AVCaptureDevice) {
        try #require(emulator != nil, "the emulator did not start")
        if camera == nil || microphone == nil {
            if shell("usbip port 2>/dev/null | grep -q 127.0.0.1:3240/1-1") != 0 {
                try #require(shell("usbip attach -r 127.0.0.1 -b 1-1") == 0, "usbip attach failed")
            }
        }
        try #require(
            waitUntil(timeout: 30) { camera?.isConnected == true && microphone?.isConnected == true },
            "the webcam never appeared (connected) in discovery")
        return (try #require(camera), try #require(microphone))
    }

    /// Unplugs the webcam (`usbip detach` on every port it is attached to) and waits until discovery drops it;
    /// whether it went.
    @discardableResult
    static func unplug() -> Bool {
        let detach =
            "for p in $(usbip port | sed -n 's/^Port 0*\\([0-9][0-9]*\\):.*/\\1/p'); do usbip detach -p $p; done"
        return shell(detach) == 0 && waitUntil(timeout: 30) { camera == nil && microphone == nil }
    }

    /// The webcam's first /dev/video node, from `v4l2-ctl --list-devices`.
    static func videoNode() -> String? {
        let text = String(decoding: shellOutput("v4l2-ctl --list-devices") ?? Data(), as: UTF8.self)
        var inWebcam = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.hasPrefix("\t") {
                inWebcam = line.contains(productName)
            } else if inWebcam, line.contains("/dev/video") {
                return line.trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    /// The camera uvcvideo made of it, as discovery lists it.
    static var camera: AVCaptureDevice? {
        AVCaptureDevice.DiscoverySession(deviceTypes: [.external], mediaType: .video, position: .unspecified)
            .devices.first { $0.localizedName.contains(productName) }
    }

    /// The microphone snd-usb-audio made of it, as discovery lists it.
    static var microphone: AVCaptureDevice? {
        AVCaptureDevice.DiscoverySession(deviceTypes: [.microphone], mediaType: .audio, position: .unspecified)
            .devices.first { $0.localizedName.contains(productName) || $0.uniqueID.contains("CARD=Webcam") }
    }

    /// The camera's format of `subType` at `width`x`height`.
    static func format(
        _ camera: AVCaptureDevice, _ subType: FourCharCode, _ width: Int32, _ height: Int32
    )
        -> AVCaptureDevice.Format?
    {
        camera.formats.first { format in
            let dimensions = CMVideoFormatDescriptionGetDimensions(format.formatDescription)
            return dimensions.width == width && dimensions.height == height
                && CMFormatDescriptionGetMediaSubType(format.formatDescription) == subType
        }
    }

    /// Runs a shell command (as root in the VM); its exit status. posix_spawn, not Foundation's `Process`, whose
    /// run-loop wake-up socket pair could not be made in the VM.
    @discardableResult
    static func shell(_ command: String) -> Int32 {
        var child: pid_t = 0
        let words: [String] = ["/bin/sh", "-c", command]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { word in word.withCString { strdup($0) } } + [nil]
        defer { argv.forEach { free($0) } }
        guard posix_spawn(&child, "/bin/sh", nil, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        return status & 0x7f == 0 ? (status >> 8) & 0xff : -1
    }

    /// What a shell command printed on its standard output (through a scratch file), or nil when it failed.
    static func shellOutput(_ command: String) -> Data? {
        let path = NSTemporaryDirectory() + "usb-webcam-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).out"
        defer { unlink(path) }
        guard shell("(\(command)) > '\(path)'") == 0 else { return nil }
        return FileManager.default.contents(atPath: path)
    }

    private static func canConnect(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

@Suite(.serialized, .enabled(if: USBWebcam.unavailableReason == nil, USBWebcam.skipReason))
final class USBWebcamKernelTests {
    /// Each test unplugs the webcam when it ends, so the suites after this one see the VM's devices as they were.
    deinit { USBWebcam.unplug() }

    /// The frame rate of the MJPEG 1280x720 tests: 15 fps, the camera's other rate, as the VM's emulated CPU decodes
    /// 720p MJPEG at about 25 frames a second (FFmpeg, measured) and so cannot keep up with 30.
    static let recordingRate: Int32 = 15

    @Test func discoveryListsAnExternalCameraAndAMicrophoneWithStableIDsAcrossReplug() throws {
        let (camera, microphone) = try USBWebcam.plug()
        print(
            "USB webcam: \(camera.localizedName) [\(camera.uniqueID)] model \(camera.modelID); microphone: "
                + "\(microphone.localizedName) [\(microphone.uniqueID)]")
        #expect(camera.deviceType == .external)
        #expect(camera.hasMediaType(.video))
        #expect(microphone.hasMediaType(.audio))
        #expect(camera.isConnected && microphone.isConnected)
        let cameraID = camera.uniqueID
        let microphoneID = microphone.uniqueID

        #expect(USBWebcam.unplug(), "the webcam never went away")
        #expect(waitUntil(timeout: 20) { !camera.isConnected && !microphone.isConnected })
        // Discovery is polled while the webcam comes back, racing the hot-plug monitor's own rescans: whichever
        // notices first, the same device objects come back connected.
        let (replugged, microphoneAgain) = try USBWebcam.plug()
        #expect(replugged.uniqueID == cameraID)
        #expect(microphoneAgain.uniqueID == microphoneID)
        #expect(replugged === camera && microphoneAgain === microphone, "the same device objects")
        #expect(AVCaptureDevice(uniqueID: cameraID) != nil)
    }

    /// snd-usb-audio's card is one microphone named as the card names itself, not one per ALSA alias of it
    /// (`default:CARD=Webcam`, `sysdefault:`, `dsnoop:`, …), so `avcapture record --audio "OpenAV Test Webcam"` picks
    /// it without asking which.
    @Test func theUSBMicrophoneIsOneDeviceNamedAsTheCard() throws {
        let (_, microphone) = try USBWebcam.plug()
        let microphones = AVCaptureDevice.DiscoverySession(
            deviceTypes: [.microphone], mediaType: .audio, position: .unspecified
        ).devices
        let listed = microphones.map { "\($0.localizedName) [\($0.uniqueID)]" }
        print("Microphones with the USB webcam plugged in: \(listed)")
        let webcam = microphones.filter {
            $0.localizedName.contains(USBWebcam.productName) || $0.uniqueID.contains("Webcam")
        }
        #expect(webcam.map(\.uniqueID) == [microphone.uniqueID], "\(listed)")
        #expect(microphone.localizedName == USBWebcam.productName)
        #expect(microphone.uniqueID.hasPrefix("alsa:hw:CARD=") && microphone.uniqueID.hasSuffix(",DEV=0"))
        // No alias of a card (`alsa:default:CARD=…`, `alsa:sysdefault:CARD=…`), nor `default`, which reaches a
        // card in the VM (the first, snd-aloop's), listed first in its place.
        let aliases = microphones.map(\.uniqueID).filter {
            $0 == "alsa:default" || ($0.contains("CARD=") && !$0.hasPrefix("alsa:hw:CARD="))
        }
        #expect(aliases.isEmpty, "\(listed)")

        let tool = try #require(toolPath, "the avcapture binary is not built beside the tests")
        let url = try scratchURL("usb-microphone.wav", suite: "usb-webcam")
        let status = USBWebcam.shell(
            "'\(tool)' record '\(url.path)' --overwrite --video none --audio '\(USBWebcam.productName)' --duration 1 "
                + ">/dev/null 2>'\(url.path).log'")
        let log = (try? String(contentsOf: URL(fileURLWithPath: url.path + ".log"), encoding: .utf8)) ?? ""
        #expect(status == 0, "avcapture record --audio '\(USBWebcam.productName)': \(log)")
        // Sound in the file; how much of the second depends on the VM's load (its emulated USB microphone then
        // delivers with gaps, see theUSBMicrophoneLosesNoSampleSilently), so no length is asserted.
        let duration = USBWebcam.shellOutput(
            "ffprobe -v error -select_streams a:0 -show_entries stream=duration -of csv=p=0 '\(url.path)'"
        ).flatMap { Double(String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) }
        print("avcapture record --audio '\(USBWebcam.productName)': \(String(describing: duration)) s of sound")
        #expect(duration.map { $0 > 0 } == true, "\(String(describing: duration)) s of sound recorded")
    }

    @Test func formatsAndFrameRatesAreUVCVideos() throws {
        let (camera, _) = try USBWebcam.plug()
        var listed: [String] = []
        for format in camera.formats {
            let dimensions = CMVideoFormatDescriptionGetDimensions(format.formatDescription)
            let subType = CMFormatDescriptionGetMediaSubType(format.formatDescription)
            let rates = format.videoSupportedFrameRateRanges.map {
                "\(Int($0.minFrameRate.rounded()))-\(Int($0.maxFrameRate.rounded()))"
            }
            listed.append("\(FourCharCodeText(subType)) \(dimensions.width)x\(dimensions.height) \(rates)")
        }
        print("USB webcam formats: \(listed)")
        for (width, height) in [(Int32(1280), Int32(720)), (1920, 1080)] {
            let format = try #require(
                USBWebcam.format(camera, kCMVideoCodecType_JPEG, width, height), "MJPEG \(width)x\(height)")
            let rates = Set(
                format.videoSupportedFrameRateRanges.flatMap { [$0.minFrameRate.rounded(), $0.maxFrameRate.rounded()] })
            #expect(rates == [15, 30], "MJPEG \(width)x\(height): \(rates)")
        }
        let yuyv = try #require(USBWebcam.format(camera, kCVPixelFormatType_422YpCbCr8_yuvs, 640, 480), "YUYV 640x480")
        #expect(yuyv.videoSupportedFrameRateRanges.allSatisfy { $0.maxFrameRate.rounded() == 30 })
    }

    /// The instrument itself, below our code: uvcvideo hands v4l2-ctl every MJPEG 1280x720 frame at 30 fps, indices
    /// contiguous and every whole-second frame a flash. So a gap in the tests above is ours, not the emulator's.
    @Test func uvcvideoDeliversEveryFrameToV4L2Ctl() throws {
        _ = try USBWebcam.plug()
        let node = try #require(USBWebcam.videoNode())
        let stream = NSTemporaryDirectory() + "usb-webcam-\(getpid()).mjpg"
        defer { unlink(stream) }
        #expect(
            USBWebcam.shell(
                "v4l2-ctl -d \(node) --set-fmt-video=width=1280,height=720,pixelformat=MJPG --set-parm=30 "
                    + "--stream-mmap --stream-count=45 --stream-to=\(stream) >/dev/null 2>&1") == 0)
        let pixels = try #require(
            USBWebcam.shellOutput("ffmpeg -nostdin -v error -f mjpeg -i \(stream) -f rawvideo -pix_fmt gray -"))
        let size = 1280 * 720
        let frames = stride(from: 0, to: pixels.count - size + 1, by: size).map { start in
            let luma = [UInt8](pixels[start..<start + size])
            return (
                index: VirtualFrameReader.readFrameIndex(fromLuma: luma, width: 1280, height: 720),
                flash: VirtualFrameReader.isFlashFrame(luma: luma, width: 1280, height: 720)
            )
        }
        let listed = frames.map { $0.index.map(String.init) ?? "F" }
        print("v4l2-ctl from uvcvideo: \(frames.count) frames, indices \(listed)")
        #expect(frames.count == 45)
        #expect(frames.allSatisfy { $0.index != nil || $0.flash }, "every frame carries a code or is a flash")
        #expect(Self.indexGaps(frames.map(\.index)).isEmpty)
        #expect(frames.filter(\.flash).count >= 1, "a flash at the whole second in 1.5 s")
    }

    /// MJPEG 1280x720 into a video data output: uvcvideo's frames decoded, in order, and every frame index either
    /// delivered or reported dropped (`didDrop`): nothing lost silently. (Under the VM's emulated CPU a debug build
    /// does not decode 720p in real time, so drops happen there and are counted, not forbidden.)
    @Test func aVideoDataOutputAccountsForEveryMJPEGFrame() throws {
        let (camera, _) = try USBWebcam.plug()
        try Self.configure(camera, kCMVideoCodecType_JPEG, 1280, 720, fps: Self.recordingRate)
        try Self.expectEveryFrameAccountedFor(camera, width: 1280, height: 720, frames: 3 * Int(Self.recordingRate))
    }

    /// Runs `camera` into a video data output until `count` frames arrived: they are `width`x`height`, in order,
    /// and between two delivered frames the indices skipped are exactly the drops reported between them.
    static func expectEveryFrameAccountedFor(
        _ camera: AVCaptureDevice, width: Int, height: Int, frames count: Int
    )
        throws
    {
        let indices = Mutex<[(time: CMTime, index: UInt32?)]>([])
        let output = AVCaptureVideoDataOutput()
        let delegate = RecordingDelegate { sampleBuffer, _ in
            guard let image = sampleBuffer.imageBuffer else { return }
            let index = VirtualFrameReader.readFrameIndex(from: image)
            indices.withLock { $0.append((sampleBuffer.presentationTimeStamp, index)) }
        }
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "usb webcam frames"))
        let session = try makeSession(preset: .inputPriority, devices: [camera], outputs: [output])
        session.startRunning()
        #expect(delegate.wait(for: count, timeout: 120))
        session.stopRunning()
        let frames = delegate.received
        let seen = indices.withLock { $0 }
        let drops = delegate.dropped
        print(
            "USB webcam data output \(width)x\(height): \(frames.count) frames, \(drops.count) dropped "
                + "(\(Set(drops.compactMap(\.reason)))), pixel format "
                + "\(frames.first.map { FourCharCodeText($0.pixelFormat) } ?? "-"), "
                + "index gaps at \(Self.indexGaps(seen.map(\.index)))"
        )
        #expect(frames.allSatisfy { $0.width == width && $0.height == height })
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.time < $1.time })
        let readable = seen.compactMap { frame in frame.index.map { (time: frame.time, index: $0) } }
        try #require(readable.count >= 2, "no readable frame indices")
        for (earlier, later) in zip(readable, readable.dropFirst()) {
            let skipped = Int(later.index) - Int(earlier.index) - 1
            let deliveredBetween = seen.filter { $0.time > earlier.time && $0.time < later.time }.count
            let droppedBetween = drops.filter { $0.time > earlier.time && $0.time < later.time }.count
            #expect(
                deliveredBetween + droppedBetween == skipped,
                "\(earlier.index) → \(later.index): \(deliveredBetween) delivered, \(droppedBetween) dropped between")
        }
    }

    /// The USB microphone into an audio data output at 48 kHz: between two beeps the samples are exactly one second
    /// (48 000) apart, unless the presentation times show a gap there (an overrun: the host did not read in time,
    /// which the VM's emulated CPU can cause), and then the gap is in the timeline, so the beeps are still one second
    /// apart in presentation time. Nothing is lost silently. The microphone's clock against the host clock (the
    /// samples delivered over the presentation time they span) is printed.
    @Test func theUSBMicrophoneLosesNoSampleSilently() throws {
        let (_, microphone) = try USBWebcam.plug()
        let output = AVCaptureAudioDataOutput()
        let buffers = Mutex<[(time: CMTime, mono: [Float], rate: Double)]>([])
        let delegate = RecordingDelegate { sampleBuffer, _ in
            guard let asbd = sampleBuffer.formatDescription?.audioStreamBasicDescription else { return }
            let left = leftChannel(of: sampleBuffer)
            buffers.withLock { $0.append((sampleBuffer.presentationTimeStamp, left, asbd.mSampleRate)) }
        }
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "usb microphone"))
        let session = try makeSession(preset: .inputPriority, devices: [microphone], outputs: [output])
        session.startRunning()
        #expect(waitUntil(timeout: 60) { buffers.withLock { $0.reduce(0) { $0 + $1.mono.count } } >= 5 * 48_000 })
        session.stopRunning()
        let received = buffers.withLock { $0 }
        try #require(!received.isEmpty)
        #expect(received.allSatisfy { $0.rate == 48_000 })

        // Each buffer's first sample's position in the concatenated samples, and where the timeline jumps.
        var starts: [Int] = []
        var position = 0
        var gaps: [(position: Int, seconds: Double)] = []
        for (index, buffer) in received.enumerated() {
            starts.append(position)
            if index > 0 {
                let previous = received[index - 1]
                let expected = previous.time.seconds + Double(previous.mono.count) / 48_000
                if abs(buffer.time.seconds - expected) > 0.0005 {
                    gaps.append((position, buffer.time.seconds - expected))
                }
            }
            position += buffer.mono.count
        }
        func presentationTime(ofSample sample: Int) -> Double {
            let index = (starts.lastIndex { $0 <= sample }) ?? 0
            return received[index].time.seconds + Double(sample - starts[index]) / 48_000
        }
        let mono = received.flatMap(\.mono)
        let beeps = VirtualAudioReader.findBeeps(samples: mono, sampleRate: 48_000).map { Int(($0 * 48_000).rounded()) }
        print(
            "USB microphone: \(mono.count) samples in \(received.count) buffers, beeps at samples \(beeps), "
                + "timeline gaps \(gaps.map { "\($0.seconds * 1000) ms at sample \($0.position)" })")
        #expect(beeps.count >= 4)
        for (earlier, later) in zip(beeps, beeps.dropFirst()) where later - earlier != 48_000 {
            // Samples lost between these beeps (an overrun): the timeline must show a gap at least as long as the
            // lost samples spanned (less a little rounding). It may show more: after an overrun the next samples
            // are stamped when they reach the host, and under a loaded host the emulated device delivers them late
            // (measured: 222 ms lost, 669 ms of gap), which says "late", never "nothing lost".
            // A loss may take a beep with it (seen: 74 688 samples between the beeps either side, 0.444 s lost):
            // the beeps were then a whole number of seconds apart, at least the samples' count rounded up. Samples
            // repeated instead would read as nearly a second lost, which the timeline must then show as a gap.
            let byTimeline = presentationTime(ofSample: later) - presentationTime(ofSample: earlier)
            let bySamples = Double(later - earlier) / 48_000
            let lostSeconds = bySamples.rounded(.up) - bySamples
            let gapSeconds = byTimeline - bySamples
            #expect(
                gapSeconds >= lostSeconds - 0.010,
                "beeps \(later - earlier) samples apart, \(byTimeline) s in presentation time: a silent loss")
        }
        // Where nothing was lost the buffers' presentation times follow each other exactly (Apple's audio timeline
        // is continuous), however late the reads come under the VM's load (ALSAPeriodClock slews, never jumps),
        // with one exception the clock documents: a stream more than its `resyncThreshold` (one second) behind the
        // host clock is started again where it is. A real card cannot get there without an overrun, but the
        // emulated one stops making samples while the VM starves its process (seen: 1.004 s, every sample there).
        // Only between two beeps a second of samples apart is every sample known to be there: a gap before the first
        // beep, after the last or between beeps with samples lost may be an overrun (seen: 101 ms at sample 480, as
        // the VM stalled the reader right after the first period).
        let resync = 1.0
        let proven = zip(beeps, beeps.dropFirst()).filter { $1 - $0 == 48_000 }.flatMap { earlier, later in
            gaps.filter { $0.position > earlier && $0.position <= later }
        }
        #expect(
            proven.allSatisfy { $0.seconds >= resync }, "\(proven.count) timeline jumps with every sample present")
        let span = presentationTime(ofSample: mono.count) - presentationTime(ofSample: 0)
        let lost = gaps.reduce(0) { $0 + $1.seconds }
        let ppm = (Double(mono.count) / 48_000 / (span - lost) - 1) * 1_000_000
        print(
            "USB microphone clock: \(mono.count) samples over \(String(format: "%.4f", span - lost)) s of "
                + "presentation time, gaps excluded (\(String(format: "%.0f", ppm)) ppm against the host clock)")
    }

    /// Exposure, white balance and focus through Apple's API reach uvcvideo's controls (read back with
    /// v4l2-ctl, which asks the device); power line frequency, which has no Apple API, keeps the camera's value.
    @Test func everyDeclaredControlThroughApplesAPI() throws {
        let (camera, _) = try USBWebcam.plug()
        let node = try #require(USBWebcam.videoNode(), "no /dev/video node for the webcam in v4l2-ctl --list-devices")
        func controls() -> [String: Int] {
            let text = String(
                decoding: USBWebcam.shellOutput(
                    "v4l2-ctl -d \(node) -C auto_exposure,exposure_time_absolute,white_balance_automatic,"
                        + "white_balance_temperature,focus_automatic_continuous,focus_absolute,power_line_frequency")
                    ?? Data(), as: UTF8.self)
            var values: [String: Int] = [:]
            for line in text.split(whereSeparator: \.isNewline) {
                let parts = line.split(separator: ":").map { $0.trimmingCharacters(in: .whitespaces) }
                // A menu control reads `auto_exposure: 3 (Aperture Priority Mode)`: the number is what counts.
                if parts.count == 2, let value = Int(parts[1].prefix { $0 == "-" || $0.isNumber }) {
                    values[parts[0]] = value
                }
            }
            return values
        }
        print("USB webcam controls before: \(controls())")
        try #require(camera.isExposureModeSupported(.custom) && camera.isExposureModeSupported(.continuousAutoExposure))
        try #require(
            camera.isWhiteBalanceModeSupported(.locked) && camera.isLockingWhiteBalanceWithCustomDeviceGainsSupported)
        try #require(camera.isFocusModeSupported(.locked) && camera.isLockingFocusWithCustomLensPositionSupported)
        #expect(controls()["power_line_frequency"] == 1, "50 Hz, the camera's default (it offers no auto)")

        try camera.lockForConfiguration()
        camera.setExposureModeCustom(duration: CMTime(value: 1, timescale: 100), iso: AVCaptureDevice.currentISO)
        camera.setWhiteBalanceModeLocked(with: camera.deviceWhiteBalanceGains)
        camera.setFocusModeLocked(lensPosition: 0.5)
        camera.unlockForConfiguration()
        let locked = controls()
        print("USB webcam controls locked: \(locked)")
        #expect(camera.exposureMode == .custom)
        #expect(locked["auto_exposure"] == 1, "manual mode")
        #expect(locked["exposure_time_absolute"] == 100, "10 ms in 100 µs units")
        #expect(locked["white_balance_automatic"] == 0)
        #expect(locked["focus_automatic_continuous"] == 0)
        #expect((locked["focus_absolute"] ?? -1) > 0 && (locked["focus_absolute"] ?? 251) < 250, "half way")

        try camera.lockForConfiguration()
        camera.exposureMode = .continuousAutoExposure
        camera.whiteBalanceMode = .continuousAutoWhiteBalance
        camera.focusMode = .continuousAutoFocus
        camera.unlockForConfiguration()
        let automatic = controls()
        print("USB webcam controls automatic: \(automatic)")
        #expect(automatic["auto_exposure"] == 3, "aperture priority, the camera's automatic mode")
        #expect(automatic["white_balance_automatic"] == 1)
        #expect(automatic["focus_automatic_continuous"] == 1)
    }

    /// YUYV 640x480 into a video data output: raw frames in order, every frame index delivered or reported
    /// dropped. (USB/IP under the VM's emulation carries about 8 of the 30 YUYV frames a second.)
    @Test func aVideoDataOutputAccountsForEveryYUYVFrame() throws {
        let (camera, _) = try USBWebcam.plug()
        try Self.configure(camera, kCVPixelFormatType_422YpCbCr8_yuvs, 640, 480, fps: 30)
        try Self.expectEveryFrameAccountedFor(camera, width: 640, height: 480, frames: 20)
    }

    /// The webcam unplugged mid-recording: the movie finishes with `.deviceWasDisconnected` and plays.
    @Test func unpluggedMidRecordingTheMovieIsFinalized() throws {
        let (camera, microphone) = try USBWebcam.plug()
        try Self.configure(camera, kCMVideoCodecType_JPEG, 1280, 720, fps: Self.recordingRate)
        let output = AVCaptureMovieFileOutput()
        let session = try makeSession(preset: .inputPriority, devices: [camera, microphone], outputs: [output])
        if let video = output.connection(with: .video) {
            output.setOutputSettings([AVVideoCodecKey: AVVideoCodecType.jpeg], for: video)
        }
        session.startRunning()
        defer { session.stopRunning() }
        let url = try scratchURL("usb-webcam-unplugged.mov", suite: "usb-webcam")
        let delegate = USBRecordingDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        #expect(waitUntil(timeout: 60) { output.recordedDuration.seconds >= 1 }, "the recording never got going")
        #expect(USBWebcam.unplug(), "the webcam never went away")
        #expect(delegate.finished.wait(timeout: .now() + 60) == .success, "didFinish never came")
        #expect(delegate.error?.code == .deviceWasDisconnected, "\(String(describing: delegate.error))")
        let frames = try Self.decodedFrames(url, width: 1280, height: 720)
        print("USB webcam unplugged mid-recording: \(frames.frames.count) frames in the movie")
        #expect(frames.frames.count >= 2, "a playable movie with the frames before the unplug")
    }

    /// The webcam unplugged and plugged back in mid-recording with `survivesDisconnection`: uvcvideo and
    /// snd-usb-audio go and come back, and the recording goes on in the same file, the camera's gap a timestamp
    /// jump of its own gap, the microphone's gap silence, both devices lost and regained once.
    @Test func unpluggedAndPluggedBackTheRecordingGoesOnInTheSameFile() throws {
        let (camera, microphone) = try USBWebcam.plug()
        try Self.configure(camera, kCMVideoCodecType_JPEG, 1280, 720, fps: Self.recordingRate)
        let output = AVCaptureMovieFileOutput()
        output.survivesDisconnection = true
        let session = try makeSession(preset: .inputPriority, devices: [camera, microphone], outputs: [output])
        // As cheap as recording gets (the camera's JPEG and the microphone's AAC), for the VM's emulated CPU.
        if let video = output.connection(with: .video) {
            output.setOutputSettings([AVVideoCodecKey: AVVideoCodecType.jpeg], for: video)
        }
        session.startRunning()
        defer { session.stopRunning() }
        let url = try scratchURL("usb-webcam-replugged.mov", suite: "usb-webcam")
        let delegate = ReconnectionDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        #expect(delegate.waitForStart())
        #expect(waitUntil(timeout: 60) { output.recordedDuration.seconds >= 1.5 }, "the recording never got going")
        let unplugged = Date()
        #expect(USBWebcam.unplug(), "the webcam never went away")
        #expect(waitUntil(timeout: 30) { delegate.lostDevices.count == 2 }, "lost: \(delegate.lostDevices)")
        #expect(output.isRecording, "the recording ended with the webcam")
        _ = try USBWebcam.plug()
        let outage = Date().timeIntervalSince(unplugged)
        #expect(
            waitUntil(timeout: 60) { delegate.regainedDevices.count == 2 }, "regained: \(delegate.regainedDevices)")
        let gapEnd = delegate.regainedDevices.map(\.gap.end.seconds).max() ?? 0
        #expect(waitUntil(timeout: 60) { output.recordedDuration.seconds >= gapEnd + 1.5 }, "the recording stopped")
        output.stopRecording()
        #expect(delegate.waitForFinish(), "didFinish never came")
        #expect(delegate.error == nil, "\(String(describing: delegate.error))")
        #expect(
            Set(delegate.lostDevices.map(\.device)) == [camera.uniqueID, microphone.uniqueID]
                && Set(delegate.regainedDevices.map(\.device)) == [camera.uniqueID, microphone.uniqueID])
        #expect(
            USBWebcam.shellOutput("ls '\(url.deletingLastPathComponent().path)' | grep -c replugged")
                .map { String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) } == "1",
            "one file")

        // The file: frames before and after the camera's gap (the emulator's frame counter runs
        // on while unplugged), in order; the sound as long as the picture, with beeps after the gap.
        let frames = try Self.decodedFrames(url, width: 1280, height: 720)
        let times = try #require(
            USBWebcam.shellOutput(
                "ffprobe -v error -select_streams v:0 -show_entries frame=pts_time -of csv=p=0 '\(url.path)'")
        ).split(separator: UInt8(ascii: "\n")).compactMap {
            Double(String(decoding: $0, as: UTF8.self).split(separator: ",")[0])
        }
        let frame = 1.0 / Double(Self.recordingRate)
        let jumps = zip(times, times.dropFirst()).enumerated().filter { $0.element.1 - $0.element.0 > 0.4 }
        print(
            "USB webcam replugged mid-recording: \(times.count) frames, jumps \(jumps), outage \(outage) s, gaps \(delegate.regainedDevices.map(\.gap))"
        )
        // The jump of the camera's gap as the delegate was told it (its last frame's end to its first frame
        // after); the VM's emulated CPU may leave frames out elsewhere too, shorter jumps than this one.
        let cameraGap = try #require(delegate.regainedDevices.first { $0.device == camera.uniqueID }?.gap)
        let reconnection = try #require(
            jumps.first { abs(($0.element.1 - $0.element.0) - (cameraGap.duration.seconds + frame)) < 1.5 * frame },
            "no jump of the camera's gap \(cameraGap.duration.seconds) s in \(jumps)")
        #expect(reconnection.element.1 - reconnection.element.0 >= 0.5, "an unplug of less than half a second")
        #expect(reconnection.offset >= 5 && times.count - reconnection.offset >= 6, "frames before and after the gap")
        let readable = frames.frames.compactMap { $0 }
        #expect(readable.count >= 10, "\(readable.count) frames with a readable index")
        let audioLength = try #require(
            USBWebcam.shellOutput(
                "ffprobe -v error -select_streams a:0 -show_entries stream=duration -of csv=p=0 '\(url.path)'"
            ).flatMap { Double(String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) })
        let videoLength = (times.last ?? 0) + frame - (times.first ?? 0)
        // The microphone's outage is silence in the file, so the sound is not shorter than the picture (without
        // the silence it would be shorter by the outage, seconds). It may run on past the last frame: the VM's
        // emulated webcam stalls now and then (the jumps above), and a stall before the stop ends the picture
        // early while the sound goes on to the stop (seen: 0.83 s longer after a 4.7 s stall); never by more than
        // the longest stall the camera showed.
        let longestStall = jumps.map { $0.element.1 - $0.element.0 }.max() ?? frame
        // Shorter by half the microphone's gap at most: without the silence the sound would be shorter by all of it.
        // Half a second at least: with the host's two cores loaded, the emulated microphone's periods can lag the
        // picture at the stop, and the drain then ends on the picture's backstop short of the last frame (0.77 s
        // short once, after a 20 s outage in a run whose first boot took 823 s).
        let microphoneGap = delegate.regainedDevices.first { $0.device == microphone.uniqueID }?.gap.duration.seconds
        let shortfall = max(0.5, (microphoneGap ?? 0) / 2)
        #expect(
            audioLength >= videoLength - shortfall,
            "audio \(audioLength) s, video \(videoLength) s, microphone's gap \(microphoneGap ?? -1) s")
        #expect(
            audioLength <= videoLength + longestStall + 0.5,
            "audio \(audioLength) s, video \(videoLength) s, longest stall \(longestStall) s")
        let beeps = try Self.beepTimes(url)
        print("USB webcam replugged mid-recording: beeps at \(beeps), flashes at \(frames.flashes)")
        #expect(beeps.contains { $0 > times[reconnection.offset + 1] }, "no beep after the gap: \(beeps)")
    }

    /// Five seconds of MJPEG 1280x720 with the USB microphone into a movie: every frame index once, and
    /// each flash within one frame interval of its beep.
    @Test func recordsFiveSecondsOfMJPEG720pWithTheUSBMicrophone() throws {
        let (camera, microphone) = try USBWebcam.plug()
        try Self.configure(camera, kCMVideoCodecType_JPEG, 1280, 720, fps: Self.recordingRate)

        let output = AVCaptureMovieFileOutput()
        output.maxRecordedDuration = CMTime(value: 5, timescale: 1)
        let session = try makeSession(preset: .inputPriority, devices: [camera, microphone], outputs: [output])
        // Motion JPEG and linear PCM: the camera's frames and the microphone's samples written as they come, the
        // cheapest recording there is, so that the VM's emulated CPU (software emulation, no KVM) keeps up.
        if let video = output.connection(with: .video) {
            output.setOutputSettings([AVVideoCodecKey: AVVideoCodecType.jpeg], for: video)
        }
        if let audio = output.connection(with: .audio) {
            output.setOutputSettings([AVFormatIDKey: kAudioFormatLinearPCM], for: audio)
        }
        session.startRunning()
        defer { session.stopRunning() }
        let url = try scratchURL("usb-webcam-720p.mov", suite: "usb-webcam")
        let delegate = USBRecordingDelegate()
        let cpuBefore = processCPUSeconds()
        let wallBefore = Date()
        output.startRecording(to: url, recordingDelegate: delegate)
        #expect(delegate.finished.wait(timeout: .now() + 120) == .success, "didFinish never came")
        #expect(delegate.error?.code == .maximumDurationReached, "\(String(describing: delegate.error))")
        print(
            "USB webcam recording: \(output.recordingStatistics), process CPU "
                + "\(String(format: "%.2f", processCPUSeconds() - cpuBefore)) s in "
                + "\(String(format: "%.2f", Date().timeIntervalSince(wallBefore))) s")

        let pixelFormats = String(
            decoding: USBWebcam.shellOutput(
                "ffprobe -v error -select_streams v:0 -show_entries frame=pix_fmt -of csv=p=0 '\(url.path)' | sort | uniq -c"
            )
                ?? Data(), as: UTF8.self)
        print("USB webcam recording: frame formats \(pixelFormats.split(whereSeparator: \.isNewline))")
        let indices = try Self.decodedFrames(url, width: 1280, height: 720)
        let readable = indices.frames.compactMap { $0 }
        print(
            "USB webcam recording: \(indices.frames.count) frames, indices \(readable.first.map(String.init) ?? "-")"
                + "…\(readable.last.map(String.init) ?? "-"), index gaps at \(Self.indexGaps(indices.frames)), "
                + "flashes at "
                + "\(indices.flashes)")
        #expect(indices.frames.count >= 2, "a playable movie with video")
        #expect(zip(readable, readable.dropFirst()).allSatisfy { $0 < $1 }, "frame indices in order")
        // Every frame once: only where the VM keeps up. Measured in the VM (software emulation, debug build), the
        // frames and samples written as they come: on an idle host every frame (75 of 75, 4.1 s of CPU in 5.3 s,
        // A/V offset 9–10.5 ms); with the host's two cores shared with other builds 60 of 75 (FrameWasLate). With
        // AAC it kept 9 to 25 under that load. On a real CPU the same recording costs a few percent of a core.
        withKnownIssue(
            "under a loaded host the VM cannot keep up with 720p at 15 fps in a debug build", isIntermittent: true
        ) {
            #expect(indices.frames.count == 5 * Int(Self.recordingRate), "\(indices.frames.count) frames in 5 s")
            #expect(Self.indexGaps(indices.frames).isEmpty, "gaps: \(Self.indexGaps(indices.frames))")
        }

        let beeps = try Self.beepTimes(url)
        print("USB webcam recording: beeps at \(beeps)")
        // The microphone loses nothing silently (theUSBMicrophoneLosesNoSampleSilently), so the movie should hold a
        // beep every second, one second apart, each within a frame interval of its flash. In the VM the emulated
        // microphone's samples come 0.7 to 1 % slower than the host clock while the camera is streaming and the
        // host is loaded (its isochronous transfers are served late under software emulation; 168–248 ppm on an
        // idle host, where the beeps are 7.8–10.6 ms from their flashes): the period clock follows at its 1 % slew
        // limit, the writer fills the difference with silence to stay on the timestamps (beeps 1.0105 s apart), and
        // the A/V offset wanders by up to 80 ms over 5 s. Even idle, the clock settling in the first second can
        // cost that second 2 ms of filled silence (99 samples between the first two beeps, seen once).
        withKnownIssue("under a loaded host the emulated microphone runs about 1 % slow", isIntermittent: true) {
            #expect(beeps.count >= 4)
            // A beep that began before the file did is found where the file starts, short of its onset: only whole
            // beeps (from 60 ms on) are spaced (one found at 0.050 s lay 96 samples off its neighbour's second).
            let whole = beeps.filter { $0 >= 0.06 }
            let spacings = zip(whole, whole.dropFirst()).map { ($1 - $0) * 48_000 }
            #expect(spacings.allSatisfy { abs($0 - 48_000) < 2 }, "beeps \(spacings) samples apart in the movie")
            for flash in indices.flashes {
                guard let beep = beeps.min(by: { abs($0 - flash) < abs($1 - flash) }) else { continue }
                print("A/V offset (beep − flash): \(String(format: "%.1f", (beep - flash) * 1000)) ms")
                #expect(abs(beep - flash) <= 1.0 / Double(Self.recordingRate), "flash at \(flash) s, beep at \(beep) s")
            }
        }
    }

    /// Makes the camera's `subType` format at `width`x`height` active, at `fps`.
    static func configure(
        _ camera: AVCaptureDevice, _ subType: FourCharCode, _ width: Int32, _ height: Int32, fps: Int32
    ) throws {
        let format = try #require(USBWebcam.format(camera, subType, width, height))
        try camera.lockForConfiguration()
        camera.activeFormat = format
        camera.activeVideoMinFrameDuration = CMTime(value: 1, timescale: fps)
        camera.activeVideoMaxFrameDuration = CMTime(value: 1, timescale: fps)
        camera.unlockForConfiguration()
    }

    // MARK: Reading the file back (ffmpeg through the shell, into scratch files)

    /// Every decoded frame's index (nil for a flash) and the flash frames' times in seconds.
    static func decodedFrames(_ url: URL, width: Int, height: Int) throws -> (frames: [UInt32?], flashes: [Double]) {
        let pixels = try #require(
            USBWebcam.shellOutput(
                "ffmpeg -nostdin -v error -i '\(url.path)' -map 0:v:0 -fps_mode passthrough -f rawvideo -pix_fmt gray -"
            ),
            "ffmpeg could not decode \(url.path)")
        let times = try #require(
            USBWebcam.shellOutput(
                "ffprobe -v error -select_streams v:0 -show_entries frame=pts_time -of csv=p=0 '\(url.path)'"))
        let frameTimes = String(decoding: times, as: UTF8.self).split(whereSeparator: \.isNewline).compactMap {
            $0.split(separator: ",").first.flatMap { Double($0) }
        }
        let size = width * height
        let bytes = [UInt8](pixels)
        try #require(bytes.count % size == 0 && bytes.count / size == frameTimes.count)
        var frames: [UInt32?] = []
        var flashes: [Double] = []
        for (position, start) in stride(from: 0, to: bytes.count, by: size).enumerated() {
            let luma = Array(bytes[start..<start + size])
            frames.append(VirtualFrameReader.readFrameIndex(fromLuma: luma, width: width, height: height))
            if VirtualFrameReader.isFlashFrame(luma: luma, width: width, height: height) {
                flashes.append(frameTimes[position])
            }
        }
        return (frames, flashes)
    }

    /// Where readable indices do not step by one per frame (flash frames, which carry no code, step over).
    static func indexGaps(_ frames: [UInt32?]) -> [Int] {
        var gaps: [Int] = []
        var last: (position: Int, index: UInt32)?
        for (position, index) in frames.enumerated() {
            guard let index else { continue }
            if let last, Int(index) - Int(last.index) != position - last.position { gaps.append(position) }
            last = (position, index)
        }
        return gaps
    }

    /// The beeps' onsets in the file's audio, in seconds.
    static func beepTimes(_ url: URL) throws -> [Double] {
        let decoded = try #require(
            USBWebcam.shellOutput(
                "ffmpeg -nostdin -v error -i '\(url.path)' -map 0:a:0 -ac 1 -ar 48000 -f f32le -"))
        let samples = decoded.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        return VirtualAudioReader.findBeeps(samples: samples, sampleRate: 48_000)
    }
}

/// Four characters of a codec or pixel format code.
private func FourCharCodeText(_ code: FourCharCode) -> String {
    String(decoding: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: code >> $0) }, as: UTF8.self)
}

/// A recording delegate that keeps the finishing error and signals the finish.
private final class USBRecordingDelegate: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
    let finished = DispatchSemaphore(value: 0)
    private let finishError = Mutex<AVError?>(nil)
    var error: AVError? { finishError.withLock { $0 } }

    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?
    ) {
        finishError.withLock { $0 = error as? AVError }
        finished.signal()
    }
}

/// CPU seconds the process has used (every thread).
func processCPUSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
