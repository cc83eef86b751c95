/// The codec configuration a compressed format description carries, for decoders.

/// Extension key: the sample description's extension atoms by four-character name (`avcC`, `hvcC`), as Apple's
/// H.264 and HEVC descriptions carry them. Values are the atoms' bytes (`[UInt8]`; Apple's are `CFData`).
public let kCMFormatDescriptionExtension_SampleDescriptionExtensionAtoms: CFString = "SampleDescriptionExtensionAtoms"

/// Extension key (ours): an audio codec's magic cookie (AAC's AudioSpecificConfig) as `[UInt8]`. Apple keeps the
/// cookie in the description itself (`CMAudioFormatDescriptionGetMagicCookie`); ours keeps it here.
package let kCMFormatDescriptionExtension_OpenAVMagicCookie: CFString = "OpenAVCaptureMagicCookie"
