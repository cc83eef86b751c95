// CX11: Xlib with the extensions screen capture uses (MIT-SHM, XFixes, Damage, RandR), plus what Swift cannot
// import from them. Every symbol this header adds starts with CX11_.
//
// Xlib's default error handlers print and exit the process; a capture device must fail with a message instead,
// so CX11_installErrorHandlers replaces them: protocol errors are recorded per thread (CX11_takeLastError), and
// a lost connection ends only the thread's use of it.
#ifndef CX11_H
#define CX11_H

#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/extensions/XShm.h>
#include <X11/extensions/Xfixes.h>
#include <X11/extensions/Xdamage.h>
#include <X11/extensions/Xrandr.h>
#include <sys/ipc.h>
#include <sys/shm.h>

/// Installs the process's Xlib error handlers once (later calls do nothing).
void CX11_installErrorHandlers(void);

/// Makes a lost connection to `display` an error of this thread's next request instead of the process's exit.
void CX11_keepRunningOnConnectionLoss(Display *display);

/// The last X protocol error code seen on this thread since the previous call (0: none), then clears it.
int CX11_takeLastError(void);

/// `AllPlanes` (a cast macro Swift does not import).
unsigned long CX11_allPlanes(void);

/// `XDestroyImage` (a macro calling the image's own destructor): frees the XImage and its `data` unless NULL.
void CX11_destroyImage(XImage *image);

/// `IPC_PRIVATE` (a cast macro).
key_t CX11_ipcPrivate(void);

/// Whether `event` is a Damage notification (its type is the extension's event base + XDamageNotify).
int CX11_isDamageNotify(const XEvent *event, int damageEventBase);

/// Whether `event` is an XFixes cursor notification (the cursor's image changed).
int CX11_isCursorNotify(const XEvent *event, int fixesEventBase);

#endif
