import Foundation

/// Ours: what a renderer shows of an `AVCaptureControl` (the preview window's slider, the web page's range input)
/// and the scale a person moves it on. Apple draws controls itself; Linux renderers draw them from this, so a slider,
/// a system slider and a picker look and move alike.
///
/// Threading: value type; safe to use from any thread.
public struct CaptureControlAppearance: Sendable, Equatable {
    /// What kind of control it is.
    public enum Kind: String, Sendable, Equatable {
        /// Any value between `minimum` and `maximum` (on `step` when there is one).
        case slider
        /// One of the indexes `minimum ... maximum`, each titled (`valueText` is the chosen one's title).
        case picker
    }

    /// A slider or a picker.
    public var kind: Kind
    /// The name shown beside the control.
    public var title: String
    /// The value at the control's start (a picker's first index).
    public var minimum: Double
    /// The value at the control's end (a picker's last index).
    public var maximum: Double
    /// The distance between allowed values, or nil when any value in range is allowed.
    public var step: Double?
    /// The value shown now.
    public var value: Double
    /// The value as text ("2.0x", "+0.7 EV", a picker's title).
    public var valueText: String
    /// Whether a person's change counts (enabled, and the session has a controls delegate).
    public var isEnabled: Bool

    /// An appearance with these parts; a `maximum` below `minimum` is taken as `minimum`.
    public init(
        kind: Kind, title: String, minimum: Double, maximum: Double, step: Double?, value: Double,
        valueText: String, isEnabled: Bool
    ) {
        (self.kind, self.title, self.minimum, self.maximum) = (kind, title, minimum, max(minimum, maximum))
        (self.step, self.value, self.valueText, self.isEnabled) = (step, value, valueText, isEnabled)
    }

    /// Where the value lies along the control, 0 (minimum) ... 1 (maximum).
    public var fraction: Double {
        guard maximum > minimum else { return 0 }
        return min(1, max(0, (value - minimum) / (maximum - minimum)))
    }

    /// The value at `fraction` of the way along the control (clamped to 0 ... 1).
    public func value(atFraction fraction: Double) -> Double {
        let clamped = fraction.isNaN ? 0 : min(1, max(0, fraction))
        return minimum + clamped * (maximum - minimum)
    }

    /// The value one step up (`steps` > 0) or down from the current one: the control's step, or a twentieth of
    /// its range where it has none. Clamped to the range.
    public func value(movedBy steps: Int) -> Double {
        let unit = step ?? (maximum - minimum) / 20
        return min(maximum, max(minimum, value + Double(steps) * unit))
    }

    /// Numbers as people read them: at most two decimals, no trailing zeros ("2", "0.25", "1.5").
    static func shortNumber(_ value: Double) -> String {
        var text = String(format: "%.2f", value)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text == "-0" ? "0" : text
    }
}

extension AVCaptureControl {
    /// Ours: what a renderer shows of the control, read now; nil for a kind of control no renderer shows.
    public var appearance: CaptureControlAppearance? { makeAppearance() }

    /// Ours: a person moved the control to `value` on its appearance's scale (a picker's index for a picker); what
    /// a renderer calls. Goes through the control's own `userDid…` method, so it is ignored where that one ignores
    /// it (disabled, in no session, no controls delegate).
    public func userDidSetAppearanceValue(_ value: Double) {
        guard !value.isNaN else { return }
        applyAppearanceValue(value)
    }
}
