import Foundation

/// Runs `body` on each file named on the command line (a directory: each file in it), or on every file of the
/// target's checked-in corpus (`Corpus/<name>`): the regression run of a fuzz target built without libFuzzer.
public func runCorpus(named name: String, _ body: (Data) -> Void) {
    var paths = Array(CommandLine.arguments.dropFirst())
    if paths.isEmpty {
        paths = [
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("Corpus/\(name)").path
        ]
    }
    var count = 0
    for path in paths {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
        let files =
            isDirectory.boolValue
            ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
            : [path]
        for file in files {
            guard let data = FileManager.default.contents(atPath: file) else { continue }
            body(data)
            count += 1
        }
    }
    print("\(name): \(count) inputs ran without a crash")
}

/// A scratch file for one input: the readers take URLs.
public func withScratchFile(_ data: Data, extension fileExtension: String, _ body: (URL) -> Void) {
    let url = URL(fileURLWithPath: NSTemporaryDirectory() + "openav-fuzz-\(getpid()).\(fileExtension)")
    guard FileManager.default.createFile(atPath: url.path, contents: data) else { return }
    defer { try? FileManager.default.removeItem(at: url) }
    body(url)
}
