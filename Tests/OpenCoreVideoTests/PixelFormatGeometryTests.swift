// Plane geometry of every pixel format, checked against expectations written out here independently of the
// module's own table.

import OpenCoreVideo
import Testing

/// What a format's planes must look like for a `width`×`height` image, written from the formats' definitions.
struct ExpectedFormat: Sendable, CustomTestStringConvertible {
    struct Plane: Equatable {
        var width: Int
        var height: Int
        /// The bytes a row's samples occupy, before padding.
        var rowBytes: Int
    }

    let pixelFormat: OSType
    let name: String
    let isPlanar: Bool
    let planes: @Sendable (_ width: Int, _ height: Int) -> [Plane]

    var testDescription: String { name }

    static func packed(_ format: OSType, _ name: String, bytesPerPixel: Int) -> ExpectedFormat {
        ExpectedFormat(pixelFormat: format, name: name, isPlanar: false) { w, h in
            [Plane(width: w, height: h, rowBytes: w * bytesPerPixel)]
        }
    }

    /// 4:2:2 packed: two pixels share four bytes, so an odd width still needs a whole pair.
    static func packed422(_ format: OSType, _ name: String) -> ExpectedFormat {
        ExpectedFormat(pixelFormat: format, name: name, isPlanar: false) { w, h in
            [Plane(width: w, height: h, rowBytes: (w + 1) / 2 * 4)]
        }
    }

    /// NV12: Y' plane, then a half-size plane of CbCr pairs.
    static func biPlanar420(_ format: OSType, _ name: String) -> ExpectedFormat {
        ExpectedFormat(pixelFormat: format, name: name, isPlanar: true) { w, h in
            let (cw, ch) = ((w + 1) / 2, (h + 1) / 2)
            return [Plane(width: w, height: h, rowBytes: w), Plane(width: cw, height: ch, rowBytes: cw * 2)]
        }
    }

    /// P010 ('x420'): NV12's layout with two bytes per sample.
    static func biPlanar420TenBit(_ format: OSType, _ name: String) -> ExpectedFormat {
        ExpectedFormat(pixelFormat: format, name: name, isPlanar: true) { w, h in
            let (cw, ch) = ((w + 1) / 2, (h + 1) / 2)
            return [Plane(width: w, height: h, rowBytes: w * 2), Plane(width: cw, height: ch, rowBytes: cw * 4)]
        }
    }

    /// I420: Y' plane, then half-size Cb and Cr planes.
    static func triPlanar420(_ format: OSType, _ name: String) -> ExpectedFormat {
        ExpectedFormat(pixelFormat: format, name: name, isPlanar: true) { w, h in
            let (cw, ch) = ((w + 1) / 2, (h + 1) / 2)
            return [
                Plane(width: w, height: h, rowBytes: w), Plane(width: cw, height: ch, rowBytes: cw),
                Plane(width: cw, height: ch, rowBytes: cw),
            ]
        }
    }

    static let all: [ExpectedFormat] = [
        packed(kCVPixelFormatType_32BGRA, "32BGRA", bytesPerPixel: 4),
        packed(kCVPixelFormatType_32ARGB, "32ARGB", bytesPerPixel: 4),
        packed(kCVPixelFormatType_32ABGR, "32ABGR", bytesPerPixel: 4),
        packed(kCVPixelFormatType_32RGBA, "32RGBA", bytesPerPixel: 4),
        packed(kCVPixelFormatType_24RGB, "24RGB", bytesPerPixel: 3),
        packed(kCVPixelFormatType_24BGR, "24BGR", bytesPerPixel: 3),
        biPlanar420(kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, "420v"),
        biPlanar420(kCVPixelFormatType_420YpCbCr8BiPlanarFullRange, "420f"),
        triPlanar420(kCVPixelFormatType_420YpCbCr8Planar, "y420"),
        triPlanar420(kCVPixelFormatType_420YpCbCr8PlanarFullRange, "f420"),
        packed422(kCVPixelFormatType_422YpCbCr8_yuvs, "yuvs"),
        packed422(kCVPixelFormatType_422YpCbCr8FullRange, "yuvf"),
        packed422(kCVPixelFormatType_422YpCbCr8, "2vuy"),
        packed(kCVPixelFormatType_OneComponent8, "L008", bytesPerPixel: 1),
        packed(kCVPixelFormatType_TwoComponent8, "2C08", bytesPerPixel: 2),
        biPlanar420TenBit(kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange, "x420"),
        biPlanar420TenBit(kCVPixelFormatType_420YpCbCr10BiPlanarFullRange, "xf20"),
        packed(kCVPixelFormatType_DepthFloat32, "fdep", bytesPerPixel: 4),
        packed(kCVPixelFormatType_DepthFloat16, "hdep", bytesPerPixel: 2),
        packed(kCVPixelFormatType_DisparityFloat32, "fdis", bytesPerPixel: 4),
        packed(kCVPixelFormatType_DisparityFloat16, "hdis", bytesPerPixel: 2),
    ]
}

