import ArgumentParser
import Foundation
import OpenAVCapture

/// `--video DEVICE` for `preview` and `serve`, repeatable: the first camera fills the picture, the others are shown
/// over it picture in picture, all in one `AVCaptureMultiCamSession`; and where those insets go.
struct PreviewCameraOptions: ParsableArguments {
    @Option(
        name: .customLong("video"),
        help: ArgumentHelp(
            "Camera: an index, uniqueID, /dev/videoN, 'virtual', part of its name, file:PATH, or 'none'. Repeat it to "
                + "show the other cameras picture in picture over the first.",
            valueName: "device"))
    var videos: [String] = []

    @Option(help: "Where the other cameras' pictures go (with several --video).")
    var insetCorner: InsetCornerChoice = .bottomRight

    @Option(help: "Each other camera's picture's width, in percent of the picture's width (5 ... 50).")
    var insetWidth: Double = 25

    /// The first (or only) camera named.
    var video: String? { videos.first }

    /// Whether `--video none` asked for no camera.
    var isNone: Bool { video?.lowercased() == "none" }

    /// Whether several cameras are to be shown at once.
    var isPictureInPicture: Bool { videos.count > 1 }

    var layout: PictureInPictureLayout {
        PictureInPictureLayout(corner: insetCorner.corner, insetWidthFraction: insetWidth / 100)
    }

    func validate() throws {
        guard (5...50).contains(insetWidth) else { throw ValidationError("--inset-width must be 5 ... 50 (percent)") }
    }
}

/// A corner, as `--inset-corner` takes it.
enum InsetCornerChoice: String, KebabChoice {
    case topLeft = "top-left", topRight = "top-right", bottomLeft = "bottom-left", bottomRight = "bottom-right"

    var corner: PictureInPictureLayout.Corner {
        switch self {
        case .topLeft: .topLeft
        case .topRight: .topRight
        case .bottomLeft: .bottomLeft
        case .bottomRight: .bottomRight
        }
    }
}

/// The other cameras of a picture-in-picture preview, as AVMultiCamPiP sets up its second camera: each added to the
/// multi-camera session with no connections and connected by hand to a preview layer of its own.
enum PictureInPictureSetup {
    /// Gives `device` the size `preset` names (a multi-camera session has no presets: each camera streams its own
    /// format); presets that name no size (high, medium, low, photo) leave the camera's active format.
    static func applySize(of preset: PresetChoice, to device: AVCaptureDevice) throws {
        let size = preset.rawValue.split(separator: "x").compactMap { Int32($0) }
        guard size.count == 2 else { return }
        try CaptureSetup.apply(width: size[0], height: size[1], framesPerSecond: nil, pixelFormat: nil, to: device)
    }

    /// Adds the cameras `specifications` name to `session`, each connected to a new preview layer; `main` is the
    /// camera already in it (named again is an error, as is `none`).
    static func insetLayers(
        cameras specifications: [String], besides main: AVCaptureDevice?, in session: AVCaptureMultiCamSession,
        preset: PresetChoice
    ) throws -> [AVCaptureVideoPreviewLayer] {
        var used = Set(main.map { [$0.uniqueID] } ?? [])
        var layers: [AVCaptureVideoPreviewLayer] = []
        for specification in specifications {
            guard let device = try DeviceSelector.device(specification, for: .video) else {
                throw ToolFailure(.usage, "--video none cannot be one of several cameras")
            }
            guard used.insert(device.uniqueID).inserted else {
                throw ToolFailure(
                    .usage,
                    "\(device.localizedName) is named twice (--video \(specification)); each camera is shown once")
            }
            try applySize(of: preset, to: device)
            let input: AVCaptureDeviceInput
            do {
                input = try AVCaptureDeviceInput(device: device)
            } catch {
                throw ToolFailure(.unavailable, "cannot open \(device.localizedName): \(CaptureSetup.describe(error))")
            }
            guard session.canAddInput(input) else {
                throw ToolFailure(.unavailable, "the session cannot take \(device.localizedName) beside the others")
            }
            session.addInputWithNoConnections(input)
            let layer = AVCaptureVideoPreviewLayer(sessionWithNoConnection: session)
            let ports = input.ports(
                for: .video, sourceDeviceType: device.deviceType, sourceDevicePosition: device.position)
            guard let port = ports.first else {
                throw ToolFailure(.unavailable, "\(device.localizedName) has no video port")
            }
            let connection = AVCaptureConnection(inputPort: port, videoPreviewLayer: layer)
            guard session.canAddConnection(connection) else {
                throw ToolFailure(.unavailable, "the session cannot connect \(device.localizedName) to its preview")
            }
            session.addConnection(connection)
            layers.append(layer)
        }
        return layers
    }

    /// "; insets: Front Camera at 584,319 200x112, …" once a window has placed them (a layer without a frame: its
    /// name only), for the log and for scripts; "" without insets.
    static func describe(_ layers: [AVCaptureVideoPreviewLayer]) -> String {
        guard !layers.isEmpty else { return "" }
        let names = layers.map { layer in
            let name = (layer.connection?.inputPorts.first?.input as? AVCaptureDeviceInput)?.device.localizedName
            let frame = layer.frame
            guard !frame.isEmpty else { return name ?? "camera" }
            return
                "\(name ?? "camera") at \(Int(frame.minX)),\(Int(frame.minY)) \(Int(frame.width))x\(Int(frame.height))"
        }
        return "; insets: " + names.joined(separator: ", ")
    }
}
