import CaptureGraph
import Foundation
import OpenAVCapture
import Testing

/// A file output delegate that is shown every buffer (macOS's `AVCaptureFileOutputDelegate`).
private final class SampleWatcher: NSObject, AVCaptureFileOutputDelegate {
    func fileOutputShouldProvideSampleAccurateRecordingStart(_ output: AVCaptureFileOutput) -> Bool { false }
}

/// Which outputs the session may give a decoder's own pictures (see `SampleDecodeStage`): only those whose frames
/// no code that may draw on them sees.
@Suite(.serialized) struct LentPictureTakersTests {
    @Test("file outputs' encoders take lent pictures; a file delegate or a video data output does not")
    func takers() throws {
        let movie = AVCaptureMovieFileOutput()
        let preEvent = AVCapturePreEventFileOutput()
        let data = AVCaptureVideoDataOutput()
        data.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_420YpCbCr8Planar]
        let session = try makeSession(devices: [VirtualDevices.back], outputs: [movie, preEvent, data])
        let movieVideo = try #require(movie.connection(with: .video))
        let preEventVideo = try #require(preEvent.connection(with: .video))
        let dataVideo = try #require(data.connection(with: .video))
        #expect(movie.takesLentPictures(from: movieVideo))
        #expect(preEvent.takesLentPictures(from: preEventVideo))
        #expect(!data.takesLentPictures(from: dataVideo), "a delegate may draw on its frames")
        let watcher = SampleWatcher()
        movie.delegate = watcher
        #expect(!movie.takesLentPictures(from: movieVideo), "a file output delegate is shown the frames")
        movie.delegate = nil
        #expect(movie.takesLentPictures(from: movieVideo))
        _ = session
    }
}
