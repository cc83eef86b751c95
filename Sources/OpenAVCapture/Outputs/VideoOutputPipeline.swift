import CaptureDrivers
import CaptureGraph
import Foundation

/// What a video data output does to a frame between the device and the delegate: convert the pixel format and
/// size if asked (libswscale, through MediaCodecs), rotate and mirror as the connection says, and wrap the result
/// in a new sample buffer with the frame's timing. A frame that needs none of it goes through untouched.
///
/// Threading: used only on the output's delegate queue (serial), so its caches are not locked.
final class VideoOutputPipeline {
    /// The pixel formats outputs can deliver, the virtual cameras' native NV12 first.
    static let supportedPixelFormats: [OSType] = [
        kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr8BiPlanarFullRange,
        kCVPixelFormatType_32BGRA, kCVPixelFormatType_420YpCbCr8Planar, kCVPixelFormatType_422YpCbCr8_yuvs,
        kCVPixelFormatType_422YpCbCr8, kCVPixelFormatType_32ARGB, kCVPixelFormatType_24RGB,
        kCVPixelFormatType_OneComponent8,
    ]

    /// A converted format: pixel format and size.
    typealias Target = FrameConverterCache.Target

    /// What the output's settings ask for; nil fields keep the device's. The size is the delivered one, after
    /// rotation: a portrait output of a landscape camera asks for 1080x1920.
    struct Request: Sendable {
        var pixelFormat: OSType?
        var width: Int?
        var height: Int?

        /// Whether `image` is already what the request asks for: the frame goes through as it is.
        func asksNothingOf(_ image: CVPixelBuffer) -> Bool {
            (pixelFormat == nil || pixelFormat == CVPixelBufferGetPixelFormatType(image))
                && (width == nil || width == CVPixelBufferGetWidth(image))
                && (height == nil || height == CVPixelBufferGetHeight(image))
        }
    }

    private var transform: PixelTransform?
    private var converters = FrameConverterCache()
    private var wrapper = ImageSampleWrapper()

    /// The frame as the delegate should see it, or nil when a buffer pool is exhausted (the delegate holds
    /// every converted buffer) or the conversion failed: a drop with reason `OutOfBuffers`.
    func process(_ sample: CMSampleBuffer, request: Request, connection: AVCaptureConnection) -> CMSampleBuffer? {
        guard let source = sample.imageBuffer else { return sample }
        let settings = connection.currentSettings
        if settings.rotationAngle == 0, !settings.isVideoMirrored, request.asksNothingOf(source) { return sample }
        let rotation = Int(settings.rotationAngle)
        let quarterTurn = rotation % 180 != 0
        if transform == nil || transform!.rotation != rotation || transform!.mirrored != settings.isVideoMirrored {
            transform = PixelTransform(rotationDegrees: rotation, mirrored: settings.isVideoMirrored)
        }
        let transform = transform!
        let sourceWidth = CVPixelBufferGetWidth(source)
        let sourceHeight = CVPixelBufferGetHeight(source)
        let rotatedWidth = quarterTurn ? sourceHeight : sourceWidth
        let rotatedHeight = quarterTurn ? sourceWidth : sourceHeight
        let target = Target(
            pixelFormat: request.pixelFormat ?? CVPixelBufferGetPixelFormatType(source),
            width: request.width ?? rotatedWidth, height: request.height ?? rotatedHeight)
        // Convert at the pre-rotation size, then rotate. Packed 4:2:2 cannot be turned: go through NV12.
        let preRotation = Target(
            pixelFormat: target.pixelFormat, width: quarterTurn ? target.height : target.width,
            height: quarterTurn ? target.width : target.height)
        let image: CVPixelBuffer?
        if transform.supports(target.pixelFormat) {
            image = converters.convert(source, to: preRotation).flatMap(transform.apply(to:))
        } else {
            var planar = preRotation
            planar.pixelFormat = kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
            image = converters.convert(source, to: planar).flatMap(transform.apply(to:))
                .flatMap { converters.convert($0, to: target) }
        }
        guard let image else { return nil }
        if image === source { return sample }
        return wrapper.wrap(image, like: sample)
    }
}
