import CLinuxMedia
import CaptureDrivers
import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The V4L2 driver against the kernel's own virtual camera, `vivid`: only where it is loaded (the VM that
/// `make test-kernel` boots with scripts/kernel-vm); everywhere else these skip, saying why. Where
/// `v4l2-ctl` is installed (it is in the VM), what we list and set is checked against what it reads.
@Suite(.serialized, .enabled(if: VividCamera.camera != nil, VividCamera.skipReason))
struct V4L2KernelTests {
    var camera: V4L2Camera { VividCamera.camera! }

    @Test func enumeratesVividWithItsFormats() throws {
        #expect(camera.identity.localizedName == "vivid")
        #expect(camera.identity.modelID == "vivid:vivid")
        #expect(camera.identity.uniqueID.hasPrefix("v4l2:platform:vivid-000") || camera.identity.uniqueID.contains("vivid"))
        let listed = Set(
            camera.formats.compactMap { format -> String? in
                guard case .video(let video) = format else { return nil }
                return "\(video.mediaSubType) \(video.width)x\(video.height)"
            })
        print("vivid: \(camera.formats.count) formats")
        // Every format we deliver natively, at every size vivid's webcam input offers.
        let native: [FourCharCode] = [
            kCVPixelFormatType_422YpCbCr8_yuvs, kCVPixelFormatType_422YpCbCr8,
            kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr8Planar,
            kCVPixelFormatType_OneComponent8, kCVPixelFormatType_24RGB, kCVPixelFormatType_24BGR,
        ]
        for subType in native {
            for size in ["320x180", "640x360", "640x480", "1280x720", "1920x1080", "3840x2160"] {
                #expect(listed.contains("\(subType) \(size)"), "\(fourCharCodeDescription(subType)) \(size)")
            }
        }
        // 640x480 runs at 1...25 fps on vivid's webcam input.
        let vga = try #require(videoFormat(640, 480, kCVPixelFormatType_422YpCbCr8_yuvs))
        #expect(vga.maxFrameRate == 25)
        #expect(vga.frameDurationRanges.contains { $0.maxFrameDuration == CMTime(value: 1, timescale: 1) })

        // v4l2-ctl, read independently, lists the same pixel formats and sizes for the ones we map.
        guard let listing = Tool.run("v4l2-ctl", ["-d", camera.path, "--list-formats-ext"]) else {
            print("v4l2-ctl is not installed: the format list is not cross-checked")
            return
        }
        let theirs = v4l2CtlFormats(listing)
        #expect(!theirs.isEmpty)
        #expect(theirs == listed)
    }

    @Test func mapsGainToISOAndSetsIt() throws {
        let controls = camera.cameraControls
        let capabilities = controls.capabilities
        // vivid has gain and automatic gain, and no focus, exposure time, white balance or zoom.
        #expect(capabilities.exposureModes == [.continuousAutoExposure, .custom, .locked])
        #expect(capabilities.isoRange == 100...1600)
        #expect(capabilities.exposureDurationRange == nil)
        #expect(capabilities.focusModes.isEmpty)
        #expect(capabilities.whiteBalanceModes.isEmpty)
        #expect(!capabilities.hasTorch)

        controls.apply(.customExposure(duration: nil, iso: 850), completion: nil)
        #expect(controls.state.exposureMode == .custom)
        // 850 is half way along 100...1600: gain 128 of 0...255.
        #expect(abs(controls.state.iso - 850) < 6)
        if let gain = Tool.control("gain", of: camera.path), let automatic = Tool.control("gain_automatic", of: camera.path) {
            #expect(gain == 128)
            #expect(automatic == 0)
        }
        controls.apply(.customExposure(duration: nil, iso: 100), completion: nil)
        #expect(controls.state.iso == 100)
        #expect(Tool.control("gain", of: camera.path).map { $0 == 0 } ?? true)
        controls.apply(.exposureMode(.continuousAutoExposure), completion: nil)
        #expect(controls.state.exposureMode == .continuousAutoExposure)
        #expect(Tool.control("gain_automatic", of: camera.path).map { $0 == 1 } ?? true)
    }

