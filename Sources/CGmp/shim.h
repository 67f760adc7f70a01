#ifndef TOUCHGATE_CGMP_SHIM_H
#define TOUCHGATE_CGMP_SHIM_H
// GMP, for the Secret Service's 1024-bit Diffie-Hellman exchange (mpz_powm_sec).
// Nothing inline: every call is a real GMP function.
#include <gmp.h>
#endif
