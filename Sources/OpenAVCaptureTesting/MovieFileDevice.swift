import CaptureDrivers
import Foundation
import OpenAVCapture

/// A movie file played as a live camera and microphone: any file FFmpeg reads (y4m and wav included), in real time
/// or as fast as taken, optionally looping. Make one, add its `camera` or `microphone` to a session like any device.
///
///     let movie = try MovieFileDevice(url: recording, loop: true, clock: .freeRunning)
///     session.addInput(try AVCaptureDeviceInput(device: movie.camera!))
///
/// The camera delivers the file's frames as they are stored (H.264, MJPEG, …); the session decodes them, so outputs
/// get NV12 as from a camera. Timestamps are on the host clock: file time 0 is when the first of the two devices
/// starts; with `loop`, each pass is one file duration later. Without `loop`, the devices report themselves
/// disconnected at the end of the file (see `AVCaptureDevice.movieFileDevices(url:loop:)`).
///
/// Threading: immutable after creation; its devices are thread safe, as every `AVCaptureDevice`.
public final class MovieFileDevice: Sendable {
    /// The file's first video track as a camera (unique ID `file:` + path), nil when it has none.
    public let camera: AVCaptureDevice?
    /// The file's first audio track as a microphone (unique ID `file:` + path + `#audio`), nil when it has none.
    public let microphone: AVCaptureDevice?

    /// Opens `url`. Throws what `AVCaptureDevice.movieFileDevices(url:loop:)` throws: the OS's reason for a file
    /// that cannot be opened, `AVError` for one that is not media or has no track that can be played.
    ///
    /// Unlike `AVCaptureDevice(uniqueID: "file:…")`, which gives the process's one real-time, non-looping device
    /// per file, each `MovieFileDevice` is a device pair of its own with its own settings.
    public init(url: URL, loop: Bool = false, clock: VirtualDeviceClockMode = .realTime) throws {
        let devices = try MovieFileDevices.open(
            path: url.relativePath, loops: loop, pacing: clock.driverMode)
        camera = devices.camera.map(DeviceDirectory.shared.device(for:))
        microphone = devices.microphone.map(DeviceDirectory.shared.device(for:))
    }
}
