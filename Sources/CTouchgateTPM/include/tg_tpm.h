/* tg_tpm.h - small C shim over tpm2-tss ESYS for Touchgate.
 *
 * Self-contained: no tss2 headers needed by users. The tss2 libraries are
 * loaded at run time with dlopen(); if they are missing every call returns
 * TG_TPM_UNAVAILABLE. A tg_tpm handle must not be used from two threads at
 * the same time. Every function writes a one-line English message into
 * err (size errlen) on failure; messages never contain secret bytes.
 */
#ifndef TG_TPM_H
#define TG_TPM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    TG_TPM_OK = 0,
    TG_TPM_UNAVAILABLE = 1, /* no tss2 libraries, or no TPM reachable */
    TG_TPM_WRONG_AUTH = 2,  /* auth value refused (for sealed data: counted by DA) */
    TG_TPM_LOCKOUT = 3,     /* TPM is in dictionary-attack lockout */
    TG_TPM_FOREIGN = 4,     /* blob / NV index does not belong to this TPM */
    TG_TPM_BAD_INPUT = 5,   /* malformed blob or arguments */
    TG_TPM_ERROR = 6,       /* anything else; message carries the decoded rc */
    TG_TPM_EXHAUSTED = 7    /* the passphrase guard reached its limit: recovery key only */
};

/* NV indices used for counters (TPM owner range 0x01000000..0x013FFFFF). */
#define TG_TPM_NV_FIRST 0x01387400u
#define TG_TPM_NV_LAST  0x013874FFu

#define TG_TPM_BLOB_MAX 2048 /* a sealed blob is never longer than this */

typedef struct tg_tpm tg_tpm;

/* tcti: NULL or "" = tss2 default search (tabrmd, /dev/tpmrm0, /dev/tpm0, ...);
 * otherwise a tctildr string such as "device:/dev/tpmrm0" or
 * "swtpm:path=/run/x/sock" (control socket is path + ".ctrl"). */
int tg_tpm_open(const char *tcti, tg_tpm **out, char *err, size_t errlen);
void tg_tpm_close(tg_tpm *tpm); /* NULL allowed */

/* A passphrase guard: a PIN Fail NV index whose auth value is auth (1..32 bytes).
 * Each wrong auth value adds one to its count, never to the TPM's machine-wide
 * dictionary-attack counter; the right one sets the count to 0; at `limit` the TPM
 * refuses even the right one (TG_TPM_EXHAUSTED). Remove it with
 * tg_tpm_counter_undefine. */
int tg_tpm_guard_define(tg_tpm *tpm, const uint8_t *auth, size_t authlen, uint32_t limit,
                        uint32_t *index, char *err, size_t errlen);
/* The guard's count of wrong auth values in a row, and its limit (no auth needed). */
int tg_tpm_guard_status(tg_tpm *tpm, uint32_t index, uint32_t *count, uint32_t *limit,
                        char *err, size_t errlen);

/* Seals secret (1..64 bytes) so that it opens only after TPM2_PolicySecret on the
 * guard with its auth value (auth, as given to tg_tpm_guard_define; the seal itself
 * uses it once, which sets the guard's count to 0). The sealed object is noDA.
 * blob capacity in *bloblen, set to the bytes written (TG_TPM_BLOB_MAX is always
 * enough). */
int tg_tpm_seal(tg_tpm *tpm, uint32_t guard, const uint8_t *auth, size_t authlen,
                const uint8_t *secret, size_t secretlen,
                uint8_t *blob, size_t *bloblen, char *err, size_t errlen);
/* Opens a blob of tg_tpm_seal, or of the first format (the auth value the object's
 * own, counted by the TPM's dictionary-attack logic). secret capacity in *secretlen
 * (64 is always enough), set to the length. */
int tg_tpm_unseal(tg_tpm *tpm, const uint8_t *blob, size_t bloblen,
                  const uint8_t *auth, size_t authlen,
                  uint8_t *secret, size_t *secretlen, char *err, size_t errlen);

typedef struct {
    uint32_t failures, max_failures, interval_seconds, recovery_seconds;
    int in_lockout;
    char manufacturer[5];
} tg_tpm_da;
int tg_tpm_da_status(tg_tpm *tpm, tg_tpm_da *out, char *err, size_t errlen);

/* Monotonic NV counters (auth: 1..64 bytes, the index's authValue). */
int tg_tpm_counter_define(tg_tpm *tpm, const uint8_t *auth, size_t authlen,
                          uint32_t *index, uint64_t *value, char *err, size_t errlen);
int tg_tpm_counter_read(tg_tpm *tpm, uint32_t index, const uint8_t *auth, size_t authlen,
                        uint64_t *value, char *err, size_t errlen);
/* Reads the counter, then increments it until it reaches target (never past it; a
 * counter already there or beyond is only read); *value is its value at the end. The
 * caller serializes the processes that may move it. */
int tg_tpm_counter_advance(tg_tpm *tpm, uint32_t index, const uint8_t *auth, size_t authlen,
                           uint64_t target, uint64_t *value, char *err, size_t errlen);
int tg_tpm_counter_undefine(tg_tpm *tpm, uint32_t index, char *err, size_t errlen);

typedef struct {
    int orderly;                /* this boot followed a TPM2_Shutdown */
    uint32_t reset_count, restart_count;
    int safe;                   /* clockInfo.safe (about Clock, not counters) */
    uint32_t orderly_count;     /* TPM2_PT_ORDERLY_COUNT: an orderly counter jumps
                                   forward by at most this much after a power loss */
} tg_tpm_boot;
int tg_tpm_boot_info(tg_tpm *tpm, tg_tpm_boot *out, char *err, size_t errlen);

/* The name of a keyed-hash primary key of Touchgate's template (derived from the owner seed: the same
 * until the TPM is cleared, different on any other TPM). *namelen: capacity (34 is
 * enough), set to the length. */
int tg_tpm_identity(tg_tpm *tpm, uint8_t *name, size_t *namelen, char *err, size_t errlen);

/* The guard index a blob names (0 for a first-format blob), without a TPM. */
int tg_tpm_blob_guard(const uint8_t *blob, size_t bloblen, uint32_t *guard);

/* Parse a blob exactly as tg_tpm_unseal does, without a TPM. Returns
 * TG_TPM_OK, TG_TPM_BAD_INPUT, or TG_TPM_UNAVAILABLE (libtss2-mu missing). */
int tg_tpm_blob_check(const uint8_t *blob, size_t bloblen);

/* For `make bench`: one TPM2_CreatePrimary of the storage key and its flush, the
 * step every seal and unseal begins with. */
int tg_tpm_bench_primary(tg_tpm *tpm, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
