#ifndef TOUCHGATE_CSODIUM_SHIM_H
#define TOUCHGATE_CSODIUM_SHIM_H
#include <sodium.h>
#endif
