// CLinuxMedia: V4L2's <linux/videodev2.h>, plus what Swift cannot import from it.
// Every symbol this header adds starts with CLinuxMedia_. The VIDIOC_* request codes are
// _IOWR(...) macros, and the pixel formats are v4l2_fourcc(...) macros, neither of which Swift
// imports, so they are defined once, as constants, in CLinuxMedia.c.
#ifndef CLINUXMEDIA_H
#define CLINUXMEDIA_H

#include <linux/videodev2.h>
#include <linux/v4l2-controls.h>
#include <stdint.h>

// MARK: ioctl request codes (the corresponding C macros are VIDIOC_*)
extern const unsigned long CLinuxMedia_VIDIOC_QUERYCAP;
extern const unsigned long CLinuxMedia_VIDIOC_ENUM_FMT;
extern const unsigned long CLinuxMedia_VIDIOC_G_FMT;
extern const unsigned long CLinuxMedia_VIDIOC_S_FMT;
extern const unsigned long CLinuxMedia_VIDIOC_TRY_FMT;
extern const unsigned long CLinuxMedia_VIDIOC_REQBUFS;
extern const unsigned long CLinuxMedia_VIDIOC_QUERYBUF;
extern const unsigned long CLinuxMedia_VIDIOC_EXPBUF;
extern const unsigned long CLinuxMedia_VIDIOC_QBUF;
extern const unsigned long CLinuxMedia_VIDIOC_DQBUF;
extern const unsigned long CLinuxMedia_VIDIOC_STREAMON;
extern const unsigned long CLinuxMedia_VIDIOC_STREAMOFF;
extern const unsigned long CLinuxMedia_VIDIOC_G_PARM;
extern const unsigned long CLinuxMedia_VIDIOC_S_PARM;
extern const unsigned long CLinuxMedia_VIDIOC_ENUM_FRAMESIZES;
extern const unsigned long CLinuxMedia_VIDIOC_ENUM_FRAMEINTERVALS;
extern const unsigned long CLinuxMedia_VIDIOC_ENUMINPUT;
extern const unsigned long CLinuxMedia_VIDIOC_G_INPUT;
extern const unsigned long CLinuxMedia_VIDIOC_S_INPUT;
extern const unsigned long CLinuxMedia_VIDIOC_QUERYCTRL;
extern const unsigned long CLinuxMedia_VIDIOC_QUERY_EXT_CTRL;
extern const unsigned long CLinuxMedia_VIDIOC_QUERYMENU;
extern const unsigned long CLinuxMedia_VIDIOC_G_CTRL;
extern const unsigned long CLinuxMedia_VIDIOC_S_CTRL;
extern const unsigned long CLinuxMedia_VIDIOC_G_EXT_CTRLS;
extern const unsigned long CLinuxMedia_VIDIOC_S_EXT_CTRLS;
extern const unsigned long CLinuxMedia_VIDIOC_TRY_EXT_CTRLS;
extern const unsigned long CLinuxMedia_VIDIOC_G_SELECTION;
extern const unsigned long CLinuxMedia_VIDIOC_S_SELECTION;
extern const unsigned long CLinuxMedia_VIDIOC_SUBSCRIBE_EVENT;
extern const unsigned long CLinuxMedia_VIDIOC_UNSUBSCRIBE_EVENT;
extern const unsigned long CLinuxMedia_VIDIOC_DQEVENT;
extern const unsigned long CLinuxMedia_VIDIOC_ENCODER_CMD;
extern const unsigned long CLinuxMedia_VIDIOC_TRY_ENCODER_CMD;

