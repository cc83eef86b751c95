import Foundation

/// Where a command writes: checked before any device opens, so bad output paths fail fast and touch nothing.
///
/// Without `--overwrite` an existing file is refused. With it, the capture goes to a hidden file beside the target
/// and replaces the target only when the capture produced a finished file, so a failed run leaves the old file
/// as it was.
struct OutputTarget {
    /// The path the user named.
    let url: URL
    /// Where the capture writes: `url`, or a temporary sibling when replacing an existing file.
    let captureURL: URL

    init(path: String, allowedExtensions: [String], overwrite: Bool) throws {
        let url = URL(fileURLWithPath: path)
        let fileExtension = url.pathExtension.lowercased()
        guard allowedExtensions.contains(fileExtension) else {
            throw ToolFailure(
                .usage,
                "\(path): unknown extension '\(fileExtension)'; use one of "
                    + allowedExtensions.map { "." + $0 }.joined(separator: " "))
        }
        let directory = url.deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ToolFailure(.cannotCreate, "\(directory) is not a directory; create it or choose another path")
        }
        // Creating a file is the only reliable test (root passes access(2) on read-only file systems and /proc).
        let probe = directory + "/.avcapture-probe-\(getpid())"
        let descriptor = open(probe, O_CREAT | O_EXCL | O_WRONLY, 0o600)
        guard descriptor >= 0 else {
            throw ToolFailure(
                .cannotCreate, "cannot create files in \(directory) (\(String(cString: strerror(errno)))); choose another directory")
        }
        close(descriptor)
        unlink(probe)
        // lstat, not fileExists (which follows links): a symbolic link, dangling or not, is something at the name,
        // and --overwrite replaces the link itself (the rename below), never the file it points to.
        var info = stat()
        let exists = lstat(url.path, &info) == 0
        if exists && !overwrite {
            throw ToolFailure(.cannotCreate, "\(path) exists; pass --overwrite to replace it or choose another name")
        }
        self.url = url
        captureURL =
            exists
            ? url.deletingLastPathComponent().appendingPathComponent(
                ".\(url.deletingPathExtension().lastPathComponent).partial-\(getpid()).\(fileExtension)")
            : url
    }

    /// Moves a finished capture over the target (atomically: rename within one directory).
    func commit() throws {
        guard captureURL != url else { return }
        guard rename(captureURL.path, url.path) == 0 else {
            throw ToolFailure(.ioError, "cannot replace \(url.path): \(String(cString: strerror(errno)))")
        }
    }

    /// Removes a capture that did not finish into a usable file, when it was a temporary one.
    func discard() {
        if captureURL != url { try? FileManager.default.removeItem(at: captureURL) }
    }
}
