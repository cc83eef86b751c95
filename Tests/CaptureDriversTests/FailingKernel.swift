import CaptureDrivers
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A kernel that passes every call to another (the real one, or a simulated device) until it is armed; from then
/// on the `count`-th call of the ioctl named `request` (and every one after it) fails with EIO, as a device that
/// breaks mid-stream does.
///
/// Threading: thread safe; a lock guards the count.
final class FailingKernel: KernelCalls, @unchecked Sendable {
    private let inner: any KernelCalls
    private let request: String
    private let lock = NSLock()
    private var remaining: Int?
    /// How many calls were failed.
    private(set) var failures = 0

    init(wrapping inner: any KernelCalls, failing request: String) {
        self.inner = inner
        self.request = request
    }

    var system: SystemCalls { SystemCalls(kernel: self) }

    /// Fails the `count`-th `request` from now on, and each after it.
    func arm(failingCall count: Int) {
        lock.lock()
        remaining = count
        lock.unlock()
    }

    func ioctl(
        _ descriptor: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer
    ) -> (result: Int32, errno: Int32) {
        lock.lock()
        var fails = false
        if V4L2Request.named(code: request)?.name == self.request, let left = remaining {
            remaining = left - 1
            fails = left <= 1
            if fails { failures += 1 }
        }
        lock.unlock()
        return fails ? (-1, EIO) : inner.ioctl(descriptor, request, argument)
    }

    func open(_ path: String, _ flags: Int32) -> (result: Int32, errno: Int32) { inner.open(path, flags) }
    func close(_ descriptor: Int32) -> (result: Int32, errno: Int32) { inner.close(descriptor) }
    func mmap(length: Int, descriptor: Int32, offset: Int) -> (result: UnsafeMutableRawPointer?, errno: Int32) {
        inner.mmap(length: length, descriptor: descriptor, offset: offset)
    }
    func munmap(_ address: UnsafeMutableRawPointer, length: Int) -> (result: Int32, errno: Int32) {
        inner.munmap(address, length: length)
    }
    func poll(_ descriptors: UnsafeMutablePointer<pollfd>, count: Int, timeout: Int32) -> (result: Int32, errno: Int32)
    {
        inner.poll(descriptors, count: count, timeout: timeout)
    }
    func access(_ path: String, _ mode: Int32) -> (result: Int32, errno: Int32) { inner.access(path, mode) }
}
