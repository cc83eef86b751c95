// swift-tools-version:6.1
//
// libFuzzer targets for what OpenAVCapture reads from outside: media files (the demuxer and decoders behind
// AVURLAsset, AVAssetReader and `file:` devices), sound files played as a `file:` microphone into a session's audio
// data output, a camera's MJPEG frames (TurboJPEG, as sessions decode them), the photo outputs' still path (a
// camera's JPEG frame and the names and location that become EXIF), the HTTP requests `avcapture serve` answers,
// the RTSP requests `serve --rtsp` parses,
// and the V4L2 driver reading what a (simulated, lying) kernel answers.
// A package of its own, like Benchmarks/, so the library never depends on it.
//
// Run: `make fuzz` from the repository root (each target for FUZZ_SECONDS, corpora in Corpus/). Built without
// `-DFUZZING` (plain `swift build` here) each target is a program that runs the files it is given, or its checked-in
// corpus, through the same entry point: how a crash found becomes a regression run.

import PackageDescription

let fuzzing = Context.environment["OPENAV_FUZZING"] == "1"
/// Under libFuzzer the runtime provides `main`; the entry point is `LLVMFuzzerTestOneInput`.
let settings: [SwiftSetting] =
    [.swiftLanguageMode(.v6)] + (fuzzing ? [.define("FUZZING"), .unsafeFlags(["-parse-as-library"])] : [])

let package = Package(
    name: "OpenAVCaptureFuzz",
    dependencies: [.package(name: "OpenAVCapture", path: "..")],
    targets: [
        /// libFuzzer's `LLVMFuzzerRunDriver`, called from each target's renamed `main` (see Targets/*/).
        .target(name: "CFuzzDriver", path: "Targets/CFuzzDriver"),
        .target(
            name: "FuzzSupport",
            dependencies: [.product(name: "OpenAVCapture", package: "OpenAVCapture")],
            path: "Targets/FuzzSupport",
            swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(
            name: "DemuxerFuzzer",
            dependencies: ["CFuzzDriver", "FuzzSupport", .product(name: "OpenAVCapture", package: "OpenAVCapture")],
            path: "Targets/DemuxerFuzzer", swiftSettings: settings),
        .executableTarget(
            name: "AudioFileFuzzer",
            dependencies: [
                "CFuzzDriver", "FuzzSupport", .product(name: "OpenAVCapture", package: "OpenAVCapture"),
                .product(name: "OpenAVCaptureTesting", package: "OpenAVCapture"),
            ],
            path: "Targets/AudioFileFuzzer", swiftSettings: settings),
        .executableTarget(
            name: "MJPEGFuzzer",
            dependencies: [
                "CFuzzDriver", "FuzzSupport", .product(name: "OpenAVCapture", package: "OpenAVCapture"),
                .product(name: "OpenAVCaptureTesting", package: "OpenAVCapture"),
            ],
            path: "Targets/MJPEGFuzzer", swiftSettings: settings),
        .executableTarget(
            name: "StillImageFuzzer",
            dependencies: [
                "CFuzzDriver", "FuzzSupport", .product(name: "OpenAVCapture", package: "OpenAVCapture"),
                .product(name: "OpenAVCaptureTesting", package: "OpenAVCapture"),
            ],
            path: "Targets/StillImageFuzzer", swiftSettings: settings),
        .executableTarget(
            name: "ServeRequestFuzzer",
            dependencies: [
                "CFuzzDriver", "FuzzSupport", .product(name: "OpenAVCapture", package: "OpenAVCapture"),
                .product(name: "OpenAVCaptureWeb", package: "OpenAVCapture"),
            ],
            path: "Targets/ServeRequestFuzzer", swiftSettings: settings),
        .executableTarget(
            name: "RTSPRequestFuzzer",
            dependencies: [
                "CFuzzDriver", "FuzzSupport", .product(name: "OpenAVCaptureWeb", package: "OpenAVCapture"),
            ],
            path: "Targets/RTSPRequestFuzzer", swiftSettings: settings),
        .executableTarget(
            name: "V4L2KernelFuzzer",
            dependencies: [
                "CFuzzDriver", "FuzzSupport", .product(name: "OpenAVCapture", package: "OpenAVCapture"),
                .product(name: "OpenAVCaptureTesting", package: "OpenAVCapture"),
            ],
            path: "Targets/V4L2KernelFuzzer", swiftSettings: settings),
    ]
)
