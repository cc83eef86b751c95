import Foundation

/// A count of items (samples, entries), as CoreMedia's `CMItemCount`.
public typealias CMItemCount = Int

/// An index of an item (sample, entry), as CoreMedia's `CMItemIndex`.
public typealias CMItemIndex = Int

/// Builds the `NSError` CoreMedia's Swift overlay throws for a failed call: `NSOSStatusErrorDomain` with the status.
package func coreMediaError(_ status: OSStatus, _ description: String) -> NSError {
    NSError(domain: NSOSStatusErrorDomain, code: Int(status), userInfo: [NSLocalizedDescriptionKey: description])
}
