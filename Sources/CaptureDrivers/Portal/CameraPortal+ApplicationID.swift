import Foundation

extension CameraPortal {
    /// The id xdg-desktop-portal knows this process by, under which the permission store keeps its decision:
    /// - in a Flatpak sandbox, the `name` of `[Application]` in `/.flatpak-info` (the file Flatpak puts at the
    ///   sandbox's root; the portal reads it through `/proc/PID/root`);
    /// - on the host, the application id in the name of the systemd user unit the process runs in, where the desktop
    ///   launched it as an app (`app-gnome-org.example.Camera-1234.scope` → `org.example.Camera`, systemd's
    ///   convention for desktop environments); `""` for anything else (a program started from a shell, a service, a
    ///   machine without systemd).
    ///
    /// That is xdg-desktop-portal 1.16's rule (Debian 12), and again 1.21's. 1.19.1 to 1.20 give every host
    /// process `""` in the camera portal; 1.21 adds the Registry portal, through which a host app may name itself.
    /// Snap's `snap.NAME` ids are not handled.
    package static func applicationID(
        flatpakInfo: String = "/.flatpak-info", cgroup: String = "/proc/self/cgroup"
    )
        -> String
    {
        if let text = try? String(contentsOfFile: flatpakInfo, encoding: .utf8) {
            return flatpakApplicationID(flatpakInfo: text) ?? ""
        }
        guard let text = try? String(contentsOfFile: cgroup, encoding: .utf8) else { return "" }
        return hostApplicationID(cgroup: text)
    }

    /// The `name` key of the `[Application]` group of a `.flatpak-info` file (a key file: `[Group]` lines, then
    /// `key=value` lines); nil when there is none.
    static func flatpakApplicationID(flatpakInfo text: String) -> String? {
        var inApplicationGroup = false
        for line in text.split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("[") {
                inApplicationGroup = trimmed == "[Application]"
                continue
            }
            guard inApplicationGroup, let equals = trimmed.firstIndex(of: "="),
                trimmed[..<equals].trimmingCharacters(in: .whitespaces) == "name"
            else { continue }
            return trimmed[trimmed.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        }
        return nil
    }

    /// A host process's app id from its `/proc/PID/cgroup` text: the systemd user unit (as `sd_pid_get_user_unit`
    /// finds it: the cgroup below `user@UID.service`, past any slices), read as `app[-LAUNCHER]-APPID[-RANDOM]`
    /// with the regular expression xdg-desktop-portal 1.16 uses (`_xdp_parse_app_id_from_unit_name`), `\xNN`
    /// escapes undone. `""` when there is no such unit.
    package static func hostApplicationID(cgroup text: String) -> String {
        // systemd's own hierarchy: `name=systemd` where cgroup v1 is mounted (hybrid), else the unified `0::`.
        var path: Substring?
        for line in text.split(whereSeparator: \.isNewline) {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            if fields[1] == "name=systemd" {
                path = fields[2]
                break
            }
            if fields[0] == "0" && fields[1].isEmpty { path = fields[2] }
        }
        guard let path else { return "" }
        let components = path.split(separator: "/")
        guard let manager = components.firstIndex(where: { $0.hasPrefix("user@") && $0.hasSuffix(".service") })
        else { return "" }
        guard
            let unit = components[(manager + 1)...].first(where: { !$0.hasSuffix(".slice") }),
            unit.hasPrefix("app-"), unit.hasSuffix(".scope") || unit.hasSuffix(".service")
        else { return "" }
        return applicationID(unitName: String(unit))
    }

    /// The app id in a unit name of systemd's desktop convention, or `""`.
    static func applicationID(unitName unit: String) -> String {
        // xdg-desktop-portal 1.16's expression, in Swift's (here PCRE-compatible) syntax.
        let pattern =
            #"^app-(?:[[:alnum:]]+\-)?(.+?\..+?\..+?)"#
            + #"(?:[@\-][[:alnum:]]*)?(?:-autostart)?(?:\.scope|\.service|\.slice)$"#
        guard
            let expression = try? Regex(pattern),
            let match = try? expression.wholeMatch(in: unit),
            let escaped = match.output[1].substring
        else { return "" }
        return unescapedUnitName(escaped) ?? ""
    }

    /// Undoes systemd's `\xNN` escapes; nil for a malformed escape or bytes that are not UTF-8.
    private static func unescapedUnitName(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var rest = text.utf8[...]
        while let byte = rest.popFirst() {
            guard byte == UInt8(ascii: "\\") else {
                bytes.append(byte)
                continue
            }
            guard rest.popFirst() == UInt8(ascii: "x"), rest.count >= 2,
                let value = UInt8(String(decoding: rest.prefix(2), as: UTF8.self), radix: 16)
            else { return nil }
            rest = rest.dropFirst(2)
            bytes.append(value)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
