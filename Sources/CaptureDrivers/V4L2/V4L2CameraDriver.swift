import Foundation
import Synchronization
import SystemPackage

/// A device node this user may not open: discovery cannot describe it, but authorization must say `.denied` and
/// what to do.
///
/// Value type; safe to use from any thread.
package struct InaccessibleDevice: Sendable, Hashable {
    package var path: String
    package var media: DeviceMedia
    /// What to do: the group to join.
    package var advice: String

    package init(path: String, media: DeviceMedia, advice: String) {
        self.path = path
        self.media = media
        self.advice = advice
    }
}

/// The V4L2 cameras: every streaming video capture node under `/sys/class/video4linux`, single- or multi-planar
/// (metadata, output and radio nodes are left out), each a `V4L2Camera`.
///
/// Discovery rescans sysfs each time it is asked (a directory listing; only new nodes are opened), so a camera
/// plugged in shows up at once; the hot-plug monitor (`DeviceHotPlugMonitor`) calls `rescan()` on uevents so the
/// registry reports arrivals and departures as they happen. A camera keeps its backend object while its node
/// exists; one that comes back at the same node is the same object again.
///
/// Threading: thread safe; a mutex guards the table of nodes.
package final class V4L2CameraDriver: CaptureDriver {
    /// The driver `DeviceRegistry.shared` lists; it follows hot-plug events once discovery first runs.
    package static let shared = V4L2CameraDriver(hotPlugMonitor: .shared)

    private let system: SystemCalls
    private let sysfsRoot: String
    private let deviceRoot: String
    private let diagnosis: DeviceNodeDiagnosis
    private let registry: DeviceRegistry?
    private let hotPlugMonitor: DeviceHotPlugMonitor?
    private let isMonitoring = Atomic<Bool>(false)

    private enum Node {
        case camera(V4L2Camera)
        /// Opened and found not to be a capture node: never opened again while it exists.
        case other
        case inaccessible(InaccessibleDevice)
    }

    /// By node name (`video0`); nodes that went away stay (disconnected) so a replug finds the same object.
    private let nodes = Mutex<[String: Node]>([:])
    /// Serializes rescans, so two threads never open one new node twice.
    private let scanning = Mutex<Void>(())
    private let hasScanned = Atomic<Bool>(false)

    /// A driver reading `sysfsRoot` (normally `/sys/class/video4linux`) and opening nodes under `deviceRoot`
    /// through `system`; cameras report to `registry` (nil: `DeviceRegistry.shared`).
    package init(
        system: SystemCalls = .live, sysfsRoot: String = "/sys/class/video4linux", deviceRoot: String = "/dev",
        diagnosis: DeviceNodeDiagnosis = DeviceNodeDiagnosis(), registry: DeviceRegistry? = nil,
        hotPlugMonitor: DeviceHotPlugMonitor? = nil
    ) {
        self.hotPlugMonitor = hotPlugMonitor
        self.system = system
        self.sysfsRoot = sysfsRoot
        self.deviceRoot = deviceRoot
        self.diagnosis = diagnosis
        self.registry = registry
    }

    package var origin: DeviceOrigin { .real }
    package var family: DriverFamily { .raw }

    /// The connected cameras, in node order.
    package func discoverDevices() -> [any CaptureBackend] {
        startMonitoring()
        rescan()
        return cameras().filter(\.isConnected)
    }

    /// Every camera seen, connected or not, in node order.
    package func cameras() -> [V4L2Camera] {
        nodes.withLock { nodes in
            nodes.sorted { Self.nodeNumber($0.key) < Self.nodeNumber($1.key) }.compactMap { _, node in
                if case .camera(let camera) = node { camera } else { nil }
            }
        }
    }

    /// From the first discovery on, every `video4linux` uevent rescans (the registry then reports what changed).
    private func startMonitoring() {
        guard let hotPlugMonitor, !isMonitoring.exchange(true, ordering: .relaxed) else { return }
        hotPlugMonitor.addHandler(subsystem: "video4linux") { [weak self] _ in self?.rescan() }
    }

    /// Nodes this user may not open.
    package func inaccessibleDevices() -> [InaccessibleDevice] {
        rescan()
        return nodes.withLock { nodes in
            nodes.values.compactMap { node in if case .inaccessible(let device) = node { device } else { nil } }
        }
    }

    /// Reads sysfs again: opens nodes not seen before, marks cameras whose node went away disconnected and cameras
    /// whose node came back connected (each reports to the registry).
    package func rescan() {
        let (gone, back, arrived) = scanning.withLock { _ -> ([V4L2Camera], [V4L2Camera], [V4L2Camera]) in
            let present = Set(
                ((try? FileManager.default.contentsOfDirectory(atPath: sysfsRoot)) ?? []).filter { $0.hasPrefix("video") })
            let known = nodes.withLock { $0 }
            // The first scan is discovery, not an arrival: nobody is told of cameras that were there all along.
            let isFirstScan = !hasScanned.exchange(true, ordering: .relaxed)
            var gone: [V4L2Camera] = []
            var back: [V4L2Camera] = []
            var arrived: [V4L2Camera] = []
            for (name, node) in known where !present.contains(name) {
                switch node {
                case .camera(let camera): gone.append(camera)
                case .other, .inaccessible: nodes.withLock { _ = $0.removeValue(forKey: name) }
                }
            }
            for name in present {
                switch known[name] {
                case .camera(let camera):
                    guard !camera.isConnected else { continue }
                    // Back at the same node: the same camera comes back as the same object (a session waiting
                    // for it resumes); another camera there is a new one.
                    switch describe(name) {
                    case .camera(let fresh)
                    where fresh.identity == camera.identity && fresh.formats == camera.formats:
                        back.append(camera)
                    case .some(let node):
                        nodes.withLock { $0[name] = node }
                        if case .camera(let fresh) = node { arrived.append(fresh) }
                    case nil:
                        continue
                    }
                case .other:
                    continue
                case .inaccessible, nil:
                    guard let node = describe(name) else { continue }
                    nodes.withLock { $0[name] = node }
                    if !isFirstScan, case .camera(let camera) = node { arrived.append(camera) }
                }
            }
            return (gone, back, arrived)
        }
        // Outside both locks: the registry's listeners may call back into discovery, and so into `rescan` (a
        // discovery session's observers read its devices when told of a change: that re-entry trapped here).
        for camera in gone { camera.markDisconnected() }
        for camera in back { camera.markConnected() }
        for camera in arrived { camera.announceArrival() }
    }

    /// Opens a node and makes what it is.
    private func describe(_ name: String) -> Node? {
        let location = self.location(of: name)
        do {
            guard let description = try V4L2DeviceDescription.read(location, system: system) else { return .other }
            return .camera(
                V4L2Camera(
                    path: location.path, description: description, system: system, diagnosis: diagnosis,
                    registry: registry, usb: USBTopology(videoNodeRoot: sysfsRoot).attachment(ofVideoNode: name)))
        } catch .permissionDenied {
            return .inaccessible(
                InaccessibleDevice(path: location.path, media: .video, advice: diagnosis.accessAdvice(for: location.path)))
        } catch {
            // Gone while we looked (ENOENT, ENODEV), or busy being set up by udev: the next rescan tries again.
            return nil
        }
    }

    /// The node's sysfs facts and udev's stable names for it.
    private func location(of name: String) -> V4L2NodeLocation {
        let files = FileManager.default
        let sysfs = "\(sysfsRoot)/\(name)"
        func read(_ path: String) -> String? {
            (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let path = "\(deviceRoot)/\(name)"
        var location = V4L2NodeLocation(name: name, path: path, index: Int(read("\(sysfs)/index") ?? "") ?? 0)
        for folder in ["by-id", "by-path"] {
            let directory = "\(deviceRoot)/v4l/\(folder)"
            let links = ((try? files.contentsOfDirectory(atPath: directory)) ?? []).sorted()
            if let link = links.first(where: { link in
                (try? files.destinationOfSymbolicLink(atPath: "\(directory)/\(link)"))
                    .map { ($0 as NSString).lastPathComponent == name } ?? false
            }) {
                location.stableName = "\(folder)/\(link)"
                break
            }
        }
        // A USB camera's node hangs off an interface; the USB device (idVendor, idProduct) is its parent.
        let device = URL(fileURLWithPath: "\(sysfs)/device").resolvingSymlinksInPath()
        let usb = device.deletingLastPathComponent().path
        if let vendor = read("\(usb)/idVendor"), let product = read("\(usb)/idProduct") {
            location.usbVendorID = vendor
            location.usbProductID = product
            location.usbManufacturer = read("\(usb)/manufacturer")
        }
        return location
    }

    private static func nodeNumber(_ name: String) -> Int { Int(name.dropFirst("video".count)) ?? Int.max }
}
