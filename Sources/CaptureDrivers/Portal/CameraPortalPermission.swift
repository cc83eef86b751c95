/// What the portal's permission store holds for an app's camera access (table `devices`, id `camera`): Apple's
/// authorization status in the portal's words.
///
/// Value type; safe to use from any thread.
package enum CameraPortalPermission: Sendable, Equatable {
    /// `yes`: `AccessCamera` answers granted without asking and `OpenPipeWireRemote` opens.
    case granted
    /// `no`: `AccessCamera` answers denied without asking; the user changes it in the desktop's privacy settings.
    case denied
    /// Nothing stored, or `ask`: `AccessCamera` asks the user through the desktop's Access dialog and, when nothing
    /// was stored, keeps the answer.
    case notDetermined

    /// The permission for the words the store keeps for one app (`["yes"]`, `["no"]`, `["ask"]`); anything else is
    /// what xdg-desktop-portal itself reads as unset.
    init(storedWords count: Int, first: String?) {
        switch (count, first) {
        case (1, "yes"): self = .granted
        case (1, "no"): self = .denied
        default: self = .notDetermined
        }
    }
}
