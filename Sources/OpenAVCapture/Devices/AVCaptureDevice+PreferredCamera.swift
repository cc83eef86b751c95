import Foundation
import Synchronization

extension AVCaptureDevice {
    /// The camera the user last chose (`userPreferredCamera`), kept for the process. Guarded by its mutex.
    private static let userChoice = Mutex<AVCaptureDevice?>(nil)

    /// The camera the user chose last, or nil before any choice. Apple's: set it when the user picks a camera in
    /// your interface, and read ``systemPreferredCamera`` to get the best camera to use now.
    ///
    /// Key-value observable on Apple's platforms only (a class property); here read it when you need it. As
    /// AVCaptureDevice.h says, setting nil has no effect; setting a device without video is ignored too (Apple
    /// documents no exception for it) and logged once.
    ///
    /// Threading: thread safe.
    public class var userPreferredCamera: AVCaptureDevice? {
        get { userChoice.withLock { $0 } }
        set {
            guard let newValue else { return }
            guard newValue.hasMediaType(.video) || newValue.hasMediaType(.muxed) else {
                ToleratedMisuse.report(
                    "AVCaptureDevice.userPreferredCamera",
                    "AVCaptureDevice.userPreferredCamera: \(newValue.localizedName) is not a camera; the choice is"
                        + " left as it was")
                return
            }
            userChoice.withLock { $0 = newValue }
        }
    }

    /// The camera to use now: the user's choice while it is connected, otherwise the default camera
    /// (``default(for:)``: a real one when there is one). Nil when no camera is present.
    ///
    /// Threading: thread safe.
    public class var systemPreferredCamera: AVCaptureDevice? {
        if let chosen = userPreferredCamera, chosen.isConnected { return chosen }
        return AVCaptureDevice.default(for: .video)
    }

    /// The shortest distance the device can focus at, in millimetres; -1 when unknown, as Apple reports for cameras
    /// that do not say. V4L2 reports no such figure, and the virtual cameras model none.
    public var minimumFocusDistance: Int { -1 }

    /// The lens's f-number. V4L2 does not report apertures; 0 here means "not reported" (the virtual cameras model
    /// a fixed lens without one).
    public var lensAperture: Float { 0 }

    /// The physical cameras behind a virtual multi-camera device; empty for a physical camera, as every camera here
    /// is (`isVirtualDevice` is false).
    public var constituentDevices: [AVCaptureDevice] { [] }

    /// The zoom factors at which a virtual multi-camera device switches cameras; empty for a physical camera.
    public var virtualDeviceSwitchOverVideoZoomFactors: [NSNumber] { [] }

    /// The colour space the device captures in: always sRGB here (the only entry of every format's
    /// `supportedColorSpaces`). Setting needs `lockForConfiguration()` (AVCaptureDevice.h: NSGenericException
    /// otherwise); setting a colour space the format does not support is ignored and logged once, as Apple
    /// documents no exception for it.
    public var activeColorSpace: AVCaptureColorSpace {
        get { .sRGB }
        set {
            requireLock("activeColorSpace")
            if !activeFormat.supportedColorSpaces.contains(newValue) {
                ToleratedMisuse.report(
                    "AVCaptureDevice.activeColorSpace",
                    "AVCaptureDevice.activeColorSpace: \(newValue) is not in the active format's supportedColorSpaces;"
                        + " the device stays in sRGB")
            }
        }
    }
}
