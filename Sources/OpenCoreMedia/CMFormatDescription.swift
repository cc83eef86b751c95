import Foundation

/// A media type, as CoreMedia's `CMMediaType` (`'vide'`, `'soun'`).
public typealias CMMediaType = FourCharCode
/// A video codec, as CoreMedia's `CMVideoCodecType` (`'avc1'`, `'hvc1'`).
public typealias CMVideoCodecType = FourCharCode
/// Width and height in pixels, as CoreMedia's `CMVideoDimensions`.
public struct CMVideoDimensions: Hashable, Sendable {
    /// Width in pixels.
    public var width: Int32
    /// Height in pixels.
    public var height: Int32
    /// Zero by zero.
    public init() { self.init(width: 0, height: 0) }
    /// The given width and height.
    public init(width: Int32, height: Int32) {
        self.width = width
        self.height = height
    }
}

public let kCMMediaType_Video = fourCharCode("vide")!
public let kCMMediaType_Audio = fourCharCode("soun")!
public let kCMMediaType_Muxed = fourCharCode("muxx")!
public let kCMMediaType_Text = fourCharCode("text")!
public let kCMMediaType_ClosedCaption = fourCharCode("clcp")!
public let kCMMediaType_Subtitle = fourCharCode("sbtl")!
public let kCMMediaType_TimeCode = fourCharCode("tmcd")!
public let kCMMediaType_Metadata = fourCharCode("meta")!

public let kCMVideoCodecType_H264 = fourCharCode("avc1")!
public let kCMVideoCodecType_HEVC = fourCharCode("hvc1")!
public let kCMVideoCodecType_JPEG = fourCharCode("jpeg")!
public let kCMVideoCodecType_MPEG4Video = fourCharCode("mp4v")!
public let kCMVideoCodecType_AppleProRes422 = fourCharCode("apcn")!
public let kCMVideoCodecType_AppleProRes422HQ = fourCharCode("apch")!
public let kCMVideoCodecType_AppleProRes422LT = fourCharCode("apcs")!
public let kCMVideoCodecType_AppleProRes422Proxy = fourCharCode("apco")!
public let kCMVideoCodecType_AppleProRes4444 = fourCharCode("ap4h")!

/// CoreMedia's format description errors, with Apple's values.
public let kCMFormatDescriptionError_InvalidParameter: OSStatus = -12710
public let kCMFormatDescriptionError_AllocationFailed: OSStatus = -12711
public let kCMFormatDescriptionError_ValueNotAvailable: OSStatus = -12718

/// What a stream of samples contains: media type, subtype (codec or pixel format) and its parameters.
///
/// A video description carries dimensions; an audio description carries an ``AudioStreamBasicDescription``.
/// Descriptions are immutable and compare equal when type, subtype, dimensions, audio layout and extensions agree.
///
/// Threading: immutable after creation; safe to share between threads.
public final class CMFormatDescription: Hashable, @unchecked Sendable, CustomStringConvertible {
    /// What kind of media a description describes, as the Swift overlay's `CMFormatDescription.MediaType`.
    public struct MediaType: RawRepresentable, Hashable, Sendable {
        public var rawValue: CMMediaType
        public init(rawValue: CMMediaType) { self.rawValue = rawValue }
        public static let video = MediaType(rawValue: kCMMediaType_Video)
        public static let audio = MediaType(rawValue: kCMMediaType_Audio)
        public static let muxed = MediaType(rawValue: kCMMediaType_Muxed)
        public static let text = MediaType(rawValue: kCMMediaType_Text)
        public static let closedCaption = MediaType(rawValue: kCMMediaType_ClosedCaption)
        public static let subtitle = MediaType(rawValue: kCMMediaType_Subtitle)
        public static let timeCode = MediaType(rawValue: kCMMediaType_TimeCode)
        public static let metadata = MediaType(rawValue: kCMMediaType_Metadata)
    }

