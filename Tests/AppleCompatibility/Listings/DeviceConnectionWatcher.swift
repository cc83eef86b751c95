// Reacting to cameras being plugged in and out (macOS and iPadOS external cameras).
import OpenAVCaptureShim

final class DeviceConnectionWatcher: @unchecked Sendable {
    private var observers: [NSObjectProtocol] = []
    var onChange: (([AVCaptureDevice]) -> Void)?

    func start() {
        let names: [Notification.Name] = [AVCaptureDevice.wasConnectedNotification, AVCaptureDevice.wasDisconnectedNotification]
        for name in names {
            let observer = NotificationCenter.default.addObserver(forName: name, object: nil, queue: .main) { note in
                guard let device = note.object as? AVCaptureDevice else { return }
                print("\(device.localizedName) connected: \(device.isConnected)")
                self.onChange?(self.cameras())
            }
            observers.append(observer)
        }
    }

    func cameras() -> [AVCaptureDevice] {
        AVCaptureDevice.DiscoverySession(
            deviceTypes: [.builtInWideAngleCamera, .external], mediaType: .video, position: .unspecified
        ).devices
    }

    deinit {
        observers.forEach(NotificationCenter.default.removeObserver)
    }
}
