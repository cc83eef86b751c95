// An X server of the tests' own (Debian's xvfb) and a painter that draws known pictures on it with Xlib, so screen
// capture is checked against what was drawn. `make test` installs xvfb and xdotool; tests skip without them.

import CX11
import Foundation
import Synchronization

/// An Xvfb server on a display number it picks itself (`-displayfd`), stopped when the object goes.
///
/// `DISPLAY` is set to it while it runs (the screen input reads `DISPLAY`, as every X client does) and restored
/// after; the suites run serially, so one server at a time owns the variable.
///
/// Threading: make and drop it on one thread.
public final class XvfbServer: @unchecked Sendable {
    public static let path = "/usr/bin/Xvfb"
    public static let xdotoolPath = "/usr/bin/xdotool"

    /// `:N`.
    public let displayName: String
    public let width: Int
    public let height: Int
    private let process: Process
    private let previousDisplay: String?
    /// A Wayland session around the tests would take the screen input's choice from the X server: it is hidden
    /// while this server runs.
    private let previousWaylandDisplay: String?

    /// A server with one `width`×`height` screen at depth 24, or nil (with the reason printed) when Xvfb or xdotool
    /// is missing or it did not start.
    public static func start(width: Int = 1920, height: Int = 1080, for test: String) -> XvfbServer? {
        for tool in [path, xdotoolPath] where !FileManager.default.isExecutableFile(atPath: tool) {
            print("Skipping \(test): \(tool) not installed (make test installs xvfb and xdotool)")
            return nil
        }
        do {
            return try XvfbServer(width: width, height: height)
        } catch {
            print("Skipping \(test): Xvfb did not start: \(error)")
            return nil
        }
    }

    private init(width: Int, height: Int) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.path)
        // -displayfd: Xvfb takes the first free display number and writes it to the descriptor when it is ready.
        process.arguments = [
            "-displayfd", "1", "-screen", "0", "\(width)x\(height)x24", "-nolisten", "tcp", "-noreset",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        var number = Data()
        while !number.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            number.append(chunk)
        }
        let digits = String(decoding: number, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !digits.isEmpty, Int(digits) != nil else {
            process.killAndReap()
            throw MediaToolFailure(description: "Xvfb exited (status \(process.terminationStatus)) without a display")
        }
        self.process = process
        self.displayName = ":" + digits
        self.width = width
        self.height = height
        previousDisplay = ProcessInfo.processInfo.environment["DISPLAY"]
        previousWaylandDisplay = ProcessInfo.processInfo.environment["WAYLAND_DISPLAY"]
        setenv("DISPLAY", displayName, 1)
        unsetenv("WAYLAND_DISPLAY")
    }

    deinit {
        if let previousDisplay { setenv("DISPLAY", previousDisplay, 1) } else { unsetenv("DISPLAY") }
        if let previousWaylandDisplay { setenv("WAYLAND_DISPLAY", previousWaylandDisplay, 1) }
        // Killed (see `killAndReap`), Xvfb leaves its lock and socket.
        process.killAndReap()
        let number = displayName.dropFirst()
        unlink("/tmp/.X\(number)-lock")
        unlink("/tmp/.X11-unix/X\(number)")
    }

    /// Runs xdotool against this server (`mousemove 300 200`, `mousedown 1`); throws when it fails.
    public func xdotool(_ arguments: String...) throws {
        var environment = ProcessInfo.processInfo.environment
        environment["DISPLAY"] = displayName
        let result = try ToolResult.run(executable: Self.xdotoolPath, arguments, environment: environment)
        guard result.status == 0 else {
            throw MediaToolFailure(description: "xdotool \(arguments.joined(separator: " ")) failed: \(result.error)")
        }
    }
}

/// Draws on an X server's root window with Xlib: rectangles in RGB colours, and frame-index codes.
///
/// Each `paint` is drawn into an off-screen pixmap and copied to the screen in one request, so a screen grab
/// sees the picture before or after it, never half of it.
///
/// Threading: thread safe (a lock serializes the connection's use).
public final class X11Painter: @unchecked Sendable {
    /// A filled rectangle in screen pixels.
    public struct Rectangle: Sendable {
        public var x: Int
        public var y: Int
        public var width: Int
        public var height: Int
        /// 0xRRGGBB.
        public var color: UInt32

