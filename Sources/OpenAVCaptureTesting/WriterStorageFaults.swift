import Foundation
import MediaCodecs
import Synchronization

/// Makes the storage under every movie this process writes (``AVCaptureMovieFileOutput``, `AVAssetWriter`) slow,
/// full or unsynced, to test what a recording does when the disk misbehaves.
///
/// A fragmented movie is written a fragment at a time (see docs/recording.md, "When the machine misbehaves"): the hooks run on
/// the writer's own thread just before a fragment reaches the disk, or when the finished movie is about to be
/// rewritten with its index first, and the writer waits for them as it would wait for a stalled `write(2)`. Call
/// ``reset()`` when done; the faults are process-wide.
///
/// Threading: every member may be called from any thread; the hooks run on a writer's thread.
public enum WriterStorageFaults {
    /// Stalls the next `count` fragment writes for `duration` each (a disk that stops answering for a while).
    public static func stallFragmentWrites(for duration: Duration, count: Int = 1) {
        let remaining = Remaining(count)
        StorageSeam.fragmentWillBeWritten = { _ in
            if remaining.take() { Thread.sleep(forTimeInterval: duration.seconds) }
        }
    }

    /// Runs `body` with the movie's URL before each fragment is written: a test fills the disk there, or counts.
    public static func beforeEachFragment(_ body: @escaping @Sendable (URL) -> Void) {
        StorageSeam.fragmentWillBeWritten = { body(URL(fileURLWithPath: $0)) }
    }

    /// Runs `body` with the movie's URL when a finished fragmented movie is about to be rewritten as a fast-start
    /// one (a test fills the disk there).
    public static func whenRewriteStarts(_ body: @escaping @Sendable (URL) -> Void) {
        StorageSeam.rewriteWillStart = { body(URL(fileURLWithPath: $0)) }
    }

    /// Runs `body` with the movie's URL and the packets copied so far after each packet the rewrite copies (a test
    /// kills the process there).
    public static func duringRewrite(_ body: @escaping @Sendable (URL, Int) -> Void) {
        StorageSeam.rewriteDidWritePacket = { body(URL(fileURLWithPath: $0), $1) }
    }

    /// Whether writers `fsync`/`fdatasync` what they write (true by default); false only to measure what the
    /// syncing costs.
    public static var syncsFiles: Bool {
        get { StorageSeam.syncsFiles }
        set { StorageSeam.syncsFiles = newValue }
    }

    /// The syncs writers made so far in this process: fragment data syncs (`fdatasync`, at most one a second per
    /// movie), whole-file syncs (a finished movie, a rewrite's copy) and directory syncs (around the rewrite's
    /// rename).
    public static var syncCounts: (fragments: Int, files: Int, directories: Int) {
        let counts = StorageSeam.syncCounts
        return (counts.fragments, counts.files, counts.directories)
    }

    /// Removes every fault and hook; syncing back on.
    public static func reset() {
        StorageSeam.fragmentWillBeWritten = nil
        StorageSeam.rewriteWillStart = nil
        StorageSeam.rewriteDidWritePacket = nil
        StorageSeam.syncsFiles = true
    }

    /// A countdown shared by the hook's calls.
    private final class Remaining: Sendable {
        private let left: Mutex<Int>
        init(_ count: Int) { left = Mutex(count) }
        func take() -> Bool {
            left.withLock { left in
                guard left > 0 else { return false }
                left -= 1
                return true
            }
        }
    }
}

extension Duration {
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
