// CVPixelBuffer: creation results, locking rules, wrapped memory's release, and Apple-style call shapes.

import Foundation
import OpenCoreVideo
import Testing

/// Records calls of a C release callback; reached through the callback's `releaseRefCon`.
final class ReleaseRecorder {
    var calls = 0
    var baseAddress: UnsafeRawPointer?
    var dataSize = 0
    var planeCount = 0
    var planeAddresses: [UnsafeRawPointer?] = []

    var refCon: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    static func from(_ refCon: UnsafeMutableRawPointer?) -> ReleaseRecorder {
        Unmanaged<ReleaseRecorder>.fromOpaque(refCon!).takeUnretainedValue()
    }
}

struct BadInput: Sendable, CustomTestStringConvertible {
    var width: Int
    var height: Int
    var format: OSType
    var status: CVReturn
    var testDescription: String { "\(width)x\(height) \(fourCharCodeDescription(format)) → \(status)" }
}

@Suite("CVPixelBuffer")
struct CVPixelBufferTests {
    @Test("CVReturn constants have Apple's values", arguments: [
        (kCVReturnSuccess, 0), (kCVReturnFirst, -6660), (kCVReturnError, -6660), (kCVReturnInvalidArgument, -6661),
        (kCVReturnAllocationFailed, -6662), (kCVReturnUnsupported, -6663), (kCVReturnInvalidDisplay, -6670),
        (kCVReturnDisplayLinkAlreadyRunning, -6671), (kCVReturnDisplayLinkNotRunning, -6672),
        (kCVReturnDisplayLinkCallbacksNotSet, -6673), (kCVReturnInvalidPixelFormat, -6680),
        (kCVReturnInvalidSize, -6681), (kCVReturnInvalidPixelBufferAttributes, -6682),
        (kCVReturnPixelBufferNotOpenGLCompatible, -6683), (kCVReturnPixelBufferNotMetalCompatible, -6684),
        (kCVReturnWouldExceedAllocationThreshold, -6689), (kCVReturnPoolAllocationFailed, -6690),
        (kCVReturnInvalidPoolAttributes, -6691), (kCVReturnRetry, -6692), (kCVReturnLast, -6699),
    ] as [(CVReturn, Int)])
    func returnCodes(code: CVReturn, value: Int) {
        #expect(Int(code) == value)
    }

    @Test("Attribute keys have Apple's string values")
    func attributeKeys() {
        #expect(kCVPixelBufferPixelFormatTypeKey == "PixelFormatType")
        #expect(kCVPixelBufferWidthKey == "Width")
        #expect(kCVPixelBufferHeightKey == "Height")
        #expect(kCVPixelBufferBytesPerRowAlignmentKey == "BytesPerRowAlignment")
        #expect(kCVPixelBufferPoolMinimumBufferCountKey == "MinimumBufferCount")
        #expect(kCVPixelBufferPoolAllocationThresholdKey == "AllocationThreshold")
    }

    @Test("Bad input returns the right CVReturn, clears the output and never traps", arguments: [
        BadInput(width: 0, height: 10, format: kCVPixelFormatType_32BGRA, status: kCVReturnInvalidArgument),
        BadInput(width: 10, height: 0, format: kCVPixelFormatType_32BGRA, status: kCVReturnInvalidArgument),
        BadInput(width: -1, height: 10, format: kCVPixelFormatType_420YpCbCr8Planar, status: kCVReturnInvalidArgument),
        BadInput(width: 10, height: Int.min, format: kCVPixelFormatType_32BGRA, status: kCVReturnInvalidArgument),
        BadInput(width: Int.max, height: 1, format: kCVPixelFormatType_32BGRA, status: kCVReturnInvalidSize),
        BadInput(width: 40_000, height: 2, format: kCVPixelFormatType_OneComponent8, status: kCVReturnInvalidSize),
        BadInput(width: 64, height: 64, format: 0x6162_6364, status: kCVReturnInvalidPixelFormat),
        BadInput(width: 64, height: 64, format: 0, status: kCVReturnInvalidPixelFormat),
    ])
    func badInput(input: BadInput) throws {
        var buffer = makeBuffer(2, 2, kCVPixelFormatType_32BGRA)
        let status = CVPixelBufferCreate(nil, input.width, input.height, input.format, nil, &buffer)
        #expect(status == input.status)
        #expect(buffer == nil)
    }

