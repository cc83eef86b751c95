// OpenCoreMedia makes OpenCoreVideo visible, as Apple's CoreMedia makes CoreVideo visible:
// a CMSampleBuffer's image buffer is a CVPixelBuffer.
@_exported import OpenCoreVideo
