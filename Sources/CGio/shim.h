#ifndef TOUCHGATE_CGIO_SHIM_H
#define TOUCHGATE_CGIO_SHIM_H
// GIO's D-Bus API (GDBusConnection, GDBusMessage, GVariant), for the Secret Service door.
// Nothing inline: every call is a real GLib function, so the shim stays a header list.
#include <gio/gio.h>
#endif
