#include "CLinuxMedia.h"

#include <linux/netlink.h>
#include <linux/uinput.h>
#include <malloc.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <sys/ioctl.h>

const unsigned long CLinuxMedia_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
const unsigned long CLinuxMedia_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
const unsigned long CLinuxMedia_VIDIOC_G_FMT = VIDIOC_G_FMT;
const unsigned long CLinuxMedia_VIDIOC_S_FMT = VIDIOC_S_FMT;
const unsigned long CLinuxMedia_VIDIOC_TRY_FMT = VIDIOC_TRY_FMT;
const unsigned long CLinuxMedia_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
const unsigned long CLinuxMedia_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
const unsigned long CLinuxMedia_VIDIOC_EXPBUF = VIDIOC_EXPBUF;
const unsigned long CLinuxMedia_VIDIOC_QBUF = VIDIOC_QBUF;
const unsigned long CLinuxMedia_VIDIOC_DQBUF = VIDIOC_DQBUF;
const unsigned long CLinuxMedia_VIDIOC_STREAMON = VIDIOC_STREAMON;
const unsigned long CLinuxMedia_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;
const unsigned long CLinuxMedia_VIDIOC_G_PARM = VIDIOC_G_PARM;
const unsigned long CLinuxMedia_VIDIOC_S_PARM = VIDIOC_S_PARM;
const unsigned long CLinuxMedia_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
const unsigned long CLinuxMedia_VIDIOC_ENUM_FRAMEINTERVALS = VIDIOC_ENUM_FRAMEINTERVALS;
const unsigned long CLinuxMedia_VIDIOC_ENUMINPUT = VIDIOC_ENUMINPUT;
const unsigned long CLinuxMedia_VIDIOC_G_INPUT = VIDIOC_G_INPUT;
const unsigned long CLinuxMedia_VIDIOC_S_INPUT = VIDIOC_S_INPUT;
const unsigned long CLinuxMedia_VIDIOC_QUERYCTRL = VIDIOC_QUERYCTRL;
const unsigned long CLinuxMedia_VIDIOC_QUERY_EXT_CTRL = VIDIOC_QUERY_EXT_CTRL;
const unsigned long CLinuxMedia_VIDIOC_QUERYMENU = VIDIOC_QUERYMENU;
const unsigned long CLinuxMedia_VIDIOC_G_CTRL = VIDIOC_G_CTRL;
const unsigned long CLinuxMedia_VIDIOC_S_CTRL = VIDIOC_S_CTRL;
const unsigned long CLinuxMedia_VIDIOC_G_EXT_CTRLS = VIDIOC_G_EXT_CTRLS;
const unsigned long CLinuxMedia_VIDIOC_S_EXT_CTRLS = VIDIOC_S_EXT_CTRLS;
const unsigned long CLinuxMedia_VIDIOC_TRY_EXT_CTRLS = VIDIOC_TRY_EXT_CTRLS;
const unsigned long CLinuxMedia_VIDIOC_G_SELECTION = VIDIOC_G_SELECTION;
const unsigned long CLinuxMedia_VIDIOC_S_SELECTION = VIDIOC_S_SELECTION;
const unsigned long CLinuxMedia_VIDIOC_SUBSCRIBE_EVENT = VIDIOC_SUBSCRIBE_EVENT;
const unsigned long CLinuxMedia_VIDIOC_UNSUBSCRIBE_EVENT = VIDIOC_UNSUBSCRIBE_EVENT;
const unsigned long CLinuxMedia_VIDIOC_DQEVENT = VIDIOC_DQEVENT;
const unsigned long CLinuxMedia_VIDIOC_ENCODER_CMD = VIDIOC_ENCODER_CMD;
const unsigned long CLinuxMedia_VIDIOC_TRY_ENCODER_CMD = VIDIOC_TRY_ENCODER_CMD;

