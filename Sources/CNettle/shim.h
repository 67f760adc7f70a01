#ifndef TOUCHGATE_CNETTLE_SHIM_H
#define TOUCHGATE_CNETTLE_SHIM_H
// Nettle and its public-key half hogweed (Debian's libnettle8, libhogweed6), over GMP:
// ECDSA on P-256 for SSH keys, and the Secret Service's session algorithm (the 1024-bit
// Diffie-Hellman exponentiation, HKDF-SHA256, AES-128-CBC). Nothing inline: every call
// is a real library function (nettle's names are macros for nettle_-prefixed symbols,
// which Swift calls by those names).
#include <gmp.h>
#include <nettle/aes.h>
#include <nettle/cbc.h>
#include <nettle/ecc-curve.h>
#include <nettle/ecc.h>
#include <nettle/ecdsa.h>
#include <nettle/hkdf.h>
#include <nettle/hmac.h>
#include <nettle/sha2.h>
#endif
