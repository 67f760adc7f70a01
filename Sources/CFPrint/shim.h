#ifndef TOUCHGATE_CFPRINT_SHIM_H
#define TOUCHGATE_CFPRINT_SHIM_H
// The whole libfprint-2 API. GLib, GObject and GIO come along through its headers.
// Nothing here is inline: every call FingerprintKit makes is a real libfprint or GLib
// function, so the shim stays a header list.
#include <fprint.h>
#endif
