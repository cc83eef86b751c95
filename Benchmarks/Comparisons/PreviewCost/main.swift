// What showing the camera costs, in one run on one machine (machines are shared: the ratios and differences
// against the baseline measured in the same run are what count):
//
//   window:  the virtual camera at 1920x1080 30 fps in a session, alone (baseline), then with a PreviewWindow
//            (OpenAVCaptureUI, SDL2) drawing it on an X server (Xvfb, started here when DISPLAY is unset).
//            CPU of this process per second above the baseline, and the frames' age when their present returned
//            (host clock minus presentation time): p50 and p90.
//   browser: the virtual camera at 1280x720 30 fps with a WebPreviewServer (OpenAVCaptureWeb) and no viewer
//            (baseline), then 1 and 4 viewers (curl children reading /stream; their own CPU is counted too), and
//            the age of each JPEG part when it has fully arrived at a loopback client (decode not included).
//
// Run: swift run -c release PreviewCost [--seconds 5] [--drawing gpu|cpu]

import Foundation
import OpenAVCapture
import OpenAVCaptureUI
import OpenAVCaptureWeb

let arguments = CommandLine.arguments
let seconds = arguments.firstIndex(of: "--seconds").flatMap { Double(arguments[$0 + 1]) } ?? 5
setenv("OPENAV_DEVICES", "virtual", 1)

