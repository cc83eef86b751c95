import Foundation
import Synchronization

/// A slider with an application's own meaning: a range, a stepped range, or a list of values. A person's change
/// sets `value` and calls the action on its queue; setting `value` in code changes what the slider shows and calls
/// no action, as Apple's.
///
/// Threading: thread safe.
open class AVCaptureSlider: AVCaptureControl, @unchecked Sendable {
    /// The slider's name, shown beside it.
    public let localizedTitle: String
    /// The SF Symbol name Apple shows; kept for the renderers, which show the title.
    public let symbolName: String
    private let allowed: Allowed
    private let state: Mutex<State>
    private let action = ControlAction<Float>()

    private enum Allowed {
        case range(ClosedRange<Float>, step: Float?)
        case values([Float])
    }

    private struct State {
        var value: Float
        var valueFormat: String?
        var prominentValues: [Float] = []
        var accessibilityIdentifier: String?
    }

    /// A slider over `range`, starting at its lower bound.
    public convenience init(_ localizedTitle: String, symbolName: String, in range: ClosedRange<Float>) {
        self.init(localizedTitle, symbolName, .range(range, step: nil), start: range.lowerBound)
    }

    /// A slider over `range` in steps of `step` from the lower bound.
    public convenience init(_ localizedTitle: String, symbolName: String, in range: ClosedRange<Float>, step: Float) {
        self.init(localizedTitle, symbolName, .range(range, step: step > 0 ? step : nil), start: range.lowerBound)
    }

    /// A slider over the given values, in order, starting at the first.
    public convenience init(_ localizedTitle: String, symbolName: String, values: [Float]) {
        let sorted = values.sorted()
        self.init(localizedTitle, symbolName, .values(sorted), start: sorted.first ?? 0)
    }

    private init(_ localizedTitle: String, _ symbolName: String, _ allowed: Allowed, start: Float) {
        self.localizedTitle = localizedTitle
        self.symbolName = symbolName
        self.allowed = allowed
        state = Mutex(State(value: start))
        super.init()
    }

    /// The value shown. Setting it moves the slider to the nearest allowed value and calls no action.
    open var value: Float {
        get { state.withLock { $0.value } }
        set {
            let allowed = nearestAllowed(newValue)
            state.withLock { $0.value = allowed }
        }
    }

    /// A format for the value with one `%@`-style or `%f`-style placeholder (Apple's), or nil.
    open var localizedValueFormat: String? {
        get { state.withLock { $0.valueFormat } }
        set { state.withLock { $0.valueFormat = newValue } }
    }

    /// Values the slider marks.
    open var prominentValues: [Float] {
        get { state.withLock { $0.prominentValues } }
        set { state.withLock { $0.prominentValues = newValue } }
    }

    /// An identifier for accessibility and UI tests.
    open var accessibilityIdentifier: String? {
        get { state.withLock { $0.accessibilityIdentifier } }
        set { state.withLock { $0.accessibilityIdentifier = newValue } }
    }

    /// Calls `action` on `actionQueue` with the new value whenever a person moves the slider.
    open func setActionQueue(_ actionQueue: DispatchQueue, action: @escaping (Float) -> Void) {
        self.action.set(queue: actionQueue, action: action)
    }

    /// Ours: a person moved the slider to `newValue` (what a renderer calls). Ignored when the slider is disabled or
    /// in no session; otherwise sets the nearest allowed value and calls the action with it.
    public func userDidSetValue(_ newValue: Float) {
        guard acceptsUserChanges else { return }
        let allowed = nearestAllowed(newValue)
        state.withLock { $0.value = allowed }
        action.fire(allowed)
    }

    /// The range a renderer draws: the range, or the first and last values.
    public var valueBounds: ClosedRange<Float> {
        switch allowed {
        case .range(let range, _): range
        case .values(let values): (values.first ?? 0)...(values.last ?? 0)
        }
    }

    override func makeAppearance() -> CaptureControlAppearance? {
        let bounds = valueBounds
        var step: Double?
        if case .range(_, let rangeStep) = allowed, let rangeStep { step = Double(rangeStep) }
        let (value, format) = state.withLock { ($0.value, $0.valueFormat) }
        return CaptureControlAppearance(
            kind: .slider, title: localizedTitle, minimum: Double(bounds.lowerBound),
            maximum: Double(bounds.upperBound), step: step, value: Double(value),
            valueText: Self.text(of: value, format: format), isEnabled: acceptsUserChanges)
    }

    override func applyAppearanceValue(_ value: Double) { userDidSetValue(Float(value)) }

    /// The value through `localizedValueFormat`: its `%@` replaced by the number, or a printf format (`%.1f`) given
    /// the number; the plain number without one.
    static func text(of value: Float, format: String?) -> String {
        let number = CaptureControlAppearance.shortNumber(Double(value))
        guard let format, format.contains("%") else { return number }
        if format.contains("%@") { return format.replacingOccurrences(of: "%@", with: number) }
        return String(format: format, Double(value))
    }

    /// The allowed value nearest `value`.
    private func nearestAllowed(_ value: Float) -> Float {
        switch allowed {
        case .range(let range, let step):
            let clamped = min(max(value.isNaN ? range.lowerBound : value, range.lowerBound), range.upperBound)
            guard let step else { return clamped }
            let steps = ((clamped - range.lowerBound) / step).rounded()
            return min(range.lowerBound + steps * step, range.upperBound)
        case .values(let values):
            return values.min { abs($0 - value) < abs($1 - value) } ?? value
        }
    }
}
