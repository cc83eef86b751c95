// `avcapture --version` says the release the VERSION file names, the one `make deb` packages.

@testable import avcapture
import Foundation
import Testing

@Suite struct ToolVersionTests {
    @Test("--version prints the VERSION file's release")
    func versionMatchesTheFile() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let file = try String(contentsOf: root.appendingPathComponent("VERSION"), encoding: .utf8)
        #expect(AVCaptureTool.configuration.version == file.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(toolVersion.split(separator: ".").count == 3, "a release is MAJOR.MINOR.PATCH")
    }
}
