// swift-tools-version:6.1
//
// Benchmarks for OpenAVCapture, a package of its own so the library never depends on the harness.
// Run: `make bench` from the repository root, or `swift package benchmark` here.

import PackageDescription

let package = Package(
    name: "OpenAVCaptureBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "OpenAVCapture", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "CoreMediaBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "OpenCoreMedia", package: "OpenAVCapture"),
                .product(name: "OpenCoreVideo", package: "OpenAVCapture"),
            ],
            path: "Benchmarks/CoreMediaBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "VirtualDeviceBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "OpenAVCaptureTesting", package: "OpenAVCapture"),
            ],
            path: "Benchmarks/VirtualDeviceBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "V4L2Benchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "OpenAVCaptureTesting", package: "OpenAVCapture"),
            ],
            path: "Benchmarks/V4L2Benchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "SessionBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "OpenAVCapture", package: "OpenAVCapture"),
                .product(name: "OpenAVCaptureTesting", package: "OpenAVCapture"),
                .product(name: "OpenCoreMedia", package: "OpenAVCapture"),
                .product(name: "OpenCoreVideo", package: "OpenAVCapture"),
            ],
            path: "Benchmarks/SessionBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "ScreenBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "OpenAVCapture", package: "OpenAVCapture"),
            ],
            path: "Benchmarks/ScreenBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "CodeReadingBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "OpenAVCapture", package: "OpenAVCapture"),
                .product(name: "OpenAVCaptureTesting", package: "OpenAVCapture"),
            ],
            path: "Benchmarks/CodeReadingBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        /// Not package-benchmark targets (so outside Benchmarks/, where its plugin looks): comparisons run by hand.
        /// One run against ffmpeg, printing CPU ratios and peak RSS.
        .executableTarget(
            name: "SideBySide",
            path: "Comparisons/SideBySide",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "RecordingVersusFFmpeg",
            dependencies: [
                .product(name: "OpenAVCapture", package: "OpenAVCapture"),
                .product(name: "OpenAVCaptureTesting", package: "OpenAVCapture"),
            ],
            path: "Comparisons/RecordingVersusFFmpeg",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "DecodeBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "OpenAVCapture", package: "OpenAVCapture"),
                .product(name: "OpenAVCaptureTesting", package: "OpenAVCapture"),
            ],
            path: "Benchmarks/DecodeBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "StillBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "OpenAVCapture", package: "OpenAVCapture"),
            ],
            path: "Benchmarks/StillBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        /// AVAssetExportSession (passthrough, and a 30 fps re-encode) against ffmpeg in one run (see its header).
        .executableTarget(
            name: "PreviewCost",
            dependencies: [
                .product(name: "OpenAVCapture", package: "OpenAVCapture"),
                .product(name: "OpenAVCaptureUI", package: "OpenAVCapture"),
                .product(name: "OpenAVCaptureWeb", package: "OpenAVCapture"),
            ],
            path: "Comparisons/PreviewCost",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "ExportVersusFFmpeg",
            dependencies: [.product(name: "OpenAVCapture", package: "OpenAVCapture")],
            path: "Comparisons/ExportVersusFFmpeg",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        /// The resident memory a movie writer holds at 10 Mb/s by fragment setting (see its header).
        .executableTarget(
            name: "WriterMemory",
            dependencies: [.product(name: "OpenAVCapture", package: "OpenAVCapture")],
            path: "Comparisons/WriterMemory",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        /// Instructions per frame of the capture path, run under callgrind (see its header).
        .executableTarget(
            name: "SessionInstructions",
            dependencies: [
                .product(name: "OpenAVCapture", package: "OpenAVCapture"),
                .product(name: "OpenAVCaptureTesting", package: "OpenAVCapture"),
            ],
            path: "Comparisons/SessionInstructions",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        /// What the power-loss syncs (fdatasync of fragments, fsync around the rewrite) cost, synced / unsynced.
        .executableTarget(
            name: "FragmentSyncCost",
            dependencies: [
                .product(name: "OpenAVCapture", package: "OpenAVCapture"),
                .product(name: "OpenAVCaptureTesting", package: "OpenAVCapture"),
            ],
            path: "Comparisons/FragmentSyncCost",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "USBWebcamOverhead",
            dependencies: [
                "VMComparisonSupport",
                .product(name: "OpenAVCapture", package: "OpenAVCapture"),
                .product(name: "OpenAVCaptureTesting", package: "OpenAVCapture"),
            ],
            path: "Comparisons/USBWebcamOverhead",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        /// What the comparisons run in the test VM share.
        .target(
            name: "VMComparisonSupport",
            dependencies: [.product(name: "OpenAVCapture", package: "OpenAVCapture")],
            path: "Comparisons/VMComparisonSupport",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        /// PipeWire against raw V4L2 on the same vivid frames (goal: at most 1.1x the CPU, p99 to delegate 2 ms).
        .executableTarget(
            name: "PipeWireOverhead",
            dependencies: ["VMComparisonSupport", .product(name: "OpenAVCapture", package: "OpenAVCapture")],
            path: "Comparisons/PipeWireOverhead",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        /// How soon a recording that survives disconnection resumes once the camera is back (goal: 1 s).
        .executableTarget(
            name: "ReconnectDelay",
            dependencies: [
                .product(name: "OpenAVCapture", package: "OpenAVCapture"),
                .product(name: "OpenAVCaptureTesting", package: "OpenAVCapture"),
            ],
            path: "Comparisons/ReconnectDelay",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        /// What a cut into segments costs the frames after it (goal: at most one frame interval) and that none is lost.
        .executableTarget(
            name: "SegmentSwitchLatency",
            dependencies: [.product(name: "OpenAVCapture", package: "OpenAVCapture")],
            path: "Comparisons/SegmentSwitchLatency",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        /// What one encoder shared by a publishing output and a movie file output saves against two encoders.
        .executableTarget(
            name: "SharedEncoderCost",
            dependencies: [.product(name: "OpenAVCapture", package: "OpenAVCapture")],
            path: "Comparisons/SharedEncoderCost",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
