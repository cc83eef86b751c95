// What a recording does when its storage misbehaves: a file system that fills up at once (also during the final
// rewrite), a directory removed under it, a disk that stalls, the umask, and the syncs that make it survive a power
// cut. Files are read back with ffprobe and ffmpeg. Faults come from WriterStorageFaults (OpenAVCaptureTesting).

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import TestSupport
import Testing

/// Whether `url` is a fragmented movie (a `moof` box at the top level, not inside the `mdat` a finished movie makes
/// of its fragments): what a recording keeps when it could not be finished.
func isFragmentedMovie(_ url: URL) throws -> Bool {
    let data = try Data(contentsOf: url)
    var offset = 0
    while offset + 8 <= data.count {
        var size = data[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
        if String(decoding: data[offset + 4..<offset + 8], as: UTF8.self) == "moof" { return true }
        if size == 1, offset + 16 <= data.count {
            size = data[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) }
        }
        guard size >= 8 else { return false }
        offset += size
    }
    return false
}

/// The permission bits of what is at `path` (not following a link).
func fileMode(_ path: String) -> mode_t? {
    var info = stat()
    return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
}

/// Records from the virtual back camera and microphone (320x240) with `fragmentInterval` fragments to `url` until
/// `stop` says so (it is asked every 20 ms with the output) or the recording ends by itself; returns the delegate
/// after `didFinish`.
func recordUntil(
    _ url: URL, fragmentInterval: Double = 0.5, timeout: TimeInterval = 60,
    configure: (AVCaptureMovieFileOutput) -> Void = { _ in },
    stop: (AVCaptureMovieFileOutput) -> Bool
) throws -> (MovieRecordingDelegate, AVCaptureMovieFileOutput) {
    let output = AVCaptureMovieFileOutput()
    output.movieFragmentInterval = CMTime(seconds: fragmentInterval, preferredTimescale: 600)
    configure(output)
    let session = try makeMovieSession(output)
    session.startRunning()
    defer { session.stopRunning() }
    let delegate = MovieRecordingDelegate()
    output.startRecording(to: url, recordingDelegate: delegate)
    try #require(delegate.waitForStart(), "the recording never started")
    _ = waitUntil(timeout: timeout, every: 0.02) { !output.isRecording || stop(output) }
    if output.isRecording { output.stopRecording() }
    try #require(delegate.waitForFinish(timeout: 30), "didFinish never came")
    return (delegate, output)
}

@Suite("Recording onto storage that misbehaves", .serialized)
struct WriterStorageTests {
    init() { WriterStorageFaults.reset() }

    @Test(
        "Every file a recording creates is 0644 less the umask, never world-writable even with umask 0",
        arguments: [0o000, 0o027] as [mode_t])
    func fileModes(umask mask: mode_t) throws {
        guard MediaTool.available(for: "WriterStorageTests.fileModes") else { return }
        defer { WriterStorageFaults.reset() }
        let url = try scratchURL("modes-\(mask).mov", suite: "writer-storage")
        let seen = Mutex<[String: mode_t]>([:])
        // The fragmented movie when the rewrite starts, and the rewrite's hidden copy while it is written.
        WriterStorageFaults.whenRewriteStarts { url in
            seen.withLock { $0["fragmented"] = fileMode(url.path) }
        }
        WriterStorageFaults.duringRewrite { url, packets in
            guard packets == 1 else { return }
            let directory = url.deletingLastPathComponent().path
            let copy = (try? FileManager.default.contentsOfDirectory(atPath: directory))?.first {
                $0.hasPrefix("." + url.lastPathComponent) && $0.hasSuffix(".remux")
            }
            seen.withLock { $0["copy"] = copy.flatMap { fileMode(directory + "/" + $0) } }
        }
        let previous = umask(mask)
        defer { umask(previous) }
        let (delegate, _) = try recordUntil(url) { $0.recordedDuration.seconds >= 1 }
        #expect(delegate.error == nil, "\(String(describing: delegate.error))")
        let expected = 0o644 & ~mask
        // A movie output finishes its movie in place and makes no copy (the fast-start copy, made for an asset
        // writer's shouldOptimizeForNetworkUse, is created as the movie is: WriterStorage.createExclusively).
        #expect(seen.withLock { $0 } == ["fragmented": expected])
        #expect(fileMode(url.path) == expected)
        #expect(siblings(of: url).isEmpty, "left beside the movie: \(siblings(of: url))")
    }

