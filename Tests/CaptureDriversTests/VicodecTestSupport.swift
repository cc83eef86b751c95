import CaptureDrivers
import Foundation
import OpenCoreVideo
import Testing

/// vicodec's nodes, and its stateful decoder driven by `v4l2-ctl` as the independent check of what we encoded.
enum Vicodec {
    static let encoder: V4L2EncoderDevice? = V4L2EncoderDiscovery().encoders().first { $0.driver == "vicodec" }

    static let skipReason: Comment = """
        no vicodec here: this runs in the VM boot of `make test-kernel` that loads the vicodec.ko `make \
        vicodec-module` builds (Debian's kernel does not ship it)
        """

    /// The name sysfs gives the node at `path` (`stateful-encoder`, `stateful-decoder`, `stateless-decoder`).
    static func nodeName(_ path: String) -> String? {
        let node = (path as NSString).lastPathComponent
        return (try? String(contentsOfFile: "/sys/class/video4linux/\(node)/name", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The `/dev/videoN` sysfs names `name`.
    static func node(named name: String) -> String? {
        let nodes = (try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/video4linux")) ?? []
        return nodes.sorted().map { "/dev/\($0)" }.first { nodeName($0) == name }
    }

    /// Decodes `packets` (one FWHT stream of `width` x `height` pictures) with vicodec's stateful decoder through
    /// `v4l2-ctl --stream-from`; the YU12 pictures it gives, in order.
    static func decode(_ packets: [V4L2EncodedPacket], width: Int, height: Int) throws -> [[UInt8]] {
        try decode(packets.map(\.data), width: width, height: height)
    }

    /// As ``decode(_:width:height:)``, for packets given as their bytes.
    static func decode(_ packets: [[UInt8]], width: Int, height: Int) throws -> [[UInt8]] {
        let decoder = try #require(node(named: "stateful-decoder"), "vicodec has no stateful decoder node")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vicodec-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("in.fwht").path
        let output = directory.appendingPathComponent("out.yu12").path
        try Data(packets.joined()).write(to: URL(fileURLWithPath: input))
        let arguments = [
            "-d", decoder, "--set-fmt-video-out=width=\(width),height=\(height),pixelformat=FWHT",
            "--stream-out-mmap", "--stream-mmap", "--stream-from", input, "--stream-to", output,
        ]
        let (status, log) = try #require(spawn("/bin/sh", ["-c", "exec v4l2-ctl \"$@\" 2>&1", "v4l2-ctl"] + arguments))
        #expect(status == 0, "v4l2-ctl \(arguments.joined(separator: " ")): \(log)")
        let bytes = [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: output))) ?? Data())
        let frameBytes = width * height * 3 / 2
        #expect(
            bytes.count % frameBytes == 0, "\(bytes.count) bytes decoded is not whole \(width)x\(height) YU12 frames")
        return stride(from: 0, to: bytes.count - frameBytes + 1, by: frameBytes).map {
            Array(bytes[$0..<($0 + frameBytes)])
        }
    }
}

/// The header vicodec puts before each FWHT frame (`struct fwht_cframe_hdr`, big-endian fields).
struct FWHTHeader {
    var width: Int
    var height: Int
    var flags: UInt32

    init?(_ bytes: [UInt8]) {
        guard bytes.count >= 44, bytes[0..<4].allSatisfy({ $0 == 0x4F }) else { return nil }
        func field(_ offset: Int) -> UInt32 { bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) } }
        width = Int(field(12))
        height = Int(field(16))
        flags = field(20)
    }

    /// `V4L2_FWHT_FL_I_FRAME`: coded without reference to the picture before.
    var isIntra: Bool { flags & (1 << 10) != 0 }
}

/// A picture whose every sample is known: four quadrants of different colour with a ramp across each, brighter
/// frame by frame, so a decoded frame shows whether it is the right picture in the right place.
struct TestPicture {
    let frame: Int
    let width: Int
    let height: Int

