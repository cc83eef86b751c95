// The options a muxer writes with and a track's display transform: values set before the muxer starts.

import CFFmpeg
import Foundation
import OpenCoreMedia

extension Muxer {
    /// How the file is written.
    ///
    /// Threading: a value; `Sendable`.
    package struct Options: Sendable {
        /// The longest time between movie fragments (crash safety; Apple's `movieFragmentInterval`): a fragment is
        /// cut at the first key frame after it, or earlier when ``maximumFragmentBytes`` is reached; `nil` for a
        /// conventional movie written directly. Ignored for WAVE, AIFF and CAF.
        package var fragmentInterval: CMTime?
        /// The media bytes (all streams) after which a fragment is cut at the next video key frame even before
        /// ``fragmentInterval`` has passed, so the memory libavformat holds for a fragment stays bounded at any
        /// bit rate (see ``Muxer``). Default ``defaultMaximumFragmentBytes``.
        package var maximumFragmentBytes: Int
        /// Whether the finished movie has its `moov` first (Apple's `shouldOptimizeForNetworkUse`): a conventional
        /// movie written directly with `movflags=faststart`, a fragmented one by the copy ``Muxer/finish()`` makes.
        /// Without it a fragmented movie is finished in place, its `moov` at the end (see ``Muxer``).
        package var fastStart: Bool
        /// Format-level metadata, in order (see ``Muxer``).
        package var metadata: [(key: String, value: String)]
        /// Whether an existing file at the path may be replaced.
        package var overwrite: Bool
        /// The free bytes the volume must keep after ``Muxer/finish()`` rewrote a fragmented movie as a
        /// conventional one: when the rewrite's copy would leave less (by ``Muxer/finishedSizeBound``), the
        /// fragmented movie is kept as it is, complete, and the rewrite is not attempted. Default 0: it only has
        /// to fit.
        package var minimumFreeBytesAfterRewrite: Int64 = 0

        /// 4 MiB: about 3.4 s of 1080p30 at 10 Mb/s, so with one key frame interval on top a fragment holds at most
        /// about 5.5 MB there (measured: 5 MB, four one-second GOPs; under 9 MB of libavformat's buffers, which grow
        /// by 1.5×), a small share of a recording's 100 MB memory budget. Large enough that fragment headers (a few
        /// kilobytes) stay negligible, and that up to about 3.4 Mb/s (640x480 at 1.5 Mb/s, for one) the 10 s
        /// interval alone decides, as before.
        package static let defaultMaximumFragmentBytes = 4 << 20

        /// Fragments every 10 s (Apple's default `movieFragmentInterval`) or every 4 MiB, fast start, no metadata,
        /// no overwrite.
        package init(
            fragmentInterval: CMTime? = CMTime(value: 10, timescale: 1),
            maximumFragmentBytes: Int = Options.defaultMaximumFragmentBytes, fastStart: Bool = true,
            metadata: [(key: String, value: String)] = [], overwrite: Bool = false
        ) {
            self.fragmentInterval = fragmentInterval
            self.maximumFragmentBytes = maximumFragmentBytes
            self.fastStart = fastStart
            self.metadata = metadata
            self.overwrite = overwrite
        }
    }

    /// A track's display transform, Apple's `CGAffineTransform` layout: a point (x, y) maps to
    /// (a·x + c·y + tx, b·x + d·y + ty).
    ///
    /// Threading: a value; `Sendable`.
    package struct TrackTransform: Hashable, Sendable {
        package var a, b, c, d, tx, ty: Double

        package init(a: Double, b: Double, c: Double, d: Double, tx: Double, ty: Double) {
            (self.a, self.b, self.c, self.d, self.tx, self.ty) = (a, b, c, d, tx, ty)
        }

        /// No transform.
        package static let identity = TrackTransform(a: 1, b: 0, c: 0, d: 1, tx: 0, ty: 0)

        /// `CGAffineTransform(rotationAngle:)` of `degrees` (clockwise on screen, Apple's convention), with sines
        /// and cosines of multiples of 90° exact.
        package static func rotation(degrees: Double) -> TrackTransform {
            let radians = degrees * .pi / 180
            func exact(_ value: Double) -> Double { abs(value) < 1e-12 ? 0 : value }
            let cosine = exact(cos(radians))
            let sine = exact(sin(radians))
            return TrackTransform(a: cosine, b: sine, c: -sine, d: cosine, tx: 0, ty: 0)
        }

        /// The clockwise rotation in degrees (−180…180] the transform applies.
        package var rotationDegrees: Double { atan2(b, a) * 180 / .pi }

        /// The transform as FFmpeg's display matrix (the `tkhd` matrix: 16.16 fixed point, the last column 2.30).
        var displayMatrix: [Int32] {
            func fixed(_ value: Double) -> Int32 { Int32(clamping: Int64((value * 65536).rounded())) }
            return [fixed(a), fixed(b), 0, fixed(c), fixed(d), 0, fixed(tx), fixed(ty), 1 << 30]
        }

        /// The transform a display matrix holds.
        init(displayMatrix matrix: UnsafeBufferPointer<Int32>) {
            func real(_ index: Int) -> Double { Double(matrix[index]) / 65536 }
            self.init(a: real(0), b: real(1), c: real(3), d: real(4), tx: real(6), ty: real(7))
        }
    }
}
