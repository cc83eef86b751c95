import Foundation
import OpenAVCapture
import Synchronization

/// A metadata output delegate that records every delivery and lets a test wait for codes; it can hold the delegate
/// queue on its first delivery until released, to play a slow consumer.
public final class MetadataRecorder: NSObject, AVCaptureMetadataOutputObjectsDelegate, @unchecked Sendable {
    public struct Delivery: Sendable {
        public let objects: [Code]
    }

    /// What a test checks of one object.
    public struct Code: Sendable {
        public let type: AVMetadataObject.ObjectType
        public let text: String?
        public let corners: [CGPoint]
        public let bounds: CGRect
        public let time: CMTime
    }

    private let deliveries = Mutex<[Delivery]>([])
    private let arrivals = DispatchSemaphore(value: 0)
    private let holdsFirst: Bool
    private let release = DispatchSemaphore(value: 0)
    /// The objects themselves, last delivery, for the coordinate conversions.
    private let lastObjects = Mutex<[AVMetadataObject]>([])

    public init(holdingFirstDelivery: Bool = false) {
        holdsFirst = holdingFirstDelivery
    }

    public func metadataOutput(
        _ output: AVCaptureMetadataOutput, didOutput metadataObjects: [AVMetadataObject],
        from connection: AVCaptureConnection
    ) {
        let codes = metadataObjects.map { object in
            let code = object as? AVMetadataMachineReadableCodeObject
            return Code(
                type: object.type, text: code?.stringValue, corners: code?.corners ?? [], bounds: object.bounds,
                time: object.time)
        }
        lastObjects.withLock { $0 = metadataObjects }
        let isFirst = deliveries.withLock { deliveries in
            deliveries.append(Delivery(objects: codes))
            return deliveries.count == 1
        }
        arrivals.signal()
        if holdsFirst && isFirst { release.wait() }
    }

    /// Lets a held first delivery return.
    public func releaseFirstDelivery() { release.signal() }

    public var received: [Delivery] { deliveries.withLock { $0 } }
    public var lastMetadataObjects: [AVMetadataObject] { lastObjects.withLock { $0 } }

    /// Waits until a delivery holds an object, or the timeout passes; returns the first such object.
    public func waitForCode(timeout: TimeInterval = 15) -> Code? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let code = received.lazy.flatMap(\.objects).first { return code }
            guard arrivals.wait(timeout: .now() + max(0, deadline.timeIntervalSinceNow)) == .success else {
                return received.lazy.flatMap(\.objects).first
            }
        }
    }
}
