// The photo outputs' still path, fed arbitrary bytes: a camera's JPEG frame decoded as sessions decode it
// (TurboJPEG), then encoded as the photo's JPEG with its EXIF (libexif) made from what comes from outside: the
// device's manufacturer and name (the kernel's and USB's strings), the `{GPS}` dictionary of
// `AVCapturePhotoSettings.metadata`, the connection's rotation and mirroring. Nothing in OpenAVCapture parses EXIF
// (it only writes it); what it writes is checked by decoding the file again: it must be a JPEG of the same size.
//
// Input: byte 0 flags (1 GPS, 2 altitude, 4 GPS time, 8 south, 16 west, 32/64 rotation, 128 mirrored); byte 1 the
// frame's claimed size (low 2 bits) and the quality (the rest); 3 × 8 bytes latitude, longitude, altitude (raw
// Float64 bits, little-endian); four strings, each a length byte and UTF-8 (make, model, GPS time, GPS date); the
// rest is the frame.

import Foundation
import FuzzSupport
import OpenAVCapture
import OpenAVCaptureTesting

let sizes = [(16, 16), (320, 240), (640, 480), (64, 48)]
nonisolated(unsafe) let encoder = PhotoFileEncoder()
nonisolated(unsafe) let checker = CompressedFrameDecoder()

/// Reads the input's fields front to back.
struct InputReader {
    var bytes: Data.SubSequence
    mutating func byte() -> UInt8 {
        guard let first = bytes.first else { return 0 }
        bytes = bytes.dropFirst()
        return first
    }
    mutating func double() -> Double {
        var bits: UInt64 = 0
        for index in 0..<8 { bits |= UInt64(byte()) << (8 * UInt64(index)) }
        return Double(bitPattern: bits)
    }
    mutating func string() -> String {
        let count = Int(byte())
        let text = bytes.prefix(count)
        bytes = bytes.dropFirst(count)
        return String(decoding: text, as: UTF8.self)
    }
}

/// A JPEG frame as a camera's sample buffer, claiming `width`×`height`.
func jpegSample(_ frame: Data, width: Int, height: Int) -> CMSampleBuffer? {
    guard let format = try? CMFormatDescription(videoCodecType: .jpeg, width: width, height: height) else { return nil }
    return try? CMSampleBuffer(
        dataBuffer: CMBlockBuffer(copying: frame), formatDescription: format, numSamples: 1,
        sampleTimings: [
            CMSampleTimingInfo(
                duration: CMTime(value: 1, timescale: 30),
                presentationTimeStamp: CMClockGetTime(CMClockGetHostTimeClock()), decodeTimeStamp: .invalid)
        ], sampleSizes: [frame.count])
}

func takePhoto(_ data: Data) {
    var input = InputReader(bytes: data[...])
    let flags = input.byte()
    let shape = input.byte()
    let (width, height) = sizes[Int(shape & 3)]
    let quality = Double(shape >> 2) / 63
    let (latitude, longitude, altitude) = (input.double(), input.double(), input.double())
    let (make, model, time, date) = (input.string(), input.string(), input.string(), input.string())
    guard !input.bytes.isEmpty, let frame = jpegSample(Data(input.bytes), width: width, height: height) else { return }
    var gps: [String: Any] = [
        kCGImagePropertyGPSLatitude: latitude, kCGImagePropertyGPSLongitude: longitude,
        kCGImagePropertyGPSLatitudeRef: flags & 8 != 0 ? "S" : "N",
        kCGImagePropertyGPSLongitudeRef: flags & 16 != 0 ? "W" : "E",
    ]
    if flags & 2 != 0 { gps[kCGImagePropertyGPSAltitude] = altitude }
    if flags & 4 != 0 { (gps[kCGImagePropertyGPSTimeStamp], gps[kCGImagePropertyGPSDateStamp]) = (time, date) }
    let metadata: [String: Any] = flags & 1 != 0 ? [kCGImagePropertyGPSDictionary: gps] : [:]
    let file: Data?
    do {
        file = try encoder.jpegFile(
            of: frame, manufacturer: make, cameraName: model, photoMetadata: metadata,
            rotation: 90 * Int((flags >> 5) & 3), mirrored: flags & 128 != 0, quality: quality)
    } catch {
        return  // An error value is a fine answer to a hostile frame.
    }
    guard let file else { return }
    // What we wrote must read back: a JPEG (SOI, then our EXIF APP1) that decodes to a picture of the same size.
    precondition(file.starts(with: [0xFF, 0xD8, 0xFF, 0xE1]), "the still does not start with SOI and APP1")
    let picture = jpegSample(file, width: width, height: height).map { checker.decode($0) } ?? []
    precondition(picture.count == 1, "the still's JPEG does not decode")
}

#if FUZZING
    import CFuzzDriver

    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
        takePhoto(Data(bytes: bytes, count: count))
        return 0
    }

    /// SwiftPM links an executable's `main` as `StillImageFuzzer_main`: it hands the command line to libFuzzer.
    @_cdecl("StillImageFuzzer_main")
    public func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        var count = argc
        var arguments = argv
        return LLVMFuzzerRunDriver(&count, &arguments) { data, size in
            guard let data else { return 0 }
            takePhoto(Data(bytes: data, count: size))
            return 0
        }
    }
#else
    @main struct StillImageCorpus {
        static func main() { runCorpus(named: "still", takePhoto) }
    }
#endif
