import Foundation

/// A linear-light RGB triple: reflectances, illuminant tints or white-balance gains.
///
/// Linear, not gamma-encoded: 0.18 is the 18 % grey card. Value type; safe from any thread.
package struct VirtualRGB: Sendable, Hashable {
    /// The red component.
    package var red: Double
    /// The green component.
    package var green: Double
    /// The blue component.
    package var blue: Double

    /// A triple of the three components.
    package init(red: Double, green: Double, blue: Double) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    /// A neutral triple whose three components are `value`.
    package init(gray value: Double) {
        self.init(red: value, green: value, blue: value)
    }

    /// The component-wise product, how a tint or a gain acts on a reflectance.
    package static func * (lhs: VirtualRGB, rhs: VirtualRGB) -> VirtualRGB {
        VirtualRGB(red: lhs.red * rhs.red, green: lhs.green * rhs.green, blue: lhs.blue * rhs.blue)
    }

    /// Every component scaled by `factor`.
    package static func * (lhs: VirtualRGB, factor: Double) -> VirtualRGB {
        VirtualRGB(red: lhs.red * factor, green: lhs.green * factor, blue: lhs.blue * factor)
    }
}

/// Which virtual camera looks at the scene.
///
/// Value type; safe from any thread.
package enum VirtualCameraPosition: Sendable, Hashable {
    /// "Virtual Back Camera": sees the scene as drawn.
    case back
    /// "Virtual Front Camera": sees the scene mirrored left to right (bars in reverse order, the object moving the
    /// other way), so a test can tell the two cameras apart from a frame. The frame-index code is never mirrored.
    case front
}

/// What the virtual cameras look at: the light, its colour, where the focus target stands, and the fixed drawing.
///
/// The drawing is in *scene units*: the frame height at zoom 1 is 1, the origin is the frame centre, x grows to
/// the right and y downwards, so a frame of aspect `A = width / height` spans x in `-A/2 ... A/2` and
/// y in `-1/2 ... 1/2` at zoom 1. From the top:
///
/// - y < −1/6: seven vertical colour bars that always fill the frame width at zoom 1 (each `A / 7` wide): white,
///   yellow, cyan, green, magenta, red, blue, at 75 % linear reflectance.
/// - the rest: 18 % grey (`grayReflectance`), on which
///   - a white disc (`objectReflectance`, diameter `objectDiameter`) moves left and right through the centre:
///     centre `(objectAmplitude · sin(2π t / objectPeriod), 0)` at device time `t` seconds;
///   - the focus target, vertical black and white stripes `focusStripePeriod` apart, spans
///     `focusTargetBounds`; its blur depends on the lens position;
///   - `grayPatchBounds` is a region of plain grey that neither the object nor the target ever covers.
///
/// Value type; safe from any thread.
package struct VirtualScene: Sendable, Hashable {
    /// The scene's light as a linear factor: 1 is the normal, well-lit scene; 0.5 is one stop darker.
    package var light: Double = 1
    /// The colour of the light falling on the scene, in linear RGB; neutral by default. White balance gains of
    /// `1 / illuminant` (normalised to green) make it neutral again.
    package var illuminant = VirtualRGB(gray: 1)
    /// The lens position (0 ... 1) at which the focus target is sharp.
    package var focusTargetLensPosition: Double = 0.5
    /// Which camera looks at the scene.
    package var camera: VirtualCameraPosition = .back
    /// A card held in front of the camera (a code a test shows), or none.
    package var card: VirtualCard?

    /// The normal scene, seen by the back camera.
    package init() {}

    /// The scene's light in exposure values relative to normal (`log2(light)`); +1 doubles the light.
    package var lightEV: Double {
        get { light > 0 ? log2(light) : -.infinity }
        set { light = exp2(newValue) }
    }

    // MARK: The drawing, in scene units.

    /// The bars' linear reflectances, left to right as the back camera sees them.
    package static let barReflectances: [VirtualRGB] = [
        VirtualRGB(red: 0.75, green: 0.75, blue: 0.75),
        VirtualRGB(red: 0.75, green: 0.75, blue: 0),
        VirtualRGB(red: 0, green: 0.75, blue: 0.75),
        VirtualRGB(red: 0, green: 0.75, blue: 0),
        VirtualRGB(red: 0.75, green: 0, blue: 0.75),
        VirtualRGB(red: 0.75, green: 0, blue: 0),
        VirtualRGB(red: 0, green: 0, blue: 0.75),
    ]
    /// Where the bars end and the grey begins (scene y).
    package static let barsBottom = -1.0 / 6.0
    /// The grey's linear reflectance: the 18 % grey card, which +1 EV cannot clip.
    package static let grayReflectance = 0.18
    /// The moving object's linear reflectance (neutral).
    package static let objectReflectance = 0.9
    /// The moving object's diameter; 0.2 of the frame height at zoom 1.
    package static let objectDiameter = 0.2
    /// How far the object's centre swings left and right of the frame centre.
    package static let objectAmplitude = 0.25
    /// The object's period of motion, in seconds.
    package static let objectPeriod = 4.0
    /// The focus target's extent: x from −0.25 to 0.25, y from 0.22 to 0.42.
    package static let focusTargetBounds = (minX: -0.25, maxX: 0.25, minY: 0.22, maxY: 0.42)
    /// The focus target's stripe period: a white stripe then a black one, each half as wide.
    package static let focusStripePeriod = 0.1
    /// The focus target's white and black linear reflectances.
    package static let focusStripeReflectances = (white: 0.9, black: 0.03)
    /// The width of the focus target's defocus blur per unit of lens-position error: the blur is a box
    /// `defocusBlurPerLensError · |lensPosition − focusTargetLensPosition|` wide (scene units), so at the worst
    /// error of 1 it spans 80 % of a stripe period and the stripes are nearly washed out.
    package static let defocusBlurPerLensError = 0.08

    /// A plain grey region left of the object's path, for measuring exposure and white balance, for a frame of
    /// `aspect` (width / height): x from `−aspect/2 + 0.03` to −0.38, y from −0.14 to 0.14.
    package static func grayPatchBounds(aspect: Double) -> (minX: Double, maxX: Double, minY: Double, maxY: Double) {
        (minX: -aspect / 2 + 0.03, maxX: -0.38, minY: -0.14, maxY: 0.14)
    }

    /// The moving object's centre at `seconds` on the device clock, in scene units as the back camera sees it.
    package static func objectCenter(atSeconds seconds: Double) -> (x: Double, y: Double) {
        (x: objectAmplitude * sin(2 * Double.pi * seconds / objectPeriod), y: 0)
    }
}
