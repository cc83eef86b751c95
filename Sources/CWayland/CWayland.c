#define _GNU_SOURCE
#include "CWayland.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <wayland-client.h>

// MARK: wlr-screencopy-unstable-v1, version 3, written from the protocol's specification (see CWayland.h for why
// not wayland-scanner). Request and event order, signatures and argument interfaces are the protocol's.

static const struct wl_interface screencopyFrameInterface;

static const struct wl_interface *screencopyTypes[] = {
    // 0-3: arguments without an interface (events of up to four integers, requests without arguments).
    NULL, NULL, NULL, NULL,
    // 4-6: capture_output(new_id frame, int overlay_cursor, object wl_output).
    &screencopyFrameInterface, NULL, &wl_output_interface,
    // 7-13: capture_output_region(new_id frame, int overlay_cursor, object wl_output, int x, y, width, height).
    &screencopyFrameInterface, NULL, &wl_output_interface, NULL, NULL, NULL, NULL,
    // 14: copy(object wl_buffer); 15: copy_with_damage(object wl_buffer).
    &wl_buffer_interface, &wl_buffer_interface,
};

static const struct wl_message screencopyManagerRequests[] = {
    {"capture_output", "nio", screencopyTypes + 4},
    {"capture_output_region", "nioiiii", screencopyTypes + 7},
    {"destroy", "", screencopyTypes + 0},
};

static const struct wl_interface screencopyManagerInterface = {
    "zwlr_screencopy_manager_v1", 3, 3, screencopyManagerRequests, 0, NULL,
};

enum { managerCaptureOutputRegion = 1, managerDestroy = 2 };

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

static const struct wl_interface screencopyFrameInterface = {
    "zwlr_screencopy_frame_v1", 3, 3, screencopyFrameRequests, 7, screencopyFrameEvents,
};

enum { frameCopy = 0, frameDestroy = 1, frameCopyWithDamage = 2 };
enum { frameFlagYInvert = 1 };

// MARK: The connection

#define maximumOutputs 16

struct CWayland_Connection {
    struct wl_display *display;
    struct wl_registry *registry;
    struct wl_shm *shm;
    struct wl_proxy *screencopy;
    uint32_t screencopyVersion;
    int outputCount;
    struct wl_output *outputs[maximumOutputs];
    CWayland_Output described[maximumOutputs];
};

static void outputGeometry(
    void *data, struct wl_output *output, int32_t x, int32_t y, int32_t physicalWidth, int32_t physicalHeight,
    int32_t subpixel, const char *make, const char *model, int32_t transform) {
    (void)output, (void)physicalWidth, (void)physicalHeight, (void)subpixel, (void)make, (void)model, (void)transform;
    CWayland_Output *described = data;
    described->x = x;
    described->y = y;
}

static void outputMode(void *data, struct wl_output *output, uint32_t flags, int32_t width, int32_t height,
                       int32_t refresh) {
    (void)output, (void)refresh;
    CWayland_Output *described = data;
    if (flags & WL_OUTPUT_MODE_CURRENT) {
        described->width = width;
        described->height = height;
    }
}

static void outputDone(void *data, struct wl_output *output) { (void)data, (void)output; }

static void outputScale(void *data, struct wl_output *output, int32_t factor) {
    (void)output;
    ((CWayland_Output *)data)->scale = factor;
}

static void outputName(void *data, struct wl_output *output, const char *name) {
    (void)output;
    CWayland_Output *described = data;
    snprintf(described->name, sizeof described->name, "%s", name);
}

static void outputDescription(void *data, struct wl_output *output, const char *description) {
    (void)output;
    CWayland_Output *described = data;
    snprintf(described->description, sizeof described->description, "%s", description);
}

static const struct wl_output_listener outputListener = {
    .geometry = outputGeometry,
    .mode = outputMode,
    .done = outputDone,
    .scale = outputScale,
    .name = outputName,
    .description = outputDescription,
};

static uint32_t lowest(uint32_t a, uint32_t b) { return a < b ? a : b; }

