// The session's data plane: what a device's capture thread calls with every event, and how each frame, drop and
// compressed sample is routed to the outputs' connections.

import CaptureDrivers
import Foundation
import Synchronization

extension AVCaptureSession {
    /// The closure a device's capture thread calls with every event.
    func sink(for backend: any CaptureBackend) -> StreamSink {
        let key = ObjectIdentifier(backend)
        let slot = routeSlot(for: key)
        // Compressed buffers (MJPEG, H.264, a movie file's packets) are decoded here, once per device stream, and
        // frames are converted here for the outputs that take another format or size, once per target.
        let decodeStage = SampleDecodeStage()
        let conversionStage = FrameConversionStage()
        return { [weak self] event in
            guard let self else { return }
            switch event {
            case .output(let sampleBuffer, _):
                // One look at the routes per buffer: the decoder's choice to lend its pictures holds only for the
                // outputs it was made for.
                let routes = slot.routes.withLock { $0 }
                // Outputs that write the device's compressed frames as they are get them first; a frame every
                // output took that way is not decoded.
                let offer = self.offerCompressed(sampleBuffer, to: routes)
                if offer.everyoneTookIt {
                    decodeStage.skip(sampleBuffer)
                    break
                }
                switch decodeStage.process(sampleBuffer, forReadersOnly: offer.othersOnlyRead) {
                case .passThrough:
                    self.route(sampleBuffer, to: routes, converting: conversionStage, skipping: offer.takers)
                case .decoded(let buffers):
                    for buffer in buffers {
                        self.route(buffer, to: routes, converting: conversionStage, skipping: offer.takers)
                    }
                case .dropped(let reason):
                    self.routeDrop(at: sampleBuffer.presentationTimeStamp, reason: reason, through: slot)
                }
            case .dropped(_, let time, let reason):
                self.routeDrop(at: time, reason: reason, through: slot)
            case .fault(let fault):
                // The device's last words: frames its decoder held back (a movie file's end) go out before the fault.
                let routes = slot.routes.withLock { $0 }
                for buffer in decodeStage.drain() { self.route(buffer, to: routes, converting: conversionStage) }
                self.eventQueue.async { self.deviceDidFault(key, fault) }
            }
        }
    }

    /// Tells every enabled connection of a device that a buffer was lost. Runs on the capture thread.
    func routeDrop(at time: CMTime, reason: DropReason, through slot: RouteSlot) {
        let routes = slot.routes.withLock { $0 }
        let format = routes.first?.connection.inputPorts.first?.formatDescription
        for route in routes where route.connection.isEnabled {
            route.output?.receiveDrop(presentationTime: time, reason: reason, format: format, from: route.connection)
        }
    }

    /// What the enabled connections of a device made of one compressed video frame offered as it is.
    struct CompressedOffer {
        /// The connections whose outputs took it as it is (`takesCompressedVideo`).
        var takers: [ObjectIdentifier] = []
        /// Whether the takers are all the enabled connections: the frame is not decoded (an inter-frame codec's
        /// decoder then waits for the next key frame).
        var everyoneTookIt = false
        /// Whether every other output may be given the decoder's own pictures instead of copies
        /// (`takesLentPictures`).
        var othersOnlyRead = false
    }

    /// Hands a compressed video frame to the enabled connections whose outputs take it as it is, and says what the
    /// others need of its decoded picture. Runs on the capture thread; allocates only when an output takes the
    /// frame.
    func offerCompressed(_ sampleBuffer: CMSampleBuffer, to routes: [Route]) -> CompressedOffer {
        guard sampleBuffer.imageBuffer == nil, let format = sampleBuffer.formatDescription, format.mediaType == .video
        else { return CompressedOffer() }
        var offer = CompressedOffer(othersOnlyRead: true)
        var enabled = 0
        for route in routes where route.connection.isEnabled {
            enabled += 1
            guard let output = route.output else { continue }
            if output.takesCompressedVideo(format, from: route.connection) {
                output.receive(sampleBuffer, from: route.connection)
                offer.takers.append(ObjectIdentifier(route.connection))
            } else if offer.othersOnlyRead {
                offer.othersOnlyRead = output.takesLentPictures(from: route.connection)
            }
        }
        offer.everyoneTookIt = !offer.takers.isEmpty && offer.takers.count == enabled
        return offer
    }

    /// Hands one buffer to every enabled connection in `targets` but `skipped` ones, each frame in the format its
    /// output takes. Runs on the capture thread.
    func route(
        _ sampleBuffer: CMSampleBuffer, to targets: [Route], converting stage: FrameConversionStage,
        skipping skipped: [ObjectIdentifier] = []
    ) {
        let isVideo = sampleBuffer.imageBuffer != nil
        defer { if isVideo { stage.endFrame() } }
        for route in targets where route.connection.isEnabled && !skipped.contains(ObjectIdentifier(route.connection)) {
            guard let output = route.output else { continue }
            if !route.connection.audioChannels.isEmpty {
                AudioLevels.measure(sampleBuffer, into: route.connection.audioChannels)
            }
            guard isVideo, let demand = output.videoDemand(for: route.connection) else {
                output.receive(sampleBuffer, from: route.connection)
                continue
            }
            if let converted = stage.sample(sampleBuffer, for: demand) {
                output.receive(converted, from: route.connection)
            } else {
                output.receiveDrop(
                    presentationTime: sampleBuffer.presentationTimeStamp, reason: .outOfBuffers,
                    format: sampleBuffer.formatDescription, from: route.connection)
            }
        }
    }
}
