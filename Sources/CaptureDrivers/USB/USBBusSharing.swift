/// Who else is on a USB bus a camera could not stream on: the other cameras (by USB port) with their V4L2 nodes and
/// the processes streaming from those nodes, in words for an error message.
///
/// Value type; safe to use from any thread. Reads sysfs and `/proc` once, when made.
package struct USBBusSharing: Sendable {
    /// Another camera on the bus.
    package struct Camera: Sendable, Hashable, CustomStringConvertible {
        /// Its product or card name.
        package var name: String
        package var port: String
        /// Its V4L2 nodes (`/dev/video2`).
        package var nodes: [String]
        /// The processes that have one of them open ("this process" for our own).
        package var users: [String]

        package var description: String {
            let using = users.isEmpty ? "" : ", open in \(users.joined(separator: ", "))"
            return "\(name) (\(nodes.joined(separator: ", ")), port \(port)\(using))"
        }
    }

    package let bus: USBBusDemand.Bus
    /// The other cameras on the bus, in port order.
    package let others: [Camera]

    /// The cameras on `bus` other than the one at `ownPort`, read from `topology`; their users from `diagnosis`.
    package init(bus: USBBusDemand.Bus, ownPort: String, topology: USBTopology, diagnosis: DeviceNodeDiagnosis) {
        self.bus = bus
        var byPort: [String: Camera] = [:]
        let everyone = DeviceNodeDiagnosis(
            processRoot: diagnosis.processRoot, ownProcessID: -1, videoNodeRoot: diagnosis.videoNodeRoot)
        for node in topology.videoNodes(onBus: bus.number, speed: bus.speed) where node.attachment.port != ownPort {
            let path = "/dev/\(node.node)"
            let name = node.attachment.product ?? node.card ?? "a USB camera"
            var camera =
                byPort[node.attachment.port] ?? Camera(name: name, port: node.attachment.port, nodes: [], users: [])
            camera.nodes.append(path)
            for holder in everyone.holders(of: path) {
                let user = holder.processID == diagnosis.ownProcessID ? "this process" : holder.description
                if !camera.users.contains(user) { camera.users.append(user) }
            }
            byPort[node.attachment.port] = camera
        }
        others = byPort.values.sorted { $0.port < $1.port }
    }

    /// "The bus also carries …", or that no other camera is on it.
    package var summary: String {
        guard !others.isEmpty else {
            return "No other camera is on \(bus); another USB device there (a sound card, a disk) holds the rest."
        }
        return "\(bus) also carries \(others.map(\.description).joined(separator: "; "))."
    }

    /// What the format reserves: "it needs alternate setting 7 (3 × 896 bytes), 54 µs of the 100 µs of every
    /// 125 µs microframe the bus may reserve (54 %)".
    package static func reservation(of demand: USBBusDemand) -> String {
        let speed = demand.bus.speed
        let interval = speed == .full ? "1 ms frame" : "125 µs microframe"
        let used = Int(demand.reservedMicroseconds.rounded())
        let budget = Int(speed.periodicBudgetMicroseconds.rounded())
        let percent = Int((demand.share * 100).rounded())
        let setting: String
        if let alternate = demand.alternate {
            setting =
                "alternate setting \(alternate.alternate) (\(alternate.transactionsPerInterval) × "
                + "\(alternate.packetSize) bytes)"
        } else {
            setting = "about \(Int(demand.payloadBytesPerInterval.rounded())) bytes per interval"
        }
        return "this format needs \(setting), \(used) µs of the \(budget) µs of every \(interval) the bus may "
            + "reserve (\(percent) %)"
    }
}