    @Test func streams60FramesOfYUYVAt640x480() throws {
        let frames = try stream(640, 480, kCVPixelFormatType_422YpCbCr8_yuvs, frames: 60) { buffer in
            // vivid's 75% colour bars: white (Y 180) at the left, black (Y 16) at the right, on the middle row.
            buffer.withUnsafePlane(0) { bytes, bytesPerRow in
                let row = 240 * bytesPerRow
                return (bytes[row + 2 * 20], bytes[row + 2 * 620])
            }
        }
        for (white, black) in frames.map(\.luma) {
            #expect(white > 150, "left bar is white")
            #expect(black < 40, "right bar is black")
        }
    }

    @Test func streamsNV12At320x180() throws {
        let frames = try stream(
            320, 180, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, frames: 30, duration: CMTime(value: 1, timescale: 30)
        ) { buffer in
            buffer.withUnsafePlane(0) { bytes, bytesPerRow in (bytes[90 * bytesPerRow + 10], bytes[90 * bytesPerRow + 310]) }
        }
        #expect(frames.allSatisfy { $0.luma.0 > 150 && $0.luma.1 < 40 })
    }

    @Test func anotherProcessStreamingMakesItBusyAndIsNamed() throws {
        // v4l2-ctl streams from vivid in a child process; our start then finds the queue taken.
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/v4l2-ctl") else {
            print("v4l2-ctl is not installed: the busy case is left to the trace tests")
            return
        }
        var child: pid_t = 0
        let words = ["/usr/bin/v4l2-ctl", "-d", camera.path, "--stream-mmap", "--stream-count=100000"]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { word in word.withCString { strdup($0) } } + [nil]
        defer { argv.forEach { free($0) } }
        // Its output is a pipe: v4l2-ctl prints '<' for every frame (on standard error), so the first says it streams.
        var pipeEnds: [Int32] = [0, 0]
        try #require(pipe(&pipeEnds) == 0)
        defer { close(pipeEnds[0]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 2)
        posix_spawn_file_actions_addclose(&actions, pipeEnds[0])
        let spawned = posix_spawn(&child, words[0], &actions, nil, argv, environ)
        close(pipeEnds[1])
        try #require(spawned == 0)
        defer {
            kill(child, SIGKILL)
            var status: Int32 = 0
            waitpid(child, &status, 0)
        }
        var output = pollfd(fd: pipeEnds[0], events: Int16(POLLIN), revents: 0)
        var byte: UInt8 = 0
        var streaming = false
        while !streaming, poll(&output, 1, 20_000) > 0, read(pipeEnds[0], &byte, 1) == 1 {
            streaming = byte == UInt8(ascii: "<")
        }
        try #require(streaming, "v4l2-ctl did not start streaming")
        let format = try #require(videoFormat(640, 480, kCVPixelFormatType_422YpCbCr8_yuvs))
        let configuration = StreamConfiguration(format: .video(format), frameDuration: CMTime(value: 1, timescale: 25))
        var fault: DeviceFault?
        do {
            try camera.start(configuration) { _ in }
            camera.stop()
        } catch {
            fault = error
        }
        print("vivid held by v4l2-ctl: \(String(describing: fault))")
        #expect(fault?.kind == .busy)
        #expect(fault?.advice?.contains("v4l2-ctl (pid \(child))") == true)
        #expect(camera.isInUseByAnotherApplication)
    }

    struct StreamedFrame {
        var sequence: UInt64
        var time: CMTime
        var address: UInt
        var luma: (UInt8, UInt8)
    }

