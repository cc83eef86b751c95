import CLinuxMedia
import Glibc
import Testing

/// The request codes and pixel formats match the kernel's ABI and the ioctl bridge reaches the kernel.
@Suite struct CLinuxMediaLinkTests {
    @Test func requestCodesMatchTheKernelABI() {
        // _IOR('V', 0, struct v4l2_capability) with the 104-byte struct: 0x80685600.
        #expect(CLinuxMedia_VIDIOC_QUERYCAP == 0x8068_5600)
        #expect(MemoryLayout<v4l2_capability>.size == 104)
        // _IOW('V', 18, int) and _IOW('V', 19, int).
        #expect(CLinuxMedia_VIDIOC_STREAMON == 0x4004_5612)
        #expect(CLinuxMedia_VIDIOC_STREAMOFF == 0x4004_5613)
    }

    @Test func pixelFormatsAreFourCharacterCodes() {
        func fourcc(_ code: String) -> UInt32 {
            code.utf8.enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
        }
        #expect(CLinuxMedia_V4L2_PIX_FMT_YUYV == fourcc("YUYV"))
        #expect(CLinuxMedia_V4L2_PIX_FMT_NV12 == fourcc("NV12"))
        #expect(CLinuxMedia_V4L2_PIX_FMT_MJPEG == fourcc("MJPG"))
        #expect(CLinuxMedia_V4L2_PIX_FMT_H264 == fourcc("H264"))
    }

    @Test func controlIdentifiersImport() {
        #expect(V4L2_CID_BRIGHTNESS == 0x0098_0900)
        #expect(V4L2_CID_FOCUS_ABSOLUTE == 0x009A_090A)
    }

    @Test func ioctlOnANonDeviceFailsWithENOTTY() {
        let fd = open("/dev/null", O_RDWR)
        #expect(fd >= 0)
        defer { close(fd) }
        var capability = v4l2_capability()
        #expect(CLinuxMedia_ioctl(fd, CLinuxMedia_VIDIOC_QUERYCAP, &capability) == -1)
        #expect(errno == ENOTTY)
    }
}