    @Test("Fragments are fdatasynced at most once a second; the finish syncs the movie, its index and its header")
    func syncs() throws {
        guard MediaTool.available(for: "WriterStorageTests.syncs") else { return }
        let url = try scratchURL("syncs.mov", suite: "writer-storage")
        let before = WriterStorageFaults.syncCounts
        let clock = ContinuousClock()
        let started = clock.now
        let cuts = Mutex(0)
        let (delegate, _) = try recordUntil(
            url, fragmentInterval: 0.1,
            configure: { _ in WriterStorageFaults.beforeEachFragment { _ in cuts.withLock { $0 += 1 } } },
            stop: { $0.recordedDuration.seconds >= 2.5 })
        let elapsed = (clock.now - started) / .seconds(1)
        WriterStorageFaults.reset()
        #expect(delegate.error == nil, "\(String(describing: delegate.error))")
        let after = WriterStorageFaults.syncCounts
        let fragmentSyncs = after.fragments - before.fragments
        // One fragment per key frame (one a second) or per 0.1 s: more cuts than syncs, at most one sync a second.
        #expect(
            fragmentSyncs >= 1 && fragmentSyncs <= Int(elapsed.rounded(.up)) + 1, "\(fragmentSyncs) in \(elapsed) s")
        #expect(cuts.withLock { $0 } >= fragmentSyncs)
        // The finished fragmented movie, then with its index appended, then with its header written; no name
        // changes, so no directory sync.
        #expect(after.files - before.files == 3)
        #expect(after.directories - before.directories == 0)
        #expect(try ffmpegDecodeErrors(url).isEmpty)
    }

    @Test("A directory removed mid-recording ends it with an error that says so, and nothing is written elsewhere")
    func directoryRemoved() throws {
        guard MediaTool.available(for: "WriterStorageTests.directoryRemoved") else { return }
        let parent = try scratchURL("removed", suite: "writer-storage")
        let directory = parent.appendingPathComponent("takes")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent("gone.mov")
        let workingDirectory = FileManager.default.currentDirectoryPath
        let before = try FileManager.default.contentsOfDirectory(atPath: workingDirectory)
        var removedAt: Double?
        let (delegate, output) = try recordUntil(url, timeout: 20) { output in
            if removedAt == nil, output.recordedDuration.seconds >= 1 {
                try? FileManager.default.removeItem(at: parent)
                removedAt = output.recordedDuration.seconds
            }
            return false
        }
        let error = try #require(delegate.avError, "the recording went on into a deleted file")
        #expect(error.localizedDescription.contains("deleted"), "\(error.localizedDescription)")
        #expect(delegate.successfullyFinished == false)
        // Noticed at the next fragment (0.5 s, plus a key frame interval of 1 s), not at the end.
        #expect(
            output.recordedDuration.seconds < (removedAt ?? 0) + 5, "went on for \(output.recordedDuration.seconds) s")
        #expect(!FileManager.default.fileExists(atPath: parent.path), "something recreated \(parent.path)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: workingDirectory) == before)
    }

    @Test("A file system that fills at once ends the recording with diskFull, the complete fragments kept and playable")
    func diskFillsAtOnce() throws {
        guard MediaTool.available(for: "WriterStorageTests.diskFillsAtOnce"),
            let disk = SmallFileSystem(megabytes: 16, for: "WriterStorageTests.diskFillsAtOnce")
        else { return }
        defer {
            WriterStorageFaults.reset()
            disk.unmount()
        }
        // Another program takes every free byte just before the fourth fragment reaches the disk.
        let cuts = Mutex(0)
        WriterStorageFaults.beforeEachFragment { _ in
            guard
                cuts.withLock({
                    $0 += 1; return $0
                }) == 4
            else { return }
            try? disk.fill(leaving: 0)
        }
        let url = URL(fileURLWithPath: disk.path + "/filled.mov")
        let (delegate, _) = try recordUntil(url, timeout: 30) { _ in false }
        #expect(delegate.avError?.code == .diskFull, "\(String(describing: delegate.error))")
        #expect(delegate.successfullyFinished == true)
        let report = try FFprobeReport(url)
        let duration = try #require(FFprobeReport.number(report.format["duration"]))
        // Three fragments of at least 0.5 s were complete (each ends at a key frame, one a second).
        #expect(duration >= 1.4, "the file holds \(duration) s")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
        #expect(siblings(of: url).isEmpty, "left beside the movie: \(siblings(of: url))")
    }

    @Test("A disk with 16 KiB left when the movie is finished: finished in place all the same, nothing lost")
    func nearlyFullDiskFinishesInPlace() throws {
        guard MediaTool.available(for: "WriterStorageTests.nearlyFullDiskFinishesInPlace"),
            let disk = SmallFileSystem(megabytes: 16, for: "WriterStorageTests.nearlyFullDiskFinishesInPlace")
        else { return }
        defer {
            WriterStorageFaults.reset()
            disk.unmount()
        }
        // Too little room for a copy of the movie: the finish appends only its index.
        WriterStorageFaults.whenRewriteStarts { _ in try? disk.fill(leaving: 16 << 10) }
        let url = URL(fileURLWithPath: disk.path + "/nearly-full.mov")
        let (delegate, output) = try recordUntil(url) { $0.recordedDuration.seconds >= 2 }
        #expect(delegate.error == nil, "\(String(describing: delegate.error))")
        #expect(try !isFragmentedMovie(url), "the movie was not finished")
        let duration = try #require(FFprobeReport.number(try FFprobeReport(url).format["duration"]))
        #expect(
            duration >= output.recordedDuration.seconds - 0.1, "\(duration) s of \(output.recordedDuration.seconds)")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
        #expect(siblings(of: url).isEmpty, "left beside the movie: \(siblings(of: url))")
    }

    @Test("A disk that fills as the movie is finished keeps the complete fragmented movie, with diskFull")
    func diskFillsDuringRewrite() throws {
        guard MediaTool.available(for: "WriterStorageTests.diskFillsDuringRewrite"),
            let disk = SmallFileSystem(megabytes: 16, for: "WriterStorageTests.diskFillsDuringRewrite")
        else { return }
        defer {
            WriterStorageFaults.reset()
            disk.unmount()
        }
        // The room check before the finish passes; the disk fills just after it, before the index is appended.
        // tmpfs has the rest of the movie's last 4 KiB page: an index that fits there is written all the same.
        let sizeAtFill = Mutex<Int64>(0)
        WriterStorageFaults.whenRewriteStarts { url in
            sizeAtFill.withLock { $0 = fileSize(url) ?? 0 }
            try? disk.fill(leaving: 0)
        }
        let url = URL(fileURLWithPath: disk.path + "/rewrite.mov")
        let (delegate, output) = try recordUntil(url) { $0.recordedDuration.seconds >= 2 }
        let before = sizeAtFill.withLock { $0 }
        let after = try #require(fileSize(url))
        if delegate.error == nil {
            let slack = (4096 - before % 4096) % 4096
            #expect(after - before <= slack, "finished with a \(after - before)-byte index and \(slack) bytes free")
            #expect(try !isFragmentedMovie(url))
        } else {
            #expect(delegate.avError?.code == .diskFull, "\(String(describing: delegate.error))")
            #expect(try isFragmentedMovie(url), "the kept file is not the fragmented movie")
            #expect(after == before, "the file grew from \(before) to \(after) bytes")
            #expect(delegate.successfullyFinished == true)
        }
        let duration = try #require(FFprobeReport.number(try FFprobeReport(url).format["duration"]))
        #expect(
            duration >= output.recordedDuration.seconds - 0.1, "\(duration) s of \(output.recordedDuration.seconds)")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
        #expect(siblings(of: url).isEmpty, "left beside the movie: \(siblings(of: url))")
    }

    @Test("A disk that stalls for 2 s: capture goes on, late frames are dropped and counted, the file plays")
    func stalledDisk() throws {
        guard MediaTool.available(for: "WriterStorageTests.stalledDisk") else { return }
        defer { WriterStorageFaults.reset() }
        let url = try scratchURL("stalled.mov", suite: "writer-storage")
        let cuts = Mutex(0)
        WriterStorageFaults.beforeEachFragment { _ in
            // Fault injection, not a wait: the second fragment's write blocks for 2 s, as a stalled disk's write(2)
            // would; the stall is what is tested, so the time must pass.
            if cuts.withLock({
                $0 += 1; return $0
            }) == 2 {
                Thread.sleep(forTimeInterval: 2)
            }
        }
        let frames = RecordingDelegate()
        let preview = AVCaptureVideoDataOutput()
        preview.setSampleBufferDelegate(frames, queue: DispatchQueue(label: "stalled-disk-frames"))
        let output = AVCaptureMovieFileOutput()
        output.movieFragmentInterval = CMTime(value: 1, timescale: 2)
        let session = try makeSession(
            preset: .qvga320x240, devices: [VirtualDevices.back, VirtualDevices.microphone], outputs: [output, preview])
        session.startRunning()
        defer { session.stopRunning() }
        let delegate = MovieRecordingDelegate()
        output.startRecording(to: url, recordingDelegate: delegate)
        try #require(delegate.waitForStart())
        // Until the stall has come and gone and a second more was recorded.
        _ = waitUntil(timeout: 30, every: 0.02) { cuts.withLock({ $0 }) >= 4 }
        let delivered = frames.received.count
        // The session kept delivering to its other output while the recording waited for the disk.
        #expect(waitUntil(timeout: 10) { frames.received.count > delivered })
        output.stopRecording()
        try #require(delegate.waitForFinish(timeout: 30))
        #expect(delegate.error == nil, "\(String(describing: delegate.error))")
        // The frames waiting for the writer hold the camera's buffers: the drops are late frames, or frames the
        // camera had no buffer for while the recording held its pool; sound beyond the audio backlog is counted too.
        let statistics = output.recordingStatistics
        let late = statistics.totalDroppedVideoFrames
        #expect(late > 0, "\(statistics)")
        #expect(
            Set(statistics.droppedVideoFrames.keys).isSubset(of: ["FrameWasLate", "OutOfBuffers"]), "\(statistics)")
        #expect(statistics.droppedAudioBuffers > 0, "\(statistics)")
        #expect(try ffmpegDecodeErrors(url).isEmpty)
        // What was dropped is a gap in the frame numbers, not a broken file: frames go on after it.
        let indices = try decodedFrameIndices(url).compactMap { $0 }
        let gaps = indexSteps(try decodedFrameIndices(url))
        #expect(indices.count > 60, "\(indices.count) frames decoded")
        #expect(!gaps.isEmpty, "no frame is missing, yet \(late) were dropped")
    }

    @Test(
        "avcapture record --overwrite onto a symbolic link replaces the link, never the file it points to",
        .enabled(if: toolPath != nil, "the avcapture binary is not built beside the tests"))
    func overwriteSymbolicLink() throws {
        guard MediaTool.available(for: "WriterStorageTests.overwriteSymbolicLink") else { return }
        let directory = try scratchURL("links", suite: "writer-storage")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let precious = directory.appendingPathComponent("precious.txt")
        try Data("keep me".utf8).write(to: precious)
        let link = directory.appendingPathComponent("take.mov")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: precious.path)
        let dangling = directory.appendingPathComponent("dangling.mov")
        try FileManager.default.createSymbolicLink(
            atPath: dangling.path, withDestinationPath: directory.path + "/nowhere")
        // Without --overwrite a link (even a dangling one) is something at the name: refused, untouched.
        let refused = try avcapture(
            ["record", "dangling.mov", "--duration", "0.3", "--preset", "320x240"], in: directory)
        #expect(refused.status == 73, "\(refused.error)")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/nowhere"))
        for name in ["take.mov", "dangling.mov"] {
            let result = try avcapture(
                ["record", name, "--overwrite", "--duration", "0.3", "--preset", "320x240", "--audio", "none"],
                in: directory)
            #expect(result.status == 0, "\(name): \(result.error)")
            let attributes = try FileManager.default.attributesOfItem(atPath: directory.path + "/" + name)
            #expect(attributes[.type] as? FileAttributeType == .typeRegular, "\(name) is still a link")
            #expect(try ffmpegDecodeErrors(directory.appendingPathComponent(name)).isEmpty)
        }
        #expect(try String(contentsOf: precious, encoding: .utf8) == "keep me")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/nowhere"))
        #expect(fileMode(directory.path + "/take.mov").map { $0 & 0o002 == 0 } == true)
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(left == ["dangling.mov", "precious.txt", "take.mov"], "\(left)")
    }
}