static void registryGlobal(void *data, struct wl_registry *registry, uint32_t name, const char *interface,
                           uint32_t version) {
    CWayland_Connection *connection = data;
    if (strcmp(interface, wl_shm_interface.name) == 0 && !connection->shm) {
        connection->shm = wl_registry_bind(registry, name, &wl_shm_interface, 1);
    } else if (strcmp(interface, wl_output_interface.name) == 0 && connection->outputCount < maximumOutputs) {
        int index = connection->outputCount++;
        CWayland_Output *described = &connection->described[index];
        memset(described, 0, sizeof *described);
        described->globalName = name;
        described->scale = 1;
        struct wl_output *output = wl_registry_bind(registry, name, &wl_output_interface, lowest(version, 4));
        connection->outputs[index] = output;
        wl_output_add_listener(output, &outputListener, described);
    } else if (strcmp(interface, screencopyManagerInterface.name) == 0 && !connection->screencopy) {
        connection->screencopyVersion = lowest(version, 3);
        connection->screencopy =
            wl_registry_bind(registry, name, &screencopyManagerInterface, connection->screencopyVersion);
    }
}

static void registryGlobalRemove(void *data, struct wl_registry *registry, uint32_t name) {
    (void)data, (void)registry, (void)name;
}

static const struct wl_registry_listener registryListener = {
    .global = registryGlobal,
    .global_remove = registryGlobalRemove,
};

CWayland_Connection *CWayland_connect(const char *name, char *error, size_t errorLength) {
    struct wl_display *display = wl_display_connect(name);
    if (!display) {
        snprintf(error, errorLength, "cannot connect to the Wayland compositor %s (%s)",
                 name ? name : (getenv("WAYLAND_DISPLAY") ? getenv("WAYLAND_DISPLAY") : "wayland-0"),
                 strerror(errno));
        return NULL;
    }
    CWayland_Connection *connection = calloc(1, sizeof *connection);
    if (!connection) {
        wl_display_disconnect(display);
        snprintf(error, errorLength, "out of memory");
        return NULL;
    }
    connection->display = display;
    connection->registry = wl_display_get_registry(display);
    wl_registry_add_listener(connection->registry, &registryListener, connection);
    // The first round trip announces the globals, the second delivers what the bound outputs describe.
    if (wl_display_roundtrip(display) < 0 || wl_display_roundtrip(display) < 0) {
        snprintf(error, errorLength, "the Wayland compositor closed the connection while listing its outputs");
        CWayland_disconnect(connection);
        return NULL;
    }
    return connection;
}

void CWayland_disconnect(CWayland_Connection *connection) {
    if (!connection) return;
    for (int index = 0; index < connection->outputCount; index++) {
        if (connection->outputs[index]) wl_proxy_destroy((struct wl_proxy *)connection->outputs[index]);
    }
    if (connection->screencopy) {
        wl_proxy_marshal_flags(connection->screencopy, managerDestroy, NULL,
                               wl_proxy_get_version(connection->screencopy), WL_MARSHAL_FLAG_DESTROY);
    }
    if (connection->shm) wl_shm_destroy(connection->shm);
    if (connection->registry) wl_registry_destroy(connection->registry);
    wl_display_flush(connection->display);
    wl_display_disconnect(connection->display);
    free(connection);
}

int CWayland_descriptor(const CWayland_Connection *connection) { return wl_display_get_fd(connection->display); }

uint32_t CWayland_screencopyVersion(const CWayland_Connection *connection) {
    return connection->screencopy ? connection->screencopyVersion : 0;
}

bool CWayland_hasSharedMemory(const CWayland_Connection *connection) { return connection->shm != NULL; }

int CWayland_outputCount(const CWayland_Connection *connection) { return connection->outputCount; }

bool CWayland_output(const CWayland_Connection *connection, int index, CWayland_Output *output) {
    if (index < 0 || index >= connection->outputCount) return false;
    *output = connection->described[index];
    return true;
}

bool CWayland_hasFailed(CWayland_Connection *connection) { return wl_display_get_error(connection->display) != 0; }