struct ImageSize: Sendable, CustomTestStringConvertible {
    var width: Int
    var height: Int
    var testDescription: String { "\(width)x\(height)" }
}

/// Even sizes, odd sizes, the smallest size and sizes one off the alignment.
let geometrySizes = [
    ImageSize(width: 1920, height: 1080), ImageSize(width: 640, height: 480), ImageSize(width: 2, height: 2),
    ImageSize(width: 1, height: 1), ImageSize(width: 5, height: 3), ImageSize(width: 1279, height: 719),
    ImageSize(width: 65, height: 33), ImageSize(width: 4032, height: 3024),
]

/// Makes a buffer or records why not.
func makeBuffer(_ width: Int, _ height: Int, _ format: OSType, _ attributes: CFDictionary? = nil) -> CVPixelBuffer? {
    var buffer: CVPixelBuffer?
    let status = CVPixelBufferCreate(kCFAllocatorDefault, width, height, format, attributes, &buffer)
    #expect(status == kCVReturnSuccess)
    return buffer
}

@Suite("Pixel format geometry")
struct PixelFormatGeometryTests {
    @Test("Format codes have Apple's values", arguments: [
        (kCVPixelFormatType_32BGRA, "BGRA"), (kCVPixelFormatType_32ABGR, "ABGR"),
        (kCVPixelFormatType_32RGBA, "RGBA"), (kCVPixelFormatType_24BGR, "24BG"),
        (kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, "420v"),
        (kCVPixelFormatType_420YpCbCr8BiPlanarFullRange, "420f"), (kCVPixelFormatType_420YpCbCr8Planar, "y420"),
        (kCVPixelFormatType_420YpCbCr8PlanarFullRange, "f420"), (kCVPixelFormatType_422YpCbCr8_yuvs, "yuvs"),
        (kCVPixelFormatType_422YpCbCr8FullRange, "yuvf"), (kCVPixelFormatType_422YpCbCr8, "2vuy"),
        (kCVPixelFormatType_OneComponent8, "L008"), (kCVPixelFormatType_TwoComponent8, "2C08"),
    ])
    func fourCharacterCodes(code: OSType, characters: String) {
        let expected = characters.utf8.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        #expect(code == expected)
        #expect(fourCharCode(characters) == expected)
        #expect(fourCharCodeDescription(code) == "'\(characters)'")
    }

    @Test("The two numeric codes are Apple's numbers, not character codes")
    func numericCodes() {
        #expect(kCVPixelFormatType_32ARGB == 32)
        #expect(kCVPixelFormatType_24RGB == 24)
        #expect(fourCharCodeDescription(kCVPixelFormatType_32ARGB) == "0x00000020")
        #expect(fourCharCode("BGR") == nil)
    }

    @Test("The module's table lists exactly the formats these tests describe")
    func tableCoversEveryFormat() {
        let described = Set(PixelFormatDescription.all.map(\.pixelFormat))
        let expected = Set(ExpectedFormat.all.map(\.pixelFormat))
        #expect(described == expected)
        #expect(described.count == PixelFormatDescription.all.count)
        for format in ExpectedFormat.all {
            #expect(PixelFormatDescription.describing(format.pixelFormat)?.pixelFormat == format.pixelFormat)
        }
        #expect(PixelFormatDescription.describing(0x6162_6364) == nil)
    }