    /// Streams `count` frames at `duration` (default: the format's fastest rate) and checks what every V4L2 stream must be: the format
    /// asked for, times on the host clock a frame apart, the kernel's buffers reused in place.
    private func stream(
        _ width: Int32, _ height: Int32, _ subType: FourCharCode, frames count: Int, duration: CMTime? = nil,
        read: @escaping @Sendable (CVPixelBuffer) -> (UInt8, UInt8)
    ) throws -> [StreamedFrame] {
        let format = try #require(videoFormat(width, height, subType))
        let duration = duration ?? format.frameDurationRanges.map(\.minFrameDuration).min()!
        let collected = Collected()
        let started = CMClock.hostNanosecondsNow()
        try camera.start(StreamConfiguration(format: .video(format), frameDuration: duration)) { event in
            switch event {
            case .output(let sample, let sequence):
                guard let image = sample.imageBuffer else { return }
                CVPixelBufferLockBaseAddress(image, .readOnly)
                let address = CVPixelBufferIsPlanar(image)
                    ? CVPixelBufferGetBaseAddressOfPlane(image, 0) : CVPixelBufferGetBaseAddress(image)
                CVPixelBufferUnlockBaseAddress(image, .readOnly)
                let ok =
                    CVPixelBufferGetWidth(image) == Int(width) && CVPixelBufferGetHeight(image) == Int(height)
                    && CVPixelBufferGetPixelFormatType(image) == subType
                collected.add(
                    StreamedFrame(
                        sequence: sequence, time: sample.presentationTimeStamp,
                        address: ok ? UInt(bitPattern: address) : 0, luma: read(image)))
            case .dropped(let sequence, _, let reason):
                collected.drop("\(sequence) \(reason)")
            case .fault(let fault):
                collected.drop("fault \(fault)")
            }
        }
        defer { camera.stop() }
        // Slack for software emulation: vivid renders every frame on the emulated CPU.
        #expect(collected.wait(for: count, timeout: 30 + Double(count) * duration.seconds * 4))
        let frames = collected.frames
        let ended = CMClock.hostNanosecondsNow()
        print("vivid \(width)x\(height) \(fourCharCodeDescription(subType)): \(frames.count) frames, drops: \(collected.drops)")
        #expect(frames.count >= count)
        #expect(frames.allSatisfy { $0.address != 0 }, "every frame has the size and pixel format asked for")
        // Host clock: inside the run, increasing, about a frame duration apart on average. vivid stamps a frame with
        // its nominal end-of-frame time (start + period × sequence), which may lead the clock by up to a frame.
        let lead = 2 * Int64(duration.seconds * 1e9)
        #expect(
            frames.allSatisfy { $0.time.value > started && $0.time.value < ended + lead },
            "started \(started), ended \(ended), frames \(frames.first!.time.value)...\(frames.last!.time.value)")
        for (earlier, later) in zip(frames, frames.dropFirst()) {
            #expect(
                earlier.time < later.time && earlier.sequence < later.sequence,
                "frame \(earlier.sequence) at \(earlier.time.value), then \(later.sequence) at \(later.time.value)")
        }
        let span = (frames.last!.time - frames.first!.time).seconds
        let perFrame = span / Double(frames.last!.sequence - frames.first!.sequence)
        #expect(abs(perFrame - duration.seconds) < duration.seconds * 0.2, "\(perFrame) s per frame")
        // Zero copy: the frames are the kernel's few buffers, over and over.
        #expect(Set(frames.map(\.address)).count <= Int(V4L2Camera.requestedBufferCount))
        return frames
    }

    private func videoFormat(_ width: Int32, _ height: Int32, _ subType: FourCharCode) -> VideoFormat? {
        camera.formats.lazy.compactMap { format -> VideoFormat? in
            guard case .video(let video) = format, video.width == width, video.height == height,
                video.mediaSubType == subType
            else { return nil }
            return video
        }.first
    }
}

/// vivid's capture node, found once.
enum VividCamera {
    static let camera: V4L2Camera? = V4L2CameraDriver().discoverDevices().lazy.compactMap { $0 as? V4L2Camera }
        .first { $0.identity.modelID.hasPrefix("vivid:") }

    static let skipReason: Comment =
        "no vivid camera here: the kernel tests run in the VM (`make test-kernel`, scripts/kernel-vm)"
}

