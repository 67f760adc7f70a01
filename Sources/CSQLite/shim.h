#ifndef TOUCHGATE_CSQLITE_SHIM_H
#define TOUCHGATE_CSQLITE_SHIM_H
// Debian's SQLite (libsqlite3-0), the store's database engine.
#include <sqlite3.h>
#endif