static int64_t monotonicMilliseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/// Dispatches events until `*done`, the deadline, the wake descriptor or a lost connection.
static CWayland_WaitResult dispatchUntil(CWayland_Connection *connection, const bool *done, int timeoutMilliseconds,
                                         int wakeDescriptor) {
    struct wl_display *display = connection->display;
    int64_t deadline = monotonicMilliseconds() + timeoutMilliseconds;
    while (!*done) {
        // libwayland's rule for reading from a thread: prepare, flush, poll, then read or cancel.
        while (wl_display_prepare_read(display) != 0) {
            if (wl_display_dispatch_pending(display) < 0) return CWayland_waitDisconnected;
            if (*done) return CWayland_waitDone;
        }
        if (wl_display_flush(display) < 0 && errno != EAGAIN) {
            wl_display_cancel_read(display);
            return CWayland_waitDisconnected;
        }
        int64_t remaining = deadline - monotonicMilliseconds();
        if (remaining <= 0) {
            wl_display_cancel_read(display);
            return CWayland_waitTimedOut;
        }
        struct pollfd descriptors[2] = {
            {.fd = wl_display_get_fd(display), .events = POLLIN},
            {.fd = wakeDescriptor, .events = POLLIN},
        };
        int ready = poll(descriptors, wakeDescriptor >= 0 ? 2 : 1, (int)remaining);
        if (ready < 0 && errno != EINTR) {
            wl_display_cancel_read(display);
            return CWayland_waitDisconnected;
        }
        if (ready > 0 && descriptors[0].revents) {
            if (wl_display_read_events(display) < 0) return CWayland_waitDisconnected;
        } else {
            wl_display_cancel_read(display);
        }
        if (wl_display_dispatch_pending(display) < 0) return CWayland_waitDisconnected;
        if (wakeDescriptor >= 0 && ready > 0 && descriptors[1].revents && !*done) return CWayland_waitWoken;
    }
    return CWayland_waitDone;
}

// MARK: Frames

struct CWayland_Buffer {
    struct wl_buffer *proxy;
    void *data;
    size_t length;
};

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
    frame->proxy = wl_proxy_marshal_flags(connection->screencopy, managerCaptureOutputRegion,
                                          &screencopyFrameInterface, wl_proxy_get_version(connection->screencopy),
                                          0, NULL, (int32_t)overlayCursor, connection->outputs[index], x, y, width,
                                          height);
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
        dispatchUntil(frame->connection, &frame->bufferInfoDone, timeoutMilliseconds, wakeDescriptor);
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
        dispatchUntil(frame->connection, &frame->finished, timeoutMilliseconds, wakeDescriptor);
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

// MARK: Buffers

CWayland_Buffer *CWayland_bufferCreate(CWayland_Connection *connection, CWayland_BufferInfo info) {
    if (!connection->shm || info.stride < info.width * 4 || info.height == 0) return NULL;
    size_t length = (size_t)info.stride * info.height;
    int descriptor = memfd_create("openavcapture-screen", MFD_CLOEXEC);
    if (descriptor < 0) return NULL;
    CWayland_Buffer *buffer = calloc(1, sizeof *buffer);
    void *data = MAP_FAILED;
    if (buffer && ftruncate(descriptor, (off_t)length) == 0) {
        data = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0);
    }
    if (data == MAP_FAILED) {
        close(descriptor);
        free(buffer);
        return NULL;
    }
    struct wl_shm_pool *pool = wl_shm_create_pool(connection->shm, descriptor, (int32_t)length);
    buffer->proxy = wl_shm_pool_create_buffer(pool, 0, (int32_t)info.width, (int32_t)info.height,
                                              (int32_t)info.stride, info.format);
    // The buffer keeps the pool's memory; neither the pool object nor the descriptor is needed any more.
    wl_shm_pool_destroy(pool);
    close(descriptor);
    buffer->data = data;
    buffer->length = length;
    return buffer;
}

void *CWayland_bufferData(const CWayland_Buffer *buffer) { return buffer->data; }

void CWayland_bufferDetach(CWayland_Buffer *buffer) {
    if (buffer->proxy) wl_buffer_destroy(buffer->proxy);
    buffer->proxy = NULL;
}

void CWayland_bufferDestroy(CWayland_Buffer *buffer) {
    if (!buffer) return;
    CWayland_bufferDetach(buffer);
    munmap(buffer->data, buffer->length);
    free(buffer);
}
