// wlr-screencopy: the protocol's tables and a frame's requests and events.
#include "CWaylandInternal.h"

#include <stdlib.h>

// MARK: wlr-screencopy-unstable-v1, version 3, written from the protocol's specification (see CWayland.h for why
// not wayland-scanner). Request and event order, signatures and argument interfaces are the protocol's.

static const struct wl_interface *screencopyTypes[] = {
    // 0-3: arguments without an interface (events of up to four integers, requests without arguments).
    NULL, NULL, NULL, NULL,
    // 4-6: capture_output(new_id frame, int overlay_cursor, object wl_output).
    &CWayland_screencopyFrameInterface, NULL, &wl_output_interface,
    // 7-13: capture_output_region(new_id frame, int overlay_cursor, object wl_output, int x, y, width, height).
    &CWayland_screencopyFrameInterface, NULL, &wl_output_interface, NULL, NULL, NULL, NULL,
    // 14: copy(object wl_buffer); 15: copy_with_damage(object wl_buffer).
    &wl_buffer_interface, &wl_buffer_interface,
};

static const struct wl_message screencopyManagerRequests[] = {
    {"capture_output", "nio", screencopyTypes + 4},
    {"capture_output_region", "nioiiii", screencopyTypes + 7},
    {"destroy", "", screencopyTypes + 0},
};

const struct wl_interface CWayland_screencopyManagerInterface = {
    "zwlr_screencopy_manager_v1", 3, 3, screencopyManagerRequests, 0, NULL,
};

static const struct wl_message screencopyFrameRequests[] = {
    {"copy", "o", screencopyTypes + 14},
    {"destroy", "", screencopyTypes + 0},
    {"copy_with_damage", "2o", screencopyTypes + 15},
};

static const struct wl_message screencopyFrameEvents[] = {
    {"buffer", "uuuu", screencopyTypes + 0},
    {"flags", "u", screencopyTypes + 0},
    {"ready", "uuu", screencopyTypes + 0},
    {"failed", "", screencopyTypes + 0},
    {"damage", "2uuuu", screencopyTypes + 0},
    {"linux_dmabuf", "3uuu", screencopyTypes + 0},
    {"buffer_done", "3", screencopyTypes + 0},
};

const struct wl_interface CWayland_screencopyFrameInterface = {
    "zwlr_screencopy_frame_v1", 3, 3, screencopyFrameRequests, 7, screencopyFrameEvents,
};

enum { frameCopy = 0, frameDestroy = 1, frameCopyWithDamage = 2 };
enum { frameFlagYInvert = 1 };

// MARK: Frames

struct CWayland_Frame {
    CWayland_Connection *connection;
    struct wl_proxy *proxy;
    CWayland_BufferInfo shm;
    bool hasShmBuffer, bufferInfoDone, ready, failed, finished, yInverted;
    int64_t readyNanoseconds;
};

static void frameBuffer(void *data, struct wl_proxy *proxy, uint32_t format, uint32_t width, uint32_t height,
                        uint32_t stride) {
    (void)proxy;
    CWayland_Frame *frame = data;
    frame->shm = (CWayland_BufferInfo){.format = format, .width = width, .height = height, .stride = stride};
    frame->hasShmBuffer = true;
    // Before version 3 there is no buffer_done: the shared-memory description is all there is.
    if (wl_proxy_get_version(frame->proxy) < 3) frame->bufferInfoDone = true;
}

static void frameFlags(void *data, struct wl_proxy *proxy, uint32_t flags) {
    (void)proxy;
    ((CWayland_Frame *)data)->yInverted = (flags & frameFlagYInvert) != 0;
}

static void frameReady(void *data, struct wl_proxy *proxy, uint32_t secondsHigh, uint32_t secondsLow,
                       uint32_t nanoseconds) {
    (void)proxy;
    CWayland_Frame *frame = data;
    uint64_t seconds = ((uint64_t)secondsHigh << 32) | secondsLow;
    frame->readyNanoseconds = (int64_t)(seconds * 1000000000u + nanoseconds);
    frame->ready = true;
    frame->finished = true;
}

static void frameFailed(void *data, struct wl_proxy *proxy) {
    (void)proxy;
    CWayland_Frame *frame = data;
    frame->failed = true;
    frame->finished = true;
    frame->bufferInfoDone = true;
}

static void frameDamage(void *data, struct wl_proxy *proxy, uint32_t x, uint32_t y, uint32_t width,
                        uint32_t height) {
    (void)data, (void)proxy, (void)x, (void)y, (void)width, (void)height;
}

