// RecordOneSecond [FILE]: records one second from the default camera and microphone into FILE (one-second.mov
// unless given) with AVCaptureMovieFileOutput, then prints the file's path. Written as on iOS or macOS: through
// OpenAVCaptureShim the same source builds against Apple's AVFoundation.

import OpenAVCaptureShim

/// Waits for the movie output's last callback. Thread-safe: the output calls it on its own queue while the main
/// thread waits on the semaphore, which orders the write of `error` before its read.
final class RecordingDelegate: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
    private let finished = DispatchSemaphore(value: 0)
    private var error: (any Error)?

    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?
    ) {
        // Reaching maxRecordedDuration ends the recording with an error whose user info says it finished well.
        if let error = error as NSError?, error.userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool != true {
            self.error = error
        }
        finished.signal()
    }

    /// Blocks until the recording has finished; throws what ended it badly.
    func waitUntilFinished() throws {
        finished.wait()
        if let error { throw error }
    }
}

struct SetupFailure: Error, CustomStringConvertible {
    let description: String
}

func recordOneSecond(to url: URL) throws {
    let session = AVCaptureSession()
    let movie = AVCaptureMovieFileOutput()
    session.beginConfiguration()
    for type in [AVMediaType.video, .audio] {
        guard let device = AVCaptureDevice.default(for: type) else {
            throw SetupFailure(description: "no \(type.rawValue) device")
        }
        let input = try AVCaptureDeviceInput(device: device)
        guard session.canAddInput(input) else { throw SetupFailure(description: "cannot add \(device.localizedName)") }
        session.addInput(input)
    }
    guard session.canAddOutput(movie) else { throw SetupFailure(description: "cannot add a movie file output") }
    session.addOutput(movie)
    movie.maxRecordedDuration = CMTime(seconds: 1, preferredTimescale: 600)
    session.commitConfiguration()

    // startRunning() blocks until the devices stream; an app would call it off the main thread.
    session.startRunning()
    defer { session.stopRunning() }
    let delegate = RecordingDelegate()
    movie.startRecording(to: url, recordingDelegate: delegate)
    try delegate.waitUntilFinished()
}

let url = URL(fileURLWithPath: CommandLine.arguments.dropFirst().first ?? "one-second.mov")
do {
    try recordOneSecond(to: url)
    print(url.path)
} catch {
    FileHandle.standardError.write(Data("RecordOneSecond: \(error)\n".utf8))
    exit(1)
}
