import Foundation
import Synchronization

/// The frames a renderer (OpenAVCaptureUI's window, OpenAVCaptureWeb's stream) draws: a video data output of the renderer's own on the preview layer's session, keeping
/// only the newest frame. A frame that arrives before the renderer took the one before replaces it (counted as
/// skipped): a slow screen shows the present, never a queue of the past.
///
/// The output delivers the device's own pixel format when the renderer can draw it, so NV12 or YUYV reach the
/// screen without a conversion on our side; otherwise it asks the session's conversion stage for NV12.
///
/// Threading: thread safe. Frames arrive on a private serial queue; `takeNewest()` may be called from any thread.
package final class PreviewFeed: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    /// Counts since the feed began.
    package struct Statistics: Sendable, Equatable {
        /// Frames the output delivered.
        package var received = 0
        /// Frames replaced by a newer one before the renderer took them.
        package var skipped = 0
        /// Frames the output dropped before delivering them (the renderer's queue was still busy).
        package var droppedUpstream = 0
    }

    private struct State {
        var newest: CMSampleBuffer?
        var statistics = Statistics()
        var askedForNV12 = false
    }

    package let output = AVCaptureVideoDataOutput()
    private let session: AVCaptureSession
    private let queue = DispatchQueue(label: "OpenAVCaptureUI.PreviewFeed")
    private let state = Mutex(State())
    private let drawablePixelFormats: Set<OSType>
    private let onFrame: @Sendable () -> Void

    /// Adds the feed's output to `session`; `onFrame` runs (on the feed's queue) whenever a new frame is waiting.
    /// With `port` (a multi-camera session's camera), the output is connected to that port by hand, as such a
    /// session's outputs are; without it, to the session's first video port. Throws when the session cannot take
    /// another video output (or that camera already feeds one).
    package init(
        session: AVCaptureSession, port: AVCaptureInput.Port? = nil, drawablePixelFormats: Set<OSType>,
        preferredPixelFormat: OSType? = nil, onFrame: @escaping @Sendable () -> Void
    ) throws(PreviewError) {
        self.session = session
        self.drawablePixelFormats = drawablePixelFormats
        self.onFrame = onFrame
        super.init()
        output.alwaysDiscardsLateVideoFrames = true
        if let preferredPixelFormat { output.videoSettings = [kCVPixelBufferPixelFormatTypeKey: preferredPixelFormat] }
        output.setSampleBufferDelegate(self, queue: queue)
        // No beginConfiguration()/commitConfiguration() here: one call changes the graph, and an open configuration
        // would make the app's own startRunning() on another thread trap, as Apple's documented raise requires.
        guard session.canAddOutput(output) else {
            throw PreviewError("the preview's session cannot take a video output for the renderer; add the camera first")
        }
        guard let port else {
            session.addOutput(output)
            return
        }
        // Two calls, each its own configuration: the same reason as above. The output has no connection between
        // them, so nothing streams to it half made.
        session.addOutputWithNoConnections(output)
        let connection = AVCaptureConnection(inputPorts: [port], output: output)
        guard session.canAddConnection(connection) else {
            session.removeOutput(output)
            throw PreviewError(
                "the session cannot connect \(port.input) to the renderer's video output; a camera of a multi-camera"
                    + " session feeds one video data output")
        }
        session.addConnection(connection)
    }

    /// Removes the feed's output from the session.
    package func detach() {
        output.setSampleBufferDelegate(nil, queue: nil)
        session.removeOutput(output)
    }

    /// The newest frame not yet taken, if any.
    package func takeNewest() -> CMSampleBuffer? {
        state.withLock { state in
            defer { state.newest = nil }
            return state.newest
        }
    }

    package var statistics: Statistics {
        let upstream = output.deliveryStatistics.droppedLate
        var statistics = state.withLock { $0.statistics }
        statistics.droppedUpstream = upstream
        return statistics
    }

    package func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        guard let image = sampleBuffer.imageBuffer else { return }
        guard drawablePixelFormats.contains(CVPixelBufferGetPixelFormatType(image)) else {
            // A format the renderer cannot upload (grey, a decoded camera's own): ask once for NV12, which every
            // renderer draws; the session's conversion stage makes it.
            let ask = state.withLock { state in
                defer { state.askedForNV12 = true }
                return !state.askedForNV12
            }
            if ask { self.output.videoSettings = [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange] }
            return
        }
        state.withLock { state in
            if state.newest != nil { state.statistics.skipped += 1 }
            state.newest = sampleBuffer
            state.statistics.received += 1
        }
        onFrame()
    }
}

/// A renderer could not start or draw: what failed, and what to do.
public struct PreviewError: Error, CustomStringConvertible, Sendable {
    public let description: String
    package init(_ description: String) { self.description = description }
}
