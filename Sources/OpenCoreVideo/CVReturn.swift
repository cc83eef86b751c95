// CoreVideo's result codes, with Apple's values (CVReturn.h).

/// The result of a CoreVideo call: ``kCVReturnSuccess`` (zero) or one of the negative error codes below.
///
/// Apple's `CVReturn`; the values are Apple's, so logs and comparisons read the same on both platforms.
public typealias CVReturn = Int32

/// Option bits passed to CoreVideo calls, such as the raw value of ``CVPixelBufferLockFlags``.
///
/// Apple's `CVOptionFlags`.
public typealias CVOptionFlags = UInt64

/// The call succeeded.
public let kCVReturnSuccess: CVReturn = 0

/// The first CoreVideo error code; never returned.
public let kCVReturnFirst: CVReturn = -6660

/// An otherwise undefined error; returned, for example, when unlocking a buffer that is not locked.
public let kCVReturnError: CVReturn = -6660

/// An argument is out of range or of the wrong kind (a zero width, a `nil` pointer, a bad plane count).
public let kCVReturnInvalidArgument: CVReturn = -6661

/// Memory for a buffer could not be allocated.
public let kCVReturnAllocationFailed: CVReturn = -6662

/// The operation is not supported.
public let kCVReturnUnsupported: CVReturn = -6663

/// The display is invalid (display links; not used on Linux).
public let kCVReturnInvalidDisplay: CVReturn = -6670

/// The display link is already running (not used on Linux).
public let kCVReturnDisplayLinkAlreadyRunning: CVReturn = -6671

/// The display link is not running (not used on Linux).
public let kCVReturnDisplayLinkNotRunning: CVReturn = -6672

/// The display link's callbacks are not set (not used on Linux).
public let kCVReturnDisplayLinkCallbacksNotSet: CVReturn = -6673

/// The pixel format is unknown to OpenCoreVideo or not allowed for the call.
public let kCVReturnInvalidPixelFormat: CVReturn = -6680

/// The buffer size is not supported: too large to allocate or address.
public let kCVReturnInvalidSize: CVReturn = -6681

/// The pixel buffer attributes are invalid: a required key is missing or a value has the wrong type.
public let kCVReturnInvalidPixelBufferAttributes: CVReturn = -6682

/// The buffer cannot be used with OpenGL (not used on Linux).
public let kCVReturnPixelBufferNotOpenGLCompatible: CVReturn = -6683

/// The buffer cannot be used with Metal (not used on Linux).
public let kCVReturnPixelBufferNotMetalCompatible: CVReturn = -6684

/// Taking a buffer from a pool would exceed the threshold given with ``kCVPixelBufferPoolAllocationThresholdKey``.
///
/// Returned by ``CVPixelBufferPoolCreatePixelBufferWithAuxAttributes(_:_:_:_:)`` when that many of the pool's
/// buffers are still held; a capture device reports the frame as dropped with reason `OutOfBuffers`.
public let kCVReturnWouldExceedAllocationThreshold: CVReturn = -6689

/// A pool could not allocate its buffers.
public let kCVReturnPoolAllocationFailed: CVReturn = -6690

/// A pool cannot be created with the given pool attributes.
public let kCVReturnInvalidPoolAttributes: CVReturn = -6691

/// A scan of a pool did not complete because of a concurrent operation; the caller can retry.
public let kCVReturnRetry: CVReturn = -6692

/// The last CoreVideo error code; never returned.
public let kCVReturnLast: CVReturn = -6699
