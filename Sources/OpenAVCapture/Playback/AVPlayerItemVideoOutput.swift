// AVPlayerItemVideoOutput: the frames a player shows, as pixel buffers, for an app that draws them itself.

import Foundation
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// Gives the pixel buffers an item shows, by item time, as Apple's does to an app drawing video itself (a display
/// link asks ``hasNewPixelBuffer(forItemTime:)`` each refresh, then
/// ``copyPixelBuffer(forItemTime:itemTimeForDisplay:)``).
///
/// Ours keeps the frames the player has shown (the last few), so a copy gives the newest frame shown at or before
/// the time asked; Apple's may also hand out frames decoded ahead of the clock. Frames are decoded to the
/// `kCVPixelBufferPixelFormatTypeKey` asked (NV12 `'420v'` when absent; any format the asset reader decodes to).
///
/// Threading: thread safe (`@unchecked Sendable`): a mutex guards the frames.
open class AVPlayerItemVideoOutput: AVPlayerItemOutput, @unchecked Sendable {
    private struct Held {
        var frames: [CMSampleBuffer] = []
        var lastCopied: CMTime = .invalid
    }

    private let held = Mutex(Held())
    let pixelFormat: OSType?

    /// An output giving pixel buffers with `pixelBufferAttributes` (`kCVPixelBufferPixelFormatTypeKey`: one format,
    /// or an array whose first is used). Traps for a format the reader cannot decode to.
    public init(pixelBufferAttributes: [String: Any]?) {
        var format: OSType?
        if let raw = pixelBufferAttributes?[kCVPixelBufferPixelFormatTypeKey as String] {
            let first = (raw as? [Any])?.first ?? raw
            if let value = first as? Int {
                format = OSType(value)
            } else if let value = first as? OSType {
                format = value
            } else if let value = first as? NSNumber {
                format = value.uint32Value
            }
            precondition(
                format.map { PixelBufferConverter.supportedPixelFormats.contains($0) } == true,
                "*** -[AVPlayerItemVideoOutput initWithPixelBufferAttributes:] unsupported pixel format \(raw)")
        }
        pixelFormat = format
        super.init()
    }

    /// An output with `outputSettings` (Apple's other initializer; the same keys as the pixel buffer attributes).
    public convenience init(outputSettings: [String: Any]?) {
        self.init(pixelBufferAttributes: outputSettings)
    }

    override func present(_ frame: CMSampleBuffer) {
        held.withLock { held in
            // After a seek back, what was held belongs to another stretch of time.
            if let last = held.frames.last, frame.presentationTimeStamp < last.presentationTimeStamp {
                held.frames.removeAll()
                held.lastCopied = .invalid
            }
            held.frames.append(frame)
            if held.frames.count > 4 { held.frames.removeFirst() }
        }
    }

    private func frame(for itemTime: CMTime, in held: Held) -> CMSampleBuffer? {
        held.frames.last { $0.presentationTimeStamp <= itemTime } ?? (itemTime.isNumeric ? nil : held.frames.last)
    }

    /// Whether a frame for `itemTime` has been shown that was not copied yet.
    public func hasNewPixelBuffer(forItemTime itemTime: CMTime) -> Bool {
        held.withLock { held in
            guard let frame = frame(for: itemTime, in: held) else { return false }
            return !held.lastCopied.isValid || frame.presentationTimeStamp != held.lastCopied
        }
    }

    /// The frame shown at `itemTime` (the newest shown at or before it), and in `outItemTimeForDisplay` its time;
    /// nil when none has been shown for that time.
    public func copyPixelBuffer(
        forItemTime itemTime: CMTime, itemTimeForDisplay outItemTimeForDisplay: UnsafeMutablePointer<CMTime>?
    ) -> CVPixelBuffer? {
        let found = held.withLock { held -> CMSampleBuffer? in
            guard let frame = frame(for: itemTime, in: held) else { return nil }
            held.lastCopied = frame.presentationTimeStamp
            return frame
        }
        guard let found else { return nil }
        outItemTimeForDisplay?.pointee = found.presentationTimeStamp
        return found.imageBuffer
    }
}
