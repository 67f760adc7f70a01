#ifndef TOUCHGATE_CPQ_SHIM_H
#define TOUCHGATE_CPQ_SHIM_H
#include <libpq-fe.h>
#endif
