// UTType: the media types AVFoundation's file types name, by identifier and by file name extension.

import Foundation
import OpenAVCapture
import Testing

@Suite("UTType: the media types of AVFileType")
struct UTTypeTests {
    @Test("Every container AVAssetWriter writes is a declared type with its extension")
    func writerFileTypes() throws {
        let expected: [(AVFileType, String)] = [
            (.mov, "mov"), (.mp4, "mp4"), (.m4v, "m4v"), (.m4a, "m4a"), (.wav, "wav"), (.aiff, "aiff"),
            (.aifc, "aifc"), (.caf, "caf"),
        ]
        for (fileType, filenameExtension) in expected {
            let type = try #require(UTType(fileType.rawValue), "\(fileType.rawValue)")
            #expect(type.identifier == fileType.rawValue)
            #expect(type.preferredFilenameExtension == filenameExtension, "\(fileType.rawValue)")
        }
        #expect(UTType(AVFileType.mp4.rawValue) == .mpeg4Movie)
        #expect(UTType(filenameExtension: "MOV") == .quickTimeMovie)
        #expect(UTType.mpeg4Movie.preferredMIMEType == "video/mp4")
    }

    @Test("Conformance follows the parents; unknown identifiers and extensions are nil")
    func conformance() {
        #expect(UTType.appleMPEG4Video.conforms(to: .mpeg4Movie))
        #expect(UTType.appleMPEG4Video.conforms(to: .movie))
        #expect(UTType.wav.conforms(to: .audio) && !UTType.wav.conforms(to: .movie))
        #expect(UTType.jpeg.conforms(to: .image))
        #expect(UTType("com.example.nothing") == nil)
        #expect(UTType(filenameExtension: "xyz") == nil)
        #expect("\(UTType.heic)" == "public.heic")
    }
}