    @Test("A malformed attribute is kCVReturnInvalidPixelBufferAttributes")
    func malformedAttributes() {
        var buffer: CVPixelBuffer?
        let attributes = [kCVPixelBufferBytesPerRowAlignmentKey as String: "sixty-four"] as CFDictionary
        #expect(CVPixelBufferCreate(nil, 8, 8, kCVPixelFormatType_32BGRA, attributes, &buffer)
            == kCVReturnInvalidPixelBufferAttributes)
        #expect(buffer == nil)
    }

    @Test("Apple-style code compiles and runs unchanged")
    func appleStyle() throws {
        // As written for Apple's CoreVideo: CF-typed attributes, kCFAllocatorDefault, kCFBooleanTrue!.
        let attributes = [
            kCVPixelBufferCGImageCompatibilityKey: kCFBooleanTrue!,
            kCVPixelBufferCGBitmapContextCompatibilityKey: kCFBooleanTrue!,
            kCVPixelBufferPixelFormatTypeKey as String: NSNumber(value: kCVPixelFormatType_32BGRA),
        ] as CFDictionary
        var pixelBuffer: CVPixelBuffer?
        let status = CVPixelBufferCreate(
            kCFAllocatorDefault, 64, 48, kCVPixelFormatType_32ARGB, attributes, &pixelBuffer)
        guard status == kCVReturnSuccess, let buffer = pixelBuffer else {
            Issue.record("CVPixelBufferCreate failed with \(status)")
            return
        }
        let imageBuffer: CVImageBuffer = buffer
        CVPixelBufferLockBaseAddress(imageBuffer, CVPixelBufferLockFlags(rawValue: 0))
        let data = CVPixelBufferGetBaseAddress(imageBuffer)
        let bytesPerRow = CVPixelBufferGetBytesPerRow(imageBuffer)
        data?.storeBytes(of: 0xFF, toByteOffset: 47 * bytesPerRow + 63 * 4, as: UInt8.self)
        CVPixelBufferUnlockBaseAddress(imageBuffer, CVPixelBufferLockFlags(rawValue: 0))
        #expect(CVImageBufferGetEncodedSize(imageBuffer) == CGSize(width: 64, height: 48))
        #expect(CFGetTypeID(imageBuffer) == CVPixelBufferGetTypeID())
        #expect(CFGetTypeID(imageBuffer) != CVPixelBufferPoolGetTypeID())
        #expect(CFGetTypeID(42) != CVPixelBufferGetTypeID())
    }

    @Test("The Swift properties agree with the C functions")
    func swiftProperties() throws {
        let buffer = try #require(makeBuffer(99, 51, kCVPixelFormatType_420YpCbCr8BiPlanarFullRange))
        #expect(buffer.width == CVPixelBufferGetWidth(buffer))
        #expect(buffer.height == CVPixelBufferGetHeight(buffer))
        #expect(buffer.pixelFormatType == CVPixelBufferGetPixelFormatType(buffer))
        #expect(buffer.planeCount == 2)
        #expect(buffer.isPlanar)
        #expect(buffer.dataSize == CVPixelBufferGetDataSize(buffer))
        #expect(buffer.bytesPerRow == CVPixelBufferGetBytesPerRowOfPlane(buffer, 0))
    }

    // MARK: Locking

    @Test("Locks nest and each unlock must match its lock's flags")
    func lockRules() throws {
        let buffer = try #require(makeBuffer(16, 16, kCVPixelFormatType_32BGRA))
        #expect(!buffer.isBaseAddressLocked)
        #expect(CVPixelBufferUnlockBaseAddress(buffer, []) == kCVReturnError)
        #expect(CVPixelBufferUnlockBaseAddress(buffer, .readOnly) == kCVReturnError)

        #expect(CVPixelBufferLockBaseAddress(buffer, .readOnly) == kCVReturnSuccess)
        #expect(buffer.isBaseAddressLocked)
        #expect(CVPixelBufferUnlockBaseAddress(buffer, []) == kCVReturnInvalidArgument)
        #expect(buffer.isBaseAddressLocked, "a mismatched unlock must not unlock")
        #expect(CVPixelBufferUnlockBaseAddress(buffer, .readOnly) == kCVReturnSuccess)
        #expect(!buffer.isBaseAddressLocked)

        #expect(CVPixelBufferLockBaseAddress(buffer, []) == kCVReturnSuccess)
        #expect(CVPixelBufferLockBaseAddress(buffer, []) == kCVReturnSuccess)
        #expect(CVPixelBufferUnlockBaseAddress(buffer, .readOnly) == kCVReturnInvalidArgument)
        #expect(CVPixelBufferUnlockBaseAddress(buffer, []) == kCVReturnSuccess)
        #expect(buffer.isBaseAddressLocked, "two locks need two unlocks")
        #expect(CVPixelBufferUnlockBaseAddress(buffer, []) == kCVReturnSuccess)
        #expect(!buffer.isBaseAddressLocked)
        #expect(CVPixelBufferUnlockBaseAddress(buffer, []) == kCVReturnError)
    }

    @Test("Base addresses are returned while unlocked, as Apple's are, and debug builds count the access")
    func unlockedAccess() throws {
        let buffer = try #require(makeBuffer(16, 16, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange))
        #if DEBUG
            let before = CVPixelBuffer.debugUnlockedAccessCount.load(ordering: .relaxed)
        #endif
        #expect(CVPixelBufferGetBaseAddressOfPlane(buffer, 1) != nil)
        #if DEBUG
            // Other tests may run concurrently and add to the count; this test's access must be among them.
            #expect(CVPixelBuffer.debugUnlockedAccessCount.load(ordering: .relaxed) >= before + 1)
        #endif
    }

    @Test("withLockedPlanes holds the lock for the closure only, even when it throws")
    func scopedLock() throws {
        struct Failure: Error {}
        let buffer = try #require(makeBuffer(8, 8, kCVPixelFormatType_420YpCbCr8Planar))
        let planeCount = buffer.withLockedPlanes(.readOnly) { planes in
            #expect(buffer.isBaseAddressLocked)
            return planes.count
        }
        #expect(planeCount == 3)
        #expect(!buffer.isBaseAddressLocked)
        #expect(throws: Failure.self) {
            try buffer.withUnsafeMutablePlane(2) { _ in throw Failure() }
        }
        #expect(!buffer.isBaseAddressLocked)
        buffer.withUnsafeMutablePlane(1) { plane in
            _ = plane.row(3).initializeMemory(as: UInt8.self, repeating: 200)
        }
        let value = buffer.withUnsafePlane(1) { bytes, bytesPerRow in bytes[3 * bytesPerRow + 3] }
        #expect(value == 200)
        #expect(CVPixelBufferUnlockBaseAddress(buffer, []) == kCVReturnError)
    }

    // MARK: Wrapped memory

    @Test("CVPixelBufferCreateWithBytes calls its release callback exactly once, when the last reference dies")
    func releaseBytesOnce() throws {
        let recorder = ReleaseRecorder()
        let memory = UnsafeMutableRawPointer.allocate(byteCount: 100 * 10, alignment: 16)
        defer { memory.deallocate() }
        var buffer: CVPixelBuffer?
        let status = CVPixelBufferCreateWithBytes(
            nil, 20, 10, kCVPixelFormatType_32BGRA, memory, 100,
            { refCon, baseAddress in
                let recorder = ReleaseRecorder.from(refCon)
                recorder.calls += 1
                recorder.baseAddress = baseAddress
            }, recorder.refCon, nil, &buffer)
        #expect(status == kCVReturnSuccess)
        var second = buffer
        #expect(CVPixelBufferGetBytesPerRow(try #require(second)) == 100)
        CVPixelBufferLockBaseAddress(try #require(second), .readOnly)
        #expect(CVPixelBufferGetBaseAddress(try #require(second)) == memory)
        CVPixelBufferUnlockBaseAddress(try #require(second), .readOnly)
        buffer = nil
        #expect(recorder.calls == 0, "released while a reference remains")
        second = nil
        #expect(recorder.calls == 1)
        #expect(recorder.baseAddress == UnsafeRawPointer(memory))
    }

    @Test("CVPixelBufferCreateWithBytes refuses planar formats and short rows without calling the callback")
    func releaseBytesRefused() {
        let recorder = ReleaseRecorder()
        let memory = UnsafeMutableRawPointer.allocate(byteCount: 4096, alignment: 16)
        defer { memory.deallocate() }
        let callback: CVPixelBufferReleaseBytesCallback = { refCon, _ in ReleaseRecorder.from(refCon).calls += 1 }
        var buffer: CVPixelBuffer?
        #expect(CVPixelBufferCreateWithBytes(nil, 16, 16, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, memory, 16,
            callback, recorder.refCon, nil, &buffer) == kCVReturnInvalidPixelFormat)
        #expect(CVPixelBufferCreateWithBytes(nil, 16, 16, kCVPixelFormatType_32BGRA, memory, 63,
            callback, recorder.refCon, nil, &buffer) == kCVReturnInvalidArgument)
        #expect(CVPixelBufferCreateWithBytes(nil, 0, 16, kCVPixelFormatType_32BGRA, memory, 64,
            callback, recorder.refCon, nil, &buffer) == kCVReturnInvalidArgument)
        #expect(buffer == nil)
        #expect(recorder.calls == 0)
    }

    @Test("CVPixelBufferCreateWithPlanarBytes wraps each plane and hands everything back once")
    func releasePlanarBytesOnce() throws {
        let recorder = ReleaseRecorder()
        let luma = UnsafeMutableRawPointer.allocate(byteCount: 40 * 6, alignment: 16)
        let chroma = UnsafeMutableRawPointer.allocate(byteCount: 40 * 3, alignment: 16)
        defer {
            luma.deallocate()
            chroma.deallocate()
        }
        var addresses: [UnsafeMutableRawPointer?] = [luma, chroma]
        var widths = [7, 4]
        var heights = [6, 3]
        var rows = [40, 40]
        var buffer: CVPixelBuffer?
        let status = CVPixelBufferCreateWithPlanarBytes(
            nil, 7, 6, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, 0, 2, &addresses, &widths, &heights,
            &rows,
            { refCon, _, dataSize, planeCount, planeAddresses in
                let recorder = ReleaseRecorder.from(refCon)
                recorder.calls += 1
                recorder.dataSize = dataSize
                recorder.planeCount = planeCount
                recorder.planeAddresses = (0..<planeCount).map { planeAddresses![$0] }
            }, recorder.refCon, nil, &buffer)
        #expect(status == kCVReturnSuccess)
        do {
            let wrapped = try #require(buffer)
            #expect(CVPixelBufferGetPlaneCount(wrapped) == 2)
            CVPixelBufferLockBaseAddress(wrapped, [])
            #expect(CVPixelBufferGetBaseAddressOfPlane(wrapped, 1) == chroma)
            CVPixelBufferUnlockBaseAddress(wrapped, [])
            #expect(CVPixelBufferGetHeightOfPlane(wrapped, 1) == 3)
            #expect(CVPixelBufferGetDataSize(wrapped) == 40 * 6 + 40 * 3)
        }
        #expect(recorder.calls == 0)
        buffer = nil
        #expect(recorder.calls == 1)
        #expect(recorder.planeCount == 2)
        #expect(recorder.planeAddresses == [UnsafeRawPointer(luma), UnsafeRawPointer(chroma)])

        // A plane count that does not match the format is refused.
        #expect(CVPixelBufferCreateWithPlanarBytes(
            nil, 7, 6, kCVPixelFormatType_420YpCbCr8Planar, nil, 0, 2, &addresses, &widths, &heights, &rows,
            nil, nil, nil, &buffer) == kCVReturnInvalidArgument)
        #expect(buffer == nil)
    }

    @Test("The package initializer's release closure runs exactly once")
    func packageWrappingInitializer() throws {
        let releases = Counter()
        let memory = UnsafeMutableRawPointer.allocate(byteCount: 2560 * 720, alignment: 64)
        defer { memory.deallocate() }
        var buffer: CVPixelBuffer? = try CVPixelBuffer(
            width: 1280, height: 720, pixelFormatType: kCVPixelFormatType_422YpCbCr8_yuvs,
            planes: [WrappedPlane(baseAddress: memory, bytesPerRow: 2560)], release: { releases.increment() })
        #expect(buffer?.bytesPerRow == 2560)
        #expect(buffer?.planeCount == 0)
        #expect(releases.value == 0)
        buffer = nil
        #expect(releases.value == 1)

        #expect(throws: CVPixelBufferCreationError(kCVReturnInvalidArgument)) {
            try CVPixelBuffer(
                width: 1280, height: 720, pixelFormatType: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
                planes: [WrappedPlane(baseAddress: memory, bytesPerRow: 1280)], release: { releases.increment() })
        }
        #expect(throws: CVPixelBufferCreationError(kCVReturnInvalidArgument)) {
            try CVPixelBuffer(
                width: 1280, height: 720, pixelFormatType: kCVPixelFormatType_32BGRA,
                planes: [WrappedPlane(baseAddress: memory, bytesPerRow: 2560)], release: { releases.increment() })
        }
        #expect(releases.value == 1, "a refused wrapping must not release the caller's memory")
    }
}
