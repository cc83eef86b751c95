import Foundation
import MediaCodecs
import OpenAVCapture

/// The photo outputs' last step on its own: one camera frame and what a photo's EXIF is made of, to the JPEG file
/// `AVCapturePhotoOutput` would deliver, without a session. For the still fuzz target (`Fuzz/`) and tests of
/// what reaches EXIF from outside: the camera's frame (MJPEG decoded as sessions decode it), the names a device
/// reports (from the kernel or USB descriptors) and the `{GPS}` dictionary of `AVCapturePhotoSettings.metadata`.
///
/// Threading: not thread safe; use it from one thread at a time.
public final class PhotoFileEncoder {
    private let decoder = CompressedFrameDecoder()
    private let work = StillCaptureEngine.Work()

    public init() {}

    /// The JPEG file of `frame` (compressed as a camera sends it, or pixels), or nil when the frame decodes to
    /// nothing (damaged).
    ///
    /// - Parameters:
    ///   - manufacturer, cameraName: EXIF's Make and Model (the device's `manufacturer` and `localizedName`).
    ///   - photoMetadata: as `AVCapturePhotoSettings.metadata`; its `{GPS}` dictionary becomes the location.
    ///   - rotation, mirrored: the connection's rotation angle and mirroring, which become the EXIF orientation.
    ///   - exposure, iso: the device's exposure duration (seconds) and ISO when the frame was taken.
    ///   - quality: 0...1, as `AVVideoQualityKey`.
    /// - Throws: what the photo output would deliver as its error (an `AVError`, or the encoder's error).
    public func jpegFile(
        of frame: CMSampleBuffer, manufacturer: String, cameraName: String, photoMetadata: [String: Any] = [:],
        rotation: Int = 0, mirrored: Bool = false, exposure: Double = 1.0 / 30, iso: Double = 100,
        quality: Double = 0.9
    ) throws -> Data? {
        guard let image = decoder.decode(frame).last?.imageBuffer else { return nil }
        let location = (photoMetadata[kCGImagePropertyGPSDictionary] as? [String: Any])
            .flatMap(StillImageMetadata.location(fromGPS:))
        let orientation = StillCaptureEngine.exifOrientation(rotation: rotation, mirrored: mirrored)
        let metadata = StillImageMetadata(
            make: manufacturer, model: cameraName, software: "OpenAVCapture",
            dateTimeOriginal: StillCaptureEngine.wallClockDate(of: frame.presentationTimeStamp),
            exposureTime: exposure, iso: Int(iso.rounded()), flash: .noFlashFunction, orientation: orientation,
            pixelWidth: CVPixelBufferGetWidth(image), pixelHeight: CVPixelBufferGetHeight(image), location: location)
        // The output attaches these to the still's sample buffer; made here too, since they come from the same values.
        _ = metadata.imageProperties
        return try StillCaptureEngine.file(
            of: image, metadata: metadata, heic: false, quality: quality, orientation: orientation, work: work)
    }
}
