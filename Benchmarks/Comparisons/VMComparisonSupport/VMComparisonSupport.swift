// What the comparisons run inside the test VM share (PipeWireOverhead, USBWebcamOverhead): finding the camera once
// discovery lists it, this process's CPU clock (in all and by thread), and how a run gives up.

import Foundation
import OpenAVCapture

/// Stops the program with `message` on standard error, prefixed with the program's name.
public func fail(_ message: String) -> Never {
    let program = CommandLine.arguments.first.map { URL(fileURLWithPath: $0).lastPathComponent } ?? "comparison"
    FileHandle.standardError.write(Data("\(program): \(message)\n".utf8))
    exit(1)
}

/// CPU seconds of every thread of this process so far (CLOCK_PROCESS_CPUTIME_ID).
public func processCPU() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// The first camera `matches` accepts, waiting up to ten seconds for discovery to list it (an emulated USB device
/// may still be enumerating, a PipeWire node still being published); fails the run with `missing` otherwise.
public func waitForCamera(_ missing: String, where matches: (AVCaptureDevice) -> Bool) -> AVCaptureDevice {
    for _ in 0..<100 {
        let cameras = AVCaptureDevice.DiscoverySession(
            deviceTypes: [.external, .builtInWideAngleCamera], mediaType: .video, position: .unspecified
        ).devices
        if let camera = cameras.first(where: matches) { return camera }
        // Real time must pass: the device appears when the kernel or the daemon is done with it.
        usleep(100_000)
    }
    fail(missing)
}

/// Per thread of this process: its name, CPU seconds (utime + stime) and context switches so far, to show where the
/// CPU goes (printed as the difference over the measured window).
public struct ThreadSample: Sendable {
    public var cpu: Double
    public var switches: Int

    public init(cpu: Double, switches: Int) {
        self.cpu = cpu
        self.switches = switches
    }
}

/// Every thread of this process now, keyed by name and thread id.
public func threadSamples() -> [String: ThreadSample] {
    var result: [String: ThreadSample] = [:]
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    for tid in tasks {
        guard let comm = try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8),
            let stat = try? String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8),
            let status = try? String(contentsOfFile: "/proc/self/task/\(tid)/status", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { continue }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { continue }
        // voluntary_ctxt_switches and nonvoluntary_ctxt_switches, summed.
        let switches = status.split(separator: "\n").filter { $0.contains("ctxt_switches:") }
            .compactMap { $0.split(separator: ":").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } }
            .reduce(0, +)
        let name = "\(comm.trimmingCharacters(in: .whitespacesAndNewlines))#\(tid)"
        result[name] = ThreadSample(cpu: (user + system) / Double(sysconf(Int32(_SC_CLK_TCK))), switches: switches)
    }
    return result
}
