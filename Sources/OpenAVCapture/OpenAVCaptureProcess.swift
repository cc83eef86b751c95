import CaptureDrivers

/// Choices that belong to the whole process rather than to a session (ours: Apple's API has none of these). The
/// library never makes them itself; an application calls them once at start.
///
/// Threading: call from any thread; each applies to the whole process.
public enum OpenAVCaptureProcess {
    /// Turns transparent huge pages off for this process and the programs it executes.
    ///
    /// libx264 asks the kernel for huge pages for its frame buffers (`madvise(MADV_HUGEPAGE)`). Where the system
    /// grants them, the kernel zeroes and keeps whole 2 MiB pages of which the encoder uses part: recording 1080p30
    /// H.264 then peaks about 10 MB higher, and the encoder's first frames spend some 90 ms clearing pages while the
    /// camera's frames wait (docs/time-and-memory.md, "Transparent huge pages"). An application that prefers memory to
    /// fewer TLB misses calls this before it records; `avcapture` does.
    ///
    /// - Returns: whether the kernel took the setting (false on a kernel without transparent huge pages, where
    ///   nothing changes).
    @discardableResult
    public static func disableTransparentHugePages() -> Bool {
        ProcessMemoryPolicy.disableTransparentHugePages()
    }
}
