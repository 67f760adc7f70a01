#ifndef TOUCHGATE_CZLIB_SHIM_H
#define TOUCHGATE_CZLIB_SHIM_H
// zlib: deflate/inflate and CRC-32 for PNG files.
#include <zlib.h>
#endif
