// Keeping a camera menu up to date by observing a discovery session's devices.
import OpenAVCaptureShim

final class DiscoveryListObserver {
    let discoverySession = AVCaptureDevice.DiscoverySession(
        deviceTypes: [.builtInWideAngleCamera, .external, .continuityCamera], mediaType: .video, position: .unspecified)
    private var observation: NSKeyValueObservation?
    private(set) var names: [String] = []

    func start() {
        observation = discoverySession.observe(\.devices, options: [.initial, .new]) { [weak self] _, change in
            guard let devices = change.newValue else { return }
            self?.names = devices.map(\.localizedName)
        }
    }

    func stop() {
        observation?.invalidate()
        observation = nil
    }
}
