import CLinuxMedia

/// The process-wide memory policy an application may choose for the encoders the drivers feed: the kernel's
/// `prctl(2)` settings and glibc malloc's `mallopt(3)` ones, reached through CLinuxMedia (Swift cannot call the
/// variadic `prctl`, and its Glibc module leaves `malloc.h` out).
///
/// Threading: stateless; call from any thread (the setting is the process's).
package enum ProcessMemoryPolicy {
    /// `prctl(PR_SET_THP_DISABLE, 1)`: no transparent huge pages for this process and the programs it executes.
    /// Returns false when the kernel refuses (one built without them).
    package static func disableTransparentHugePages() -> Bool {
        CLinuxMedia_disable_transparent_huge_pages() == 0
    }

    /// glibc's malloc gives freed memory back to the system promptly: `mallopt(M_MMAP_THRESHOLD, 128 KiB)` and
    /// `mallopt(M_TRIM_THRESHOLD, 128 KiB)`, glibc's starting values, which it otherwise raises (the mmap threshold
    /// up to 32 MiB, the trim threshold to twice that) each time a large block is freed. Setting them stops that,
    /// also in a process that has freed large blocks already. Returns false when the C library refuses.
    package static func releaseFreedMemoryPromptly() -> Bool {
        CLinuxMedia_set_malloc_thresholds(Int32(mallocThreshold)) == 1
    }

    /// The mmap and trim thresholds ``releaseFreedMemoryPromptly()`` sets: glibc's own starting value.
    package static let mallocThreshold = 128 * 1024
}
