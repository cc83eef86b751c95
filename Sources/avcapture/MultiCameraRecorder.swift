import ArgumentParser
import Foundation
import OpenAVCapture

/// `--video DEVICE` for `record`, repeatable: several cameras record at once, one movie each.
struct RecordCameraOptions: ParsableArguments {
    @Option(
        name: .customLong("video"),
        help: ArgumentHelp(
            "Camera: an index, uniqueID, /dev/videoN, 'virtual', part of its name, file:PATH, or 'none'. Repeat it to "
                + "record several cameras at once, one movie each (OUTPUT names them with %c).",
            valueName: "device"))
    var videos: [String] = []

    /// The first (or only) camera named.
    var video: String? { videos.first }

    /// Whether `--video none` asked for no camera.
    var isNone: Bool { video?.lowercased() == "none" }
}

/// Records several cameras at once with an `AVCaptureMultiCamSession`: a movie file output per camera, connected by
/// hand, the one microphone in each. Files are named by OUTPUT with `%c` the camera's number in the order of the
/// `--video` options (1 for the first; `%%` is a percent sign). A camera that is unplugged ends its own file; the
/// others record on. Ctrl-C or SIGTERM stops them all; every file is finalized.
final class MultiCameraRecorder: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
    private struct Camera {
        let device: AVCaptureDevice
        let output = AVCaptureMovieFileOutput()
        let target: OutputTarget
    }

    private let session = AVCaptureMultiCamSession()
    private let cameras: [Camera]
    private let microphone: AVCaptureDevice?
    private let lock = NSLock()
    private var results: [ObjectIdentifier: (any Error)?] = [:]
    private var stopSignal: Int32?
    private let finished = DispatchSemaphore(value: 0)

    /// The file name for camera `number` (from 1): `%c` replaced by the number, `%%` by `%`.
    static func fileName(_ pattern: String, camera number: Int) -> String {
        pattern.components(separatedBy: "%%").map { $0.replacingOccurrences(of: "%c", with: "\(number)") }
            .joined(separator: "%")
    }

    /// The cameras `specifications` name, each once, into files named by `pattern`; `microphone` into every file.
    init(
        cameras specifications: [String], microphone: AVCaptureDevice?, pattern: String, overwrite: Bool,
        format: CaptureSetup.FormatChoice?
    ) throws {
        var cameras: [Camera] = []
        for (number, specification) in specifications.enumerated() {
            guard let device = try DeviceSelector.device(specification, for: .video) else {
                throw ToolFailure(.usage, "--video none cannot be one of several cameras")
            }
            if let twin = cameras.first(where: { $0.device.uniqueID == device.uniqueID }) {
                throw ToolFailure(
                    .usage, "\(device.localizedName) is named twice (--video \(specification) and the camera of"
                        + " \(twin.target.url.lastPathComponent)); a camera records into one file")
            }
            let target = try OutputTarget(
                path: Self.fileName(pattern, camera: number + 1), allowedExtensions: RecordCommand.movieExtensions,
                overwrite: overwrite)
            cameras.append(Camera(device: device, target: target))
        }
        self.cameras = cameras
        self.microphone = microphone
        super.init()
        try configure(format: format)
    }

    private func configure(format: CaptureSetup.FormatChoice?) throws {
        session.beginConfiguration()
        defer { session.commitConfiguration() }
        let sound = try microphone.map { try Self.input(for: $0) }
        if let sound { session.addInputWithNoConnections(sound) }
        for camera in cameras {
            switch format {
            case .exact(let width, let height, let rate, let pixelFormat)?:
                try CaptureSetup.apply(
                    width: width, height: height, framesPerSecond: rate, pixelFormat: pixelFormat, to: camera.device)
            case .index(let index, let rate)?:
                try CaptureSetup.apply(index: index, framesPerSecond: rate, to: camera.device)
            case .preset?:
                throw ToolFailure(.usage, "several cameras record each in its own format: give --format, not --preset")
            case nil:
                break
            }
            let input = try Self.input(for: camera.device)
            guard session.canAddInput(input) else {
                throw ToolFailure(.unavailable, "the session cannot take \(camera.device.localizedName)")
            }
            session.addInputWithNoConnections(input)
            session.addOutputWithNoConnections(camera.output)
            var ports = input.ports(
                for: .video, sourceDeviceType: camera.device.deviceType, sourceDevicePosition: camera.device.position)
            try connect(ports, to: camera.output, what: camera.device.localizedName)
            if let sound {
                ports = sound.ports(for: .audio, sourceDeviceType: nil, sourceDevicePosition: .unspecified)
                try connect(ports, to: camera.output, what: sound.device.localizedName)
            }
        }
    }

    private func connect(_ ports: [AVCaptureInput.Port], to output: AVCaptureOutput, what: String) throws {
        let connection = AVCaptureConnection(inputPorts: Array(ports.prefix(1)), output: output)
        guard !ports.isEmpty, session.canAddConnection(connection) else {
            throw ToolFailure(.unavailable, "the session cannot connect \(what) to its movie")
        }
        session.addConnection(connection)
    }

    private static func input(for device: AVCaptureDevice) throws -> AVCaptureDeviceInput {
        do {
            return try AVCaptureDeviceInput(device: device)
        } catch {
            throw ToolFailure(.unavailable, "cannot open \(device.localizedName): \(CaptureSetup.describe(error))")
        }
    }

    /// Records until Ctrl-C, SIGTERM, --duration or the end of every file; prints a line per file.
    func run(configuring configureOutput: (AVCaptureMovieFileOutput) -> Void) throws {
        cameras.forEach { configureOutput($0.output) }
        let failure = RuntimeErrorWatcher(session: session)
        session.startRunning()
        if let error = failure.error ?? (session.isRunning ? nil : failure.waitBriefly()) {
            session.stopRunning()
            throw ToolFailure(.unavailable, "capture did not start: \(CaptureSetup.describe(error))")
        }
        defer { session.stopRunning() }
        for camera in cameras { camera.output.startRecording(to: camera.target.captureURL, recordingDelegate: self) }
        let signals = SignalWatcher(stop: { [self] number in
            lock.withLock { stopSignal = number }
            cameras.forEach { $0.output.stopRecording() }
        })
        Terminal.error(
            String(format: "Recording %d cameras (hardware cost %.2f):", cameras.count, session.hardwareCost))
        for camera in cameras { Terminal.error("  \(Self.summary(of: camera.device)) to \(camera.target.url.path)") }
        while finished.wait(timeout: .now() + 0.5) == .timedOut {
            let seconds = cameras.map { String(format: "%.1f s", $0.output.recordedDuration.seconds) }
            Terminal.status(seconds.joined(separator: "  "))
        }
        Terminal.endStatus()
        withExtendedLifetime(signals) {}
        try conclude()
    }

    private static func summary(of device: AVCaptureDevice) -> String {
        let size = device.activeFormat.formatDescription.dimensions
        let rate = (1 / device.activeVideoMinFrameDuration.seconds).rounded()
        return "\(device.localizedName) \(size.width)x\(size.height) @ \(FormatsCommand.number(rate)) fps"
    }

    private func conclude() throws {
        let (results, signal) = lock.withLock { (self.results, stopSignal) }
        var worst: ExitStatus?
        for camera in cameras {
            let error = results[ObjectIdentifier(camera.output)] ?? nil
            let finishedFile = error == nil || (error as NSError?)?.userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool == true
            guard finishedFile else {
                camera.target.discard()
                Terminal.error("avcapture: \(camera.device.localizedName): recording failed: \(CaptureSetup.describe(error!))")
                worst = .ioError
                continue
            }
            try camera.target.commit()
            let why: String
            if let error {
                switch (error as? AVError)?.code {
                case .maximumDurationReached?: why = "reached --duration"
                case .deviceWasDisconnected? where !camera.device.uniqueID.hasPrefix("file:"):
                    why = "\(camera.device.localizedName) was disconnected"
                    worst = worst ?? .unavailable
                case .deviceWasDisconnected?: why = "end of input"
                default:
                    why = CaptureSetup.describe(error)
                    worst = .ioError
                }
            } else {
                why = signal.map { $0 == SIGINT ? "interrupted (Ctrl-C)" : "terminated (SIGTERM)" } ?? "stopped"
            }
            print(FileSummary(url: camera.target.url).line + "; stopped: " + why)
        }
        if let worst { throw ToolFailure(worst, "a recording ended early; every file written is finalized") }
    }

    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?
    ) {
        let done = lock.withLock { () -> Bool in
            results[ObjectIdentifier(output)] = .some(error)
            return results.count == cameras.count
        }
        if done { finished.signal() }
    }
}
