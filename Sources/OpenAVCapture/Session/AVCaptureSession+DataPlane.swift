// The session's side of the capture graph: one `ConnectionSink` per connection and output (the route's end the
// graph's `SampleRouter` hands buffers to), and the router each device stream gets.

import CaptureDrivers
import CaptureGraph
import Foundation

extension AVCaptureSession {
    /// The closure a device's capture thread calls with every event: the graph's router over the device's routes.
    func sink(for backend: any CaptureBackend) -> StreamSink {
        let key = ObjectIdentifier(backend)
        let router = SampleRouter(table: routeTable(for: key)) { [weak self] fault in
            guard let self else { return }
            self.eventQueue.async { self.deviceDidFault(key, fault) }
        }
        // A session that has gone takes nothing more, though the hub may not have heard yet.
        return { [weak self] event in
            guard self != nil else { return }
            router.handle(event)
        }
    }
}

/// One output on one connection, as the capture graph sees it: the graph's calls become the output's hooks with
/// the connection they came through.
///
/// Threading: the `CaptureSink` requirements run on the device's capture thread. A connection without an output
/// (a preview layer's) counts as enabled and takes nothing, as it did when the session routed frames itself.
final class ConnectionSink: CaptureSink {
    let connection: AVCaptureConnection
    private let output: AVCaptureOutput?

    init(connection: AVCaptureConnection, output: AVCaptureOutput?) {
        self.connection = connection
        self.output = output
    }

    var isEnabled: Bool { connection.isEnabled }

    var sourceFormat: CMFormatDescription? { connection.inputPorts.first?.formatDescription }

    func receive(_ sampleBuffer: CMSampleBuffer) { output?.receive(sampleBuffer, from: connection) }

    func receiveDrop(presentationTime: CMTime, reason: DropReason, format: CMFormatDescription?) {
        output?.receiveDrop(presentationTime: presentationTime, reason: reason, format: format, from: connection)
    }

    var videoDemand: VideoFormatDemand? { output?.videoDemand(for: connection) }

    func takesCompressedVideo(_ format: CMFormatDescription) -> Bool {
        output?.takesCompressedVideo(format, from: connection) ?? false
    }

    /// A route without an output reads nothing: it does not keep the decoder from lending its pictures.
    var takesLentPictures: Bool { output?.takesLentPictures(from: connection) ?? true }

    func meter(_ sampleBuffer: CMSampleBuffer) {
        guard output != nil else { return }
        let channels = connection.audioChannels
        if !channels.isEmpty { AudioLevels.measure(sampleBuffer, into: channels) }
    }
}
