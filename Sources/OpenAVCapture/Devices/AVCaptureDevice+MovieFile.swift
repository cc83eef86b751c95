import CaptureDrivers
import Foundation

extension AVCaptureDevice {
    /// Ours, beyond Apple's API: the device a `file:` unique ID names, or the error that says why there is none.
    ///
    /// `file:PATH` is the movie at PATH as a camera (its first video track that can be played), `file:PATH#audio`
    /// its sound as a microphone; the same object as `AVCaptureDevice(uniqueID:)` gives. A relative PATH resolves
    /// against the working directory. The file plays in real time from its start each time the device starts
    /// streaming; at its end the device reports itself disconnected (see ``movieFileDevices(url:loop:)``).
    ///
    /// - Throws: an `NSError` in `NSPOSIXErrorDomain` with the OS's reason when the file cannot be opened (missing,
    ///   not permitted, a directory); `AVError(.fileFormatNotRecognized)` when it is not media FFmpeg reads;
    ///   `AVError(.decoderNotFound)` naming the codecs when no track can be played; `AVError(.deviceNotConnected)`
    ///   when it lacks the track asked for. Each error's description names PATH as given.
    public static func movieFileDevice(uniqueID: String) throws -> AVCaptureDevice {
        guard uniqueID.hasPrefix("file:") else {
            throw AVError(.deviceNotConnected, "'\(uniqueID)' is not a file: unique ID")
        }
        guard let backend = try MovieFileDevices.backend(forUniqueID: uniqueID) else {
            throw AVError(.deviceNotConnected, "'\(uniqueID)' names no movie file")
        }
        return DeviceDirectory.shared.device(for: backend)
    }

    /// Ours, beyond Apple's API: a movie file played as a live camera and microphone, a pair of its own (unlike
    /// `AVCaptureDevice(uniqueID: "file:…")`, which gives the process's one non-looping pair per file).
    ///
    /// Any container and codec this FFmpeg reads: MP4, QuickTime, Matroska, WebM, AVI, MPEG-TS, NUT, y4m, wav; H.264,
    /// HEVC, MJPEG, MPEG-4, ProRes, VP8, VP9, AV1 and raw video; AAC, ALAC, MP3, Opus, FLAC and PCM. The camera
    /// delivers the file's frames as they are stored (compressed ones are decoded by the session, as a camera's
    /// MJPEG), paced in real time: each frame when the host clock reaches its time in the file, counted from when
    /// the first of the two devices starts, so camera and microphone play in sync.
    ///
    /// The end of the input: with `loop`, the file starts again (each pass one file length later on the clock).
    /// Without, once both tracks that play have delivered their last frame and sound, each device reports itself
    /// disconnected, as a camera that is unplugged: `isConnected` turns false, the session posts
    /// `.AVCaptureSessionRuntimeError` with `AVError.deviceWasDisconnected` (its recovery suggestion says the input
    /// ended), and a movie file output finishes the file with that code and `AVErrorRecordingSuccessfullyFinishedKey`
    /// true. A played-out device stays disconnected; open the file again to play it again.
    ///
    /// - Returns: the file's camera (nil when it has no video) and microphone (nil when it has no sound).
    /// - Throws: as ``movieFileDevice(uniqueID:)``, naming `url.relativePath`.
    public static func movieFileDevices(url: URL, loop: Bool = false) throws -> (
        camera: AVCaptureDevice?, microphone: AVCaptureDevice?
    ) {
        let devices = try MovieFileDevices.open(path: url.relativePath, loops: loop, pacing: .realTime)
        return (
            devices.camera.map(DeviceDirectory.shared.device(for:)),
            devices.microphone.map(DeviceDirectory.shared.device(for:))
        )
    }
}
