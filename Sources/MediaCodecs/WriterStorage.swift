// WriterStorage: every file-system call the writers make (creation, fsync, the rename, removal, truncation, sizes and
// free space), in one place, and the one seam through which tests make that storage slow or full.

import CFFmpeg
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The one funnel for the file-system calls of the writers (``Muxer``, the track-header patch, the recording
/// engine's limits), as `SystemCalls` is for V4L2: what decides what survives a crash, a power loss or a removed
/// directory, and what the limits read.
///
/// - Creation: every file a muxer makes (the movie, the fast-start rewrite's hidden copy) is created with
///   `O_CREAT | O_EXCL` and mode 0644 less the umask: never world-writable, never through a link planted at the
///   name.
/// - Power loss: the movie's data is `fdatasync`ed after a fragment is handed to the kernel, at most once a
///   second (``FragmentSync``); the finish in place `fsync`s the file with its `moov` appended and again after the
///   header write, so after a power cut it is the fragmented movie or the finished one; the fast-start rewrite
///   `fsync`s its copy and the directory before the rename and the directory after it, so the name holds one of the
///   two complete files.
/// - A removed file: the muxer keeps a descriptor of the file it created; `st_nlink == 0` on it means the file
///   (or its directory) was deleted while it was written, which no later write can repair.
///
/// Threading: stateless functions; any thread.
package enum WriterStorage {
    /// Creates `path` exclusively (mode 0644 less the umask; `truncatingExisting` reuses an existing file instead)
    /// and returns its open descriptor, or the errno negated.
    static func createExclusively(_ path: String, truncatingExisting: Bool = false) -> Int32 {
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (truncatingExisting ? O_TRUNC : O_EXCL)
        let descriptor = open(path, flags, 0o644)
        return descriptor >= 0 ? descriptor : -errno
    }

    /// `fsync(2)` of the directory holding `path`: makes a creation or a rename in it durable.
    @discardableResult
    static func syncDirectory(of path: String) -> Int32 {
        guard StorageSeam.syncsFiles else { return 0 }
        let directory = (path as NSString).deletingLastPathComponent
        let descriptor = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return errno }
        defer { close(descriptor) }
        StorageSeam.count(.directories)
        return fsync(descriptor) == 0 ? 0 : errno
    }

    /// `fsync(2)` of the file at `path`; 0 or the errno.
    static func syncFile(_ path: String) -> Int32 {
        guard StorageSeam.syncsFiles else { return 0 }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return errno }
        defer { close(descriptor) }
        return syncOpenFile(descriptor)
    }

    /// `fsync(2)` of an open file; 0 or the errno.
    static func syncOpenFile(_ descriptor: Int32) -> Int32 {
        guard StorageSeam.syncsFiles else { return 0 }
        StorageSeam.count(.files)
        return fsync(descriptor) == 0 ? 0 : errno
    }

    /// `fsync(2)` of a file patched in place after it was finished (the track-header display size); 0 or the errno.
    /// Always made and not counted: ``StorageSeam`` switches and counts the muxer's own syncs only.
    static func syncPatchedFile(_ descriptor: Int32) -> Int32 {
        fsync(descriptor) == 0 ? 0 : errno
    }

    /// Whether the file open as `descriptor` has no name left (it, or its directory, was deleted).
    static func wasRemoved(_ descriptor: Int32) -> Bool {
        var info = stat()
        return fstat(descriptor, &info) == 0 && info.st_nlink == 0
    }

    /// Removes the file at `path` (`unlink(2)`); whether it did.
    @discardableResult
    package static func removeFile(_ path: String) -> Bool {
        unlink(path) == 0
    }

    /// Cuts the file at `path` to `length` bytes (`truncate(2)`); whether it did.
    static func truncateFile(_ path: String, to length: Int64) -> Bool {
        truncate(path, off_t(length)) == 0
    }

    /// Renames `source` over `destination` (`rename(2)`: atomic, so `destination` always names one complete
    /// file); 0 or the errno.
    static func renameFile(_ source: String, over destination: String) -> Int32 {
        rename(source, destination) == 0 ? 0 : errno
    }

    /// Opens an existing file to read it, or to patch it in place too; the descriptor, or the errno negated.
    static func openExisting(_ path: String, writable: Bool) -> Int32 {
        let descriptor = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC)
        return descriptor >= 0 ? descriptor : -errno
    }

    /// The size in bytes of the file open as `descriptor`, or nil when `fstat(2)` fails.
    static func size(ofOpenFile descriptor: Int32) -> Int64? {
        var info = stat()
        return fstat(descriptor, &info) == 0 ? Int64(info.st_size) : nil
    }

    /// The size in bytes of the file at `path`, or nil when there is none.
    package static func fileSize(atPath path: String) -> Int64? {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : nil
    }

    /// The bytes an unprivileged writer may still use in the file system of the directory holding `path`
    /// (`statvfs(2)`'s available blocks), or nil when it cannot be asked.
    package static func freeBytes(besides path: String) -> Int64? {
        let directory = (path as NSString).deletingLastPathComponent
        var info = statvfs()
        guard statvfs(directory.isEmpty ? "." : directory, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// The error for a movie whose file was deleted while it was written.
    static func removedError(_ path: String, while operation: String) -> MediaCodecsError {
        MediaCodecsError(
            .ffmpeg, while: operation,
            message: "the file was deleted while it was being written (was its directory removed?); nothing more can "
                + "be saved there, and nothing was written elsewhere: record into a directory that stays",
            ffmpegCode: CFFmpeg_AVERROR(ENOENT))
    }
}

/// `fdatasync` of a fragmented movie after its fragments are flushed, at most once per ``interval``: a power cut
/// loses at most the fragments of the last second besides the one being filled, and a recording with short
/// fragments does not wait for the disk at every one.
///
/// Threading: a value owned by one muxer.
struct FragmentSync {
    /// The least time between two syncs.
    static let interval: Duration = .seconds(1)
    private var lastSync: ContinuousClock.Instant?

    /// Syncs `descriptor`'s data unless it was synced less than ``interval`` ago; 0 or the errno
    /// (`ENOSPC`/`EDQUOT`/`EIO` can surface here first, on file systems that allocate at write-back).
    mutating func fragmentWasFlushed(_ descriptor: Int32) -> Int32 {
        guard StorageSeam.syncsFiles else { return 0 }
        let now = ContinuousClock.now
        if let lastSync, now - lastSync < Self.interval { return 0 }
        lastSync = now
        StorageSeam.count(.fragments)
        return fdatasync(descriptor) == 0 ? 0 : errno
    }
}

/// The test-only seam in every muxer's I/O: whether files are synced, and hooks run just before a fragment is
/// written and before the finishing rewrite, on the muxer's thread. A test stalls the fragment hook to play a slow
/// disk (the write blocks as a stalled `write(2)` would: libavformat writes a fragment whole when it is cut), or
/// fills the disk, or kills the process, in the rewrite hook. Production code never sets them.
///
/// Threading: process-wide, behind a mutex; any thread. Hooks run on the muxer's thread, outside the lock.
package enum StorageSeam {
    private struct Hooks: Sendable {
        var syncsFiles = true
        var fragmentWillBeWritten: (@Sendable (_ path: String) -> Void)?
        var rewriteWillStart: (@Sendable (_ path: String) -> Void)?
        var rewriteDidWritePacket: (@Sendable (_ path: String, _ packets: Int) -> Void)?
        var finalizeWillSwitch: (@Sendable (_ path: String) -> Void)?
    }
    private static let hooks = Mutex(Hooks())

    /// The syncs made so far in this process, by kind (see ``WriterStorage``).
    package struct SyncCounts: Sendable {
        package var fragments = 0
        package var files = 0
        package var directories = 0
    }
    private static let counts = Mutex(SyncCounts())
    package static var syncCounts: SyncCounts { counts.withLock { $0 } }
    enum SyncKind { case fragments, files, directories }
    static func count(_ kind: SyncKind) {
        counts.withLock { counts in
            switch kind {
            case .fragments: counts.fragments += 1
            case .files: counts.files += 1
            case .directories: counts.directories += 1
            }
        }
    }

    /// Whether muxers `fsync`/`fdatasync` (default true); false only to measure what syncing costs.
    package static var syncsFiles: Bool {
        get { hooks.withLock { $0.syncsFiles } }
        set { hooks.withLock { $0.syncsFiles = newValue } }
    }

    /// Run before each fragment of a fragmented movie is written (the muxer's thread blocks while it runs).
    package static var fragmentWillBeWritten: (@Sendable (_ path: String) -> Void)? {
        get { hooks.withLock { $0.fragmentWillBeWritten } }
        set { hooks.withLock { $0.fragmentWillBeWritten = newValue } }
    }

    /// Run when a finished fragmented movie is about to be rewritten as a fast-start one, or finished in place.
    package static var rewriteWillStart: (@Sendable (_ path: String) -> Void)? {
        get { hooks.withLock { $0.rewriteWillStart } }
        set { hooks.withLock { $0.rewriteWillStart = newValue } }
    }

    /// Run after each packet the rewrite copied, or the in-place finish indexed (with the count so far).
    package static var rewriteDidWritePacket: (@Sendable (_ path: String, _ packets: Int) -> Void)? {
        get { hooks.withLock { $0.rewriteDidWritePacket } }
        set { hooks.withLock { $0.rewriteDidWritePacket = newValue } }
    }

    /// Run when the in-place finish has appended and synced its `moov`, before the header write that makes the
    /// fragments one `mdat` (see Muxer+FinalizeInPlace.swift).
    package static var finalizeWillSwitch: (@Sendable (_ path: String) -> Void)? {
        get { hooks.withLock { $0.finalizeWillSwitch } }
        set { hooks.withLock { $0.finalizeWillSwitch = newValue } }
    }
}