func cpuSeconds(_ who: Int32) -> Double {
    var usage = rusage()
    getrusage(who, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// CPU (this process, and the children `body` starts and `finish` waits for) per wall second over `seconds`.
func cpuLoad(_ body: () -> Void = {}, finish: () -> Void = {}) -> Double {
    let start = (cpuSeconds(RUSAGE_SELF.rawValue) + cpuSeconds(RUSAGE_CHILDREN.rawValue), Date())
    body()
    let deadline = start.1.addingTimeInterval(seconds)
    while Date() < deadline { usleep(20_000) }
    finish()
    return (cpuSeconds(RUSAGE_SELF.rawValue) + cpuSeconds(RUSAGE_CHILDREN.rawValue) - start.0) / Date().timeIntervalSince(start.1)
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
}

func cameraSession(_ preset: AVCaptureSession.Preset) -> (AVCaptureSession, AVCaptureVideoPreviewLayer) {
    let session = AVCaptureSession()
    session.beginConfiguration()
    session.sessionPreset = preset
    let camera = AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back)!
    session.addInput(try! AVCaptureDeviceInput(device: camera))
    session.commitConfiguration()
    return (session, AVCaptureVideoPreviewLayer(session: session))
}

/// An Xvfb of our own when there is no display.
func ensureDisplay() -> Process? {
    if ProcessInfo.processInfo.environment["DISPLAY"] != nil { return nil }
    let xvfb = Process()
    xvfb.executableURL = URL(fileURLWithPath: "/usr/bin/Xvfb")
    xvfb.arguments = ["-displayfd", "1", "-screen", "0", "1920x1080x24", "-nolisten", "tcp"]
    let pipe = Pipe()
    xvfb.standardOutput = pipe
    xvfb.standardError = FileHandle.nullDevice
    try! xvfb.run()
    var number = Data()
    while !number.contains(UInt8(ascii: "\n")) {
        let chunk = pipe.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        number.append(chunk)
    }
    setenv("DISPLAY", ":" + String(decoding: number, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines), 1)
    return xvfb
}

// MARK: The window at 1080p30

let xvfb = ensureDisplay()
do {
    let (session, layer) = cameraSession(.hd1920x1080)
    session.startRunning()
    usleep(1_000_000)  // past the start (format change, first frames)
    let baseline = cpuLoad()
    print("window 1080p30 in a 1920x1080 window (session alone: \(String(format: "%.1f", baseline * 100)) % of a core):")
    // Both ways of drawing, one after the other on the same session: frames as they are (SDL's OpenGL renderer
    // converts and scales; on a machine without a GPU that is a software rasterizer), and libswscale's frames
    // for SDL's software renderer (what `.automatic` picks there).
    let only = arguments.firstIndex(of: "--drawing").map { arguments[$0 + 1] }
    for drawing in [PreviewWindow.Drawing.gpu, .cpu] where only == nil || only == "\(drawing)" {
        let window = PreviewWindow(
            layer: layer, title: "PreviewCost", size: CGSize(width: 1920, height: 1080), position: .zero,
            drawing: drawing)
        let closed = DispatchSemaphore(value: 0)
        let thread = Thread {
            try? window.run()
            closed.signal()
        }
        thread.start()
        guard window.waitForFirstFrame(timeout: 20) else { fatalError("the window drew nothing") }
        usleep(1_000_000)
        let drawnBefore = window.statistics.framesDrawn
        let withWindow = cpuLoad()
        let statistics = window.statistics
        window.stop()
        closed.wait()  // SDL lets go of the X server before it goes
        print("  \(drawing) (renderer \(window.rendererName)):")
        print(String(format: "    CPU with the window %.1f %% of a core: the window costs %.1f %%",
                     withWindow * 100, (withWindow - baseline) * 100))
        print(String(format: "    drawn %.1f fps, skipped %d; frame age at present p50 %.1f ms, p90 %.1f ms",
                     Double(statistics.framesDrawn - drawnBefore) / seconds, statistics.framesSkipped,
                     percentile(statistics.recentFrameAges, 0.5) * 1000, percentile(statistics.recentFrameAges, 0.9) * 1000))
    }
    session.stopRunning()
}
xvfb?.terminate()

// MARK: The browser at 720p30

final class NoActions: WebCameraActions {
    func focus(atDevicePoint point: CGPoint) {}
    func expose(atDevicePoint point: CGPoint) {}
    func resetFocusAndExposure() {}
    func switchCamera() -> Bool { false }
    func setFlashMode(_ mode: String) -> Bool { false }
    func setTorchMode(_ mode: String) -> Bool { false }
    func zoom(toValue value: Double) {}
    func takePhoto() {}
    func toggleRecording() {}
    func status() -> WebCameraStatus {
        WebCameraStatus(
            camera: "", cameras: [], hasFlash: false, flashMode: "off", hasTorch: false, torchMode: "off", zoomValue: 0,
            isRecording: false, recordedSeconds: 0, audioLevel: nil, focusPoint: [0.5, 0.5], exposurePoint: [0.5, 0.5])
    }
}

/// Ages of the JPEG parts a loopback client receives for `seconds` (host clock at arrival minus the part's
/// X-Presentation-Time).
func partAges(port: Int) -> [Double] {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    _ = "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n".withCString { send(fd, $0, strlen($0), 0) }
    var pending = [UInt8]()
    var ages: [Double] = []
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    let deadline = Date().addingTimeInterval(seconds)
    let marker = Array("X-Presentation-Time: ".utf8)
    while Date() < deadline {
        let count = recv(fd, &buffer, buffer.count, 0)
        if count <= 0 { break }
        pending += buffer[0..<count]
        // A part is complete when its header's Content-Length bytes have arrived.
        while let headerEnd = pending.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound {
            let header = String(decoding: pending[..<headerEnd], as: UTF8.self)
            guard let lengthLine = header.split(separator: "\r\n").first(where: { $0.hasPrefix("Content-Length: ") }),
                let length = Int(lengthLine.dropFirst(16))
            else { pending.removeSubrange(..<headerEnd); continue }
            guard pending.count >= headerEnd + length else { break }
            if let range = pending[..<headerEnd].firstRange(of: marker) {
                let value = String(decoding: pending[range.upperBound...].prefix { $0 != 13 }, as: UTF8.self)
                if let pts = Double(value) { ages.append(CMTimeGetSeconds(CMClockGetTime(.hostTimeClock)) - pts) }
            }
            pending.removeSubrange(..<(headerEnd + length))
        }
    }
    return ages
}

if !arguments.contains("--drawing") {  // one way of drawing the window asked for: the window alone
    let (session, layer) = cameraSession(.hd1280x720)
    session.startRunning()
    usleep(1_000_000)  // past the start (format change, first frames)
    let baseline = cpuLoad()
    let server = try! WebPreviewServer(
        layer: layer, actions: NoActions(),
        configuration: .init(port: 0, maximumViewers: 8, mediaDirectory: FileManager.default.temporaryDirectory))
    let portBox = NSLock()
    nonisolated(unsafe) var port = 0
    Task.detached { try await server.run { url in portBox.withLock { port = url.port ?? 0 } } }
    session.startRunning()
    while portBox.withLock({ port }) == 0 { usleep(10_000) }
    let url = "http://127.0.0.1:\(port)/stream"
    func viewers(_ count: Int) -> [Process] {
        (0..<count).map { _ in
            let curl = Process()
            curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            curl.arguments = ["-s", "-o", "/dev/null", "--max-time", String(Int(seconds)), url]
            try! curl.run()
            return curl
        }
    }
    let idle = cpuLoad()
    var children: [Process] = []
    let one = cpuLoad({ children = viewers(1) }, finish: { children.forEach { $0.waitUntilExit() } })
    let four = cpuLoad({ children = viewers(4) }, finish: { children.forEach { $0.waitUntilExit() } })
    let ages = partAges(port: port)
    server.stop()
    session.stopRunning()
    print("browser 720p30 (MJPEG over multipart):")
    print(String(format: "  CPU: session alone %.1f %% of a core; with the server: no viewer %.1f %%, 1 viewer %.1f %%,"
                 + " 4 viewers %.1f %%", baseline * 100, idle * 100, one * 100, four * 100))
    print(String(format: "  the first viewer costs %.1f %% (the JPEG encode is shared), each further one %.1f %%",
                 (one - idle) * 100, (four - one) / 3 * 100))
    print(String(format: "  %d parts in %.0f s; age at arrival p50 %.1f ms, p90 %.1f ms", ages.count, seconds,
                 percentile(ages, 0.5) * 1000, percentile(ages, 0.9) * 1000))
}
