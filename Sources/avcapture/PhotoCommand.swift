import ArgumentParser
import Foundation
import OpenAVCapture

/// `avcapture photo OUTPUT`: one still, with EXIF, from a camera.
struct PhotoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "photo", abstract: "Take a photo (.jpg, or .heic where libheif can encode HEVC).")

    @OptionGroup var logging: LoggingOptions
    @Argument(help: "The file to write: .jpg, .jpeg or .heic.") var output: String
    @OptionGroup var camera: CameraOptions
    @Option(help: "Flash.") var flash: FlashChoice = .off
    @Option(help: "Encoding (default: from the extension).") var format: Encoding?
    @Option(help: "Session preset (photo: the camera's largest stills).") var preset: PresetChoice = .photo

    /// What the photo is encoded as.
    enum Encoding: String, KebabChoice {
        case jpeg, heic
        static let aliases: [String: Self] = ["jpg": .jpeg]
    }
    @Option(parsing: .unconditional, help: "Where it was taken: LAT,LON in degrees (EXIF GPS).") var location: String?
    @Flag(help: "Replace an existing file (it survives a failed capture).") var overwrite = false

    func validate() throws {
        if let location, RecordCommand.parseLocation(location) == nil {
            throw ValidationError("--location '\(location)' is not LAT,LON in degrees, e.g. 48.8584,2.2945")
        }
        if camera.isNone { throw ValidationError("a photo needs a camera; --video none leaves none") }
    }

    func run() throws {
        try reportingFailures {
            let target = try OutputTarget(path: output, allowedExtensions: ["jpg", "jpeg", "heic"], overwrite: overwrite)
            let wantsHEIC = format.map { $0 == .heic } ?? (target.url.pathExtension.lowercased() == "heic")
            if wantsHEIC != (target.url.pathExtension.lowercased() == "heic") {
                throw ToolFailure(
                    .usage, "--format \(format?.rawValue ?? "") does not match the extension of \(output)")
            }
            let cameraDevice = try DeviceSelector.device(camera.video, for: .video)
            let photoOutput = AVCapturePhotoOutput()
            let setup = try CaptureSetup(
                video: cameraDevice, audio: nil, format: .preset(preset.preset), outputs: [photoOutput])
            let codec: AVVideoCodecType = wantsHEIC ? .hevc : .jpeg
            guard photoOutput.availablePhotoCodecTypes.contains(codec) else {
                throw ToolFailure(.usage, "this system's libheif cannot encode HEVC; take a .jpg instead")
            }
            let flashMode = flash.mode
            guard photoOutput.supportedFlashModes.contains(flashMode) else {
                throw ToolFailure(
                    .usage, "\(cameraDevice?.localizedName ?? "the camera") has no flash; use --flash off")
            }
            let settings = AVCapturePhotoSettings(format: [AVVideoCodecKey: codec])
            settings.flashMode = flashMode
            if let location, let (latitude, longitude) = RecordCommand.parseLocation(location) {
                settings.metadata = [
                    kCGImagePropertyGPSDictionary: [
                        kCGImagePropertyGPSLatitude: abs(latitude), kCGImagePropertyGPSLatitudeRef: latitude < 0 ? "S" : "N",
                        kCGImagePropertyGPSLongitude: abs(longitude),
                        kCGImagePropertyGPSLongitudeRef: longitude < 0 ? "W" : "E",
                    ] as [String: Any]
                ]
            }
            try setup.start()
            defer { setup.session.stopRunning() }
            let receiver = PhotoReceiver()
            photoOutput.capturePhoto(with: settings, delegate: receiver)
            guard let data = try receiver.wait() else {
                throw ToolFailure(.ioError, "the camera delivered no photo")
            }
            do {
                try data.write(to: target.captureURL, options: .withoutOverwriting)
                try target.commit()
            } catch let failure as ToolFailure {
                throw failure
            } catch {
                target.discard()
                throw ToolFailure(.cannotCreate, "cannot write \(output): \(error.localizedDescription)")
            }
            print("Wrote \(output): \(receiver.summary), \(Recorder.byteCount(Int64(data.count)))")
        }
    }
}

/// Waits for one photo's file data.
final class PhotoReceiver: NSObject, AVCapturePhotoCaptureDelegate, @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var data: Data?
    private var failure: (any Error)?
    private(set) var summary = ""

    func photoOutput(_ output: AVCapturePhotoOutput, didFinishProcessingPhoto photo: AVCapturePhoto, error: (any Error)?) {
        let exif = photo.metadata[kCGImagePropertyExifDictionary] as? [String: Any]
        let width = exif?[kCGImagePropertyExifPixelXDimension] ?? "?"
        let height = exif?[kCGImagePropertyExifPixelYDimension] ?? "?"
        let flash = (exif?[kCGImagePropertyExifFlash] as? Int).map { $0 & 1 == 1 ? "flash fired" : "no flash" }
        lock.withLock {
            data = photo.fileDataRepresentation()
            failure = error
            summary = "\(width)x\(height)" + (flash.map { ", " + $0 } ?? "")
        }
    }

    func photoOutput(
        _ output: AVCapturePhotoOutput, didFinishCaptureFor resolvedSettings: AVCaptureResolvedPhotoSettings,
        error: (any Error)?
    ) {
        lock.withLock { if failure == nil { failure = error } }
        done.signal()
    }

    func wait() throws -> Data? {
        guard done.wait(timeout: .now() + 30) == .success else {
            throw ToolFailure(.unavailable, "no photo within 30 s; is the camera streaming?")
        }
        return try lock.withLock {
            if let failure { throw ToolFailure(.ioError, "the photo failed: \(CaptureSetup.describe(failure))") }
            return data
        }
    }
}
