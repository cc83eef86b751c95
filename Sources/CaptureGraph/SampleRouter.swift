import CaptureDrivers
import OpenCoreMedia
import OpenCoreVideo

/// One device stream's way through the graph: compressed buffers (MJPEG, H.264, a movie file's packets) decoded
/// once, frames converted once per target for the sinks that take another format or size, and every buffer and
/// drop handed to the enabled routes of the device's ``RouteTable``.
///
/// Threading: `handle` runs on the device's capture thread, one event at a time (the hub calls it under the
/// subscription's lock); the stages are confined to it. `onFault` is called there, last.
package final class SampleRouter: @unchecked Sendable {
    private let table: RouteTable
    private let decodeStage = SampleDecodeStage()
    private let conversionStage = FrameConversionStage()
    private let onFault: @Sendable (DeviceFault) -> Void

    /// A router to `table`'s routes, telling `onFault` of the device's last words.
    package init(table: RouteTable, onFault: @escaping @Sendable (DeviceFault) -> Void) {
        self.table = table
        self.onFault = onFault
    }

    /// One event of the device stream.
    package func handle(_ event: StreamEvent) {
        switch event {
        case .output(let sampleBuffer, _):
            // One look at the routes per buffer: the decoder's choice to lend its pictures holds only for the
            // sinks it was made for.
            let routes = table.routes
            // Sinks that write the device's compressed frames as they are get them first; a frame every sink took
            // that way is not decoded.
            let offer = offerCompressed(sampleBuffer, to: routes)
            if offer.everyoneTookIt || !anyoneWantsDecoded(sampleBuffer, from: routes, besides: offer.takers) {
                decodeStage.skip(sampleBuffer)
                return
            }
            switch decodeStage.process(sampleBuffer, forReadersOnly: offer.othersOnlyRead) {
            case .passThrough:
                route(sampleBuffer, to: routes, skipping: offer.takers)
            case .decoded(let buffers):
                for buffer in buffers { route(buffer, to: routes, skipping: offer.takers) }
            case .dropped(let reason):
                routeDrop(at: sampleBuffer.presentationTimeStamp, reason: reason)
            }
        case .dropped(_, let time, let reason):
            routeDrop(at: time, reason: reason)
        case .fault(let fault):
            // The device's last words: frames its decoder held back (a movie file's end) go out before the fault.
            let routes = table.routes
            for buffer in decodeStage.drain() { route(buffer, to: routes) }
            onFault(fault)
        }
    }

    /// Tells every enabled route that a buffer was lost, in the format of the device's first route.
    private func routeDrop(at time: CMTime, reason: DropReason) {
        let routes = table.routes
        let format = routes.first?.sourceFormat
        for sink in routes where sink.isEnabled {
            sink.receiveDrop(presentationTime: time, reason: reason, format: format)
        }
    }

    /// What the enabled routes of a device made of one compressed video frame offered as it is.
    struct CompressedOffer {
        /// The routes that took it as it is (`takesCompressedVideo`).
        var takers: [ObjectIdentifier] = []
        /// Whether the takers are all the enabled routes: the frame is not decoded (an inter-frame codec's decoder
        /// then waits for the next key frame).
        var everyoneTookIt = false
        /// Whether every other sink may be given the decoder's own pictures instead of copies.
        var othersOnlyRead = false
    }

    /// Hands a compressed video frame to the enabled routes that take it as it is, and says what the others need
    /// of its decoded picture. Allocates only when a sink takes the frame.
    private func offerCompressed(_ sampleBuffer: CMSampleBuffer, to routes: [any CaptureSink]) -> CompressedOffer {
        guard sampleBuffer.imageBuffer == nil, let format = sampleBuffer.formatDescription, format.mediaType == .video
        else { return CompressedOffer() }
        var offer = CompressedOffer(othersOnlyRead: true)
        var enabled = 0
        for sink in routes where sink.isEnabled {
            enabled += 1
            if sink.takesCompressedVideo(format) {
                sink.receive(sampleBuffer)
                offer.takers.append(ObjectIdentifier(sink))
            } else if offer.othersOnlyRead {
                offer.othersOnlyRead = sink.takesLentPictures
            }
        }
        offer.everyoneTookIt = !offer.takers.isEmpty && offer.takers.count == enabled
        return offer
    }

    /// Whether a JPEG frame's decoded picture would be used by an enabled route other than `takers` (which had it as
    /// it is). Only JPEG is left undecoded: every frame stands alone, so the first one wanted decodes at once, where
    /// an H.264 or HEVC decoder kept idle would make a recording starting later wait for the next key frame.
    /// Anything else: yes.
    private func anyoneWantsDecoded(
        _ sampleBuffer: CMSampleBuffer, from routes: [any CaptureSink], besides takers: [ObjectIdentifier]
    ) -> Bool {
        guard sampleBuffer.imageBuffer == nil, let format = sampleBuffer.formatDescription, format.mediaType == .video,
            format.mediaSubType == .jpeg
        else { return true }
        return routes.contains { $0.isEnabled && $0.wantsVideoFrames && !takers.contains(ObjectIdentifier($0)) }
    }

    /// Hands one buffer to every enabled route but the `skipped` ones, each frame in the format its sink takes.
    private func route(_ sampleBuffer: CMSampleBuffer, to routes: [any CaptureSink], skipping skipped: [ObjectIdentifier] = []) {
        let isVideo = sampleBuffer.imageBuffer != nil
        defer { if isVideo { conversionStage.endFrame() } }
        for sink in routes where sink.isEnabled && !skipped.contains(ObjectIdentifier(sink)) {
            if !isVideo { sink.meter(sampleBuffer) }
            guard isVideo, let demand = sink.videoDemand else {
                sink.receive(sampleBuffer)
                continue
            }
            if let converted = conversionStage.sample(sampleBuffer, for: demand) {
                sink.receive(converted)
            } else {
                sink.receiveDrop(
                    presentationTime: sampleBuffer.presentationTimeStamp, reason: .outOfBuffers,
                    format: sampleBuffer.formatDescription)
            }
        }
    }
}
