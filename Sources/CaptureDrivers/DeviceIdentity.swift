import OpenCoreMedia

/// The media a device produces.
package enum DeviceMedia: String, Sendable, Hashable {
    /// Frames: cameras, screens, the picture of a movie file.
    case video = "vide"
    /// Samples: microphones, the sound of a movie file.
    case audio = "soun"
}

/// Where a device sits, with Apple's raw values (`AVCaptureDevice.Position`).
package enum DevicePosition: Int, Sendable, Hashable {
    case unspecified = 0
    case back = 1
    case front = 2
}

/// What kind of device it is, with Apple's raw values (`AVCaptureDevice.DeviceType`).
package enum DeviceKind: String, Sendable, Hashable {
    case builtInWideAngleCamera = "AVCaptureDeviceTypeBuiltInWideAngleCamera"
    case external = "AVCaptureDeviceTypeExternal"
    case microphone = "AVCaptureDeviceTypeMicrophone"
}

/// Whether a device is hardware (or a file standing in for it) or one of our built-in virtual devices.
///
/// `OPENAV_DEVICES` filters discovery by this: `real`, `virtual` or `all`.
package enum DeviceOrigin: String, Sendable, Hashable {
    case real
    case virtual
}

/// Who a device is: everything `AVCaptureDevice` reports about identity, fixed for the device's life.
///
/// Value type; safe to use from any thread.
package struct DeviceIdentity: Sendable, Hashable {
    /// Stable across runs and reboots (a V4L2 by-id path, an ALSA card id, "virtual:back-camera").
    package var uniqueID: String
    /// The same for every unit of one model (driver and card name, or USB vendor:product).
    package var modelID: String
    /// The name to show people.
    package var localizedName: String
    package var manufacturer: String
    package var kind: DeviceKind
    package var position: DevicePosition
    package var media: DeviceMedia
    package var origin: DeviceOrigin
    /// The name the system's own tools give the device: a V4L2 camera's node (`/dev/video2`, as `v4l2-ctl -d` and
    /// `ffmpeg -f v4l2` take it), an ALSA microphone's PCM (`plughw:CARD=…,DEV=0`, as `arecord -D` takes it); nil
    /// for virtual devices, movie files, screens and PipeWire nodes.
    package var systemName: String?

    package init(
        uniqueID: String, modelID: String, localizedName: String, manufacturer: String, kind: DeviceKind,
        position: DevicePosition, media: DeviceMedia, origin: DeviceOrigin, systemName: String? = nil
    ) {
        self.uniqueID = uniqueID
        self.modelID = modelID
        self.localizedName = localizedName
        self.manufacturer = manufacturer
        self.kind = kind
        self.position = position
        self.media = media
        self.origin = origin
        self.systemName = systemName
    }
}
