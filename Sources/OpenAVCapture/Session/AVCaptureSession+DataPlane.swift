// The session's side of the capture graph: one `ConnectionSink` per connection and output (the route's end the
// graph's `SampleRouter` hands buffers to), and the router each device stream gets.

import CaptureDrivers
import CaptureGraph
import Foundation
import Synchronization

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
/// Demands are computed when the route is made (at a commit) and again only when the output's or the connection's
/// `DemandGeneration` has moved since (a setting, a delegate or the recording state changed), not asked of the
/// output for every frame.
///
/// Threading: the `CaptureSink` requirements run on the device's capture thread. A connection without an output
/// (a preview layer's) counts as enabled and takes nothing, as it did when the session routed frames itself.
final class ConnectionSink: CaptureSink {
    let connection: AVCaptureConnection
    private let output: AVCaptureOutput?
    private let answers = Mutex<Answers?>(nil)

    /// What the output said, and the generations it said it at.
    private struct Answers {
        var outputGeneration: UInt64
        var connectionGeneration: UInt64
        var videoDemand: VideoFormatDemand?
        var takesLentPictures: Bool
        var wantsVideoFrames: Bool
        /// The last compressed format asked about, and the answer.
        var compressed: (format: CMFormatDescription, takes: Bool)?
    }

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

    var videoDemand: VideoFormatDemand? { withCurrentAnswers { $0.videoDemand } }

    func takesCompressedVideo(_ format: CMFormatDescription) -> Bool {
        guard let output else { return false }
        return withCurrentAnswers { answers in
            if let asked = answers.compressed, asked.format === format || asked.format == format { return asked.takes }
            let takes = output.takesCompressedVideo(format, from: connection)
            answers.compressed = (format, takes)
            return takes
        }
    }

    /// A route without an output (a preview layer's, whose pictures come through a data output) uses no frame.
    var wantsVideoFrames: Bool { withCurrentAnswers { $0.wantsVideoFrames } }

    /// A route without an output reads nothing: it does not keep the decoder from lending its pictures.
    var takesLentPictures: Bool { withCurrentAnswers { $0.takesLentPictures } }

    func meter(_ sampleBuffer: CMSampleBuffer) {
        guard output != nil else { return }
        let channels = connection.audioChannels
        if !channels.isEmpty { AudioLevels.measure(sampleBuffer, into: channels) }
    }

    /// The answers at the current generations: kept, or asked again of the output when a generation moved.
    private func withCurrentAnswers<Result>(_ body: (inout Answers) -> Result) -> Result {
        // Read before asking: a change written after this read moves the generation, and the next frame asks again.
        let outputGeneration = output?.demandGeneration.current ?? 0
        let connectionGeneration = connection.demandGeneration.current
        return answers.withLock { stored in
            if var current = stored, current.outputGeneration == outputGeneration,
                current.connectionGeneration == connectionGeneration
            {
                defer { stored = current }
                return body(&current)
            }
            var fresh = Answers(
                outputGeneration: outputGeneration, connectionGeneration: connectionGeneration,
                videoDemand: output?.videoDemand(for: connection),
                takesLentPictures: output?.takesLentPictures(from: connection) ?? true,
                wantsVideoFrames: output?.wantsVideoFrames(from: connection) ?? false)
            defer { stored = fresh }
            return body(&fresh)
        }
    }
}
