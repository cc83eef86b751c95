// Key-value observing of session and device state, kept in an array of observations.
import OpenAVCaptureShim

final class CaptureKVO {
    private var keyValueObservations: [NSKeyValueObservation] = []
    private(set) var isSessionRunning = false

    func addObservers(session: AVCaptureSession, device: AVCaptureDevice) {
        let running = session.observe(\.isRunning, options: .new) { [weak self] _, change in
            guard let isRunning = change.newValue else { return }
            self?.isSessionRunning = isRunning
        }
        keyValueObservations.append(running)
        let focusing = device.observe(\.isAdjustingFocus, options: [.initial, .new]) { device, _ in
            print("\(device.localizedName) focusing: \(device.isAdjustingFocus)")
        }
        keyValueObservations.append(focusing)
        let lens = device.observe(\.lensPosition, options: [.old, .new]) { _, change in
            if let old = change.oldValue, let new = change.newValue, old != new {
                print("lens moved \(old) -> \(new)")
            }
        }
        keyValueObservations.append(lens)
    }

    func removeObservers() {
        for observation in keyValueObservations {
            observation.invalidate()
        }
        keyValueObservations.removeAll()
    }
}
