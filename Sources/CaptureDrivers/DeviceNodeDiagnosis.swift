import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Explains why a device node cannot be used, in words that say what to do: which process holds it (EBUSY), which
/// group to join (EACCES), why a USB camera refused a format and which cameras share its bus (ENOSPC). Every device
/// driver with a `/dev` node shares it.
///
/// Value type; safe to use from any thread. Reads `/proc`, sysfs and the node's metadata; no device calls.
package struct DeviceNodeDiagnosis: Sendable {
    /// Where processes are listed: `/proc`, or a test's stand-in.
    package var processRoot: String
    /// This process, left out of "who holds it".
    package var ownProcessID: Int32
    /// Where V4L2 nodes are listed: `/sys/class/video4linux`, or a test's stand-in (for who shares a USB bus).
    package var videoNodeRoot: String

    package init(
        processRoot: String = "/proc", ownProcessID: Int32 = getpid(),
        videoNodeRoot: String = "/sys/class/video4linux"
    ) {
        self.processRoot = processRoot
        self.ownProcessID = ownProcessID
        self.videoNodeRoot = videoNodeRoot
    }

    /// A process that has a device node open.
    package struct Holder: Sendable, Hashable, CustomStringConvertible {
        package var processID: Int32
        package var command: String
        package var description: String { "\(command) (pid \(processID))" }
    }

    /// The other processes with `path` open, from the `/proc/*/fd` links (only those this user may read: another
    /// user's processes stay hidden unless we are root).
    package func holders(of path: String) -> [Holder] {
        let files = FileManager.default
        let target = (try? files.destinationOfSymbolicLink(atPath: path)).map {
            $0.hasPrefix("/") ? $0 : (path as NSString).deletingLastPathComponent + "/" + $0
        } ?? path
        guard let entries = try? files.contentsOfDirectory(atPath: processRoot) else { return [] }
        var holders: [Holder] = []
        for entry in entries {
            guard let processID = Int32(entry), processID != ownProcessID else { continue }
            let descriptors = "\(processRoot)/\(entry)/fd"
            guard let fds = try? files.contentsOfDirectory(atPath: descriptors) else { continue }
            let holds = fds.contains { fd in
                guard let link = try? files.destinationOfSymbolicLink(atPath: "\(descriptors)/\(fd)") else {
                    return false
                }
                return link == path || link == target
            }
            guard holds else { continue }
            let command =
                (try? String(contentsOfFile: "\(processRoot)/\(entry)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
            holders.append(Holder(processID: processID, command: command))
        }
        return holders.sorted { $0.processID < $1.processID }
    }

    /// What to do when another program holds `path`.
    package func busyAdvice(for path: String) -> String {
        let holders = holders(of: path)
        guard !holders.isEmpty else {
            if DeviceNodeDiagnosis(processRoot: processRoot, ownProcessID: -1).holders(of: path)
                .contains(where: { $0.processID == ownProcessID })
            {
                return "This process already streams from \(path) (another session or capture object has it); "
                    + "stop that one first."
            }
            return "Another program is using \(path); close it (`fuser -v \(path)` names it) and try again."
        }
        let names = holders.map(\.description).joined(separator: ", ")
        return "\(path) is held by \(names); close \(holders.count == 1 ? "it" : "them") and try again."
    }

    /// The group that owns `path`, when the node's group may read and write it (as `video` and `audio` may).
    package func owningGroup(of path: String) -> String? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        guard status.st_mode & (S_IRGRP | S_IWGRP) == (S_IRGRP | S_IWGRP) else { return nil }
        return groupName(status.st_gid)
    }

    /// What to do when this user may not open `path`.
    package func accessAdvice(for path: String) -> String {
        guard let group = owningGroup(of: path) else {
            return "This user may not open \(path); ask an administrator to grant access to it."
        }
        return "This user may not open \(path): add it to the group `\(group)` (`sudo usermod -aG \(group) $USER`), "
            + "then log in again."
    }

    /// What to do when a USB camera refused to stream a format (ENOSPC on STREAMON). With the camera's bus
    /// demand (`demand`), the advice names the bus, what the format reserves of it, and the other cameras on it
    /// with their nodes and the processes streaming from them (`USBBusSharing`).
    package func bandwidthAdvice(
        for path: String, format: String, isCompressed: Bool = false, demand: USBBusDemand? = nil
    ) -> String {
        let raw = format.split(separator: " ").first.map(String.init) ?? "raw video"
        let remedy =
            isCompressed
            ? "choose a smaller size or a lower frame rate"
            : "choose MJPEG instead of \(raw), or a smaller size or a lower frame rate"
        guard let demand else {
            return "The USB bus has too little bandwidth left for \(format) from \(path) (ENOSPC on STREAMON): "
                + "\(remedy), or plug the camera into another USB controller, away from other cameras."
        }
        let sharing = USBBusSharing(
            bus: demand.bus, ownPort: demand.port, topology: USBTopology(videoNodeRoot: videoNodeRoot),
            diagnosis: self)
        return "\(demand.bus) has too little periodic bandwidth left for \(format) from \(path) at port "
            + "\(demand.port) (ENOSPC on STREAMON): \(USBBusSharing.reservation(of: demand)). \(sharing.summary) "
            + "To fix it: \(remedy)\(sharing.others.isEmpty ? "" : " on one of the cameras"), or plug "
            + "\(sharing.others.isEmpty ? "the camera" : "one of them") into a port on another bus (`lsusb -t` shows "
            + "which ports share a bus)."
    }

    private func groupName(_ gid: gid_t) -> String? {
        var group = group()
        var result: UnsafeMutablePointer<group>?
        var storage = [CChar](repeating: 0, count: 4096)
        guard getgrgid_r(gid, &group, &storage, storage.count, &result) == 0, result != nil, let name = group.gr_name
        else { return nil }
        return String(cString: name)
    }
}
