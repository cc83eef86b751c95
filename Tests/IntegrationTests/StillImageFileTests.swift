// Stills written by the photo and still image outputs, read back by exiftool and ffprobe; stills taken during a
// recording cost the recording no frame.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import TestSupport
import Testing

@Suite("Still image files, read by exiftool and ffprobe", .serialized)
struct StillImageFileTests {
    /// Checks that what exiftool reads from the file is what the properties dictionary says.
    static func expectAgreement(
        _ properties: [String: Any], _ file: ExifToolReport, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let exif = properties[kCGImagePropertyExifDictionary] as? [String: Any] ?? [:]
        let tiff = properties[kCGImagePropertyTIFFDictionary] as? [String: Any] ?? [:]
        #expect(file.warnings.isEmpty, "\(file.warnings)", sourceLocation: sourceLocation)
        #expect(
            file.string("IFD0", "Make") == tiff[kCGImagePropertyTIFFMake] as? String, sourceLocation: sourceLocation)
        #expect(
            file.string("IFD0", "Model") == tiff[kCGImagePropertyTIFFModel] as? String, sourceLocation: sourceLocation)
        #expect(
            file.string("IFD0", "Software") == tiff[kCGImagePropertyTIFFSoftware] as? String,
            sourceLocation: sourceLocation)
        #expect(
            file.string("ExifIFD", "DateTimeOriginal") == exif[kCGImagePropertyExifDateTimeOriginal] as? String,
            sourceLocation: sourceLocation)
        #expect(
            file.string("ExifIFD", "OffsetTimeOriginal") == exif[kCGImagePropertyExifOffsetTimeOriginal] as? String,
            sourceLocation: sourceLocation)
        let exposure = exif[kCGImagePropertyExifExposureTime] as? Double ?? -1
        #expect(abs((file.number("ExifIFD", "ExposureTime") ?? 0) - exposure) < 1e-6, sourceLocation: sourceLocation)
        #expect(exposure > 0, sourceLocation: sourceLocation)
        #expect(
            file.number("ExifIFD", "ISO").map(Int.init) == (exif[kCGImagePropertyExifISOSpeedRatings] as? [Int])?.first,
            sourceLocation: sourceLocation)
        #expect(
            file.number("ExifIFD", "Flash").map(Int.init) == exif[kCGImagePropertyExifFlash] as? Int,
            sourceLocation: sourceLocation)
        #expect(
            file.number("IFD0", "Orientation").map(Int.init) == properties[kCGImagePropertyOrientation] as? Int,
            sourceLocation: sourceLocation)
        #expect(
            file.number("ExifIFD", "ExifImageWidth").map(Int.init) == exif[kCGImagePropertyExifPixelXDimension] as? Int,
            sourceLocation: sourceLocation)
        #expect(
            file.number("ExifIFD", "ExifImageHeight").map(Int.init) == exif[kCGImagePropertyExifPixelYDimension]
                as? Int,
            sourceLocation: sourceLocation)
        if let gps = properties[kCGImagePropertyGPSDictionary] as? [String: Any] {
            let latitude =
                (gps[kCGImagePropertyGPSLatitude] as? Double ?? 0)
                * (gps[kCGImagePropertyGPSLatitudeRef] as? String == "S" ? -1 : 1)
            let longitude =
                (gps[kCGImagePropertyGPSLongitude] as? Double ?? 0)
                * (gps[kCGImagePropertyGPSLongitudeRef] as? String == "W" ? -1 : 1)
            #expect(
                abs((file.number("Composite", "GPSLatitude") ?? 0) - latitude) < 1e-5, sourceLocation: sourceLocation)
            #expect(
                abs((file.number("Composite", "GPSLongitude") ?? 0) - longitude) < 1e-5, sourceLocation: sourceLocation)
            #expect(
                abs((file.number("GPS", "GPSAltitude") ?? 0) - (gps[kCGImagePropertyGPSAltitude] as? Double ?? -1))
                    < 1e-3, sourceLocation: sourceLocation)
        } else {
            #expect(file.tags["GPS:GPSLatitude"] == nil, sourceLocation: sourceLocation)
        }
    }

    @Test("A photo's JPEG: exiftool reads every EXIF field the metadata dictionary holds; ffprobe decodes it")
    func photoJPEG() throws {
        guard MediaTool.available([.exiftool, .ffprobe, .ffmpeg], for: "StillImageFileTests.photoJPEG") else { return }
        let output = AVCapturePhotoOutput()
        let session = try makeSession(preset: .vga640x480, devices: [VirtualDevices.back], outputs: [output])
        let connection = try #require(output.connection(with: .video))
        connection.videoRotationAngle = 90
        session.startRunning()
        defer { session.stopRunning() }
        let settings = AVCapturePhotoSettings()
        settings.flashMode = .on
        settings.metadata = [
            kCGImagePropertyGPSDictionary: [
                kCGImagePropertyGPSLatitude: 33.8688, kCGImagePropertyGPSLatitudeRef: "S",
                kCGImagePropertyGPSLongitude: 151.2093, kCGImagePropertyGPSLongitudeRef: "E",
                kCGImagePropertyGPSAltitude: 58.0, kCGImagePropertyGPSAltitudeRef: 0,
                kCGImagePropertyGPSTimeStamp: "01:02:03.00", kCGImagePropertyGPSDateStamp: "2026:11:22",
            ] as [String: Any]
        ]
        let (photo, _) = takePhoto(output, settings)
        let taken = try #require(photo)
        let url = try scratchURL("photo.jpg", suite: "stills")
        try #require(taken.fileDataRepresentation()).write(to: url)

        let file = try ExifToolReport(url)
        Self.expectAgreement(taken.metadata, file)
        #expect(file.string("IFD0", "Model") == "Virtual Back Camera")
        #expect(file.number("IFD0", "Orientation") == 6)
        #expect(file.number("ExifIFD", "Flash") == 9)  // on, fired
        #expect(file.number("File", "ImageWidth") == 640 && file.number("File", "ImageHeight") == 480)
        #expect(file.string("GPS", "GPSDateStamp") == "2026:11:22")

        let probe = try FFprobeReport(url)
        let stream = try #require(probe.stream("video"))
        #expect(stream["codec_name"] as? String == "mjpeg")
        #expect(stream["width"] as? Int == 640 && stream["height"] as? Int == 480)
        #expect(try ffmpegDecodeErrors(url) == "")
    }

    @Test("AVCaptureStillImageOutput: the attachments and jpegStillImageNSDataRepresentation's file agree")
    func stillImageOutputJPEG() throws {
        guard MediaTool.available([.exiftool, .ffprobe, .ffmpeg], for: "StillImageFileTests.stillImageOutputJPEG")
        else { return }
        let output = AVCaptureStillImageOutput()
        let session = try makeSession(preset: .hd1280x720, devices: [VirtualDevices.front], outputs: [output])
        session.startRunning()
        defer { session.stopRunning() }
        let (sample, error) = captureStill(output, from: try #require(output.connection(with: .video)))
        #expect(error == nil)
        let buffer = try #require(sample)
        let url = try scratchURL("still.jpg", suite: "stills")
        try #require(AVCaptureStillImageOutput.jpegStillImageNSDataRepresentation(buffer)).write(to: url)
        var properties: [String: Any] = [:]
        for key in [kCGImagePropertyExifDictionary, kCGImagePropertyTIFFDictionary, kCGImagePropertyOrientation] {
            properties[key] = CMGetAttachment(buffer, key: key, attachmentModeOut: nil)
        }
        let file = try ExifToolReport(url)
        Self.expectAgreement(properties, file)
        #expect(file.number("ExifIFD", "Flash") == 0x20)  // the front camera has no flash
        #expect(file.number("File", "ImageWidth") == 1280)
        #expect(try ffmpegDecodeErrors(url) == "")
    }

    @Test("A HEIC photo: exiftool reads its EXIF and size (Debian 12's ffprobe has no HEIF demuxer)")
    func photoHEIC() throws {
        guard MediaTool.available([.exiftool], for: "StillImageFileTests.photoHEIC") else { return }
        let output = AVCapturePhotoOutput()
        let session = try makeSession(preset: .vga640x480, devices: [VirtualDevices.back], outputs: [output])
        guard output.availablePhotoCodecTypes.contains(.hevc) else {
            print("Skipping StillImageFileTests.photoHEIC: libheif has no HEVC encoder here")
            return
        }
        session.startRunning()
        defer { session.stopRunning() }
        let settings = AVCapturePhotoSettings(format: [AVVideoCodecKey: AVVideoCodecType.hevc])
        #expect(settings.processedFileType == .heic)
        let (photo, _) = takePhoto(output, settings)
        let taken = try #require(photo)
        let url = try scratchURL("photo.heic", suite: "stills")
        try #require(taken.fileDataRepresentation()).write(to: url)
        let file = try ExifToolReport(url)
        Self.expectAgreement(taken.metadata, file)
        #expect(file.string("File", "MIMEType") == "image/heic")
        #expect(file.number("File", "ImageWidth") == 640 && file.number("File", "ImageHeight") == 480)
    }

    @Test("Stills taken during a recording cost it nothing: every frame index is in the movie")
    func stillsDuringRecording() throws {
        guard MediaTool.available([.ffprobe, .ffmpeg], for: "StillImageFileTests.stillsDuringRecording") else { return }
        let movie = AVCaptureMovieFileOutput()
        movie.maxRecordedDuration = CMTime(value: 2, timescale: 1)
        let photos = AVCapturePhotoOutput()
        let session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.back], outputs: [movie, photos])
        session.startRunning()
        defer { session.stopRunning() }
        let url = try scratchURL("recording-with-stills.mov", suite: "stills")
        let recording = MovieDelegate()
        movie.startRecording(to: url, recordingDelegate: recording)
        var taken = 0
        while movie.isRecording && taken < 6 {
            let settings = AVCapturePhotoSettings()
            settings.flashMode = taken % 2 == 0 ? .on : .off
            if takePhoto(photos, settings).0 != nil { taken += 1 }
        }
        #expect(recording.finished.wait(timeout: .now() + 15) == .success)
        #expect(taken >= 4, "only \(taken) stills during the recording")

        let indices = try decodedFrameIndices(url)
        #expect(indices.count == 60, "\(indices.count) frames in 2 s at 30 fps")
        // Every decoded frame carries the next index (sync frames carry none; flash-lit frames keep theirs).
        let steps = indexSteps(indices)
        #expect(steps.isEmpty, "frames lost or repeated at \(steps)")
        #expect(indices.compactMap { $0 }.count >= indices.count - 3)
    }
}

/// Waits for the end of a recording.
private final class MovieDelegate: NSObject, AVCaptureFileOutputRecordingDelegate, @unchecked Sendable {
    let finished = DispatchSemaphore(value: 0)
    func fileOutput(
        _ output: AVCaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [AVCaptureConnection],
        error: (any Error)?
    ) {
        finished.signal()
    }
}