    /// The codec or pixel format within a media type, as the Swift overlay's `CMFormatDescription.MediaSubType`.
    public struct MediaSubType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: FourCharCode
        public init(rawValue: FourCharCode) { self.rawValue = rawValue }
        public static let h264 = MediaSubType(rawValue: kCMVideoCodecType_H264)
        public static let hevc = MediaSubType(rawValue: kCMVideoCodecType_HEVC)
        public static let jpeg = MediaSubType(rawValue: kCMVideoCodecType_JPEG)
        public static let mpeg4Video = MediaSubType(rawValue: kCMVideoCodecType_MPEG4Video)
        public static let proRes422 = MediaSubType(rawValue: kCMVideoCodecType_AppleProRes422)
        public static let linearPCM = MediaSubType(rawValue: kAudioFormatLinearPCM)
        public static let mpeg4AAC = MediaSubType(rawValue: kAudioFormatMPEG4AAC)
        public static let appleLossless = MediaSubType(rawValue: kAudioFormatAppleLossless)
        public var description: String { fourCharCodeDescription(rawValue) }
    }

    /// The media type. The corresponding Apple function is `CMFormatDescriptionGetMediaType`.
    public let mediaType: MediaType
    /// The codec, pixel format or audio format. The corresponding Apple function is
    /// `CMFormatDescriptionGetMediaSubType`.
    public let mediaSubType: MediaSubType
    /// Width and height for video; zero for other media.
    public let dimensions: CMVideoDimensions
    /// The stream layout for audio; nil for other media.
    public let audioStreamBasicDescription: AudioStreamBasicDescription?
    /// Extra properties (`CMFormatDescriptionGetExtensions`), keyed by Apple's extension key strings. Treated as
    /// immutable values (strings, numbers), as CF's are: that is what makes the description safe to share.
    public let extensions: [String: Any]

    /// Stable storage for `CMAudioFormatDescriptionGetStreamBasicDescription`, which returns a pointer.
    private let basicDescriptionStorage: UnsafeMutablePointer<AudioStreamBasicDescription>?

    private init(
        mediaType: MediaType, mediaSubType: MediaSubType, dimensions: CMVideoDimensions,
        audio: AudioStreamBasicDescription?, extensions: [String: Any]
    ) {
        self.mediaType = mediaType
        self.mediaSubType = mediaSubType
        self.dimensions = dimensions
        self.audioStreamBasicDescription = audio
        self.extensions = extensions
        if let audio {
            let storage = UnsafeMutablePointer<AudioStreamBasicDescription>.allocate(capacity: 1)
            storage.initialize(to: audio)
            basicDescriptionStorage = storage
        } else {
            basicDescriptionStorage = nil
        }
    }

    deinit {
        basicDescriptionStorage?.deinitialize(count: 1)
        basicDescriptionStorage?.deallocate()
    }

    /// A description of any media type, without dimensions or an audio layout.
    public convenience init(mediaType: MediaType, mediaSubType: MediaSubType, extensions: [String: Any]? = nil) {
        self.init(
            mediaType: mediaType, mediaSubType: mediaSubType, dimensions: CMVideoDimensions(), audio: nil,
            extensions: extensions ?? [:])
    }

    /// A video description. Throws for non-positive dimensions.
    public convenience init(
        videoCodecType: MediaSubType, width: Int, height: Int, extensions: [String: Any]? = nil
    ) throws {
        guard let width = Int32(exactly: width), let height = Int32(exactly: height), width > 0, height > 0 else {
            throw coreMediaError(kCMFormatDescriptionError_InvalidParameter, "video dimensions must be positive")
        }
        self.init(
            mediaType: .video, mediaSubType: videoCodecType, dimensions: CMVideoDimensions(width: width, height: height),
            audio: nil, extensions: extensions ?? [:])
    }

    /// The description of an uncompressed image buffer: its pixel format and dimensions, and its Y'CbCr matrix
    /// attachment as the ``kCMFormatDescriptionExtension_YCbCrMatrix`` extension, as Apple's does.
    public convenience init(imageBuffer: CVImageBuffer) throws {
        // The colour attachments become the extensions of the same names, as Apple's
        // CMVideoFormatDescriptionCreateForImageBuffer makes them.
        var extensions: [String: Any] = [:]
        for key in [
            kCMFormatDescriptionExtension_YCbCrMatrix, kCMFormatDescriptionExtension_ColorPrimaries,
            kCMFormatDescriptionExtension_TransferFunction, kCMFormatDescriptionExtension_GammaLevel,
        ] {
            if let value = CVBufferCopyAttachment(imageBuffer, key, nil) { extensions[key] = value }
        }
        try self.init(
            videoCodecType: MediaSubType(rawValue: CVPixelBufferGetPixelFormatType(imageBuffer)),
            width: CVPixelBufferGetWidth(imageBuffer), height: CVPixelBufferGetHeight(imageBuffer),
            extensions: extensions.isEmpty ? nil : extensions)
    }

    /// An audio description. Throws when the sample rate or channel count is not positive.
    public convenience init(
        audioStreamBasicDescription asbd: AudioStreamBasicDescription, extensions: [String: Any]? = nil
    ) throws {
        guard asbd.mSampleRate > 0, asbd.mSampleRate.isFinite, asbd.mChannelsPerFrame > 0 else {
            throw coreMediaError(
                kCMFormatDescriptionError_InvalidParameter, "audio needs a positive sample rate and channel count")
        }
        self.init(
            mediaType: .audio, mediaSubType: MediaSubType(rawValue: asbd.mFormatID), dimensions: CMVideoDimensions(),
            audio: asbd, extensions: extensions ?? [:])
    }

    /// Whether an image buffer has this description's pixel format and dimensions
    /// (`CMVideoFormatDescriptionMatchesImageBuffer`).
    public func matches(_ imageBuffer: CVImageBuffer) -> Bool {
        mediaType == .video && mediaSubType.rawValue == CVPixelBufferGetPixelFormatType(imageBuffer)
            && Int(dimensions.width) == CVPixelBufferGetWidth(imageBuffer)
            && Int(dimensions.height) == CVPixelBufferGetHeight(imageBuffer)
    }

    /// The stream layout pointer `CMAudioFormatDescriptionGetStreamBasicDescription` returns; lives as long as self.
    fileprivate var basicDescriptionPointer: UnsafePointer<AudioStreamBasicDescription>? {
        basicDescriptionStorage.map { UnsafePointer($0) }
    }

    public static func == (lhs: CMFormatDescription, rhs: CMFormatDescription) -> Bool {
        lhs === rhs
            || (lhs.mediaType == rhs.mediaType && lhs.mediaSubType == rhs.mediaSubType
                && lhs.dimensions == rhs.dimensions && lhs.audioStreamBasicDescription == rhs.audioStreamBasicDescription
                && Self.extensionsEqual(lhs.extensions, rhs.extensions))
    }

    /// Extension values are plist-like (strings, numbers, data, nested dictionaries): compare them as hashable
    /// values where they are, by description otherwise.
    private static func extensionsEqual(_ lhs: [String: Any], _ rhs: [String: Any]) -> Bool {
        lhs.count == rhs.count
            && lhs.allSatisfy { key, value in
                guard let other = rhs[key] else { return false }
                if let value = value as? AnyHashable, let other = other as? AnyHashable { return value == other }
                return String(describing: value) == String(describing: other)
            }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(mediaType)
        hasher.combine(mediaSubType)
        hasher.combine(dimensions)
        hasher.combine(audioStreamBasicDescription)
    }

    public var description: String {
        var text = "CMFormatDescription(\(fourCharCodeDescription(mediaType.rawValue)) \(mediaSubType)"
        if mediaType == .video { text += " \(dimensions.width)x\(dimensions.height)" }
        if let audio = audioStreamBasicDescription {
            text += " \(audio.mSampleRate) Hz \(audio.mChannelsPerFrame) ch \(audio.mBitsPerChannel) bit"
        }
        return text + ")"
    }
}

