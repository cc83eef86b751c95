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

    /// Has the C library's allocator give freed memory back to the system promptly (glibc's
    /// `mallopt(M_MMAP_THRESHOLD, 128 KiB)` and `mallopt(M_TRIM_THRESHOLD, 128 KiB)`).
    ///
    /// By default glibc's malloc adapts as large blocks come and go: each time one it had mapped on its own is freed,
    /// it raises the size from which it maps blocks on their own (to at most 32 MiB) and lets each of its arenas (one
    /// per thread that allocates, up to eight per core) keep twice that much freed memory before returning any. In a
    /// recording, whose frames, packets and fragments are such blocks, freed on one thread and allocated on another,
    /// that memory piles up in several arenas at once: the 1080p30 recordings of docs/performance.md peaked 3–6 MiB
    /// higher in anonymous memory than with this setting. With it, the thresholds stay at glibc's starting
    /// 128 KiB, also in a process that has freed large blocks already. Call it once, before recording; `avcapture`
    /// does at start.
    ///
    /// - Returns: whether the C library took the setting (false where malloc is not glibc's or refuses it).
    @discardableResult
    public static func releaseFreedMemoryPromptly() -> Bool {
        ProcessMemoryPolicy.releaseFreedMemoryPromptly()
    }
}