const uint32_t CLinuxMedia_V4L2_PIX_FMT_YUYV = V4L2_PIX_FMT_YUYV;
const uint32_t CLinuxMedia_V4L2_PIX_FMT_UYVY = V4L2_PIX_FMT_UYVY;
const uint32_t CLinuxMedia_V4L2_PIX_FMT_NV12 = V4L2_PIX_FMT_NV12;
const uint32_t CLinuxMedia_V4L2_PIX_FMT_NV21 = V4L2_PIX_FMT_NV21;
const uint32_t CLinuxMedia_V4L2_PIX_FMT_YUV420 = V4L2_PIX_FMT_YUV420;
const uint32_t CLinuxMedia_V4L2_PIX_FMT_NV12M = V4L2_PIX_FMT_NV12M;
const uint32_t CLinuxMedia_V4L2_PIX_FMT_P010 = V4L2_PIX_FMT_P010;
const uint32_t CLinuxMedia_V4L2_PIX_FMT_YUV420M = V4L2_PIX_FMT_YUV420M;
const uint32_t CLinuxMedia_V4L2_PIX_FMT_GREY = V4L2_PIX_FMT_GREY;
const uint32_t CLinuxMedia_V4L2_PIX_FMT_RGB24 = V4L2_PIX_FMT_RGB24;
const uint32_t CLinuxMedia_V4L2_PIX_FMT_BGR24 = V4L2_PIX_FMT_BGR24;
const uint32_t CLinuxMedia_V4L2_PIX_FMT_ABGR32 = V4L2_PIX_FMT_ABGR32;
const uint32_t CLinuxMedia_V4L2_PIX_FMT_XBGR32 = V4L2_PIX_FMT_XBGR32;
const uint32_t CLinuxMedia_V4L2_PIX_FMT_MJPEG = V4L2_PIX_FMT_MJPEG;
const uint32_t CLinuxMedia_V4L2_PIX_FMT_JPEG = V4L2_PIX_FMT_JPEG;
const uint32_t CLinuxMedia_V4L2_PIX_FMT_H264 = V4L2_PIX_FMT_H264;
const uint32_t CLinuxMedia_V4L2_PIX_FMT_HEVC = V4L2_PIX_FMT_HEVC;
const uint32_t CLinuxMedia_V4L2_PIX_FMT_FWHT = V4L2_PIX_FMT_FWHT;

int CLinuxMedia_ioctl(int fd, unsigned long request, void *argument) {
    return ioctl(fd, request, argument);
}

int CLinuxMedia_eventfd(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

int CLinuxMedia_uevent_socket(void) {
    int descriptor = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
    if (descriptor < 0) return -1;
    struct sockaddr_nl address;
    memset(&address, 0, sizeof address);
    address.nl_family = AF_NETLINK;
    address.nl_groups = 1; /* the kernel's own uevents (udev re-broadcasts on group 2 in its own format) */
    if (bind(descriptor, (struct sockaddr *)&address, sizeof address) < 0) {
        close(descriptor);
        return -1;
    }
    return descriptor;
}

long CLinuxMedia_recv(int descriptor, void *buffer, unsigned long length) {
    return recv(descriptor, buffer, length, 0);
}

int CLinuxMedia_disable_transparent_huge_pages(void) {
    return prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
}

int CLinuxMedia_set_malloc_thresholds(int bytes) {
    return mallopt(M_MMAP_THRESHOLD, bytes) && mallopt(M_TRIM_THRESHOLD, bytes);
}

int CLinuxMedia_uinput_create_keyboard(int fd, const char *name, const unsigned short *keys, int count) {
    if (ioctl(fd, UI_SET_EVBIT, EV_KEY) < 0) return -1;
    for (int index = 0; index < count; index++) {
        if (ioctl(fd, UI_SET_KEYBIT, (int)keys[index]) < 0) return -1;
    }
    struct uinput_setup setup;
    memset(&setup, 0, sizeof setup);
    setup.id.bustype = BUS_VIRTUAL;
    setup.id.vendor = 0x1d6b; /* the Linux Foundation's USB vendor ID, as the kernel's own virtual devices use */
    setup.id.product = 0x0104;
    strncpy(setup.name, name, UINPUT_MAX_NAME_SIZE - 1);
    if (ioctl(fd, UI_DEV_SETUP, &setup) < 0) return -1;
    return ioctl(fd, UI_DEV_CREATE);
}

int CLinuxMedia_uinput_destroy(int fd) {
    return ioctl(fd, UI_DEV_DESTROY);
}
