// Reading colour information from a format description's extensions, as HDR-aware players and encoders do.
import OpenAVCaptureShim

enum FormatExtensionsReader {
    static func colorPrimaries(of description: CMFormatDescription) -> String? {
        guard let extensions = CMFormatDescriptionGetExtensions(description) as NSDictionary? else { return nil }
        return extensions[kCMFormatDescriptionExtension_ColorPrimaries] as? String
    }

    static func matrix(of description: CMFormatDescription) -> String? {
        guard let extensions = CMFormatDescriptionGetExtensions(description) as Dictionary? else { return nil }
        return extensions[kCVImageBufferYCbCrMatrixKey] as? String
    }

    static func objects(of description: CMFormatDescription) -> [AnyObject] {
        guard let extensions = CMFormatDescriptionGetExtensions(description) as NSDictionary? else { return [] }
        return extensions.allValues.map { $0 as AnyObject }
    }

    static func gamma(of description: CMFormatDescription) -> Double? {
        let extensions = CMFormatDescriptionGetExtensions(description) as NSDictionary?
        let value = extensions?[kCMFormatDescriptionExtension_GammaLevel] as AnyObject?
        return (value as? NSNumber)?.doubleValue
    }
}
