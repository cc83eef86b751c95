// Metadata set on a file output while it records reaches the finished file.

import Foundation
import OpenAVCapture
import Testing
import TestSupport

@Suite("Metadata changed during a recording", .serialized)
struct MetadataWhileRecordingTests {
    static func title(_ text: String) -> AVMetadataItem {
        let item = AVMutableMetadataItem()
        item.identifier = .commonIdentifierTitle
        item.value = NSString(string: text)
        return item
    }

    @Test("A title set mid-recording replaces the first one in the finished movie; the creation date stays")
    func titleChangedWhileRecording() throws {
        guard MediaTool.available(for: "MetadataWhileRecordingTests") else { return }
        let url = try scratchURL("retitled.mov", suite: "metadata-while-recording")
        let output = AVCaptureMovieFileOutput()
        output.movieFragmentInterval = CMTime(value: 1, timescale: 2)
        output.metadata = [Self.title("First title")]
        let session = try makeMovieSession(output)
        session.startRunning()
        defer { session.stopRunning() }
        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        #expect(delegate.waitForStart())
        // Wait until a fragment with the first title is on disk, so the change cannot be taken as the initial value.
        _ = waitUntil(timeout: 10, every: 0.05) { GrowingFile.tags(url)["com.apple.quicktime.title"] == "First title" }
        let created = GrowingFile.tags(url)["creation_time"]
        #expect(created != nil)
        output.metadata = [Self.title("Second title")]
        output.stopRecording()
        #expect(delegate.waitForFinish())
        #expect(delegate.error == nil, "\(String(describing: delegate.error))")
        let tags = try FFprobeReport(url).tags
        #expect(tags["com.apple.quicktime.title"] == "Second title", "\(tags)")
        #expect(tags["creation_time"] == created, "\(tags)")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
    }
}

/// ffprobe's view of a file that may still be growing (nil tags while it has no readable fragment yet).
enum GrowingFile {
    static func tags(_ url: URL) -> [String: String] { (try? FFprobeReport(url))?.tags ?? [:] }
}
