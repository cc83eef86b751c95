import ArgumentParser
import Foundation
import OpenAVCapture

/// `avcapture frames`: raw frames to standard output, for `| ffplay -` and `| ffmpeg -i - …`.
struct FramesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "frames",
        abstract: "Write frames to standard output: y4m (default), or raw bgra or nv12.",
        discussion: "Raw formats carry no header: tell the reader the size (see 'avcapture formats'), e.g. "
            + "ffmpeg -f rawvideo -pix_fmt nv12 -s 1280x720 -r 30 -i -.")

    @OptionGroup var logging: LoggingOptions
    @OptionGroup var camera: CameraOptions
    @Option(help: "What is written (the camera's own format is --camera-format).") var format: Output = .y4m
    @Option(help: "Stop after this many frames (default: until interrupted).") var count: Int?
    @Option(help: "Session preset.") var preset: PresetChoice = .high
    // `--format` here is what is written, as it always was; the camera's format has its own name.
    @Option(
        name: .customLong("camera-format"),
        help: ArgumentHelp(
            "The camera's format, as record's --format (e.g. 1280x720@30:mjpeg or 4).", valueName: "format"))
    var cameraFormat: FormatSpecification?
    @Flag(
        help: "Frames of the main screen instead of a camera (X11, or Wayland: the ScreenCast portal, wlr-screencopy).")
    var screen = false
    @Flag(help: "With --screen: only frames in which the screen changed (removesDuplicateFrames).")
    var changesOnly = false

    /// What frames are written as.
    enum Output: String, KebabChoice {
        case y4m, bgra, nv12

        var pixelFormat: OSType {
            switch self {
            case .y4m: kCVPixelFormatType_420YpCbCr8Planar
            case .bgra: kCVPixelFormatType_32BGRA
            case .nv12: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
            }
        }
    }

    func validate() throws {
        if let count, count <= 0 { throw ValidationError("--count must be positive") }
        if screen {
            if camera.video != nil { throw ValidationError("--screen and --video conflict; give one") }
            if cameraFormat != nil { throw ValidationError("--camera-format is for cameras") }
        } else if changesOnly {
            throw ValidationError("--changes-only needs --screen")
        } else if camera.isNone {
            throw ValidationError("frames need a camera; --video none leaves none")
        }
    }

    func run() throws {
        try reportingFailures {
            if Terminal.standardOutputIsTerminal {
                throw ToolFailure(.usage, "standard output is a terminal; pipe it, e.g. avcapture frames | ffplay -")
            }
            signal(SIGPIPE, SIG_IGN)
            let screenInput = screen ? try makeScreenInput() : nil
            let cameraDevice = screen ? nil : try DeviceSelector.device(camera.video, for: .video)
            let output = AVCaptureVideoDataOutput()
            output.videoSettings = [kCVPixelBufferPixelFormatTypeKey: format.pixelFormat]
            let formatChoice: CaptureSetup.FormatChoice =
                switch cameraFormat {
                case .index(let index, let rate)?: .index(index, framesPerSecond: rate)
                case .size(let width, let height, let rate, let pixelFormat)?:
                    .exact(width: width, height: height, framesPerSecond: rate, pixelFormat: pixelFormat)
                case nil: .preset(preset.preset)
                }
            let setup = try CaptureSetup(
                video: cameraDevice, audio: nil, screen: screenInput, format: screen ? nil : formatChoice,
                outputs: [output])
            let frameDuration =
                screenInput?.minFrameDuration ?? cameraDevice?.activeVideoMinFrameDuration
                ?? CMTime(value: 1, timescale: 30)
            let writer = FrameWriter(isY4M: format == .y4m, frameDuration: frameDuration, limit: count)
            let frameQueue = DispatchQueue(label: "avcapture.frames")
            output.setSampleBufferDelegate(writer, queue: frameQueue)
            let signals = SignalWatcher(stop: { _ in writer.finish() })
            // A movie file's end (a disconnect) or a device failure ends the stream too, after the frames already
            // handed to the delegate's queue (the device sent them before its fault).
            let endOfStream = NotificationCenter.default.addObserver(
                forName: .AVCaptureSessionRuntimeError, object: setup.session, queue: nil
            ) { _ in frameQueue.async { writer.finish() } }
            defer { NotificationCenter.default.removeObserver(endOfStream) }
            try setup.start()
            writer.waitUntilDone()
            setup.session.stopRunning()
            withExtendedLifetime(signals) {}
            if let failure = writer.failure { throw failure }
        }
    }
}

