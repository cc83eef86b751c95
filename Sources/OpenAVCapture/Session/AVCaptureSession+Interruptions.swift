// Interruptions and device watching: a device's fault or disappearance interrupts the session with Apple's
// notifications, and its return ends the interruption.

import CaptureDrivers
import CaptureGraph
import Foundation
import Synchronization

extension AVCaptureSession {
    func deviceDidFault(_ key: ObjectIdentifier, _ fault: DeviceFault) {
        let (input, device, error): (AVCaptureInput?, AVCaptureDevice?, AVError?) = locked {
            guard var stream = streams[key], isRunning else { return (nil, nil, nil) }
            stream.isInterrupted = true
            streams[key] = stream
            let reason: InterruptionReason? =
                fault.kind == .busy
                ? (stream.device.hasMediaType(.video)
                    ? .videoDeviceInUseByAnotherClient : .audioDeviceInUseByAnotherClient)
                : nil
            interrupt(for: stream.device, reason: reason)
            return (stream.input, stream.device, fault.kind == .busy ? nil : fault.avError(for: stream.device))
        }
        guard let input, let device else { return }
        for connection in connections where connection.inputPorts.contains(where: { $0.input === input }) {
            connection.output?.inputDidFail(
                error ?? AVError(.sessionWasInterrupted, "\(device.localizedName) was taken by another application"),
                connection: connection)
        }
        if let error { post(AVCaptureSession.runtimeErrorNotification, [AVCaptureSessionErrorKey: error]) }
    }

    /// Marks the session interrupted (posting the notification once) and listens for the device's return.
    func interrupt(for device: AVCaptureDevice, reason: InterruptionReason?) {
        let wasInterrupted = isInterrupted
        if state == .running { setState(.interrupted) }
        if !wasInterrupted {
            var info: [String: Any] = [:]
            if let reason { info[AVCaptureSessionInterruptionReasonKey] = reason.rawValue }
            let userInfo = UncheckedSendable(info)
            eventQueue.async { self.post(AVCaptureSession.wasInterruptedNotification, userInfo.value) }
        }
        listenForDevices()
    }

    func listenForDevices() {
        guard registryToken == nil else { return }
        registryToken = deviceDirectory.registry.addListener { [weak self] event in
            guard let self else { return }
            self.eventQueue.async { self.deviceAvailabilityChanged(event.backend) }
        }
    }

    /// A device came back or was released: restart its stream; end the interruption when none is left.
    func deviceAvailabilityChanged(_ backend: any CaptureBackend) {
        let ended = locked { () -> Bool in
            let key = ObjectIdentifier(backend)
            guard state == .interrupted, var stream = streams[key], stream.isInterrupted,
                backend.isConnected, !backend.isInUseByAnotherApplication
            else { return false }
            do {
                if stream.token == nil {
                    stream.configuration = stream.input.streamConfiguration
                    stream.token = try stream.hub.subscribe(stream.configuration, sink: sink(for: backend))
                } else {
                    try stream.hub.resume()
                }
            } catch {
                return false
            }
            stream.isInterrupted = false
            streams[key] = stream
            guard !streams.values.contains(where: \.isInterrupted) else { return false }
            setState(.running)
            return true
        }
        if ended { post(AVCaptureSession.interruptionEndedNotification, [:]) }
    }

    // MARK: Devices

    /// Follows a device's format and frame rate, so a running session restarts it with the new ones.
    func watch(_ input: AVCaptureDeviceInput) {
        let device = input.device
        device.sessionHooks.withLock {
            $0.formatSetByUser = { [weak self] in self?.deviceFormatWasSetByUser() }
        }
        let reconfigure: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            self.eventQueue.async { self.changeConfiguration {} }
        }
        deviceObservations[ObjectIdentifier(input)] = [
            device.observe(\.activeFormat) { _, _ in reconfigure() },
            device.observe(\.activeVideoMinFrameDuration) { _, _ in reconfigure() },
        ]
    }

    func unwatch(_ input: AVCaptureDeviceInput) {
        input.device.sessionHooks.withLock { $0.formatSetByUser = nil }
        deviceObservations[ObjectIdentifier(input)] = nil
    }

    func post(_ name: NSNotification.Name, _ userInfo: [String: Any]) {
        NotificationCenter.default.post(name: name, object: self, userInfo: userInfo.isEmpty ? nil : userInfo)
    }
}

extension DeviceFault {
    /// The AVError a public caller sees for a device fault. A driver's advice (who holds the device, which group
    /// to join, why the bus refused the format) becomes the recovery suggestion.
    package func avError(for device: AVCaptureDevice) -> AVError {
        let name = device.localizedName
        let extra: [String: Any] = [AVErrorDeviceKey: device]
        switch kind {
        case .disconnected:
            return AVError(
                .deviceWasDisconnected, "\(name) was disconnected",
                suggestion: advice ?? "Reconnect it; the session resumes by itself when it returns.", extra: extra)
        case .busy:
            return AVError(
                .deviceInUseByAnotherApplication, "\(name) is in use by another application",
                suggestion: advice ?? "Close the other program; the session resumes by itself.", extra: extra)
        case .stalled:
            return AVError(.unknown, "\(name) stopped delivering frames", suggestion: advice, extra: extra)
        case .io(.permissionDenied), .io(.notPermitted):
            return AVError(
                .applicationIsNotAuthorizedToUseDevice, "this user may not open \(name)",
                suggestion: advice ?? "Add the user to the group that owns the device node (usually `video`).",
                extra: extra)
        case .io(.noSpace):
            // Apple's code for cameras that need more than the hardware has; the driver's advice names the bus.
            return AVError(
                .sessionHardwareCostOverage, "\(name) cannot stream this format: not enough USB bandwidth",
                suggestion: advice
                    ?? "Choose a compressed (MJPEG) or smaller format, or move the camera to another USB controller.",
                extra: extra)
        case .io(let errno):
            return AVError(
                .unknown, "\(name) failed: \(errno)",
                suggestion: advice ?? "Check the device's cable and `dmesg` for driver errors.", extra: extra)
        case .explained:
            preconditionFailure("DeviceFault.kind never is .explained")
        }
    }
}
