// UTType: the few uniform types that `import AVFoundation` makes visible on Apple's platforms and that capture code
// passes to AVFoundation (AVAssetWriter(contentType:)), with their file name extensions and MIME types.

import Foundation

/// A uniform type identifier, as UniformTypeIdentifiers' `UTType`: the media file types AVFoundation writes.
///
/// Linux has no type database; this one knows the types of ``AVFileType`` (movies, MPEG-4, audio files, JPEG and
/// HEIC stills) and the abstract `public.movie`, `public.audio` and `public.image`. ``init(_:)`` and
/// ``init(filenameExtension:)`` answer nil for anything else, as Apple's do for an undeclared type.
///
/// Value type; safe to use from any thread.
public struct UTType: Hashable, Sendable, CustomStringConvertible {
    /// The type's identifier, such as `public.mpeg-4`.
    public let identifier: String
    /// The file name extension files of this type usually have, without the dot; nil for abstract types.
    public let preferredFilenameExtension: String?
    /// The MIME type; nil where there is none.
    public let preferredMIMEType: String?
    /// The identifiers of the types this one conforms to directly.
    private let parents: [String]

    private init(_ identifier: String, _ filenameExtension: String?, _ mimeType: String?, _ parents: [String]) {
        self.identifier = identifier
        self.preferredFilenameExtension = filenameExtension
        self.preferredMIMEType = mimeType
        self.parents = parents
    }

    /// The declared type with `identifier`, or nil when it is not one of the types this table knows.
    public init?(_ identifier: String) {
        guard let known = Self.known.first(where: { $0.identifier == identifier.lowercased() }) else { return nil }
        self = known
    }

    /// The type whose preferred file name extension is `filenameExtension` (case-insensitive), or nil.
    public init?(filenameExtension: String) {
        let wanted = filenameExtension.lowercased()
        guard let known = Self.known.first(where: { $0.preferredFilenameExtension == wanted }) else { return nil }
        self = known
    }

    /// Whether this type is `type` or, through its parents, conforms to it (`mpeg4Movie` conforms to `movie`).
    public func conforms(to type: UTType) -> Bool {
        if self == type { return true }
        return parents.contains { UTType($0)?.conforms(to: type) ?? false }
    }

    public var description: String { identifier }

    public static func == (lhs: UTType, rhs: UTType) -> Bool { lhs.identifier == rhs.identifier }
    public func hash(into hasher: inout Hasher) { hasher.combine(identifier) }

    /// `public.movie`: audiovisual content in a container.
    public static let movie = UTType("public.movie", nil, nil, [])
    /// `public.audio`.
    public static let audio = UTType("public.audio", nil, nil, [])
    /// `public.image`.
    public static let image = UTType("public.image", nil, nil, [])
    /// `com.apple.quicktime-movie` (`.mov`).
    public static let quickTimeMovie = UTType("com.apple.quicktime-movie", "mov", "video/quicktime", ["public.movie"])
    /// `public.mpeg-4` (`.mp4`): also what segment output is (``AVAssetWriter/init(contentType:)``).
    public static let mpeg4Movie = UTType("public.mpeg-4", "mp4", "video/mp4", ["public.movie"])
    /// `com.apple.m4v-video` (`.m4v`).
    public static let appleMPEG4Video = UTType("com.apple.m4v-video", "m4v", "video/x-m4v", ["public.mpeg-4"])
    /// `public.mpeg-4-audio` (`.m4a`, Apple's `com.apple.m4a-audio` files conform to it).
    public static let mpeg4Audio = UTType("public.mpeg-4-audio", "m4a", "audio/mp4", ["public.audio"])
    /// `com.microsoft.waveform-audio` (`.wav`).
    public static let wav = UTType("com.microsoft.waveform-audio", "wav", "audio/vnd.wave", ["public.audio"])
    /// `public.aiff-audio` (`.aiff`).
    public static let aiff = UTType("public.aiff-audio", "aiff", "audio/aiff", ["public.audio"])
    /// `public.mp3` (`.mp3`).
    public static let mp3 = UTType("public.mp3", "mp3", "audio/mpeg", ["public.audio"])
    /// `public.jpeg` (`.jpeg`).
    public static let jpeg = UTType("public.jpeg", "jpeg", "image/jpeg", ["public.image"])
    /// `public.heic` (`.heic`).
    public static let heic = UTType("public.heic", "heic", "image/heic", ["public.image"])

    /// Every type the table knows; ``AVFileType``'s raw values among them.
    private static let known: [UTType] = [
        movie, audio, image, quickTimeMovie, mpeg4Movie, appleMPEG4Video, mpeg4Audio, wav, aiff, mp3, jpeg, heic,
        UTType("com.apple.m4a-audio", "m4a", "audio/x-m4a", ["public.mpeg-4-audio"]),
        UTType("public.aifc-audio", "aifc", "audio/x-aiff", ["public.audio"]),
        UTType("com.apple.coreaudio-format", "caf", "audio/x-caf", ["public.audio"]),
    ]
}