        public init(x: Int, y: Int, width: Int, height: Int, color: UInt32) {
            (self.x, self.y, self.width, self.height, self.color) = (x, y, width, height, color)
        }
    }

    private let display: OpaquePointer
    private let root: Window
    private let pixmap: Pixmap
    private let context: GC
    private let lock = NSLock()
    public let width: Int
    public let height: Int

    public init(server: XvfbServer) throws {
        guard let display = XOpenDisplay(server.displayName) else {
            throw MediaToolFailure(description: "cannot open \(server.displayName)")
        }
        self.display = display
        let screen = XDefaultScreen(display)
        root = XRootWindow(display, screen)
        width = server.width
        height = server.height
        pixmap = XCreatePixmap(display, root, UInt32(width), UInt32(height), UInt32(XDefaultDepth(display, screen)))
        context = XCreateGC(display, root, 0, nil)
    }

    deinit {
        XFreeGC(display, context)
        XFreePixmap(display, pixmap)
        XCloseDisplay(display)
    }

    /// Makes the whole screen `background`, then draws `rectangles` over it, atomically; returns once the server
    /// has done it.
    public func paint(background: UInt32, _ rectangles: [Rectangle]) {
        lock.lock()
        defer { lock.unlock() }
        XSetForeground(display, context, UInt(background))
        XFillRectangle(display, pixmap, context, 0, 0, UInt32(width), UInt32(height))
        for rectangle in rectangles {
            XSetForeground(display, context, UInt(rectangle.color))
            XFillRectangle(
                display, pixmap, context, Int32(rectangle.x), Int32(rectangle.y), UInt32(rectangle.width),
                UInt32(rectangle.height))
        }
        XCopyArea(display, pixmap, root, context, 0, 0, UInt32(width), UInt32(height), 0, 0)
        XSync(display, 0)
    }

    /// Draws only `rectangles` over what the screen shows (one request each); returns once the server has.
    public func draw(_ rectangles: [Rectangle]) {
        lock.lock()
        defer { lock.unlock() }
        for rectangle in rectangles {
            XSetForeground(display, context, UInt(rectangle.color))
            XFillRectangle(
                display, root, context, Int32(rectangle.x), Int32(rectangle.y), UInt32(rectangle.width),
                UInt32(rectangle.height))
        }
        XSync(display, 0)
    }
}

/// A frame index drawn as `bits` square blocks in a row, white for 1 and black for 0, most significant first: what
/// the screen tests paint and read back from decoded frames.
///
/// Value type; safe to use from any thread.
public struct ScreenIndexCode: Sendable {
    public var x: Int
    public var y: Int
    public var blockSize: Int
    public var bits: Int

    public init(x: Int, y: Int, blockSize: Int = 24, bits: Int = 10) {
        (self.x, self.y, self.blockSize, self.bits) = (x, y, blockSize, bits)
    }

    /// The white blocks of `index` (the background behind the code must be black).
    public func rectangles(for index: Int) -> [X11Painter.Rectangle] {
        (0..<bits).compactMap { bit in
            guard index >> (bits - 1 - bit) & 1 == 1 else { return nil }
            return X11Painter.Rectangle(
                x: x + bit * blockSize, y: y + 0, width: blockSize, height: blockSize, color: 0xFF_FFFF)
        }
    }

    /// The black strip the code sits on.
    public var strip: X11Painter.Rectangle {
        X11Painter.Rectangle(x: x, y: y, width: bits * blockSize, height: blockSize, color: 0)
    }

    /// Reads the index from a luma sampler (`luma(x, y)` in 0...255 at picture coordinates, the code's `x`/`y`
    /// shifted by the crop's origin); nil when a block is neither clearly dark nor clearly light (a torn frame).
    public func read(originX: Int, originY: Int, luma: (Int, Int) -> Int) -> Int? {
        var index = 0
        for bit in 0..<bits {
            let value = luma(x - originX + bit * blockSize + blockSize / 2, y - originY + blockSize / 2)
            switch value {
            case ..<64: index <<= 1
            case 192...: index = index << 1 | 1
            default: return nil
            }
        }
        return index
    }
}
