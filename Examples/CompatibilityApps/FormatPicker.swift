// A device lister and format picker, as pro camera apps write one: every camera a discovery session finds, with
// its formats; the back camera locked to a format of the size and frame rate asked; a short clip recorded with it.
import OpenAVCaptureShim

final class FormatPicker: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
    private let session = AVCaptureSession()
    private let movieOutput = AVCaptureMovieFileOutput()
    private var finished: CheckedContinuation<Void, Error>?

    let discoverySession = AVCaptureDevice.DiscoverySession(
        deviceTypes: [.builtInWideAngleCamera, .builtInUltraWideCamera, .builtInTelephotoCamera, .external],
        mediaType: .video, position: .unspecified)

    /// What a settings screen lists: each camera with its position and its formats as "WxH @ min-max fps".
    func cameraList() -> [[String: Any]] {
        discoverySession.devices.map { device in
            let formats = device.formats.map { format -> String in
                let dimensions = CMVideoFormatDescriptionGetDimensions(format.formatDescription)
                let rates = format.videoSupportedFrameRateRanges.map { "\($0.minFrameRate)-\($0.maxFrameRate)" }
                return "\(dimensions.width)x\(dimensions.height) @ \(rates.joined(separator: ","))"
            }
            let position = device.position == .back ? "back" : device.position == .front ? "front" : "unspecified"
            return [
                "name": device.localizedName, "uniqueID": device.uniqueID, "position": position,
                "formats": formats, "isConnected": device.isConnected,
            ]
        }
    }

    /// The format of exactly `width` x `height` that reaches `fps`, preferring the widest frame rate range.
    func bestFormat(of device: AVCaptureDevice, width: Int32, height: Int32, fps: Double) -> AVCaptureDevice.Format? {
        device.formats
            .filter { format in
                let dimensions = CMVideoFormatDescriptionGetDimensions(format.formatDescription)
                return dimensions.width == width && dimensions.height == height
                    && format.videoSupportedFrameRateRanges.contains {
                        $0.minFrameRate <= fps && fps <= $0.maxFrameRate
                    }
            }
            .max { lhs, rhs in
                (lhs.videoSupportedFrameRateRanges.map(\.maxFrameRate).max() ?? 0)
                    < (rhs.videoSupportedFrameRateRanges.map(\.maxFrameRate).max() ?? 0)
            }
    }

    /// Adds the back camera, then locks it to the picked format and frame rate (after adding it: a session preset
    /// applied on adding would replace the format).
    func configure(width: Int32, height: Int32, fps: Int32) throws {
        guard let camera = discoverySession.devices.first(where: { $0.position == .back }) else {
            throw AppFailure("no back camera among \(discoverySession.devices.map(\.localizedName))")
        }
        let input = try AVCaptureDeviceInput(device: camera)
        session.beginConfiguration()
        guard session.canAddInput(input), session.canAddOutput(movieOutput) else {
            session.commitConfiguration()
            throw AppFailure("could not set up the session")
        }
        session.addInput(input)
        session.addOutput(movieOutput)
        session.commitConfiguration()

        guard let format = bestFormat(of: camera, width: width, height: height, fps: Double(fps)) else {
            throw AppFailure("\(camera.localizedName) has no \(width)x\(height) format reaching \(fps) fps")
        }
        try camera.lockForConfiguration()
        camera.activeFormat = format
        let frameDuration = CMTime(value: 1, timescale: fps)
        camera.activeVideoMinFrameDuration = frameDuration
        camera.activeVideoMaxFrameDuration = frameDuration
        camera.unlockForConfiguration()
        let active = CMVideoFormatDescriptionGetDimensions(camera.activeFormat.formatDescription)
        let rate = camera.activeVideoMinFrameDuration.timescale
        print("\(camera.localizedName): \(active.width)x\(active.height), 1/\(rate) s a frame")
    }

    func record(to url: URL, seconds: Int) async throws {
        session.startRunning()
        defer { session.stopRunning() }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            finished = continuation
            movieOutput.maxRecordedDuration = CMTime(value: CMTimeValue(seconds), timescale: 1)
            movieOutput.startRecording(to: url, recordingDelegate: self)
        }
    }

    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: Error?
    ) {
        if let error, (error as NSError).userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool != true {
            finished?.resume(throwing: error)
        } else {
            finished?.resume()
        }
        finished = nil
    }

    /// `compat-apps format-picker OUT.mov WIDTH HEIGHT FPS`: the camera list on standard output as JSON, then one
    /// second recorded in the picked format.
    static func main(_ arguments: [String]) async throws {
        let arguments = Arguments(arguments)
        let url = try arguments.url(0, "the movie's path")
        let picker = FormatPicker()
        let list = try JSONSerialization.data(withJSONObject: picker.cameraList(), options: [.sortedKeys])
        print(String(decoding: list, as: UTF8.self))
        try picker.configure(
            width: Int32(try arguments.integer(1, "WIDTH")), height: Int32(try arguments.integer(2, "HEIGHT")),
            fps: Int32(try arguments.integer(3, "FPS")))
        try await picker.record(to: url, seconds: 1)
    }
}
