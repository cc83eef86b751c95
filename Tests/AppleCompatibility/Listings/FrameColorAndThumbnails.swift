// Colour spaces of captured frames and thumbnails of recordings, as a gallery view model reads them.
import OpenAVCaptureShim

enum FrameColorAndThumbnails {
    static func colorSpace(of buffer: CVPixelBuffer) -> CGColorSpace {
        if let attachments = CVBufferCopyAttachments(buffer, .shouldPropagate),
            let space = CVImageBufferCreateColorSpaceFromAttachments(attachments)?.takeRetainedValue()
        {
            return space
        }
        return CGColorSpaceCreateDeviceRGB()
    }

    static func isWide(_ buffer: CVPixelBuffer) -> Bool {
        colorSpace(of: buffer).isWideGamutRGB || CVBufferGetAttachments(buffer, .shouldPropagate)?.isEmpty == false
    }

    static func thumbnail(of asset: AVAsset) throws -> (CGImage, CMTime) {
        let generator = AVAssetImageGenerator(asset: asset)
        generator.appliesPreferredTrackTransform = true
        var actual = CMTime.zero
        let image = try generator.copyCGImage(at: CMTime(value: 1, timescale: 2), actualTime: &actual)
        return (image, actual)
    }

    static func firstPixel(of image: CGImage) -> UInt8? {
        guard let data = image.dataProvider?.data, let bytes = CFDataGetBytePtr(data) else { return nil }
        return image.bitsPerPixel == 32 ? bytes[0] : nil
    }

    static func exifOrientation(for angle: CGFloat) -> CGImagePropertyOrientation {
        switch angle {
        case 90: .right
        case 180: .down
        case 270: .left
        default: .up
        }
    }
}
