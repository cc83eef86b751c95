// Watching interruptions and runtime errors with NotificationCenter, restarting after a media services reset.
import OpenAVCaptureShim

final class SessionInterruptionObserver: @unchecked Sendable {
    private var tokens: [NSObjectProtocol] = []
    private(set) var lastInterruptionReason: Int?

    func startObserving(_ session: AVCaptureSession, queue: DispatchQueue) {
        let center = NotificationCenter.default
        tokens.append(
            center.addObserver(forName: .AVCaptureSessionWasInterrupted, object: session, queue: nil) { notification in
                if let value = notification.userInfo?[AVCaptureSessionInterruptionReasonKey] as? Int {
                    self.lastInterruptionReason = value
                }
            })
        tokens.append(
            center.addObserver(forName: .AVCaptureSessionInterruptionEnded, object: session, queue: nil) { _ in
                self.lastInterruptionReason = nil
            })
        tokens.append(
            center.addObserver(forName: .AVCaptureSessionRuntimeError, object: session, queue: nil) { notification in
                guard let error = notification.userInfo?[AVCaptureSessionErrorKey] as? AVError else { return }
                if error.code == .mediaServicesWereReset {
                    queue.async { session.startRunning() }
                } else {
                    print("Capture session runtime error: \(error)")
                }
            })
    }

    func stopObserving() {
        tokens.forEach { NotificationCenter.default.removeObserver($0) }
        tokens.removeAll()
    }
}