// MARK: pixel formats (the corresponding C macros are V4L2_PIX_FMT_*)
extern const uint32_t CLinuxMedia_V4L2_PIX_FMT_YUYV;
extern const uint32_t CLinuxMedia_V4L2_PIX_FMT_UYVY;
extern const uint32_t CLinuxMedia_V4L2_PIX_FMT_NV12;
extern const uint32_t CLinuxMedia_V4L2_PIX_FMT_NV21;
extern const uint32_t CLinuxMedia_V4L2_PIX_FMT_YUV420;
extern const uint32_t CLinuxMedia_V4L2_PIX_FMT_NV12M;
extern const uint32_t CLinuxMedia_V4L2_PIX_FMT_P010;
extern const uint32_t CLinuxMedia_V4L2_PIX_FMT_YUV420M;
extern const uint32_t CLinuxMedia_V4L2_PIX_FMT_GREY;
extern const uint32_t CLinuxMedia_V4L2_PIX_FMT_RGB24;
extern const uint32_t CLinuxMedia_V4L2_PIX_FMT_BGR24;
extern const uint32_t CLinuxMedia_V4L2_PIX_FMT_ABGR32;
extern const uint32_t CLinuxMedia_V4L2_PIX_FMT_XBGR32;
extern const uint32_t CLinuxMedia_V4L2_PIX_FMT_MJPEG;
extern const uint32_t CLinuxMedia_V4L2_PIX_FMT_JPEG;
extern const uint32_t CLinuxMedia_V4L2_PIX_FMT_H264;
extern const uint32_t CLinuxMedia_V4L2_PIX_FMT_HEVC;
extern const uint32_t CLinuxMedia_V4L2_PIX_FMT_FWHT;

/// ioctl(2) with its one argument fixed: Swift cannot call the variadic original.
/// Returns what ioctl returns; errno is left as ioctl set it.
int CLinuxMedia_ioctl(int fd, unsigned long request, void *argument);

/// eventfd(2) with EFD_CLOEXEC | EFD_NONBLOCK: a descriptor a capture thread polls beside its device so another
/// thread can wake it. Returns the descriptor or -1 (errno set).
int CLinuxMedia_eventfd(void);

/// A netlink socket (NETLINK_KOBJECT_UEVENT) bound to the kernel's uevent multicast group, close-on-exec and
/// non-blocking: the hot-plug monitor reads device arrivals and departures from it. Returns the descriptor or -1
/// (errno set).
int CLinuxMedia_uevent_socket(void);

/// recv(2) of one datagram from `descriptor` into `buffer`; returns its length or -1 (errno set).
long CLinuxMedia_recv(int descriptor, void *buffer, unsigned long length);

/// prctl(PR_SET_THP_DISABLE, 1): no transparent huge pages for this process and what it executes, whatever
/// madvise(MADV_HUGEPAGE) its libraries ask for. Returns 0 or -1 (errno set).
int CLinuxMedia_disable_transparent_huge_pages(void);

/// mallopt(M_MMAP_THRESHOLD, bytes) and mallopt(M_TRIM_THRESHOLD, bytes) (malloc.h, which Swift's Glibc module
/// leaves out): glibc's malloc maps blocks of `bytes` and more on their own, returns freed memory above `bytes` at
/// the top of an arena to the system, and no longer raises either threshold as large blocks are freed. Returns 1
/// when both were taken, 0 otherwise, as mallopt does.
int CLinuxMedia_set_malloc_thresholds(int bytes);

// MARK: uinput: a key device of the test's own (the kernel's /dev/uinput, CONFIG_INPUT_UINPUT)

/// Makes `fd` (an open /dev/uinput) a keyboard named `name` (BUS_VIRTUAL) with the `count` key codes of `keys`:
/// UI_SET_EVBIT EV_KEY, UI_SET_KEYBIT for each key, UI_DEV_SETUP and UI_DEV_CREATE, whose request codes are _IOW
/// macros Swift cannot import. Its events are then written to `fd` as struct input_event. Returns 0, or -1 with
/// errno set by the ioctl that failed.
int CLinuxMedia_uinput_create_keyboard(int fd, const char *name, const unsigned short *keys, int count);

/// UI_DEV_DESTROY: removes the device `fd` made (closing `fd` does too). Returns what ioctl returns.
int CLinuxMedia_uinput_destroy(int fd);

#endif
