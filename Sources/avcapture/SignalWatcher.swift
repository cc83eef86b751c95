import Dispatch
import Foundation

/// Turns SIGINT/SIGTERM (stop) and SIGUSR1 (toggle pause) into calls on a queue, instead of killing the process,
/// so a recording always ends with a finalized file.
final class SignalWatcher: @unchecked Sendable {
    private var sources: [any DispatchSourceSignal] = []
    private let queue = DispatchQueue(label: "avcapture.signals")

    init(
        stop: @escaping @Sendable (Int32) -> Void, togglePause: (@Sendable () -> Void)? = nil,
        trigger: (@Sendable () -> Void)? = nil
    ) {
        var handlers: [(Int32, @Sendable () -> Void)] = [(SIGINT, { stop(SIGINT) }), (SIGTERM, { stop(SIGTERM) })]
        if let togglePause { handlers.append((SIGUSR1, togglePause)) }
        // SIGUSR2: a pre-event recording's trigger.
        if let trigger { handlers.append((SIGUSR2, trigger)) }
        for (number, handler) in handlers {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler(handler: handler)
            source.resume()
            sources.append(source)
        }
    }

    deinit { sources.forEach { $0.cancel() } }
}
