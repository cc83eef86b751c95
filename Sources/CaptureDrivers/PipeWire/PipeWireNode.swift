/// A node of the PipeWire graph as the registry announced it: its id and properties.
///
/// Identity comes from properties, never from the id (ids are reused): `object.path` (`v4l2:/dev/video0`,
/// `alsa:pcm:1:hw:1,0:capture`, `libcamera:/base/soc/i2c0mux/i2c@1/imx708@1a`) where the node has one, else
/// `node.name`.
///
/// Value type; safe to use from any thread.
package struct PipeWireNode: Sendable, Hashable {
    /// The registry id: valid while the node exists, reused after.
    package var id: UInt32
    package var properties: [String: String]

    package init(id: UInt32, properties: [String: String]) {
        self.id = id
        self.properties = properties
    }

    /// `media.class`: `Video/Source`, `Audio/Source`, `Audio/Sink`, `Stream/Input/Audio` …
    package var mediaClass: String? { properties["media.class"] }

    /// The media this node captures, when it is a source of ours to list: cameras (`Video/Source`) and
    /// microphones (`Audio/Source`, including virtual ones a user made with pw-loopback). Streams and sinks'
    /// monitors are not devices.
    package var capturedMedia: DeviceMedia? {
        switch mediaClass {
        case "Video/Source": .video
        case "Audio/Source", "Audio/Source/Virtual": .audio
        default: nil
        }
    }

    /// What the stream targets: the serial (unique for the daemon's life) where the daemon gives one, else the name.
    package var target: String { properties["object.serial"] ?? properties["node.name"] ?? String(id) }

    /// Stable across runs: `pipewire:` and the object path or the node name.
    package var uniqueID: String {
        "pipewire:" + (properties["object.path"] ?? properties["node.name"] ?? "node-\(id)")
    }

    /// The name people see: the description, else the nick, else the name. Where udev knows nothing of a camera
    /// (a container, a VM without udevd) WirePlumber describes it as "Unknown device (V4L2)"; the card name the
    /// driver reports (`api.v4l2.cap.card`, the name the raw V4L2 backend shows) says more.
    package var localizedName: String {
        if hasPlaceholderName, let card = properties["api.v4l2.cap.card"], !card.isEmpty {
            return card
        }
        return properties["node.description"] ?? properties["node.nick"] ?? properties["node.name"]
            ?? "PipeWire node \(id)"
    }

    /// Whether WirePlumber named the node "Unknown device …", having no name for it from udev.
    package var hasPlaceholderName: Bool {
        properties["node.description"]?.hasPrefix("Unknown device") == true
    }

    /// The same for every unit of one model: the device's product where PipeWire knows it, else the node's API and
    /// name.
    package var modelID: String {
        if let vendor = properties["device.vendor.id"], let product = properties["device.product.id"] {
            return "\(vendor):\(product)"
        }
        return [properties["device.api"], properties["node.name"]].compactMap { $0 }.joined(separator: " ")
    }

    /// The V4L2 device node a camera node reads (`/dev/video0`): `api.v4l2.path` where the properties carry it,
    /// else from the object path (the registry's global properties give `object.path` only).
    package var v4l2Path: String? {
        if let path = properties["api.v4l2.path"] { return path }
        guard let objectPath = properties["object.path"], objectPath.hasPrefix("v4l2:") else { return nil }
        return String(objectPath.dropFirst("v4l2:".count))
    }

    package var manufacturer: String {
        properties["device.vendor.name"] ?? properties["api.libcamera.manufacturer"] ?? "PipeWire"
    }

    /// The raw device this node reads, as the raw backends name theirs, when it reads one: `v4l2:/dev/video0` for
    /// a V4L2 node, `alsa:card:1` for a card's PCM. The registry hides the raw device then: one camera, one entry.
    package var rawDeviceKey: String? {
        if let path = v4l2Path { return "v4l2:" + path }
        if properties["device.api"] == "alsa" || properties["api.alsa.path"] != nil,
            let card = properties["api.alsa.card"] ?? properties["alsa.card"]
        {
            return "alsa:card:" + card
        }
        // The registry's global properties carry the object path only: `alsa:pcm:<card>:<device>:<stream>`.
        if let path = properties["object.path"], path.hasPrefix("alsa:pcm:"),
            let card = path.split(separator: ":").dropFirst(2).first, Int(card) != nil
        {
            return "alsa:card:\(card)"
        }
        return nil
    }

    /// Channels and rate the node states (audio), for a node whose ports leave them open.
    package var audioChannels: Int? { properties["audio.channels"].flatMap { Int($0) } }
    package var audioRate: Double? { properties["audio.rate"].flatMap { Double($0) } }
}