    @Test("Plane count, widths, heights, rows, alignment and data size", arguments: ExpectedFormat.all, geometrySizes)
    func geometry(format: ExpectedFormat, size: ImageSize) throws {
        let buffer = try #require(makeBuffer(size.width, size.height, format.pixelFormat))
        let expected = format.planes(size.width, size.height)
        #expect(CVPixelBufferGetWidth(buffer) == size.width)
        #expect(CVPixelBufferGetHeight(buffer) == size.height)
        #expect(CVPixelBufferGetPixelFormatType(buffer) == format.pixelFormat)
        #expect(CVPixelBufferIsPlanar(buffer) == format.isPlanar)
        #expect(CVPixelBufferGetPlaneCount(buffer) == (format.isPlanar ? expected.count : 0))

        CVPixelBufferLockBaseAddress(buffer, .readOnly)
        defer { CVPixelBufferUnlockBaseAddress(buffer, .readOnly) }
        let base = try #require(CVPixelBufferGetBaseAddress(buffer))
        #expect(Int(bitPattern: base) % 64 == 0)
        let dataSize = CVPixelBufferGetDataSize(buffer)

        // (start, byte count) of each plane, to check they lie inside the allocation and apart from each other.
        var extents: [(start: Int, count: Int)] = []
        if format.isPlanar {
            for (index, plane) in expected.enumerated() {
                #expect(CVPixelBufferGetWidthOfPlane(buffer, index) == plane.width, "plane \(index) width")
                #expect(CVPixelBufferGetHeightOfPlane(buffer, index) == plane.height, "plane \(index) height")
                let bytesPerRow = CVPixelBufferGetBytesPerRowOfPlane(buffer, index)
                #expect(bytesPerRow % 64 == 0, "plane \(index) bytesPerRow \(bytesPerRow)")
                #expect(bytesPerRow >= plane.rowBytes, "plane \(index) bytesPerRow \(bytesPerRow)")
                let planeBase = try #require(CVPixelBufferGetBaseAddressOfPlane(buffer, index))
                #expect(Int(bitPattern: planeBase) % 64 == 0, "plane \(index) base")
                extents.append((Int(bitPattern: planeBase), bytesPerRow * plane.height))
            }
            #expect(CVPixelBufferGetBaseAddressOfPlane(buffer, expected.count) == nil)
            #expect(CVPixelBufferGetWidthOfPlane(buffer, expected.count) == 0)
            #expect(CVPixelBufferGetBytesPerRowOfPlane(buffer, -1) == 0)
            #expect(CVPixelBufferGetBytesPerRow(buffer) == CVPixelBufferGetBytesPerRowOfPlane(buffer, 0))
        } else {
            let bytesPerRow = CVPixelBufferGetBytesPerRow(buffer)
            #expect(bytesPerRow % 64 == 0)
            #expect(bytesPerRow >= expected[0].rowBytes)
            // Apple's rule: a non-planar buffer has no planes.
            #expect(CVPixelBufferGetBaseAddressOfPlane(buffer, 0) == nil)
            #expect(CVPixelBufferGetWidthOfPlane(buffer, 0) == 0)
            #expect(CVPixelBufferGetHeightOfPlane(buffer, 0) == 0)
            #expect(CVPixelBufferGetBytesPerRowOfPlane(buffer, 0) == 0)
            extents.append((Int(bitPattern: base), bytesPerRow * size.height))
        }
        #expect(dataSize >= extents.reduce(0) { $0 + $1.count })
        for (index, extent) in extents.enumerated() {
            #expect(extent.start >= Int(bitPattern: base), "plane \(index) starts before the buffer")
            #expect(extent.start + extent.count <= Int(bitPattern: base) + dataSize, "plane \(index) overruns")
            for other in extents[(index + 1)...] {
                #expect(extent.start + extent.count <= other.start || other.start + other.count <= extent.start)
            }
        }
    }

    @Test("Filling plane i with i leaves every other plane intact", arguments: ExpectedFormat.all, [
        ImageSize(width: 5, height: 3), ImageSize(width: 640, height: 480), ImageSize(width: 1281, height: 721),
    ])
    func planesDoNotOverlap(format: ExpectedFormat, size: ImageSize) throws {
        let buffer = try #require(makeBuffer(size.width, size.height, format.pixelFormat))
        let expected = format.planes(size.width, size.height)
        buffer.withLockedPlanes { planes in
            #expect(planes.count == expected.count)
            for (index, plane) in planes.enumerated() {
                #expect(plane.width == expected[index].width)
                #expect(plane.height == expected[index].height)
                _ = plane.bytes.initializeMemory(as: UInt8.self, repeating: UInt8(index + 1))
            }
        }
        buffer.withLockedPlanes(.readOnly) { planes in
            for (index, plane) in planes.enumerated() {
                let wrong = plane.bytes.count(where: { $0 != UInt8(index + 1) })
                #expect(wrong == 0, "plane \(index): \(wrong) bytes overwritten by another plane")
            }
        }
    }

    @Test("An odd-sized NV12 buffer rounds its chroma plane up")
    func oddNV12() throws {
        let buffer = try #require(makeBuffer(5, 3, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange))
        #expect(CVPixelBufferGetWidthOfPlane(buffer, 1) == 3)
        #expect(CVPixelBufferGetHeightOfPlane(buffer, 1) == 2)
        #expect(CVPixelBufferGetBytesPerRowOfPlane(buffer, 1) == 64)
        #expect(CVPixelBufferGetDataSize(buffer) == 64 * 3 + 64 * 2)
    }

    @Test("A requested row alignment is combined with 64", arguments: [(0, 64), (16, 64), (128, 128), (100, 1600)])
    func rowAlignment(requested: Int, multiple: Int) throws {
        let attributes = [kCVPixelBufferBytesPerRowAlignmentKey as String: requested] as CFDictionary
        for format in [kCVPixelFormatType_32BGRA, kCVPixelFormatType_420YpCbCr8Planar] {
            let buffer = try #require(makeBuffer(333, 77, format, attributes))
            let rows = CVPixelBufferIsPlanar(buffer)
                ? (0..<CVPixelBufferGetPlaneCount(buffer)).map { CVPixelBufferGetBytesPerRowOfPlane(buffer, $0) }
                : [CVPixelBufferGetBytesPerRow(buffer)]
            for bytesPerRow in rows {
                #expect(bytesPerRow % multiple == 0, "\(bytesPerRow) is not a multiple of \(multiple)")
            }
        }
    }
}
