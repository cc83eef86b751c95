// CVPixelBufferPool and CVPixelBufferRecycler: reuse of the same objects, thresholds, and concurrent checkouts.

import Dispatch
import Foundation
import OpenCoreVideo
import Synchronization
import Testing

/// A thread-safe count.
final class Counter: Sendable {
    private let count = Mutex(0)

    func increment() {
        count.withLock { $0 += 1 }
    }

    var value: Int {
        count.withLock { $0 }
    }
}

func makePool(
    width: Int = 320, height: Int = 240, format: OSType = kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
    minimumBufferCount: Int? = nil
) -> CVPixelBufferPool? {
    let attributes = [
        kCVPixelBufferWidthKey as String: width, kCVPixelBufferHeightKey as String: height,
        kCVPixelBufferPixelFormatTypeKey as String: format,
    ] as CFDictionary
    let poolAttributes = minimumBufferCount.map { [kCVPixelBufferPoolMinimumBufferCountKey as String: $0] }
    var pool: CVPixelBufferPool?
    let status = CVPixelBufferPoolCreate(kCFAllocatorDefault, poolAttributes, attributes, &pool)
    #expect(status == kCVReturnSuccess)
    return pool
}

func take(_ pool: CVPixelBufferPool) -> CVPixelBuffer? {
    var buffer: CVPixelBuffer?
    #expect(CVPixelBufferPoolCreatePixelBuffer(kCFAllocatorDefault, pool, &buffer) == kCVReturnSuccess)
    return buffer
}

func take(_ pool: CVPixelBufferPool, threshold: Int) -> (CVReturn, CVPixelBuffer?) {
    var buffer: CVPixelBuffer?
    let aux = [kCVPixelBufferPoolAllocationThresholdKey as String: threshold] as CFDictionary
    let status = CVPixelBufferPoolCreatePixelBufferWithAuxAttributes(kCFAllocatorDefault, pool, aux, &buffer)
    return (status, buffer)
}

/// The address of plane 0 (or of a non-planar buffer's pixels), read under a lock.
func planeAddress(_ buffer: CVPixelBuffer) -> UnsafeMutableRawPointer? {
    buffer.withLockedPlanes(.readOnly) { $0[0].baseAddress }
}

@Suite("CVPixelBufferPool")
struct CVPixelBufferPoolTests {
    @Test("A pool makes buffers of its attributes and reports them resolved")
    func attributes() throws {
        let pool = try #require(makePool(width: 641, height: 361, format: kCVPixelFormatType_420YpCbCr8Planar))
        let buffer = try #require(take(pool))
        #expect(CVPixelBufferGetWidth(buffer) == 641)
        #expect(CVPixelBufferGetHeight(buffer) == 361)
        #expect(CVPixelBufferGetPixelFormatType(buffer) == kCVPixelFormatType_420YpCbCr8Planar)
        #expect(CVPixelBufferGetBytesPerRowOfPlane(buffer, 2) % 64 == 0)
        let resolved = try #require(CVPixelBufferPoolGetPixelBufferAttributes(pool))
        #expect(resolved[kCVPixelBufferWidthKey] as? Int == 641)
        #expect(resolved[kCVPixelBufferPixelFormatTypeKey] as? OSType == kCVPixelFormatType_420YpCbCr8Planar)
        #expect(CVPixelBufferPoolGetAttributes(pool)?[kCVPixelBufferPoolMinimumBufferCountKey] as? Int == 0)
        #expect(CFGetTypeID(pool) == CVPixelBufferPoolGetTypeID())
    }

    /// A pool of 1920x1080 NV12 buffers (mapped pages) whose free buffers age out after `age` seconds.
    func agingPool(age: Double) throws -> CVPixelBufferPool {
        var pool: CVPixelBufferPool?
        CVPixelBufferPoolCreate(
            nil, [kCVPixelBufferPoolMaximumBufferAgeKey: age],
            [
                kCVPixelBufferWidthKey: 1920, kCVPixelBufferHeightKey: 1080,
                kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
            ], &pool)
        return try #require(pool)
    }

