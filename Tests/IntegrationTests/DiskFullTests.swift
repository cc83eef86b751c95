// A recording on a nearly full disk: a small tmpfs (root only; skipped with a reason otherwise).

import Foundation
import OpenAVCapture
import Testing
import TestSupport

/// A tmpfs of `megabytes` mounted on a fresh directory, unmounted by `unmount()`; nil (with the reason printed)
/// when this process cannot mount one.
struct SmallFileSystem {
    let path: String

    init?(megabytes: Int, for test: String) {
        path = NSTemporaryDirectory() + "openav-small-fs-\(getpid())-\(UUID().uuidString.prefix(8))"
        guard getuid() == 0 else {
            print("Skipping \(test): mounting a small tmpfs needs root")
            return nil
        }
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard let result = try? ToolResult.run(executable: "/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", path]),
            result.status == 0
        else {
            print("Skipping \(test): cannot mount a tmpfs here")
            try? FileManager.default.removeItem(atPath: path)
            return nil
        }
    }

    var freeBytes: Int64 {
        var info = statvfs()
        return statvfs(path, &info) == 0 ? Int64(info.f_bavail) * Int64(info.f_frsize) : 0
    }

    /// Fills the file system until `bytes` remain free.
    func fill(leaving bytes: Int64) throws {
        let filler = Data(count: Int(max(0, freeBytes - bytes)))
        try filler.write(to: URL(fileURLWithPath: path + "/filler"))
    }

    func unmount() {
        _ = try? ToolResult.run(executable: "/bin/umount", [path])
        try? FileManager.default.removeItem(atPath: path)
    }
}

@Suite("Recording onto a nearly full disk", .serialized)
struct DiskFullTests {
    @Test("With no minFreeDiskSpaceLimit the recording stops 1 MiB short of a full disk, its movie finished and clean")
    func stopsBeforeTheDiskIsFull() throws {
        guard MediaTool.available(for: "DiskFullTests"),
            let disk = SmallFileSystem(megabytes: 8, for: "DiskFullTests.stopsBeforeTheDiskIsFull")
        else { return }
        defer { disk.unmount() }
        try disk.fill(leaving: 3 << 20)
        let fits = disk.freeBytes - (1 << 20)
        let url = URL(fileURLWithPath: disk.path + "/nearly-full.mov")
        let output = AVCaptureMovieFileOutput()
        output.movieFragmentInterval = CMTime(value: 1, timescale: 1)
        let delegate = try recordNoise(output, bitRate: 10_000_000, to: url)
        #expect(delegate.avError?.code == .diskFull, "\(String(describing: delegate.error))")
        #expect(delegate.successfullyFinished == true)
        #expect(disk.freeBytes >= 1 << 20, "the disk filled up: \(disk.freeBytes) B free")
        let size = try #require(fileSize(url))
        // No room for the finishing rewrite's copy: the complete fragmented movie is kept, every sample in it.
        #expect(size <= fits && size * 10 >= fits * 9, "\(size) B of the \(fits) that fit")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
        #expect(siblings(of: url).isEmpty, "left beside the movie: \(siblings(of: url))")
    }
}