    /// The quadrant of (x, y): 0 top left, 1 top right, 2 bottom left, 3 bottom right.
    private func quadrant(_ x: Int, _ y: Int) -> Int { (x >= width / 2 ? 1 : 0) + (y >= height / 2 ? 2 : 0) }

    func luma(_ x: Int, _ y: Int) -> UInt8 { UInt8([40, 90, 140, 180][quadrant(x, y)] + frame * 4 + (x / 16) % 8) }
    func cb(_ x: Int, _ y: Int) -> UInt8 { [100, 160, 128, 80][quadrant(2 * x, 2 * y)] }
    func cr(_ x: Int, _ y: Int) -> UInt8 { [170, 100, 128, 140][quadrant(2 * x, 2 * y)] }

    /// The picture as a pixel buffer: planar 4:2:0 ('y420'), or NV12 ('420v').
    func pixelBuffer(nv12: Bool = false) throws -> CVPixelBuffer {
        var buffer: CVPixelBuffer?
        let type = nv12 ? kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange : kCVPixelFormatType_420YpCbCr8Planar
        #expect(CVPixelBufferCreate(nil, width, height, type, nil, &buffer) == kCVReturnSuccess)
        let pixelBuffer = try #require(buffer)
        pixelBuffer.withLockedPlanes([]) { planes in
            for y in 0..<height {
                let row = planes[0].row(y)
                for x in 0..<width { row[x] = luma(x, y) }
            }
            for y in 0..<(height / 2) {
                if nv12 {
                    let row = planes[1].row(y)
                    for x in 0..<(width / 2) {
                        row[2 * x] = cb(x, y)
                        row[2 * x + 1] = cr(x, y)
                    }
                } else {
                    let cbRow = planes[1].row(y)
                    let crRow = planes[2].row(y)
                    for x in 0..<(width / 2) {
                        cbRow[x] = cb(x, y)
                        crRow[x] = cr(x, y)
                    }
                }
            }
        }
        return pixelBuffer
    }

    /// Checks a decoded YU12 frame against this picture: the mean of each plane in the middle of each quadrant
    /// within 4 of what was sent, and the luma's PSNR at least 30 dB.
    func expectMatches(_ decoded: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        let chromaWidth = width / 2
        let chromaOffset = width * height
        let crOffset = chromaOffset + chromaWidth * (height / 2)
        for quadrant in 0..<4 {
            let centreX = (quadrant % 2 == 0 ? width / 4 : 3 * width / 4)
            let centreY = (quadrant < 2 ? height / 4 : 3 * height / 4)
            var sums = (sent: 0, got: 0, sentCb: 0, gotCb: 0, sentCr: 0, gotCr: 0, count: 0)
            for y in (centreY - 16)..<(centreY + 16) {
                for x in (centreX - 32)..<(centreX + 32) {
                    sums.sent += Int(luma(x, y))
                    sums.got += Int(decoded[y * width + x])
                    let (cx, cy) = (x / 2, y / 2)
                    sums.sentCb += Int(cb(cx, cy))
                    sums.gotCb += Int(decoded[chromaOffset + cy * chromaWidth + cx])
                    sums.sentCr += Int(cr(cx, cy))
                    sums.gotCr += Int(decoded[crOffset + cy * chromaWidth + cx])
                    sums.count += 1
                }
            }
            let differences = [sums.sent - sums.got, sums.sentCb - sums.gotCb, sums.sentCr - sums.gotCr]
                .map { abs($0) / sums.count }
            #expect(
                differences.allSatisfy { $0 <= 4 },
                "frame \(frame), quadrant \(quadrant): Y/Cb/Cr off by \(differences)",
                sourceLocation: sourceLocation)
        }
        var squaredError = 0.0
        for y in 0..<height {
            for x in 0..<width {
                let difference = Double(Int(luma(x, y)) - Int(decoded[y * width + x]))
                squaredError += difference * difference
            }
        }
        let meanSquaredError = max(squaredError / Double(width * height), 1e-9)
        let psnr = 10 * log10(255 * 255 / meanSquaredError)
        #expect(psnr >= 30, "frame \(frame): luma PSNR \(psnr) dB", sourceLocation: sourceLocation)
    }
}
