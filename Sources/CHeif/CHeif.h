// CHeif: libheif, which encodes HEIC stills where Debian's build carries an HEVC encoder.
// Every symbol this header adds starts with CHeif_.
#ifndef CHEIF_H
#define CHEIF_H

#include <libheif/heif.h>

#endif
