import Foundation
import OpenCoreMedia
import OpenCoreVideo

/// One track of a movie file as a movie-file device plays it.
///
/// Value type; safe to use from any thread.
package struct MovieTrack: Sendable {
    /// The track's index in the file, as packets name it.
    package var index: Int
    /// Picture or sound.
    package var media: DeviceMedia
    /// What its packets are: a compressed format (`'avc1'` with its `avcC`, `'jpeg'`, `'aac '` with its magic cookie)
    /// or, for raw tracks, the pixel format or linear PCM layout of the bytes.
    package var formatDescription: CMFormatDescription
    /// For raw video (y4m, raw video in NUT, Matroska, AVI): how each packet's bytes are laid out; nil for
    /// compressed video.
    package var rawLayout: RawVideoLayout?
    /// Video: the time between frames (the file's average rate); `.invalid` for sound.
    package var frameDuration: CMTime
    /// The track's length; `.invalid` when the file does not say.
    package var duration: CMTime

    package init(
        index: Int, media: DeviceMedia, formatDescription: CMFormatDescription, rawLayout: RawVideoLayout? = nil,
        frameDuration: CMTime, duration: CMTime
    ) {
        self.index = index
        self.media = media
        self.formatDescription = formatDescription
        self.rawLayout = rawLayout
        self.frameDuration = frameDuration
        self.duration = duration
    }
}

/// How a raw video track's packets hold a frame: the pixel format's planes back to back, each row as long as the
/// format needs (or padded to 4 bytes, as AVI stores it: the device tells the two apart by the packet's size).
///
/// Value type; safe to use from any thread.
package struct RawVideoLayout: Sendable, Hashable {
    /// The frame's pixel format (`'y420'`, `'yuvs'`, `'24RGB'`, … any format OpenCoreVideo describes).
    package var pixelFormat: OSType
    /// Whether rows run from the bottom of the picture up (AVI's uncompressed RGB).
    package var isBottomUp: Bool

    package init(pixelFormat: OSType, isBottomUp: Bool = false) {
        self.pixelFormat = pixelFormat
        self.isBottomUp = isBottomUp
    }
}

/// One packet of a movie file: a compressed frame or a run of samples, with the file's timing.
///
/// Value type; the block buffer is not written after the source made it.
package struct MoviePacket: Sendable {
    package var track: Int
    package var data: CMBlockBuffer
    package var presentationTime: CMTime
    package var decodeTime: CMTime
    package var duration: CMTime
    /// Whether decoding can start at this packet (the file's sync sample); every packet of an intra-only codec is.
    package var isKeyFrame: Bool

    package init(
        track: Int, data: CMBlockBuffer, presentationTime: CMTime, decodeTime: CMTime, duration: CMTime,
        isKeyFrame: Bool = true
    ) {
        self.track = track
        self.data = data
        self.presentationTime = presentationTime
        self.decodeTime = decodeTime
        self.duration = duration
        self.isKeyFrame = isKeyFrame
    }
}

/// What a movie-file device reads: a file's tracks and its packets in file order.
///
/// Drivers never import MediaCodecs, yet demuxing needs libavformat: this protocol is the seam. CaptureDrivers
/// defines it and plays whatever implements it; OpenAVCapture implements it on MediaCodecs' `Demuxer` and passes
/// the factory in when it makes a movie-file device. Tests of the driver alone can give packets of their own.
///
/// Threading: thread-bound; a device opens one source per stream and uses it only on its capture thread.
package protocol MoviePacketSource: AnyObject {
    /// The tracks the device can play.
    var tracks: [MovieTrack] { get }
    /// The whole file's length (a loop's period); `.invalid` when the file does not say.
    var duration: CMTime { get }
    /// The next packet in file order, or nil at the end of the file.
    func nextPacket() throws -> MoviePacket?
    /// From now on, only track `index`'s packets: a device plays one track, and a reader that skips the others
    /// (libavformat's discard) does not read their data, a whole camera's video for a file's sound.
    func playOnly(track index: Int)
}

extension MoviePacketSource {
    /// Sources that cannot skip tracks return them all; the player ignores the others.
    package func playOnly(track index: Int) {}
}

/// Opens a movie file for reading: a fresh source at the start of the file each time (a loop reopens).
package typealias MoviePacketSourceOpener = @Sendable (URL) throws -> any MoviePacketSource

/// Where one plane of a raw frame goes (OpenCoreVideo's ``RawPlaneDestination``, which the demuxer fills too).
package typealias MovieRawPlane = RawPlaneDestination

/// A source that can read its raw video track's frames straight into the device's pixel buffers (a y4m file), so a
/// frame's bytes go from the file to the buffer with no packet between them: one copy of each frame fewer, and no
/// frame-sized allocation per frame. The device reads so when ``readsRawFrames`` says it can, packets otherwise.
///
/// Threading: thread-bound, as ``MoviePacketSource``.
package protocol MovieRawFrameReader: MoviePacketSource {
    /// Whether ``readRawFrame(into:)`` works for this file: its only track is raw video, in a file that allows it.
    var readsRawFrames: Bool { get }
    /// Reads the next frame into `planes` (top row first, in the pixel format's plane order); its presentation time
    /// and duration in file time, or nil at the end of the file. Not to be mixed with `nextPacket()`.
    func readRawFrame(into planes: [MovieRawPlane]) throws -> (presentationTime: CMTime, duration: CMTime)?
}
