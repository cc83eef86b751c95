// CaptureMetrics through the API: two recordings in a row on one movie file output, scraped between them, and the
// counters checked against what ffprobe counts in the two files.

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import OpenAVCaptureWeb
import Testing
import TestSupport

@Suite("CaptureMetrics: counters across recordings, checked against the files", .serialized)
struct CaptureMetricsTests {
    @Test("a second, longer recording after an idle output: frames written add up to both files' frames")
    func countersGoOnAcrossRecordings() throws {
        guard MediaTool.available(for: "CaptureMetricsTests") else { return }
        let output = AVCaptureMovieFileOutput()
        let session = try makeMovieSession(output)
        let metrics = CaptureMetrics()
        metrics.watch(session)
        session.startRunning()
        defer { session.stopRunning() }
        let label = "output=\"AVCaptureMovieFileOutput\""
        var files: [URL] = []
        var scraped: [Double] = []
        // The second recording is longer, so its count passes the first's before the scrape: only the restart
        // (the output's epoch) tells the counter that these frames are new.
        for seconds in [1, 2] {
            let url = try scratchURL("metrics-\(seconds)-\(UUID().uuidString).mov", suite: "metrics-tests")
            output.maxRecordedDuration = CMTime(value: CMTimeValue(seconds), timescale: 1)
            let delegate = MovieRecordingDelegate()
            output.startRecording(to: url, recordingDelegate: delegate)
            #expect(delegate.waitForFinish(), "the \(seconds) s recording never finished")
            #expect(delegate.successfullyFinished == true, "\(String(describing: delegate.error))")
            files.append(url)
            scraped.append(try #require(sample("avcapture_frames_written_total", label, in: metrics.exposition())))
        }
        let frames = try files.map { try decodedFrameIndices($0).count }
        #expect(scraped[0] == Double(frames[0]), "after the first file: \(scraped[0]) counted, \(frames[0]) in it")
        #expect(scraped[1] == Double(frames[0] + frames[1]), "after both: \(scraped[1]), files \(frames)")
        let bytes = try #require(sample("avcapture_bytes_written_total", label, in: metrics.exposition()))
        let sizes = try files.map { try FileManager.default.attributesOfItem(atPath: $0.path)[.size] as? Int ?? 0 }
        // The byte count is what the recording reported while writing: each file's media, without its last moov.
        #expect(bytes > Double(sizes[1]) && bytes <= Double(sizes.reduce(0, +)), "\(bytes) against files \(sizes)")
        let check = try promtoolCheck(metrics.exposition())
        #expect(check.status == 0 && check.said.isEmpty, "promtool: \(check.said)")
    }
}
