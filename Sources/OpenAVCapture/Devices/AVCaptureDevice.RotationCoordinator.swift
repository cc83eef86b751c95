import Foundation
import Synchronization

extension AVCaptureDevice {
    /// Follows how the machine holding a camera is turned, and gives the angles that keep photos, movies and the
    /// preview level with the horizon: apply `videoRotationAngleForHorizonLevelCapture` to the output's connection
    /// and `videoRotationAngleForHorizonLevelPreview` to the preview layer's connection (both angles are ones
    /// `AVCaptureConnection.isVideoRotationAngleSupported(_:)` accepts: 0, 90, 180 or 270).
    ///
    /// Where the orientation comes from on Linux: an ``AVCaptureDeviceOrientationSource``, by default
    /// ``AVCaptureDeviceOrientationSource/shared``. Apple reads the phone's gravity sensor; a Linux machine's camera
    /// (a laptop's, a USB webcam on a monitor) normally stands upright in landscape, its sensor's own orientation,
    /// and the shared source says `.unknown` until an application sets what it knows (from iio-sensor-proxy, a
    /// tablet's rotation lock, a setting), so the angles start at 0, the camera as mounted. Apple's mapping from the
    /// machine's orientation: `.portrait` 90, `.landscapeLeft` (turned so its top is on the left) 0,
    /// `.landscapeRight` 180, `.portraitUpsideDown` 270, for front and back cameras alike (mirroring a front camera is
    /// the connection's job); `.faceUp`, `.faceDown` and `.unknown` keep the last angle, as a phone lying on a table
    /// keeps its last orientation. Not read: the sensor's mounting rotation some cameras report
    /// (`V4L2_CID_CAMERA_SENSOR_ROTATION`); a camera mounted turned in its machine needs the application's own angle.
    ///
    /// The preview angle: 0 without a preview layer, as Apple's. With one, the angle for the screen's orientation:
    /// the machine's (the desktop turns its screen with the machine, as an app that supports every interface
    /// orientation) unless the source names a fixed `interfaceOrientation`.
    ///
    /// Key-value observable: `videoRotationAngleForHorizonLevelPreview` and `videoRotationAngleForHorizonLevelCapture`,
    /// notified only on real changes. Apple notifies on the main queue; here the notification runs on the thread
    /// that changed the source's orientation (a Linux program need not run a main queue). Hop yourself where it
    /// matters.
    ///
    /// Threading: thread safe.
    public final class RotationCoordinator: NSObject, KeyValueObservable, @unchecked Sendable {
        /// The observers of the two angles.
        public let keyValueObservers = KeyValueObserverRegistry()
        private let source: AVCaptureDeviceOrientationSource
        private let weakDevice: WeakReference<AVCaptureDevice>
        private let weakPreviewLayer: WeakReference<CALayer>
        private let hasPreviewLayer: Bool
        private let angles: Mutex<(capture: CGFloat, preview: CGFloat)>
        private let observation = Mutex<NSKeyValueObservation?>(nil)

        /// The capture device whose rotation the coordinator follows. Held weakly, as Apple's.
        public var device: AVCaptureDevice? { weakDevice.object }

        /// The layer showing the camera's preview, or nil. Held weakly, as Apple's.
        public var previewLayer: CALayer? { weakPreviewLayer.object }

        /// A coordinator for `device`, following the shared orientation source. Apple's initializer.
        public convenience init(device: AVCaptureDevice, previewLayer: CALayer?) {
            self.init(device: device, previewLayer: previewLayer, orientationSource: .shared)
        }

        /// Ours: a coordinator following `orientationSource` instead of the shared one (a test's, or a second screen's).
        public init(device: AVCaptureDevice, previewLayer: CALayer?, orientationSource: AVCaptureDeviceOrientationSource) {
            source = orientationSource
            weakDevice = WeakReference(device)
            weakPreviewLayer = WeakReference(previewLayer)
            hasPreviewLayer = previewLayer != nil
            let state = orientationSource.state
            let capture = Self.angle(for: state.device) ?? 0
            angles = Mutex((capture, hasPreviewLayer ? Self.previewAngle(state, capture: capture) : 0))
            super.init()
            let token = orientationSource.observe(\AVCaptureDeviceOrientationSource.state, options: [.new]) {
                [weak self] _, change in
                if let state = change.newValue { self?.sourceDidChange(state) }
            }
            observation.withLock { $0 = token }
        }

        deinit { observation.withLock { $0?.invalidate() } }

        /// The angle to set on the preview layer's connection so the preview is level: 0 without a preview layer.
        /// Key-value observable.
        public var videoRotationAngleForHorizonLevelPreview: CGFloat { angles.withLock { $0.preview } }

        /// The angle to set on an output's connection so photos and movies are level. Key-value observable.
        public var videoRotationAngleForHorizonLevelCapture: CGFloat { angles.withLock { $0.capture } }

        private func sourceDidChange(_ state: AVCaptureDeviceOrientationSource.State) {
            let (old, new) = angles.withLock { angles in
                let old = angles
                let capture = Self.angle(for: state.device) ?? angles.capture
                let preview = hasPreviewLayer ? Self.previewAngle(state, capture: capture) : 0
                angles = (capture, preview)
                return (old, angles)
            }
            if old.capture != new.capture {
                keyValueObservers.notifyChange(
                    \RotationCoordinator.videoRotationAngleForHorizonLevelCapture, of: self, from: old.capture,
                    to: new.capture)
            }
            if old.preview != new.preview {
                keyValueObservers.notifyChange(
                    \RotationCoordinator.videoRotationAngleForHorizonLevelPreview, of: self, from: old.preview,
                    to: new.preview)
            }
        }

        /// The capture angle for a machine turned `orientation`; nil for the orientations that say nothing
        /// about which way is up (flat, unknown).
        static func angle(for orientation: AVCaptureDeviceOrientationSource.Orientation) -> CGFloat? {
            switch orientation {
            case .portrait: 90
            case .landscapeLeft: 0
            case .landscapeRight: 180
            case .portraitUpsideDown: 270
            case .unknown, .faceUp, .faceDown: nil
            }
        }

        /// The preview angle: the screen's orientation's angle, the screen following the machine unless fixed.
        private static func previewAngle(_ state: AVCaptureDeviceOrientationSource.State, capture: CGFloat) -> CGFloat {
            guard let interface = state.interface else { return capture }
            return angle(for: interface) ?? capture
        }
    }
}

/// A weak reference that can be stored in a `let` of a `Sendable` class.
private final class WeakReference<Object: AnyObject>: @unchecked Sendable {
    weak var object: Object?
    init(_ object: Object?) { self.object = object }
}