    @Test("Free buffers unused for longer than the maximum age are released; 0 keeps them")
    func aging() throws {
        for (age, expected) in [(0.05, 1), (0.0, 4)] {
            let pool = try agingPool(age: age)
            let now = Atomic<Int64>(1_000_000_000)
            pool.agingClock.withLock { $0 = { now.load(ordering: .relaxed) } }
            #expect(CVPixelBufferPoolGetAttributes(pool)?[kCVPixelBufferPoolMaximumBufferAgeKey] as? Double == age)
            var held: [CVPixelBuffer] = []
            for _ in 0..<4 { held.append(try #require(take(pool))) }
            held.removeAll()
            // Within the age, the four stay for the next burst.
            _ = try #require(take(pool))
            #expect(pool.bufferCount == 4)
            // The age passes.
            now.add(120_000_000, ordering: .relaxed)
            _ = try #require(take(pool))
            #expect(pool.bufferCount == expected, "age \(age)")
        }
    }

    @Test("A negative maximum age is refused")
    func negativeAge() {
        var pool: CVPixelBufferPool?
        let status = CVPixelBufferPoolCreate(
            nil, [kCVPixelBufferPoolMaximumBufferAgeKey: -1.0],
            [kCVPixelBufferWidthKey: 64, kCVPixelBufferHeightKey: 64, kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA],
            &pool)
        #expect(status == kCVReturnInvalidPoolAttributes)
        #expect(pool == nil)
    }

    @Test("NSNumber attribute values work as on Apple's platforms")
    func numberAttributes() throws {
        let attributes = [
            kCVPixelBufferWidthKey as String: NSNumber(value: 64),
            kCVPixelBufferHeightKey as String: NSNumber(value: 8),
            kCVPixelBufferPixelFormatTypeKey as String: [NSNumber(value: kCVPixelFormatType_32BGRA)],
        ] as CFDictionary
        var pool: CVPixelBufferPool?
        #expect(CVPixelBufferPoolCreate(nil, [kCVPixelBufferPoolMinimumBufferCountKey: NSNumber(value: 2)],
            attributes, &pool) == kCVReturnSuccess)
        let created = try #require(pool)
        #expect(created.bufferCount == 2)
        let buffer = try #require(take(created))
        #expect(buffer.pixelFormatType == kCVPixelFormatType_32BGRA)
    }

    /// Attribute dictionaries for a pool that must not be created; `CFDictionary` is not `Sendable`, but these
    /// hold only integers and strings and are never mutated.
    struct BadPoolInput: @unchecked Sendable, CustomTestStringConvertible {
        var pixelBufferAttributes: CFDictionary
        var poolAttributes: CFDictionary?
        var expected: CVReturn
        var testDescription: String { "\(pixelBufferAttributes) \(poolAttributes ?? [:]) → \(expected)" }
    }

    nonisolated(unsafe) static let bgra8x8: CFDictionary = [
        kCVPixelBufferWidthKey: 8, kCVPixelBufferHeightKey: 8,
        kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA,
    ]

