import Foundation

/// The virtual camera's controls at the moment of a frame: exposure, zoom, focus, white balance, torch and flash.
///
/// Controls act on the picture the way optics do:
/// - brightness: every linear RGB value of the scene is multiplied by `exposureGain(sceneLight:)`
///   (see there), then by the illuminant and the white-balance gains, clipped to 0...1 and encoded with the
///   BT.709 transfer (`VirtualColorEncoding`);
/// - zoom crops the centre and scales it up: at zoom `z` a scene point `(x, y)` lands at pixel
///   `(W/2 + x·z·H, H/2 + y·z·H)`, so every object's size in pixels is proportional to `z`;
/// - focus blurs only the focus target, by a box of width `VirtualScene.defocusBlurPerLensError ·
///   |lensPosition − focusTargetLensPosition|` scene units.
///
/// Value type; safe from any thread.
package struct VirtualOptics: Sendable, Hashable {
    /// The exposure duration in seconds.
    package var exposureDuration: Double = 1.0 / 60.0
    /// The sensor gain as an ISO value.
    package var iso: Double = 100
    /// The exposure target bias in EV: +1 doubles the linear brightness.
    package var targetBias: Double = 0
    /// The zoom factor, 1 or more.
    package var zoomFactor: Double = 1
    /// The lens position, 0 (nearest) ... 1 (farthest).
    package var lensPosition: Double = 0.5
    /// The white-balance gains applied to each linear channel (Apple's range is 1 ... max, green usually 1).
    package var whiteBalanceGains = VirtualRGB(gray: 1)
    /// The torch level, 0 (off) ... 1 (full).
    package var torchLevel: Double = 0
    /// Whether the flash fires for this frame (a still): adds `flashLight` to the scene's light.
    package var flashFired = false

    /// The default controls: 1/60 s at ISO 100, no bias, no zoom, lens at 0.5, neutral white balance.
    package init() {}

    /// The exposure (seconds · ISO) that maps the normal scene to gain 1: 1/60 s at ISO 100.
    package static let referenceExposure = 100.0 / 60.0
    /// The light the torch adds at full level, in scene-light units (half the normal scene).
    package static let torchLight = 0.5
    /// The light the flash adds to the still it fires for, in scene-light units (twice the normal scene).
    package static let flashLight = 2.0

    /// The linear gain from scene reflectance to sensor value:
    ///
    ///     gain = (sceneLight + torchLevel · torchLight + (flashFired ? flashLight : 0))
    ///            · exposureDuration · iso / referenceExposure · 2^targetBias
    ///
    /// Linear in light, duration and ISO; +1 EV of bias doubles it. The normal scene at the default controls has
    /// gain 1, which puts the grey at linear 0.18 (Y ≈ 105) and the white bar at 0.75 (Y ≈ 206).
    package func exposureGain(sceneLight: Double) -> Double {
        let light = sceneLight + torchLevel * Self.torchLight + (flashFired ? Self.flashLight : 0)
        return light * exposureDuration * iso / Self.referenceExposure * exp2(targetBias)
    }

    /// The width of the focus target's defocus blur in scene units for a target sharp at `targetLensPosition`.
    package func defocusBlurWidth(targetLensPosition: Double) -> Double {
        VirtualScene.defocusBlurPerLensError * abs(lensPosition - targetLensPosition)
    }
}
