import Logging
import Synchronization

/// Calls that break a rule Apple states but does not enforce with an exception (an unmatched
/// `commitConfiguration()`, a preferred camera that is a microphone): we do what Apple does and say so once.
///
/// Apple's frameworks tolerate these calls silently; shipping apps make them (QRCodeReader.swift commits without
/// beginning in every `init`), so a trap would crash code that runs on iOS. The warning goes to swift-log's
/// `OpenAVCapture` logger, once per kind of misuse per process, so a loop of the same call does not flood the log.
///
/// Thread-safe: callable from any thread.
package enum ToleratedMisuse {
    /// The kinds of misuse reported so far in this process, in the order they were first reported.
    private static let seen = Mutex<[String]>([])
    private static let logger = Logger(label: "OpenAVCapture")

    /// Logs `message` at warning level the first time `kind` is reported; later reports of `kind` are silent.
    package static func report(_ kind: String, _ message: @autoclosure () -> String) {
        let first = seen.withLock { seen -> Bool in
            guard !seen.contains(kind) else { return false }
            seen.append(kind)
            return true
        }
        guard first else { return }
        logger.warning("\(message()) (tolerated as Apple does; reported once per process)", metadata: ["misuse": "\(kind)"])
    }

    /// The kinds reported so far, for tests that check a tolerated call was noticed.
    package static var reportedKinds: [String] { seen.withLock { $0 } }
}