    @Test("Bad pool input returns the right CVReturn and no pool", arguments: [
        BadPoolInput(
            pixelBufferAttributes: bgra8x8.filter { $0.key != kCVPixelBufferWidthKey },
            expected: kCVReturnInvalidPixelBufferAttributes),
        BadPoolInput(
            pixelBufferAttributes: bgra8x8.merging([kCVPixelBufferWidthKey: 0]) { $1 },
            expected: kCVReturnInvalidArgument),
        BadPoolInput(
            pixelBufferAttributes: bgra8x8.merging([kCVPixelBufferPixelFormatTypeKey: 0x7A7A_7A7A]) { $1 },
            expected: kCVReturnInvalidPixelFormat),
        BadPoolInput(
            pixelBufferAttributes: bgra8x8.merging([kCVPixelBufferHeightKey: "8"]) { $1 },
            expected: kCVReturnInvalidPixelBufferAttributes),
        BadPoolInput(
            pixelBufferAttributes: bgra8x8, poolAttributes: [kCVPixelBufferPoolMinimumBufferCountKey: -1],
            expected: kCVReturnInvalidPoolAttributes),
    ])
    func badInput(input: BadPoolInput) {
        var pool: CVPixelBufferPool? = makePool()
        let status = CVPixelBufferPoolCreate(nil, input.poolAttributes, input.pixelBufferAttributes, &pool)
        #expect(status == input.expected)
        #expect(pool == nil)
        pool = makePool()
        #expect(CVPixelBufferPoolCreate(nil, nil, nil, &pool) == kCVReturnInvalidPixelBufferAttributes)
        #expect(pool == nil)
    }

