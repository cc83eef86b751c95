// A photo taker: a photo output on a running session, settings made per shot (HEIF where the output offers it and
// the user asked for it, else JPEG), the photo's location attached, and the delegate that saves the file.
import OpenAVCaptureShim

final class PhotoCaptureProcessor: NSObject, AVCapturePhotoCaptureDelegate, @unchecked Sendable {
    private let destination: URL
    private let completion: (Result<AVCaptureResolvedPhotoSettings, Error>) -> Void
    private var photoData: Data?
    private var sawShutter = false

    init(destination: URL, completion: @escaping (Result<AVCaptureResolvedPhotoSettings, Error>) -> Void) {
        self.destination = destination
        self.completion = completion
    }

    func photoOutput(
        _ output: AVCapturePhotoOutput, willCapturePhotoFor resolvedSettings: AVCaptureResolvedPhotoSettings
    ) {
        // Where an app flashes the screen to show the shutter.
        sawShutter = true
    }

    func photoOutput(_ output: AVCapturePhotoOutput, didFinishProcessingPhoto photo: AVCapturePhoto, error: Error?) {
        if let error {
            print("error capturing photo: \(error)")
            return
        }
        photoData = photo.fileDataRepresentation()
    }

    func photoOutput(
        _ output: AVCapturePhotoOutput, didFinishCaptureFor resolvedSettings: AVCaptureResolvedPhotoSettings,
        error: Error?
    ) {
        if let error {
            completion(.failure(error))
            return
        }
        guard sawShutter, let photoData else {
            completion(.failure(AppFailure("the capture finished without a photo")))
            return
        }
        do {
            try photoData.write(to: destination)
            completion(.success(resolvedSettings))
        } catch {
            completion(.failure(error))
        }
    }
}

final class PhotoTaker: @unchecked Sendable {
    private let session = AVCaptureSession()
    private let sessionQueue = DispatchQueue(label: "session queue")
    private let photoOutput = AVCapturePhotoOutput()
    /// Processors in flight by settings ID, kept alive until their capture finishes (the output holds its delegate
    /// weakly on Apple's platforms).
    private var inProgressPhotoCaptureDelegates: [Int64: PhotoCaptureProcessor] = [:]

    func configure() throws {
        try sessionQueue.sync {
            session.beginConfiguration()
            defer { session.commitConfiguration() }
            session.sessionPreset = .photo
            guard let camera = AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back) else {
                throw AppFailure("no back camera")
            }
            let input = try AVCaptureDeviceInput(device: camera)
            guard session.canAddInput(input), session.canAddOutput(photoOutput) else {
                throw AppFailure("could not set up the photo session")
            }
            session.addInput(input)
            session.addOutput(photoOutput)
            photoOutput.maxPhotoQualityPrioritization = .quality
        }
        sessionQueue.async { [session] in session.startRunning() }
    }

    /// Takes one photo with the location attached, as HEIF when `heif` is asked and offered.
    func takePhoto(
        to url: URL, heif: Bool, latitude: Double, longitude: Double
    ) async throws
        -> AVCaptureResolvedPhotoSettings
    {
        try await withCheckedThrowingContinuation { continuation in
            sessionQueue.async { [self] in
                let settings: AVCapturePhotoSettings
                if heif, photoOutput.availablePhotoCodecTypes.contains(.hevc) {
                    settings = AVCapturePhotoSettings(format: [AVVideoCodecKey: AVVideoCodecType.hevc])
                } else {
                    settings = AVCapturePhotoSettings()
                }
                if photoOutput.supportedFlashModes.contains(.auto) { settings.flashMode = .auto }
                settings.photoQualityPrioritization = .balanced
                settings.metadata = [
                    kCGImagePropertyGPSDictionary as String: [
                        kCGImagePropertyGPSLatitude as String: abs(latitude),
                        kCGImagePropertyGPSLatitudeRef as String: latitude >= 0 ? "N" : "S",
                        kCGImagePropertyGPSLongitude as String: abs(longitude),
                        kCGImagePropertyGPSLongitudeRef as String: longitude >= 0 ? "E" : "W",
                    ]
                ]
                let id = settings.uniqueID
                let processor = PhotoCaptureProcessor(destination: url) { [self] result in
                    sessionQueue.async { self.inProgressPhotoCaptureDelegates[id] = nil }
                    continuation.resume(with: result)
                }
                inProgressPhotoCaptureDelegates[id] = processor
                photoOutput.capturePhoto(with: settings, delegate: processor)
            }
        }
    }

    func stop() { sessionQueue.sync { session.stopRunning() } }

    /// `compat-apps photo-taker OUT.jpg|OUT.heic`: the photo at the Eiffel Tower's coordinates.
    static func main(_ arguments: [String]) async throws {
        let url = try Arguments(arguments).url(0, "the photo's path")
        let taker = PhotoTaker()
        try taker.configure()
        let resolved = try await taker.takePhoto(
            to: url, heif: url.pathExtension.lowercased() == "heic", latitude: 48.8584, longitude: 2.2945)
        taker.stop()
        let size = resolved.photoDimensions
        print("photo \(size.width)x\(size.height), flash \(resolved.isFlashEnabled)")
    }
}
