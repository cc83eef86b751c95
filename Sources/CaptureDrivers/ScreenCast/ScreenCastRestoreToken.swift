import Foundation

/// Where the ScreenCast portal's `restore_token` is kept between runs, so a second recording reuses the user's
/// choice of screen without asking again: `$XDG_STATE_HOME/openavcapture/screencast-restore-token`, with
/// `XDG_STATE_HOME` defaulting to `~/.local/state` (the XDG Base Directory rule for state that outlives a run but is
/// not worth backing up). One token: the portal gives a new one with every session, and each replaces the last.
///
/// Threading: thread safe (each call reads or replaces the file as a whole).
package enum ScreenCastRestoreToken {
    /// The file's place for `environment`; nil when neither XDG_STATE_HOME nor HOME is set.
    package static func file(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL? {
        let state: String
        if let configured = environment["XDG_STATE_HOME"], configured.hasPrefix("/") {
            state = configured  // The specification ignores a relative value.
        } else if let home = environment["HOME"], !home.isEmpty {
            state = home + "/.local/state"
        } else {
            return nil
        }
        return URL(fileURLWithPath: state).appendingPathComponent("openavcapture/screencast-restore-token")
    }

    /// The stored token, or nil when there is none.
    package static func load(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        guard let file = file(environment: environment), let data = try? Data(contentsOf: file),
            let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines),
            !text.isEmpty
        else { return nil }
        return text
    }

    /// Keeps `token` (readable by this user only: it lets a program share the screen without asking). A failure
    /// to write costs only the next run's dialog, so it is reported, not thrown.
    package static func save(_ token: String, environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let file = file(environment: environment) else { return }
        do {
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            try Data((token + "\n").utf8).write(to: file, options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        } catch {
            FileHandle.standardError.write(
                Data("OpenAVCapture: cannot keep the screen sharing choice in \(file.path) (\(error)); the portal will ask again next time\n".utf8))
        }
    }
}