    @Test("A released buffer is the next one handed out: same object, same memory")
    func reuse() throws {
        let pool = try #require(makePool())
        var buffer = take(pool)
        let first = ObjectIdentifier(try #require(buffer))
        let memory = planeAddress(try #require(buffer))
        buffer = nil
        let again = try #require(take(pool))
        #expect(ObjectIdentifier(again) == first)
        #expect(planeAddress(again) == memory)
        #expect(pool.bufferCount == 1)
    }

    @Test("Buffers still held are never handed out again")
    func heldBuffersAreDistinct() throws {
        let pool = try #require(makePool(minimumBufferCount: 3))
        var held: [CVPixelBuffer] = []
        for _ in 0..<10 {
            held.append(try #require(take(pool)))
        }
        #expect(Set(held.map(ObjectIdentifier.init)).count == 10)
        #expect(Set(held.map { planeAddress($0) }).count == 10)
        #expect(pool.bufferCount == 10)
        #expect(pool.heldBufferCount == 10)
        held.removeLast(4)
        #expect(pool.heldBufferCount == 6)
    }

    @Test("A buffer released while locked comes back unlocked")
    func reuseResetsLock() throws {
        let pool = try #require(makePool())
        var buffer = take(pool)
        CVPixelBufferLockBaseAddress(try #require(buffer), [])
        buffer = nil
        let again = try #require(take(pool))
        #expect(!again.isBaseAddressLocked)
    }

    @Test("The allocation threshold refuses a buffer while that many are held, and recovers")
    func allocationThreshold() throws {
        let pool = try #require(makePool())
        var held: [CVPixelBuffer] = []
        for _ in 0..<3 {
            let (status, buffer) = take(pool, threshold: 3)
            #expect(status == kCVReturnSuccess)
            held.append(try #require(buffer))
        }
        let (refused, none) = take(pool, threshold: 3)
        #expect(refused == kCVReturnWouldExceedAllocationThreshold)
        #expect(none == nil)
        #expect(take(pool, threshold: 4).0 == kCVReturnSuccess, "a higher threshold still allows one more")

        let released = ObjectIdentifier(held.removeFirst())
        let (status, buffer) = take(pool, threshold: 3)
        #expect(status == kCVReturnSuccess)
        #expect(buffer.map(ObjectIdentifier.init) == released)
        #expect(pool.bufferCount == 4)
    }

    @Test("Flushing frees free buffers beyond the minimum and leaves held ones alone")
    func flush() throws {
        let pool = try #require(makePool(minimumBufferCount: 2))
        #expect(pool.bufferCount == 2)
        var held = (0..<5).compactMap { _ in take(pool) }
        let kept = ObjectIdentifier(held[4])
        held.removeFirst(4)
        #expect(pool.bufferCount == 5)
        CVPixelBufferPoolFlush(pool, .excessBuffers)
        #expect(pool.bufferCount == 3)
        #expect(pool.heldBufferCount == 1)
        #expect(held.map(ObjectIdentifier.init) == [kept])
    }

    @Test("A buffer outlives its pool")
    func bufferOutlivesPool() throws {
        var pool = makePool(format: kCVPixelFormatType_32BGRA)
        let buffer = try #require(pool.flatMap { take($0) })
        pool = nil
        buffer.withUnsafeMutablePlane { plane in _ = plane.bytes.initializeMemory(as: UInt8.self, repeating: 7) }
        #expect(buffer.withUnsafePlane { bytes, _ in bytes.allSatisfy { $0 == 7 } })
    }

    @Test("Concurrent checkouts never hand one buffer to two holders at once")
    func concurrentCheckouts() throws {
        let pool = try #require(makePool(width: 64, height: 16, format: kCVPixelFormatType_32BGRA))
        let inUse = Mutex<Set<ObjectIdentifier>>([])
        let collisions = Counter()
        let corrupted = Counter()
        let threads = 8
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for iteration in 0..<2_000 {
                var buffer: CVPixelBuffer?
                CVPixelBufferPoolCreatePixelBuffer(nil, pool, &buffer)
                guard let buffer else { return }
                let id = ObjectIdentifier(buffer)
                if !inUse.withLock({ $0.insert(id).inserted }) { collisions.increment() }
                // Fill the whole buffer with this holder's tag, let others run, and check nobody wrote over it.
                let tag = UInt8(truncatingIfNeeded: thread * 31 + iteration)
                buffer.withUnsafeMutablePlane { plane in
                    _ = plane.bytes.initializeMemory(as: UInt8.self, repeating: tag)
                }
                sched_yield()
                let intact = buffer.withUnsafePlane { bytes, _ in bytes.allSatisfy { $0 == tag } }
                if !intact { corrupted.increment() }
                inUse.withLock { _ = $0.remove(id) }
            }
        }
        #expect(collisions.value == 0)
        #expect(corrupted.value == 0)
        #expect(pool.bufferCount <= threads)
        #expect(pool.heldBufferCount == 0)
    }
}

@Suite("CVPixelBufferRecycler")
struct CVPixelBufferRecyclerTests {
    /// Three wrapped buffers over one allocation, as a V4L2 driver wraps its mmap buffers.
    static func wrappedBuffers(_ memory: UnsafeMutableRawPointer, releases: Counter) throws -> [CVPixelBuffer] {
        try (0..<3).map { index in
            try CVPixelBuffer(
                width: 16, height: 4, pixelFormatType: kCVPixelFormatType_OneComponent8,
                planes: [WrappedPlane(baseAddress: memory + index * 64, bytesPerRow: 16)],
                release: { releases.increment() })
        }
    }

    @Test("A handed-out buffer is reported once its users let go, and not before")
    func returns() throws {
        let memory = UnsafeMutableRawPointer.allocate(byteCount: 3 * 64, alignment: 64)
        defer { memory.deallocate() }
        let releases = Counter()
        var recycler: CVPixelBufferRecycler? = CVPixelBufferRecycler(
            try Self.wrappedBuffers(memory, releases: releases))
        let buffers = try #require(recycler)
        #expect(buffers.count == 3)
        #expect(buffers.firstReturnedBuffer() == nil, "buffers never handed out are not 'returned'")

        var frame: CVPixelBuffer? = buffers.handOut(1)
        var copy = frame
        #expect(buffers.handedOutCount == 1)
        #expect(buffers.firstReturnedBuffer() == nil)
        frame = nil
        #expect(buffers.firstReturnedBuffer() == nil, "a reference is still held")
        copy = nil
        #expect(buffers.firstReturnedBuffer() == 1)
        #expect(buffers.firstReturnedBuffer() == nil, "reported once")
        #expect(buffers.handedOutCount == 0)
        _ = copy

        let again = buffers.handOut(1)
        #expect(planeAddress(again) == memory + 64)
        #expect(releases.value == 0)
        recycler = nil
        _ = again
    }
}
