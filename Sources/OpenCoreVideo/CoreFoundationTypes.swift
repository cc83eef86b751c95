// The few CoreFoundation and MacTypes names that Apple's CoreVideo and CoreMedia Swift signatures use.
//
// Foundation on Linux exports no CoreFoundation types (no CFAllocator, CFDictionary, CFString, CFTypeRef,
// kCFAllocatorDefault), so code written for Apple's CoreVideo would not compile. The bottom module of the stack
// provides them, reduced to what the capture API needs. OpenCoreMedia re-exports this module and uses the same
// types for sample buffer attachments.

// MARK: - MacTypes

/// A four-character code, such as a pixel format (`'BGRA'`) or a codec type.
///
/// Apple's MacTypes type, reduced to what the capture API needs. The first character is the most significant
/// byte: `'BGRA'` is `0x4247_5241`.
public typealias FourCharCode = UInt32

/// An operating-system type code; the type of pixel format constants such as ``kCVPixelFormatType_32BGRA``.
///
/// Apple's MacTypes type, reduced to what the capture API needs.
public typealias OSType = FourCharCode

/// A status code returned by CoreMedia and AudioToolbox functions; zero is success.
///
/// Apple's MacTypes type, reduced to what the capture API needs.
public typealias OSStatus = Int32

/// Apple's MacTypes `Boolean`: an unsigned byte, zero for false.
public typealias Boolean = UInt8

// MARK: - CoreFoundation

/// A time interval in seconds.
///
/// Apple's CoreFoundation type, reduced to what the capture API needs.
public typealias CFTimeInterval = Double

/// A signed count or index, as CoreFoundation's collection functions use.
///
/// Apple's CoreFoundation type, reduced to what the capture API needs.
public typealias CFIndex = Int

/// Identifies the type of a CoreFoundation-style object; compare with a `…GetTypeID()` function's result.
///
/// Apple's CoreFoundation type, reduced to what the capture API needs. Here a type ID is derived from the Swift
/// type's identity (see ``CFGetTypeID(_:)``); it is stable within one process run and meaningless across runs.
public typealias CFTypeID = UInt

/// Option bits of CoreFoundation calls.
///
/// Apple's CoreFoundation type, reduced to what the capture API needs.
public typealias CFOptionFlags = UInt

/// Any CoreFoundation-style value: attachment values, dictionary values.
///
/// Apple's CoreFoundation type, reduced to what the capture API needs: on Apple's platforms it is `AnyObject`;
/// here it is `Any`, so Swift values (`Int`, `String`, `Bool`, dictionaries) can be stored without boxing.
public typealias CFTypeRef = Any

/// A string: dictionary keys such as ``kCVPixelBufferPixelFormatTypeKey``.
///
/// Apple's CoreFoundation type, reduced to what the capture API needs. It is Swift's `String`, so Apple-style
/// `kCVPixelBufferPixelFormatTypeKey as String` compiles and costs nothing.
public typealias CFString = String

/// A dictionary of attributes, such as the pixel buffer attributes passed to ``CVPixelBufferCreate(_:_:_:_:_:_:)``.
///
/// Apple's CoreFoundation type, reduced to what the capture API needs. It is `[String: Any]`, so Apple-style
/// `[kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA] as CFDictionary` compiles. Number
/// values may be any Swift integer or floating-point type or an `NSNumber`.
public typealias CFDictionary = [String: Any]

/// A Boolean attribute value, such as the value of ``kCVPixelBufferCGImageCompatibilityKey``.
///
/// Apple's CoreFoundation type, reduced to what the capture API needs: Swift's `Bool`.
public typealias CFBoolean = Bool

/// The Boolean value true, as Apple's CoreFoundation spells it.
///
/// Declared implicitly unwrapped, as Apple's is, so `kCFBooleanTrue!` and `kCFBooleanTrue` both compile.
public let kCFBooleanTrue: CFBoolean! = true

/// The Boolean value false, as Apple's CoreFoundation spells it.
///
/// Declared implicitly unwrapped, as Apple's is, so `kCFBooleanFalse!` and `kCFBooleanFalse` both compile.
public let kCFBooleanFalse: CFBoolean! = false

/// A memory allocator argument, accepted for source compatibility and otherwise ignored.
///
/// Apple's CoreFoundation type, reduced to what the capture API needs. OpenCoreVideo always allocates with the
/// system allocator, so the only useful values are `nil` and the constants ``kCFAllocatorDefault`` and
/// ``kCFAllocatorSystemDefault`` (both `nil`). No instance can be created.
///
/// Threading: an opaque, immutable value; safe to use from any thread.
public final class CFAllocator: Sendable {
    private init() {}
}

/// The default allocator: pass it, or `nil`, wherever an allocator is asked for.
///
/// Apple's CoreFoundation constant, reduced to what the capture API needs: the system allocator is always used.
public let kCFAllocatorDefault: CFAllocator? = nil

/// The system allocator; the same as ``kCFAllocatorDefault`` here.
///
/// Apple's CoreFoundation constant, reduced to what the capture API needs.
public let kCFAllocatorSystemDefault: CFAllocator? = nil

/// The `malloc` allocator; the same as ``kCFAllocatorDefault`` here.
///
/// Apple's CoreFoundation constant, reduced to what the capture API needs.
public let kCFAllocatorMalloc: CFAllocator? = nil

/// Returns the type ID of a value, to compare with a `…GetTypeID()` function such as
/// ``CVPixelBufferGetTypeID()``.
///
/// Apple's CoreFoundation function, reduced to what the capture API needs: the ID is derived from the value's
/// dynamic Swift type, so any module can give its types a `…GetTypeID()` with ``_CFTypeID(of:)``.
public func CFGetTypeID(_ cf: CFTypeRef) -> CFTypeID {
    _CFTypeID(of: type(of: cf))
}

/// The type ID that ``CFGetTypeID(_:)`` returns for values of `type`; used to implement `…GetTypeID()` functions.
public func _CFTypeID(of type: Any.Type) -> CFTypeID {
    CFTypeID(bitPattern: ObjectIdentifier(type))
}

/// A range of items in a collection: a first index and a count, as CoreFoundation's collection functions and
/// ``CMSampleBufferCopySampleBufferForRange`` take them.
///
/// Apple's CoreFoundation type, reduced to what the capture API needs.
public struct CFRange: Equatable, Sendable {
    /// The index of the first item.
    public var location: CFIndex
    /// How many items.
    public var length: CFIndex

    public init() { self.init(location: 0, length: 0) }

    public init(location: CFIndex, length: CFIndex) {
        self.location = location
        self.length = length
    }
}

/// A range of `length` items from `loc`, as Apple's CoreFoundation spells it.
public func CFRangeMake(_ loc: CFIndex, _ len: CFIndex) -> CFRange {
    CFRange(location: loc, length: len)
}
