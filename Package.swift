// swift-tools-version:6.1
//
// OpenAVCapture: Apple's AVFoundation capture stack for Linux.
// The layers are drawn in docs/architecture.md; an arrow never points up.

import PackageDescription

/// Complete concurrency checking everywhere; warnings are errors in CI (`make test` passes -warnings-as-errors).
let strictSwift: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "OpenAVCapture",
    products: [
        .library(name: "OpenCoreMedia", targets: ["OpenCoreMedia"]),
        .library(name: "OpenCoreVideo", targets: ["OpenCoreVideo"]),
        .library(name: "OpenAVCapture", targets: ["OpenAVCapture"]),
        .library(name: "OpenAVCaptureTesting", targets: ["OpenAVCaptureTesting"]),
        .library(name: "OpenAVCaptureShim", targets: ["OpenAVCaptureShim"]),
        /// What a person sees: the preview layer drawn in an SDL2 window. Only users who show video link SDL.
        .library(name: "OpenAVCaptureUI", targets: ["OpenAVCaptureUI"]),
        /// The preview in a browser: an HTTP server (Hummingbird) streaming MJPEG. Only its users link the server.
        .library(name: "OpenAVCaptureWeb", targets: ["OpenAVCaptureWeb"]),
        .executable(name: "avcapture", targets: ["avcapture"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        // Hummingbird's own dependency, named for NIOCore's error types (a body over its limit).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        // Metrics: the swift-metrics API, exported by swift-prometheus (`--metrics`, `serve`'s /metrics).
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // TLS for `serve` (HummingbirdTLS builds on it; named for its certificate and key loading).
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    ],
    targets: [
        // MARK: C libraries, each behind a shim header whose every symbol carries the target's prefix.

        /// FFmpeg 5.1 (libavformat, libavcodec, libavutil, libswscale, libswresample).
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat",
            providers: [
                .apt([
                    "libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswscale-dev", "libswresample-dev",
                    "libavfilter-dev",
                ])
            ]
        ),
        /// ALSA's libasound.
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        /// libdbus-1: the camera portal (xdg-desktop-portal) and its permission store, in blocking calls with
        /// timeouts. (Not libportal: it needs a GLib main loop; see CameraPortal.)
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
        /// libjpeg-turbo's TurboJPEG: still-image JPEG encoding and MJPEG camera decoding.
        .systemLibrary(name: "CTurboJPEG", pkgConfig: "libturbojpeg", providers: [.apt(["libturbojpeg0-dev"])]),
        /// libexif: the EXIF block written into JPEG stills.
        .systemLibrary(name: "CExif", pkgConfig: "libexif", providers: [.apt(["libexif-dev"])]),
        /// libheif: HEIC stills.
        .systemLibrary(name: "CHeif", pkgConfig: "libheif", providers: [.apt(["libheif-dev"])]),
        /// SDL 2: the preview window (OpenAVCaptureUI only). Not through pkg-config: sdl2.pc's -D_REENTRANT makes
        /// SwiftPM warn on every build; the header includes <SDL2/SDL.h> and the module map links SDL2.
        .systemLibrary(name: "CSDL2", providers: [.apt(["libsdl2-dev"])]),
        /// V4L2 (<linux/videodev2.h>): the VIDIOC_* request codes as constants and a non-variadic ioctl.
        .target(name: "CLinuxMedia"),
        /// Xlib with MIT-SHM, XFixes, Damage and RandR (the screen input): error handlers that do not exit, and the
        /// cast macros Swift cannot import. Headers from libx11-dev, libxext-dev, libxfixes-dev, libxdamage-dev,
        /// libxrandr-dev.
        .target(
            name: "CX11",
            linkerSettings: [
                .linkedLibrary("X11"), .linkedLibrary("Xext"), .linkedLibrary("Xfixes"), .linkedLibrary("Xdamage"),
                .linkedLibrary("Xrandr"),
            ]),
        /// libpipewire-0.3 (libpipewire-0.3-dev, libspa-0.2-dev): the registry, format enumeration and capture
        /// streams behind plain C functions; SPA's POD macros stay in the C file. Not through pkg-config: its
        /// cflags carry -D_REENTRANT, which SwiftPM prohibits with a warning on every build (and which glibc
        /// ignores), so `system/` links to Debian's header folders and the target links the library by name.
        .target(
            name: "CPipeWire", cSettings: [.headerSearchPath("system")],
            linkerSettings: [.linkedLibrary("pipewire-0.3")]),
        /// libwayland-client (libwayland-dev): a compositor's outputs and wlr-screencopy, the screen input on wlroots
        /// compositors without a ScreenCast portal. The protocol's tables are in the C file (see its header for why).
        .target(name: "CWayland", linkerSettings: [.linkedLibrary("wayland-client")]),
        /// zxing-cpp (libzxing-dev): QR and barcode reading and writing behind a C header; the C++ stays inside.
        .target(name: "CZXing", linkerSettings: [.linkedLibrary("ZXing")]),

        // MARK: Pure Swift, public: the bottom of the stack.

        .target(name: "OpenCoreVideo", swiftSettings: strictSwift),
        .target(name: "OpenCoreMedia", dependencies: ["OpenCoreVideo"], swiftSettings: strictSwift),

        // MARK: Internal: devices and codecs. Drivers deliver what a device gives (raw or compressed); the graph
        // inserts MediaCodecs converters where an output needs something else, so drivers never import MediaCodecs.

        .target(
            name: "CaptureDrivers",
            dependencies: [
                "CALSA", "CDBus", "CLinuxMedia", "CPipeWire", "CWayland", "CX11", "OpenCoreMedia", "OpenCoreVideo",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: strictSwift),

        /// Codec wrappers: FFmpeg (conversion, encoders, muxer, demuxer, decoders), TurboJPEG, libexif, libheif.
        .target(
            name: "MediaCodecs",
            dependencies: ["CFFmpeg", "CTurboJPEG", "CExif", "CHeif", "CZXing", "OpenCoreMedia", "OpenCoreVideo"],
            swiftSettings: strictSwift),

        /// The capture graph: the device hub, the decode and convert stages, the router to the sinks and the
        /// mailboxes, and the pictures the renderers take. Knows nothing of the Apple surface: outputs reach it
        /// through `CaptureSink`.
        .target(
            name: "CaptureGraph",
            dependencies: ["CaptureDrivers", "MediaCodecs", "OpenCoreMedia", "OpenCoreVideo"],
            swiftSettings: strictSwift),

        // MARK: Public: Apple's capture API.

        .target(
            name: "OpenAVCapture",
            dependencies: [
                "CaptureDrivers", "CaptureGraph", "MediaCodecs", "OpenCoreMedia", "OpenCoreVideo",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift),
        /// Apple's AVFoundation on Darwin, OpenAVCapture elsewhere: one import for portable capture code.
        .target(name: "OpenAVCaptureShim", dependencies: ["OpenAVCapture"], swiftSettings: strictSwift),
        /// Drives the virtual devices from a user's test: scene, faults, clock, a session-less tap, readers.
        .target(
            name: "OpenAVCaptureTesting",
            dependencies: ["OpenAVCapture", "CaptureDrivers", "CaptureGraph", "MediaCodecs", "CLinuxMedia"],
            swiftSettings: strictSwift),

        // MARK: Above the public API: renderers of the preview layer, and the seed's camera app controller.

        /// Renderers of `AVCaptureVideoPreviewLayer`: the SDL2 window. Reads the layer's model (gravity, rotation,
        /// mirroring, conversions); the layer itself knows nothing of SDL.
        .target(
            name: "OpenAVCaptureUI", dependencies: ["OpenAVCapture", "CaptureGraph", "CSDL2"],
            swiftSettings: strictSwift),
        /// The preview in a browser: Hummingbird serves the camera app's page and streams the layer's video as
        /// MJPEG (TurboJPEG straight from I420 planes); taps convert through the layer's geometry.
        .target(
            name: "OpenAVCaptureWeb",
            dependencies: [
                "OpenAVCapture", "CaptureGraph", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // The RTSP server: its own listener and UDP ports on NIO; RTP packetising and Digest's MD5 from FFmpeg.
                .product(name: "NIOPosix", package: "swift-nio"), "MediaCodecs",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strictSwift),
        /// The camera app's controller class as it is written on iOS, through `import OpenAVCaptureShim` only.
        .target(
            name: "CameraControllerExample", dependencies: ["OpenAVCaptureShim"], path: "Examples/CameraController",
            swiftSettings: strictSwift),

        /// compat-apps: small capture programs written as iOS and macOS apps write them, one subcommand each, through
        /// `import OpenAVCaptureShim` only and in the Swift 6 language mode without our upcoming features, as the
        /// compatibility listings are. IntegrationTests' CompatibilityAppsTests runs the binary on the virtual devices.
        .executableTarget(
            name: "compat-apps", dependencies: ["OpenAVCaptureShim"], path: "Examples/CompatibilityApps",
            swiftSettings: [.swiftLanguageMode(.v6)]),

        // MARK: The command-line tool, built only on the public API.

        .executableTarget(
            name: "avcapture",
            dependencies: [
                "OpenAVCapture", "OpenAVCaptureUI", "OpenAVCaptureWeb", "CameraControllerExample",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift),

        // MARK: Tests, one target per module.

        .testTarget(name: "CFFmpegTests", dependencies: ["CFFmpeg"], swiftSettings: strictSwift),
        .testTarget(name: "CALSATests", dependencies: ["CALSA"], swiftSettings: strictSwift),
        .testTarget(name: "CDBusTests", dependencies: ["CDBus"], swiftSettings: strictSwift),
        .testTarget(name: "CLinuxMediaTests", dependencies: ["CLinuxMedia"], swiftSettings: strictSwift),
        .testTarget(name: "CX11Tests", dependencies: ["CX11"], swiftSettings: strictSwift),
        .testTarget(name: "OpenCoreVideoTests", dependencies: ["OpenCoreVideo"], swiftSettings: strictSwift),
        .testTarget(name: "OpenCoreMediaTests", dependencies: ["OpenCoreMedia"], swiftSettings: strictSwift),
        .testTarget(
            // OpenAVCapture and MediaCodecs: the writer's V4L2 encoder (V4L2VideoEncoder) on the simulated and
            // vicodec devices.
            name: "CaptureDriversTests",
            dependencies: ["CaptureDrivers", "MediaCodecs", "OpenAVCapture", "TestSupport"],
            swiftSettings: strictSwift),
        .testTarget(
            name: "MediaCodecsTests", dependencies: ["CFFmpeg", "MediaCodecs", "OpenCoreMedia", "OpenCoreVideo"],
            swiftSettings: strictSwift),
        .testTarget(
            name: "CaptureGraphTests",
            dependencies: ["CaptureGraph", "CaptureDrivers", "MediaCodecs", "OpenCoreMedia", "OpenCoreVideo"],
            swiftSettings: strictSwift),
        .testTarget(
            name: "OpenAVCaptureTests",
            // CLinuxMedia: the uinput key device CaptureEventKernelTests makes.
            dependencies: ["OpenAVCapture", "OpenAVCaptureTesting", "TestSupport", "CLinuxMedia"],
            swiftSettings: strictSwift),
        .testTarget(
            name: "OpenAVCaptureUITests", dependencies: ["OpenAVCaptureUI", "OpenAVCapture"], swiftSettings: strictSwift
        ),
        .testTarget(
            name: "OpenAVCaptureTestingTests", dependencies: ["OpenAVCaptureTesting"], swiftSettings: strictSwift),
        /// avcapture's option values, option groups and device names, parsed in process (`@testable import
        /// avcapture`), and its one-line failures from simulated cameras (TestSupport); IntegrationTests runs the
        /// built binary end to end.
        .testTarget(name: "avcaptureTests", dependencies: ["avcapture", "TestSupport"], swiftSettings: strictSwift),

        // MARK: Integration tests: the outside tools (ffprobe, ffmpeg, gst-discoverer, mediainfo, exiftool, the
        // built avcapture binary) read what the public API wrote.

        /// What several test targets share: the outside tools run and parsed, sessions on the virtual devices.
        .target(
            name: "TestSupport", dependencies: ["CX11", "CaptureDrivers", "OpenAVCapture", "OpenAVCaptureTesting"],
            path: "Tests/TestSupport",
            swiftSettings: strictSwift),

        // MARK: Apple compatibility: capture code in Apple's spelling, in the style of open-source camera apps, that
        // must build unchanged through `import OpenAVCaptureShim`. Compile-only; the same listings are built in the
        // Swift 5 and Swift 6 language modes (Swift6/Listings is a link to Listings), without our upcoming features.

        .target(
            name: "AppleCompatibilitySwift5", dependencies: ["OpenAVCaptureShim"],
            path: "Tests/AppleCompatibility/Listings", swiftSettings: [.swiftLanguageMode(.v5)]),
        .target(
            name: "AppleCompatibilitySwift6", dependencies: ["OpenAVCaptureShim"],
            path: "Tests/AppleCompatibility/Swift6", swiftSettings: [.swiftLanguageMode(.v6)]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "OpenAVCapture", "OpenAVCaptureTesting", "TestSupport", "OpenAVCaptureUI", "CameraControllerExample",
                // CaptureMetrics read through the API (the servers themselves are tested through avcapture).
                "OpenAVCaptureWeb",
                // The PipeWire tests drive the driver's registry and streams directly as well as the public API.
                "CaptureDrivers",
            ],
            swiftSettings: strictSwift),
    ],
    // zxing-cpp's headers need C++17.
    cxxLanguageStandard: .cxx17
)