extension FramesCommand {
    /// The main screen without the cursor (a portal session made so from the start), duplicates left out as
    /// --changes-only says.
    private func makeScreenInput() throws -> AVCaptureScreenInput {
        let displays: [AVCaptureScreenInput.Display]
        do {
            displays = try AVCaptureScreenInput.displays(capturingCursor: false)
        } catch {
            throw ToolFailure(.unavailable, "cannot read the screen: \(CaptureSetup.describe(error))")
        }
        guard let main = displays.first, let input = AVCaptureScreenInput(displayID: main.displayID) else {
            throw ToolFailure(.unavailable, "no screen; see 'avcapture devices'")
        }
        input.capturesCursor = false
        input.removesDuplicateFrames = changesOnly
        return input
    }
}

/// Writes each frame's planes, row by row (rows may be padded), to standard output.
final class FrameWriter: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    private let isY4M: Bool
    private let frameDuration: CMTime
    private let limit: Int?
    private var written = 0
    private var wroteHeader = false
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var isFinished = false
    private(set) var failure: ToolFailure?

    init(isY4M: Bool, frameDuration: CMTime, limit: Int?) {
        self.isY4M = isY4M
        self.frameDuration = frameDuration
        self.limit = limit
    }

    func finish() {
        let first = lock.withLock {
            defer { isFinished = true }
            return !isFinished
        }
        if first { done.signal() }
    }

    func waitUntilDone() { done.wait() }

    func captureOutput(_ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        guard !lock.withLock({ isFinished }), let image = sampleBuffer.imageBuffer else { return }
        var bytes = Data()
        if isY4M && !wroteHeader {
            let rate = frameDuration.isNumeric && frameDuration.value > 0 ? frameDuration : CMTime(value: 1, timescale: 30)
            bytes.append(
                Data(
                    ("YUV4MPEG2 W\(CVPixelBufferGetWidth(image)) H\(CVPixelBufferGetHeight(image)) "
                        + "F\(rate.timescale):\(rate.value) Ip A1:1 C420mpeg2 XCOLORRANGE=LIMITED\n").utf8))
            wroteHeader = true
        }
        if isY4M { bytes.append(Data("FRAME\n".utf8)) }
        CVPixelBufferLockBaseAddress(image, .readOnly)
        let planes = max(1, CVPixelBufferGetPlaneCount(image))
        for plane in 0..<planes {
            let isPlanar = CVPixelBufferIsPlanar(image)
            guard let base = isPlanar ? CVPixelBufferGetBaseAddressOfPlane(image, plane) : CVPixelBufferGetBaseAddress(image)
            else { continue }
            let rows = isPlanar ? CVPixelBufferGetHeightOfPlane(image, plane) : CVPixelBufferGetHeight(image)
            let stride = isPlanar ? CVPixelBufferGetBytesPerRowOfPlane(image, plane) : CVPixelBufferGetBytesPerRow(image)
            let width = isPlanar ? CVPixelBufferGetWidthOfPlane(image, plane) : CVPixelBufferGetWidth(image)
            let rowBytes = width * bytesPerPixel(CVPixelBufferGetPixelFormatType(image), plane: plane)
            for row in 0..<rows { bytes.append(base.advanced(by: row * stride).assumingMemoryBound(to: UInt8.self), count: rowBytes) }
        }
        CVPixelBufferUnlockBaseAddress(image, .readOnly)
        do {
            try FileHandle.standardOutput.write(contentsOf: bytes)
        } catch {
            // The reader went away (ffplay closed): a normal end, not a failure.
            finish()
            return
        }
        written += 1
        if let limit, written >= limit { finish() }
    }

    private func bytesPerPixel(_ format: OSType, plane: Int) -> Int {
        switch format {
        case kCVPixelFormatType_32BGRA: 4
        case kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange: plane == 0 ? 1 : 2
        default: 1
        }
    }
}
