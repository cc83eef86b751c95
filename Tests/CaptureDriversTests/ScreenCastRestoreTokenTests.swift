// Where the ScreenCast portal's restore token is kept: the XDG state directory, readable by the user only.

import CaptureDrivers
import Foundation
import Testing

@Suite("The ScreenCast restore token's file")
struct ScreenCastRestoreTokenTests {
    @Test("It lives in XDG_STATE_HOME, else ~/.local/state; a relative XDG_STATE_HOME is ignored")
    func place() {
        #expect(
            ScreenCastRestoreToken.file(environment: ["XDG_STATE_HOME": "/s", "HOME": "/h"])?.path
                == "/s/openavcapture/screencast-restore-token")
        #expect(
            ScreenCastRestoreToken.file(environment: ["HOME": "/h"])?.path
                == "/h/.local/state/openavcapture/screencast-restore-token")
        #expect(
            ScreenCastRestoreToken.file(environment: ["XDG_STATE_HOME": "relative", "HOME": "/h"])?.path
                == "/h/.local/state/openavcapture/screencast-restore-token")
        #expect(ScreenCastRestoreToken.file(environment: [:]) == nil)
    }

    @Test("A saved token reads back, replaces the last, and only its owner may read it")
    func saveAndLoad() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("openav-state-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: state) }
        let environment = ["XDG_STATE_HOME": state.path]
        #expect(ScreenCastRestoreToken.load(environment: environment) == nil)
        ScreenCastRestoreToken.save("first-token", environment: environment)
        ScreenCastRestoreToken.save("5f0c1a2b-token", environment: environment)
        #expect(ScreenCastRestoreToken.load(environment: environment) == "5f0c1a2b-token")
        let file = state.appendingPathComponent("openavcapture/screencast-restore-token")
        #expect(try String(contentsOf: file, encoding: .utf8) == "5f0c1a2b-token\n")
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }
}