/// Frames collected on the capture thread, waited for on the test's.
final class Collected: @unchecked Sendable {
    private let lock = NSCondition()
    private var storedFrames: [V4L2KernelTests.StreamedFrame] = []
    private var storedDrops: [String] = []

    func add(_ frame: V4L2KernelTests.StreamedFrame) {
        lock.lock()
        storedFrames.append(frame)
        lock.broadcast()
        lock.unlock()
    }

    func drop(_ text: String) {
        lock.lock()
        storedDrops.append(text)
        lock.unlock()
    }

    var frames: [V4L2KernelTests.StreamedFrame] {
        lock.lock()
        defer { lock.unlock() }
        return storedFrames
    }

    var drops: [String] {
        lock.lock()
        defer { lock.unlock() }
        return storedDrops
    }

    func wait(for count: Int, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock()
        defer { lock.unlock() }
        while storedFrames.count < count {
            if !lock.wait(until: deadline) { return storedFrames.count >= count }
        }
        return true
    }
}

/// Outside tools the kernel tests check against, when installed. Spawned with posix_spawn rather than Foundation's
/// `Process`, whose run-loop wake-up socket pair could not be made in the VM (and whose wait then never returned).
enum Tool {
    /// The tool's standard output, or nil when it is not installed or fails.
    static func run(_ name: String, _ arguments: [String]) -> String? {
        let paths = ["/usr/bin/\(name)", "/bin/\(name)", "/usr/sbin/\(name)", "/sbin/\(name)"]
        guard let path = paths.first(where: FileManager.default.isExecutableFile(atPath:)) else { return nil }
        guard let (status, output) = spawn(path, arguments), status == 0 else { return nil }
        return output
    }

    /// A control's value as `v4l2-ctl --get-ctrl` reads it.
    static func control(_ name: String, of path: String) -> Int? {
        guard let text = run("v4l2-ctl", ["-d", path, "--get-ctrl", name]) else { return nil }
        return text.split(separator: ":").last.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }
}

/// Runs `path` with `arguments`, standard output captured (standard error discarded); its exit status and output.
func spawn(_ path: String, _ arguments: [String]) -> (status: Int32, output: String)? {
    var pipeEnds: [Int32] = [0, 0]
    guard pipe(&pipeEnds) == 0 else { return nil }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addclose(&actions, pipeEnds[0])
    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var child: pid_t = 0
    let spawned = posix_spawn(&child, path, &actions, nil, argv, environ)
    close(pipeEnds[1])
    defer { close(pipeEnds[0]) }
    guard spawned == 0 else { return nil }
    var output = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = read(pipeEnds[0], &chunk, chunk.count)
        if count > 0 { output += chunk[..<count] } else if count == 0 || errno != EINTR { break }
    }
    var status: Int32 = 0
    while waitpid(child, &status, 0) < 0 && errno == EINTR {}
    let exited = status & 0x7f == 0
    return (exited ? (status >> 8) & 0xff : -1, String(decoding: output, as: UTF8.self))
}

/// What `v4l2-ctl --list-formats-ext` lists, as "mediaSubType WIDTHxHEIGHT" for each discrete size of each pixel
/// format, the four-character codes mapped as the driver maps them (NM12 and NV12 both '420v').
func v4l2CtlFormats(_ listing: String) -> Set<String> {
    var formats = Set<String>()
    var current: FourCharCode?
    for line in listing.split(separator: "\n") {
        if let open = line.firstIndex(of: "'"), line.contains("]:") {
            let code = line[line.index(after: open)...].prefix(4).utf8.enumerated().reduce(UInt32(0)) {
                $0 | UInt32($1.element) << (8 * UInt32($1.offset))
            }
            current = V4L2PixelFormat(rawValue: code).mediaSubType
        } else if let current, line.contains("Size: Discrete") {
            formats.insert("\(current) \(line.split(separator: " ").last!)")
        }
    }
    return formats
}
