// The connection, its outputs, waiting for events, and shared-memory buffers.
#define _GNU_SOURCE
#include "CWaylandInternal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

// MARK: The connection

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
    } else if (strcmp(interface, wl_output_interface.name) == 0 &&
               connection->outputCount < CWayland_maximumOutputs) {
        int index = connection->outputCount++;
        CWayland_Output *described = &connection->described[index];
        memset(described, 0, sizeof *described);
        described->globalName = name;
        described->scale = 1;
        struct wl_output *output = wl_registry_bind(registry, name, &wl_output_interface, lowest(version, 4));
        connection->outputs[index] = output;
        wl_output_add_listener(output, &outputListener, described);
    } else if (strcmp(interface, CWayland_screencopyManagerInterface.name) == 0 && !connection->screencopy) {
        connection->screencopyVersion = lowest(version, 3);
        connection->screencopy =
            wl_registry_bind(registry, name, &CWayland_screencopyManagerInterface, connection->screencopyVersion);
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
        wl_proxy_marshal_flags(connection->screencopy, CWayland_managerDestroy, NULL,
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

CWayland_WaitResult CWayland_dispatchUntil(CWayland_Connection *connection, const bool *done, int timeoutMilliseconds,
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