/// A description of video, as CoreMedia's alias.
public typealias CMVideoFormatDescription = CMFormatDescription
/// A description of audio, as CoreMedia's alias.
public typealias CMAudioFormatDescription = CMFormatDescription

// MARK: - The C-style functions, with Apple's Swift spelling

/// The media type (`kCMMediaType_Video`, ...).
public func CMFormatDescriptionGetMediaType(_ desc: CMFormatDescription) -> CMMediaType { desc.mediaType.rawValue }

/// The codec, pixel format or audio format of a description.
public func CMFormatDescriptionGetMediaSubType(_ desc: CMFormatDescription) -> FourCharCode {
    desc.mediaSubType.rawValue
}

/// The extensions dictionary, or nil when there are none.
public func CMFormatDescriptionGetExtensions(_ desc: CMFormatDescription) -> CFDictionary? {
    desc.extensions.isEmpty ? nil : desc.extensions
}

/// Whether two descriptions are equal.
public func CMFormatDescriptionEqual(_ format: CMFormatDescription, otherFormatDescription: CMFormatDescription?) -> Bool {
    otherFormatDescription.map { format == $0 } ?? false
}

/// Width and height of a video description; zero for other media.
public func CMVideoFormatDescriptionGetDimensions(_ videoDesc: CMVideoFormatDescription) -> CMVideoDimensions {
    videoDesc.dimensions
}

/// The size a video is shown at. Apple's `CMVideoFormatDescriptionGetPresentationDimensions`: the encoded size
/// corrected by the pixel aspect ratio and clean aperture when asked to; our descriptions carry neither (square
/// pixels, no clean aperture), so it is the encoded size whatever the flags.
public func CMVideoFormatDescriptionGetPresentationDimensions(
    _ videoDesc: CMVideoFormatDescription, usePixelAspectRatio: Bool, useCleanAperture: Bool
) -> CGSize {
    CGSize(width: CGFloat(videoDesc.dimensions.width), height: CGFloat(videoDesc.dimensions.height))
}

