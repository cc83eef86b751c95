// A movie recorded through the public API, read by three tools nobody here wrote: GStreamer's discoverer,
// MediaInfo and ExifTool. Each must see the same tracks, length, frame rate and metadata.

import Foundation
import OpenAVCapture
import Testing
import TestSupport

@Suite("Recorded movies read by GStreamer, MediaInfo and ExifTool", .serialized)
struct OutsideReadersTests {
    /// Records one second of the virtual back camera (320x240, 30 fps) and microphone, titled and located.
    static func recordTitledMovie() throws -> URL {
        let url = try scratchURL("readers.mov", suite: "outside-readers")
        let output = AVCaptureMovieFileOutput()
        output.maxRecordedDuration = CMTime(value: 1, timescale: 1)
        let title = AVMutableMetadataItem()
        title.identifier = .commonIdentifierTitle
        title.value = NSString(string: "Readers agree")
        let location = AVMutableMetadataItem()
        location.identifier = .quickTimeMetadataLocationISO6709
        location.value = NSString(string: writerTestLocation)
        output.metadata = [title, location]
        let delegate = try recordUntilFinished(output, to: url)
        guard let delegate, delegate.successfullyFinished == true else {
            throw MediaToolFailure(description: "the recording did not finish: \(String(describing: delegate?.error))")
        }
        return url
    }

    @Test("gst-discoverer-1.0 finds H.264 and AAC lasting one second, and the creation date")
    func gstreamerDiscoverer() throws {
        guard MediaTool.available([.gstDiscoverer], for: "OutsideReadersTests.gstreamerDiscoverer") else { return }
        let url = try Self.recordTitledMovie()
        let result = try MediaTool.gstDiscoverer.run(["-v", url.path])
        #expect(result.status == 0, "\(result.error)")
        let text = result.outputText
        #expect(text.contains("video/x-h264"), "\(text)")
        #expect(text.contains("audio/mpeg"), "\(text)")
        #expect(text.contains("Width: 320") && text.contains("Height: 240"), "\(text)")
        // "Duration: 0:00:01.000000000"
        let duration = try #require(text.firstMatch(of: /Duration: 0:00:(\d+\.\d+)/).flatMap { Double($0.1) })
        #expect(abs(duration - 1) <= 0.05, "GStreamer says \(duration) s")
        // GStreamer 1.22's qtdemux reads the classic user data atoms, not the QuickTime metadata keys (mdta) that
        // Apple's capture files and ours carry, so it shows no title; it does see the keys' creation date.
        #expect(text.contains("datetime: "), "\(text)")
    }

    @Test("mediainfo reports a QuickTime movie with 30 fps AVC at 320x240 and AAC")
    func mediaInfo() throws {
        guard MediaTool.available([.mediainfo], for: "OutsideReadersTests.mediaInfo") else { return }
        let url = try Self.recordTitledMovie()
        let result = try MediaTool.mediainfo.run(["--Output=JSON", url.path])
        #expect(result.status == 0, "\(result.error)")
        let json = try #require(try JSONSerialization.jsonObject(with: result.output) as? [String: Any])
        let tracks = try #require((json["media"] as? [String: Any])?["track"] as? [[String: Any]])
        func track(_ type: String) -> [String: Any]? { tracks.first { $0["@type"] as? String == type } }
        let general = try #require(track("General"))
        #expect(general["Format_Profile"] as? String == "QuickTime")
        // MediaInfo lists QuickTime metadata keys under "extra", named after the key.
        let extra = try #require(general["extra"] as? [String: Any])
        #expect(extra["com_apple_quicktime_title"] as? String == "Readers agree", "\(general)")
        let video = try #require(track("Video"))
        #expect(video["Format"] as? String == "AVC")
        #expect(video["Width"] as? String == "320" && video["Height"] as? String == "240")
        #expect(video["FrameRate"] as? String == "30.000")
        #expect(video["FrameRate_Mode"] as? String == "CFR")
        let audio = try #require(track("Audio"))
        #expect(audio["Format"] as? String == "AAC")
        #expect(audio["SamplingRate"] as? String == "48000")
    }

    @Test("exiftool reads the title, the location and a creation date from the movie header")
    func exifTool() throws {
        guard MediaTool.available([.exiftool], for: "OutsideReadersTests.exifTool") else { return }
        let before = Date().addingTimeInterval(-2)
        let url = try Self.recordTitledMovie()
        let result = try MediaTool.exiftool.run(["-j", "-n", "-api", "QuickTimeUTC", url.path])
        #expect(result.status == 0, "\(result.error)")
        let entries = try #require(try JSONSerialization.jsonObject(with: result.output) as? [[String: Any]])
        let tags = try #require(entries.first)
        #expect(tags["Title"] as? String == "Readers agree", "\(tags)")
        let coordinates = try #require(tags["GPSCoordinates"] as? String, "\(tags)")
        let numbers = coordinates.split(separator: " ").compactMap { Double($0) }
        #expect(numbers.count >= 2 && abs(numbers[0] - 48.8584) < 1e-4 && abs(numbers[1] - 2.2945) < 1e-4)
        // "2026:11:22 00:10:00Z" style (QuickTimeUTC): within the test's own run.
        let created = try #require(tags["CreateDate"] as? String)
        let parser = DateFormatter()
        parser.locale = Locale(identifier: "en_US_POSIX")
        parser.timeZone = TimeZone(identifier: "UTC")
        parser.dateFormat = "yyyy:MM:dd HH:mm:ss"
        let date = try #require(parser.date(from: String(created.prefix(19))), "CreateDate \(created)")
        #expect(date >= before.addingTimeInterval(-1) && date <= Date().addingTimeInterval(1), "CreateDate \(created)")
    }
}
