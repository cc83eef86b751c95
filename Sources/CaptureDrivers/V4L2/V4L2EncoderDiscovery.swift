import Foundation
import SystemPackage

/// A V4L2 memory-to-memory encoder found on this machine: its node, what it is, and the formats of its two queues.
///
/// Value type; safe to use from any thread.
package struct V4L2EncoderDevice: Sendable, Hashable {
    package var path: String
    /// The kernel driver (`bcm2835-codec`, `vicodec`, `hantro-vpu`).
    package var driver: String
    package var card: String
    /// What it codes to (its CAPTURE queue): `.h264`, `.hevc`, `.fwht`, ….
    package var codedFormats: [V4L2PixelFormat]
    /// What it takes (its OUTPUT queue): `.nv12`, `.yuv420`, ….
    package var pictureFormats: [V4L2PixelFormat]
    /// Whether its queues are the multi-planar ones.
    package var isMultiplanar: Bool

    package init(
        path: String, driver: String, card: String, codedFormats: [V4L2PixelFormat],
        pictureFormats: [V4L2PixelFormat], isMultiplanar: Bool
    ) {
        self.path = path
        self.driver = driver
        self.card = card
        self.codedFormats = codedFormats
        self.pictureFormats = pictureFormats
        self.isMultiplanar = isMultiplanar
    }
}

/// Finds the stateful memory-to-memory encoders among the V4L2 nodes: a node with `V4L2_CAP_VIDEO_M2M` (or
/// `…_M2M_MPLANE`) whose CAPTURE queue lists a coded format and whose OUTPUT queue lists a raw one (a decoder is the
/// other way round; a scaler or deinterlacer lists raw formats on both).
///
/// Value type; safe to use from any thread.
package struct V4L2EncoderDiscovery: Sendable {
    /// Formats that are coded pictures, not raw ones.
    package static let codedFormats: Set<V4L2PixelFormat> = [.h264, .hevc, .fwht, .mjpeg, .jpeg]

    private let system: SystemCalls
    private let devicesDirectory: String

    /// Looks at the nodes named `video*` in `devicesDirectory`.
    package init(system: SystemCalls = .live, devicesDirectory: String = "/dev") {
        self.system = system
        self.devicesDirectory = devicesDirectory
    }

    /// Every encoder, by node path; those coding to `codedFormat` only, when given.
    package func encoders(coding codedFormat: V4L2PixelFormat? = nil) -> [V4L2EncoderDevice] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: devicesDirectory)) ?? [])
            .filter { $0.hasPrefix("video") }
            .sorted { $0.count != $1.count ? $0.count < $1.count : $0 < $1 }
        return names.compactMap { describe("\(devicesDirectory)/\($0)") }
            .filter { codedFormat == nil || $0.codedFormats.contains(codedFormat!) }
    }

    /// The encoder at `path`, or nil when it is something else or cannot be opened.
    package func describe(_ path: String) -> V4L2EncoderDevice? {
        guard let node = try? V4L2Node(path: path, system: system),
            let capability = try? node.capability(),
            let queues = capability.memoryToMemoryQueues,
            let coded = try? node.pixelFormats(queues.capture),
            let pictures = try? node.pixelFormats(queues.output)
        else { return nil }
        let codedOut = coded.filter(Self.codedFormats.contains)
        let rawIn = pictures.filter { !Self.codedFormats.contains($0) }
        guard !codedOut.isEmpty, !rawIn.isEmpty else { return nil }
        return V4L2EncoderDevice(
            path: path, driver: capability.driver, card: capability.card, codedFormats: codedOut,
            pictureFormats: rawIn, isMultiplanar: queues.capture.isMultiplanar)
    }
}
