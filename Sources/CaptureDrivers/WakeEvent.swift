import CLinuxMedia
import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// An eventfd the capture thread polls beside the device, so `stop` wakes it at once. Not a device call, so it
/// does not go through `SystemCalls`.
///
/// Threading: thread safe.
final class WakeEvent: Sendable {
    let descriptor: Int32

    init() throws(Errno) {
        let descriptor = CLinuxMedia_eventfd()
        guard descriptor >= 0 else { throw Errno(rawValue: errno) }
        self.descriptor = descriptor
    }

    deinit { _ = Glibc.close(descriptor) }

    /// Makes the descriptor readable.
    func signal() {
        var one: UInt64 = 1
        _ = write(descriptor, &one, MemoryLayout<UInt64>.size)
    }
}
