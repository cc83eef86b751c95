import CWayland
import Foundation

/// One connection to a Wayland compositor (`wl_display_connect`), closed when the object goes, with its outputs,
/// wl_shm and the wlr-screencopy manager bound.
///
/// Threading: thread-bound. libwayland's default event queue assumes one reader: each capture thread opens its
/// own connection.
final class WaylandConnection: @unchecked Sendable {
    let pointer: OpaquePointer
    /// The name connected to, as given (`wayland-1`, or a socket's absolute path).
    let name: String

    /// Connects to `name` (a `WAYLAND_DISPLAY` value).
    ///
    /// - Throws: `ScreenUnavailable` saying the compositor cannot be reached, and what to check.
    init(name: String) throws(ScreenUnavailable) {
        var message = [CChar](repeating: 0, count: 256)
        guard let pointer = CWayland_connect(name, &message, message.count) else {
            throw ScreenUnavailable(
                reason: String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                advice: "WAYLAND_DISPLAY names a compositor's socket in XDG_RUNTIME_DIR (or an absolute path); run"
                    + " inside the Wayland session, or unset WAYLAND_DISPLAY to capture the X server DISPLAY names.")
        }
        self.pointer = pointer
        self.name = name
    }

    deinit { CWayland_disconnect(pointer) }

    var descriptor: Int32 { CWayland_descriptor(pointer) }
    /// The wlr-screencopy manager's version, 0 when the compositor offers none (GNOME, KDE, Weston).
    var screencopyVersion: UInt32 { CWayland_screencopyVersion(pointer) }
    var hasSharedMemory: Bool { CWayland_hasSharedMemory(pointer) }
    var hasFailed: Bool { CWayland_hasFailed(pointer) }

    /// The compositor's outputs in the order it announced them, with their registry index.
    var outputs: [(index: Int32, output: CWayland_Output)] {
        (0..<CWayland_outputCount(pointer)).compactMap { index in
            var output = CWayland_Output()
            return CWayland_output(pointer, index, &output) ? (index, output) : nil
        }
    }
}

extension CWayland_Output {
    /// The C string field `name` as a Swift string.
    var outputName: String { withUnsafeBytes(of: name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) } }
    var outputDescription: String {
        withUnsafeBytes(of: description) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }
}