/// Creates a video description. Returns `kCMFormatDescriptionError_InvalidParameter` for non-positive dimensions.
@discardableResult
public func CMVideoFormatDescriptionCreate(
    allocator: CFAllocator?, codecType: CMVideoCodecType, width: Int32, height: Int32, extensions: CFDictionary?,
    formatDescriptionOut: UnsafeMutablePointer<CMVideoFormatDescription?>
) -> OSStatus {
    reportingStatus(into: formatDescriptionOut) {
        try CMFormatDescription(
            videoCodecType: .init(rawValue: codecType), width: Int(width), height: Int(height),
            extensions: extensions)
    }
}

/// Creates the description of an image buffer's pixel format and dimensions.
@discardableResult
public func CMVideoFormatDescriptionCreateForImageBuffer(
    allocator: CFAllocator?, imageBuffer: CVImageBuffer,
    formatDescriptionOut: UnsafeMutablePointer<CMVideoFormatDescription?>
) -> OSStatus {
    reportingStatus(into: formatDescriptionOut) { try CMFormatDescription(imageBuffer: imageBuffer) }
}

/// Whether an image buffer has the description's pixel format and dimensions.
public func CMVideoFormatDescriptionMatchesImageBuffer(
    _ desc: CMVideoFormatDescription, imageBuffer: CVImageBuffer
) -> Bool {
    desc.matches(imageBuffer)
}

/// Creates an audio description. Channel layouts and magic cookies are accepted for source compatibility and
/// not kept (no capture path here produces them).
@discardableResult
public func CMAudioFormatDescriptionCreate(
    allocator: CFAllocator?, asbd: UnsafePointer<AudioStreamBasicDescription>, layoutSize: Int,
    layout: UnsafeRawPointer?, magicCookieSize: Int, magicCookie: UnsafeRawPointer?, extensions: CFDictionary?,
    formatDescriptionOut: UnsafeMutablePointer<CMAudioFormatDescription?>
) -> OSStatus {
    reportingStatus(into: formatDescriptionOut) {
        try CMFormatDescription(audioStreamBasicDescription: asbd.pointee, extensions: extensions)
    }
}

/// The stream layout of an audio description, or nil for other media. The pointer lives as long as the description.
public func CMAudioFormatDescriptionGetStreamBasicDescription(
    _ desc: CMAudioFormatDescription
) -> UnsafePointer<AudioStreamBasicDescription>? {
    desc.basicDescriptionPointer
}

/// Runs a throwing Swift initializer for a C-style `…Create` function: the result goes to `out`, errors become
/// their OSStatus.
package func reportingStatus<T>(into out: UnsafeMutablePointer<T?>, _ make: () throws -> T) -> OSStatus {
    do {
        out.pointee = try make()
        return noErr
    } catch let error as NSError where error.domain == NSOSStatusErrorDomain {
        out.pointee = nil
        return OSStatus(truncatingIfNeeded: error.code)
    } catch {
        out.pointee = nil
        return kCMFormatDescriptionError_InvalidParameter
    }
}

/// "No error", as Apple's `noErr`.
public let noErr: OSStatus = 0

/// The Y'CbCr matrix of a video description's pixels: the same key and values as the image buffer attachment
/// (``kCVImageBufferYCbCrMatrixKey``). Apple's `kCMFormatDescriptionExtension_YCbCrMatrix`.
public let kCMFormatDescriptionExtension_YCbCrMatrix: CFString = kCVImageBufferYCbCrMatrixKey

/// The colour primaries of a video description, with the values of the image buffer key
/// (``kCVImageBufferColorPrimariesKey``). Apple's `kCMFormatDescriptionExtension_ColorPrimaries`.
public let kCMFormatDescriptionExtension_ColorPrimaries: CFString = kCVImageBufferColorPrimariesKey

/// The transfer function of a video description, with the values of the image buffer key
/// (``kCVImageBufferTransferFunctionKey``). Apple's `kCMFormatDescriptionExtension_TransferFunction`.
public let kCMFormatDescriptionExtension_TransferFunction: CFString = kCVImageBufferTransferFunctionKey

/// The gamma of a video description whose transfer function is `kCVImageBufferTransferFunction_UseGamma`, with the
/// values of the image buffer key (``kCVImageBufferGammaLevelKey``). Apple's `kCMFormatDescriptionExtension_GammaLevel`.
public let kCMFormatDescriptionExtension_GammaLevel: CFString = kCVImageBufferGammaLevelKey
