// Reading sizes and codecs from format descriptions, as debug overlays and format pickers print them.
import OpenAVCaptureShim

enum FormatDescriptionInfo {
    static func fourCC(_ code: FourCharCode) -> String {
        let bytes = [24, 16, 8, 0].map { UInt8((code >> $0) & 0xFF) }
        return String(bytes: bytes, encoding: .ascii) ?? "????"
    }

    static func describe(_ format: AVCaptureDevice.Format) -> String {
        let description = format.formatDescription
        let dimensions = CMVideoFormatDescriptionGetDimensions(description)
        let shown = CMVideoFormatDescriptionGetPresentationDimensions(
            description, usePixelAspectRatio: true, useCleanAperture: true)
        let subType = CMFormatDescriptionGetMediaSubType(description)
        let rates = format.videoSupportedFrameRateRanges.map { "\($0.minFrameRate)-\($0.maxFrameRate)" }
        return "\(fourCC(subType)) \(dimensions.width)x\(dimensions.height) shown \(shown) @ \(rates)"
    }

    static func isAudio(_ sampleBuffer: CMSampleBuffer) -> Bool {
        guard let description = CMSampleBufferGetFormatDescription(sampleBuffer) else { return false }
        return CMFormatDescriptionGetMediaType(description) == kCMMediaType_Audio
    }
}
