import Foundation
import Synchronization

/// A picker of one of several indexes, each with a title. A person's choice sets `selectedIndex` and calls the
/// action on its queue; setting `selectedIndex` in code calls no action, as Apple's.
///
/// Threading: thread safe.
open class AVCaptureIndexPicker: AVCaptureControl, @unchecked Sendable {
    /// The picker's name.
    public let localizedTitle: String
    /// The SF Symbol name Apple shows; kept for the renderers, which show the title.
    public let symbolName: String
    /// The titles of the indexes, in order.
    public let localizedIndexTitles: [String]
    private let state = Mutex((selected: 0, accessibilityIdentifier: String?.none))
    private let action = ControlAction<Int>()

    /// A picker of `numberOfIndexes` indexes titled by their numbers.
    public convenience init(_ localizedTitle: String, symbolName: String, numberOfIndexes: Int) {
        self.init(localizedTitle, symbolName: symbolName, numberOfIndexes: numberOfIndexes) { "\($0)" }
    }

    /// A picker of `numberOfIndexes` indexes titled by `localizedTitleTransform`.
    public convenience init(
        _ localizedTitle: String, symbolName: String, numberOfIndexes: Int,
        localizedTitleTransform: @escaping (Int) -> String
    ) {
        self.init(
            localizedTitle, symbolName: symbolName,
            localizedIndexTitles: (0..<max(0, numberOfIndexes)).map(localizedTitleTransform))
    }

    /// A picker of the given titles.
    public init(_ localizedTitle: String, symbolName: String, localizedIndexTitles: [String]) {
        self.localizedTitle = localizedTitle
        self.symbolName = symbolName
        self.localizedIndexTitles = localizedIndexTitles
        super.init()
    }

    /// How many indexes there are.
    public var numberOfIndexes: Int { localizedIndexTitles.count }

    /// The index chosen. An index outside `0..<numberOfIndexes` is ignored and logged once (Apple documents no
    /// exception for it).
    open var selectedIndex: Int {
        get { state.withLock { $0.selected } }
        set {
            guard localizedIndexTitles.indices.contains(newValue) else {
                ToleratedMisuse.report(
                    "AVCaptureIndexPicker.selectedIndex",
                    "AVCaptureIndexPicker: selectedIndex \(newValue) is outside 0..<\(numberOfIndexes); ignored")
                return
            }
            state.withLock { $0.selected = newValue }
        }
    }

    /// An identifier for accessibility and UI tests.
    open var accessibilityIdentifier: String? {
        get { state.withLock { $0.accessibilityIdentifier } }
        set { state.withLock { $0.accessibilityIdentifier = newValue } }
    }

    /// Calls `action` on `actionQueue` with the chosen index whenever a person picks one.
    open func setActionQueue(_ actionQueue: DispatchQueue, action: @escaping (Int) -> Void) {
        self.action.set(queue: actionQueue, action: action)
    }

    /// Ours: a person picked `index` (what a renderer calls). Ignored when disabled, in no session, or out of range.
    public func userDidSelectIndex(_ index: Int) {
        guard acceptsUserChanges, localizedIndexTitles.indices.contains(index) else { return }
        state.withLock { $0.selected = index }
        action.fire(index)
    }

    override func makeAppearance() -> CaptureControlAppearance? {
        let index = selectedIndex
        let titles = localizedIndexTitles
        return CaptureControlAppearance(
            kind: .picker, title: localizedTitle, minimum: 0, maximum: Double(max(0, titles.count - 1)), step: 1,
            value: Double(index), valueText: titles.indices.contains(index) ? titles[index] : "",
            isEnabled: acceptsUserChanges)
    }

    override func applyAppearanceValue(_ value: Double) {
        guard value.isFinite, abs(value) < Double(Int.max) else { return }
        userDidSelectIndex(Int(value.rounded()))
    }
}
