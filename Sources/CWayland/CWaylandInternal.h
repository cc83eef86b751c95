// What CWayland's two C files share; not part of the module's header.
#ifndef CWAYLAND_INTERNAL_H
#define CWAYLAND_INTERNAL_H

#include "CWayland.h"

#include <wayland-client.h>

/// Outputs kept per connection: more than any desk has.
#define CWayland_maximumOutputs 16

struct CWayland_Connection {
    struct wl_display *display;
    struct wl_registry *registry;
    struct wl_shm *shm;
    struct wl_proxy *screencopy;
    uint32_t screencopyVersion;
    int outputCount;
    struct wl_output *outputs[CWayland_maximumOutputs];
    CWayland_Output described[CWayland_maximumOutputs];
};

struct CWayland_Buffer {
    struct wl_buffer *proxy;
    void *data;
    size_t length;
};

/// wlr-screencopy's interfaces (CWaylandScreencopy.c) and the manager's request numbers.
extern const struct wl_interface CWayland_screencopyManagerInterface;
extern const struct wl_interface CWayland_screencopyFrameInterface;
enum { CWayland_managerCaptureOutputRegion = 1, CWayland_managerDestroy = 2 };

/// Dispatches events until `*done`, the deadline, the wake descriptor (-1: none) or a lost connection.
CWayland_WaitResult CWayland_dispatchUntil(CWayland_Connection *connection, const bool *done, int timeoutMilliseconds,
                                           int wakeDescriptor);

#endif
