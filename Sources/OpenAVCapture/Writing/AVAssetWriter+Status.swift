// AVAssetWriter.Status: the writer's life cycle, Apple's raw values.

import Foundation

extension AVAssetWriter {
    /// Where the writer is in its life cycle; Apple's raw values.
    ///
    /// Threading: a value; `Sendable`.
    public enum Status: Int, Sendable, CustomStringConvertible {
        /// Not started: inputs may still be added.
        case unknown = 0
        /// ``AVAssetWriter/startWriting()`` succeeded; samples may be appended.
        case writing = 1
        /// The file was finished.
        case completed = 2
        /// Writing failed; ``AVAssetWriter/error`` says why.
        case failed = 3
        /// ``AVAssetWriter/cancelWriting()`` was called.
        case cancelled = 4

        /// The status's name, as in messages.
        public var description: String {
            switch self {
            case .unknown: "unknown"
            case .writing: "writing"
            case .completed: "completed"
            case .failed: "failed"
            case .cancelled: "cancelled"
            }
        }
    }
}
