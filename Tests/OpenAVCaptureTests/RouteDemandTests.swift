// The routes a commit makes compute their outputs' demands once, and again only when a setting they depend on
// changed: read here through the route the capture thread uses, without streaming.

import CaptureGraph
import Foundation
@testable import OpenAVCapture
import Testing

private final class FrameWatcher: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate {}
private final class FileWatcher: NSObject, AVCaptureFileOutputDelegate {
    func fileOutputShouldProvideSampleAccurateRecordingStart(_ output: AVCaptureFileOutput) -> Bool { false }
}

@Suite(.serialized) struct RouteDemandTests {
    /// The route the device's capture thread reads for `output`.
    private func route(of output: AVCaptureOutput, in session: AVCaptureSession) throws -> any CaptureSink {
        let backend = try #require(VirtualDevices.back.backend as AnyObject?)
        let routes = session.routeTable(for: ObjectIdentifier(backend)).routes
        return try #require(
            routes.first { ($0 as? ConnectionSink)?.connection === output.connection(with: .video) })
    }

    @Test("a data output's demand follows its delegate, its settings and its connection's rotation")
    func dataOutput() throws {
        let data = AVCaptureVideoDataOutput()
        let session = try makeSession(devices: [VirtualDevices.back], outputs: [data])
        let route = try route(of: data, in: session)
        #expect(route.videoDemand == nil, "no delegate: nothing is converted for it")

        let watcher = FrameWatcher()
        data.setSampleBufferDelegate(watcher, queue: DispatchQueue(label: "frames"))
        #expect(route.videoDemand?.pixelFormats.first == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)

        data.videoSettings = [
            kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA, kCVPixelBufferWidthKey as String: 320,
            kCVPixelBufferHeightKey as String: 240,
        ]
        #expect(route.videoDemand == VideoFormatDemand(pixelFormats: [kCVPixelFormatType_32BGRA], width: 320, height: 240))

        // A quarter turn asks for the size before rotation.
        data.connection(with: .video)?.videoRotationAngle = 90
        #expect(route.videoDemand == VideoFormatDemand(pixelFormats: [kCVPixelFormatType_32BGRA], width: 240, height: 320))

        data.setSampleBufferDelegate(nil, queue: nil)
        #expect(route.videoDemand == nil)
    }

    @Test("a movie output demands its encoder's formats with a file delegate; lent pictures only without one")
    func movieOutput() throws {
        let movie = AVCaptureMovieFileOutput()
        let session = try makeSession(devices: [VirtualDevices.back], outputs: [movie])
        let route = try route(of: movie, in: session)
        #expect(route.videoDemand == nil, "not recording: nothing is converted for it")
        #expect(route.takesLentPictures)

        let watcher = FileWatcher()
        movie.delegate = watcher
        #expect(route.videoDemand?.pixelFormats.contains(kCVPixelFormatType_420YpCbCr8Planar) == true)
        #expect(!route.takesLentPictures, "its delegate is shown the frames")

        let connection = try #require(movie.connection(with: .video))
        movie.setOutputSettings([AVVideoCodecKey: AVVideoCodecType.jpeg], for: connection)
        #expect(route.videoDemand == nil, "the JPEG encoder converts whatever comes")
        movie.delegate = nil
        #expect(route.takesLentPictures)
    }
}
