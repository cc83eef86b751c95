import Foundation
import OpenAVCapture
import Synchronization

/// A video and audio delegate that records what it receives, and lets a test wait for it.
public final class RecordingDelegate: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate,
    AVCaptureAudioDataOutputSampleBufferDelegate, @unchecked Sendable
{
    public struct Frame: Sendable {
        public let time: CMTime
        public let width: Int
        public let height: Int
        public let pixelFormat: OSType
        public let position: AVCaptureDevice.Position?
        public let sampleCount: Int
    }

    public struct Drop: Sendable {
        public let time: CMTime
        public let reason: String?
    }

    private let frames = Mutex<[Frame]>([])
    private let drops = Mutex<[Drop]>([])
    private let arrivals = DispatchSemaphore(value: 0)
    /// How long each delivery takes, to play a slow consumer.
    public let work: TimeInterval
    /// Called on the delegate queue with every buffer (for pixel checks).
    public let inspect: (@Sendable (CMSampleBuffer, AVCaptureConnection) -> Void)?

    public init(work: TimeInterval = 0, inspect: (@Sendable (CMSampleBuffer, AVCaptureConnection) -> Void)? = nil) {
        self.work = work
        self.inspect = inspect
    }

    public func captureOutput(_ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        let image = sampleBuffer.imageBuffer
        let device = (connection.inputPorts.first?.input as? AVCaptureDeviceInput)?.device
        frames.withLock {
            $0.append(
                Frame(
                    time: sampleBuffer.presentationTimeStamp, width: image.map(CVPixelBufferGetWidth) ?? 0,
                    height: image.map(CVPixelBufferGetHeight) ?? 0,
                    pixelFormat: image.map(CVPixelBufferGetPixelFormatType) ?? 0, position: device?.position,
                    sampleCount: sampleBuffer.numSamples))
        }
        inspect?(sampleBuffer, connection)
        // A slow consumer's work: the output sees its delegate busy for this long, so the time must pass.
        if work > 0 { Thread.sleep(forTimeInterval: work) }
        arrivals.signal()
    }

    public func captureOutput(_ output: AVCaptureOutput, didDrop sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        let reason = CMGetAttachment(sampleBuffer, key: kCMSampleBufferAttachmentKey_DroppedFrameReason, attachmentModeOut: nil)
        drops.withLock { $0.append(Drop(time: sampleBuffer.presentationTimeStamp, reason: reason as? String)) }
    }

    public var received: [Frame] { frames.withLock { $0 } }
    public var dropped: [Drop] { drops.withLock { $0 } }

    /// Waits until `count` buffers have arrived (in total), or the timeout passes; returns whether they did.
    public func wait(for count: Int, timeout: TimeInterval = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while received.count < count {
            guard arrivals.wait(timeout: .now() + max(0, deadline.timeIntervalSinceNow)) == .success else {
                return received.count >= count
            }
        }
        return true
    }
}

/// A session with the given devices' inputs and the given outputs, configured but not running.
public func makeSession(
    preset: AVCaptureSession.Preset = .vga640x480, devices: [AVCaptureDevice], outputs: [AVCaptureOutput]
) throws -> AVCaptureSession {
    let session = AVCaptureSession()
    session.beginConfiguration()
    session.sessionPreset = preset
    for device in devices {
        let input = try AVCaptureDeviceInput(device: device)
        guard session.canAddInput(input) else { throw SessionSetupFailure("the session refuses \(device.localizedName)") }
        session.addInput(input)
    }
    for output in outputs {
        guard session.canAddOutput(output) else { throw SessionSetupFailure("the session refuses \(type(of: output))") }
        session.addOutput(output)
    }
    session.commitConfiguration()
    return session
}

/// The virtual devices the session tests use.
public enum VirtualDevices {
    public static var back: AVCaptureDevice { AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back)! }
    public static var front: AVCaptureDevice { AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .front)! }
    public static var microphone: AVCaptureDevice { AVCaptureDevice.default(for: .audio)! }
}

/// Records notifications of one name posted by one object.
public final class NotificationRecorder: @unchecked Sendable {
    private let storage = NameStore()
    private var tokens: [any NSObjectProtocol] = []

    public init(_ notificationNames: [NSNotification.Name], object: AnyObject?) {
        for name in notificationNames {
            tokens.append(
                NotificationCenter.default.addObserver(forName: name, object: object, queue: nil) { [storage] note in
                    storage.names.withLock { $0.append(note.name.rawValue) }
                })
        }
    }

    deinit { tokens.forEach(NotificationCenter.default.removeObserver) }

    public var recorded: [String] { storage.names.withLock { $0 } }
}

/// The names, in a class so observer closures can share them.
final class NameStore: Sendable {
    let names = Mutex<[String]>([])
}

/// A session the helpers could not put together.
public struct SessionSetupFailure: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// The first channel of an interleaved PCM buffer (Float32, or Int16 scaled to ±1), for tests that look for tones.
public func leftChannel(of sampleBuffer: CMSampleBuffer) -> [Float] {
    guard let asbd = sampleBuffer.formatDescription?.audioStreamBasicDescription else { return [] }
    let channels = max(1, Int(asbd.mChannelsPerFrame))
    var left: [Float] = []
    sampleBuffer.dataBuffer?.withUnsafeBytes { bytes in
        if asbd.mFormatFlags & kAudioFormatFlagIsFloat != 0 {
            let floats = bytes.bindMemory(to: Float.self)
            left = stride(from: 0, to: floats.count, by: channels).map { floats[$0] }
        } else {
            let ints = bytes.bindMemory(to: Int16.self)
            left = stride(from: 0, to: ints.count, by: channels).map { Float(ints[$0]) / 32768 }
        }
    }
    return left
}
