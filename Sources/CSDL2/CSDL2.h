// CSDL2: SDL 2 (Debian's libsdl2-dev) for the preview window: video, renderer, textures, events.
// Every symbol this header adds starts with CSDL2_: the function-like macros Swift cannot import, as constants.
#ifndef CSDL2_H
#define CSDL2_H

// <SDL2/SDL.h>, not pkg-config's -I/usr/include/SDL2: sdl2.pc also gives -D_REENTRANT, which SwiftPM refuses with a
// warning on every build (and glibc ignores). SDL's own headers include each other with quotes, so this finds them.
#include <SDL2/SDL.h>

/// SDL_WINDOWPOS_CENTERED: the window manager centres the window.
static const int CSDL2_windowPositionCentered = SDL_WINDOWPOS_CENTERED;

/// SDL_BUTTON_LMASK: the left button in SDL_GetMouseState's mask.
static const unsigned int CSDL2_leftButtonMask = SDL_BUTTON_LMASK;

#endif