static void frameLinuxDmabuf(void *data, struct wl_proxy *proxy, uint32_t format, uint32_t width,
                             uint32_t height) {
    // A DMA-BUF would need a GPU allocator (GBM); the shared-memory buffer every compositor offers is used.
    (void)data, (void)proxy, (void)format, (void)width, (void)height;
}

static void frameBufferDone(void *data, struct wl_proxy *proxy) {
    (void)proxy;
    ((CWayland_Frame *)data)->bufferInfoDone = true;
}

static const struct {
    void (*buffer)(void *, struct wl_proxy *, uint32_t, uint32_t, uint32_t, uint32_t);
    void (*flags)(void *, struct wl_proxy *, uint32_t);
    void (*ready)(void *, struct wl_proxy *, uint32_t, uint32_t, uint32_t);
    void (*failed)(void *, struct wl_proxy *);
    void (*damage)(void *, struct wl_proxy *, uint32_t, uint32_t, uint32_t, uint32_t);
    void (*linuxDmabuf)(void *, struct wl_proxy *, uint32_t, uint32_t, uint32_t);
    void (*bufferDone)(void *, struct wl_proxy *);
} frameListener = {frameBuffer, frameFlags, frameReady, frameFailed, frameDamage, frameLinuxDmabuf, frameBufferDone};

CWayland_Frame *CWayland_frameRequest(CWayland_Connection *connection, int index, bool overlayCursor, int32_t x,
                                      int32_t y, int32_t width, int32_t height) {
    if (!connection->screencopy || index < 0 || index >= connection->outputCount) return NULL;
    CWayland_Frame *frame = calloc(1, sizeof *frame);
    if (!frame) return NULL;
    frame->connection = connection;
    uint32_t version = wl_proxy_get_version(connection->screencopy);
    // NULL stands for the new frame's id; libwayland makes the proxy.
    frame->proxy = wl_proxy_marshal_flags(connection->screencopy, CWayland_managerCaptureOutputRegion,
                                          &CWayland_screencopyFrameInterface, version, 0, NULL, (int32_t)overlayCursor,
                                          connection->outputs[index], x, y, width, height);
    if (!frame->proxy) {
        free(frame);
        return NULL;
    }
    wl_proxy_add_listener(frame->proxy, (void (**)(void)) & frameListener, frame);
    return frame;
}

CWayland_WaitResult CWayland_frameAwaitBufferInfo(CWayland_Frame *frame, int timeoutMilliseconds,
                                                  int wakeDescriptor, CWayland_BufferInfo *info) {
    CWayland_WaitResult result =
        CWayland_dispatchUntil(frame->connection, &frame->bufferInfoDone, timeoutMilliseconds, wakeDescriptor);
    if (result != CWayland_waitDone) return result;
    if (frame->failed || !frame->hasShmBuffer) return CWayland_waitFailed;
    *info = frame->shm;
    return CWayland_waitDone;
}

void CWayland_frameCopy(CWayland_Frame *frame, CWayland_Buffer *buffer, bool onDamage) {
    bool withDamage = onDamage && wl_proxy_get_version(frame->proxy) >= 2;
    wl_proxy_marshal_flags(frame->proxy, withDamage ? frameCopyWithDamage : frameCopy, NULL,
                           wl_proxy_get_version(frame->proxy), 0, buffer->proxy);
    wl_display_flush(frame->connection->display);
}

CWayland_WaitResult CWayland_frameAwaitReady(CWayland_Frame *frame, int timeoutMilliseconds, int wakeDescriptor,
                                             bool *yInverted, int64_t *hostNanoseconds) {
    // `ready` and `failed` both set `finished`.
    CWayland_WaitResult result =
        CWayland_dispatchUntil(frame->connection, &frame->finished, timeoutMilliseconds, wakeDescriptor);
    if (frame->failed) return CWayland_waitFailed;
    if (result != CWayland_waitDone) return result;
    *yInverted = frame->yInverted;
    *hostNanoseconds = frame->readyNanoseconds;
    return CWayland_waitDone;
}

void CWayland_frameDestroy(CWayland_Frame *frame) {
    if (!frame) return;
    wl_proxy_marshal_flags(frame->proxy, frameDestroy, NULL, wl_proxy_get_version(frame->proxy),
                           WL_MARSHAL_FLAG_DESTROY);
    wl_display_flush(frame->connection->display);
    free(frame);
}
