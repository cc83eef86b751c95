// swift-tools-version:6.1
//
// A package outside OpenAVCapture that depends on it as an app would: through SwiftPM. The path stands in for the
// repository's URL (`.package(url: "https://…/OpenAVCapture", from: "0.1.0")`) so that `make example-package`
// builds the checkout it sits in.

import PackageDescription

let package = Package(
    name: "ExternalPackage",
    dependencies: [
        .package(name: "OpenAVCapture", path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "RecordOneSecond",
            dependencies: [.product(name: "OpenAVCaptureShim", package: "OpenAVCapture")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
