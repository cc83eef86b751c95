import ArgumentParser
import Foundation

/// The exit statuses avcapture uses, from BSD's sysexits.h, so scripts can tell a typo from a busy camera.
enum ExitStatus: Int32, CaseIterable {
    /// The command line is wrong: unknown option, conflicting options, impossible format, unknown extension.
    case usage = 64
    /// An input file is not media that can be played: not a media file, or no track with a codec we decode.
    case dataError = 65
    /// An input file does not exist or cannot be read (`probe`, a `file:` device).
    case noInput = 66
    /// The device is unknown, busy, unplugged or not permitted.
    case unavailable = 69
    /// The output cannot be created: it exists (without --overwrite) or its directory is not writable.
    case cannotCreate = 73
    /// Reading or writing failed while capturing (disk full, device error mid-recording).
    case ioError = 74

    var meaning: String {
        switch self {
        case .usage: "usage error: bad option, conflicting options, impossible format, unknown extension"
        case .dataError: "bad input data: the file is not media, or no track of it can be played"
        case .noInput: "no input: the file to read does not exist or cannot be read"
        case .unavailable: "device unavailable: unknown, busy, unplugged or not permitted"
        case .cannotCreate: "cannot create output: the file exists (use --overwrite) or the directory is not writable"
        case .ioError: "I/O error while capturing: disk full, device failure mid-recording"
        }
    }

    /// The table `--help` shows.
    static var helpText: String {
        "Exit status: 0 success; " + allCases.map { "\($0.rawValue) \($0.meaning)" }.joined(separator: "; ") + "."
    }
}

/// A failure with one line that says what to do, and the exit status that classifies it.
struct ToolFailure: Error, CustomStringConvertible {
    let status: ExitStatus
    let message: String

    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    var description: String { message }
}

extension ParsableCommand {
    /// Runs `body`; a ToolFailure prints its line on stderr and exits with its status.
    func reportingFailures(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch let failure as ToolFailure {
            Terminal.error("avcapture: \(failure.message)")
            throw ExitCode(failure.status.rawValue)
        }
    }
}

/// Standard output and error, and whether they are terminals.
enum Terminal {
    static let standardErrorIsTerminal = isatty(STDERR_FILENO) == 1
    static let standardOutputIsTerminal = isatty(STDOUT_FILENO) == 1

    static func error(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// Replaces the current terminal line on stderr (a live status); plain lines when stderr is not a terminal.
    static func status(_ line: String) {
        if standardErrorIsTerminal {
            FileHandle.standardError.write(Data(("\r\u{1B}[2K" + line).utf8))
        } else {
            error(line)
        }
    }

    /// Ends a live status line so what follows starts on a new line.
    static func endStatus() {
        if standardErrorIsTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
