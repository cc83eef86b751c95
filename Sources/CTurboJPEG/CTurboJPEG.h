// CTurboJPEG: libjpeg-turbo's TurboJPEG API (JPEG encode and decode, YUV planes in and out).
// Every symbol this header adds starts with CTurboJPEG_.
#ifndef CTURBOJPEG_H
#define CTURBOJPEG_H

#include <turbojpeg.h>

#endif
