import CLinuxMedia

/// The process-wide memory policy an application may choose for the encoders the drivers feed: the kernel's
/// `prctl(2)` settings, reached through CLinuxMedia since Swift cannot call the variadic original.
///
/// Threading: stateless; call from any thread (the setting is the process's).
package enum ProcessMemoryPolicy {
    /// `prctl(PR_SET_THP_DISABLE, 1)`: no transparent huge pages for this process and the programs it executes.
    /// Returns false when the kernel refuses (one built without them).
    package static func disableTransparentHugePages() -> Bool {
        CLinuxMedia_disable_transparent_huge_pages() == 0
    }
}
