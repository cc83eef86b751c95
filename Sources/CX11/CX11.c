#include "CX11.h"
#include <pthread.h>

static _Thread_local int lastError = 0;

static int recordError(Display *display, XErrorEvent *event) {
    (void)display;
    lastError = event->error_code;
    return 0;
}

// A lost server connection: Xlib calls this and then exits unless the exit handler returns. The exit handler
// (libX11 ≥ 1.7) lets the thread carry on; its next request fails and the device reports the disconnect.
static int connectionLost(Display *display) {
    (void)display;
    lastError = -1;
    return 0;
}

static void keepRunning(Display *display, void *data) {
    (void)display;
    (void)data;
    lastError = -1;
}

static pthread_once_t installOnce = PTHREAD_ONCE_INIT;

static void install(void) {
    XSetErrorHandler(recordError);
    XSetIOErrorHandler(connectionLost);
}

void CX11_keepRunningOnConnectionLoss(Display *display) { XSetIOErrorExitHandler(display, keepRunning, NULL); }

void CX11_installErrorHandlers(void) { pthread_once(&installOnce, install); }

int CX11_takeLastError(void) {
    int error = lastError;
    lastError = 0;
    return error;
}

unsigned long CX11_allPlanes(void) { return AllPlanes; }

void CX11_destroyImage(XImage *image) { XDestroyImage(image); }

key_t CX11_ipcPrivate(void) { return IPC_PRIVATE; }

int CX11_isDamageNotify(const XEvent *event, int damageEventBase) {
    return event->type == damageEventBase + XDamageNotify;
}

int CX11_isCursorNotify(const XEvent *event, int fixesEventBase) {
    return event->type == fixesEventBase + XFixesCursorNotify;
}
