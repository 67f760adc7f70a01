#ifndef TOUCHGATE_CTOUCHGATESYS_H
#define TOUCHGATE_CTOUCHGATESYS_H
// Wrappers for the few system calls Swift cannot make itself.
#include <stddef.h>
#include <stdint.h>

/// Makes the process non-dumpable (prctl(PR_SET_DUMPABLE, 0), variadic in C) and sets
/// RLIMIT_CORE to 0 so that no core file can hold secret memory. Returns 0 or -errno.
int CTouchgateSys_harden_process(void);

/// Whether the process is currently dumpable (prctl(PR_GET_DUMPABLE)): 1, 0, or -errno.
int CTouchgateSys_is_dumpable(void);

/// add_key("user", description, payload, length, KEY_SPEC_USER_KEYRING): creates or
/// updates a key in the user keyring (syscall(2) is variadic). Returns the serial or -errno.
long CTouchgateSys_key_add_user(const char *description, const void *payload, size_t length);

/// keyctl(KEYCTL_SEARCH) for a "user" key in the user keyring. Returns the serial or -errno
/// (-ENOKEY when absent, -EKEYEXPIRED / -EKEYREVOKED when timed out or revoked).
long CTouchgateSys_key_search_user(const char *description);

/// keyctl(KEYCTL_READ): copies up to `length` payload bytes; returns the full payload size or -errno.
long CTouchgateSys_key_read(int32_t serial, void *buffer, size_t length);

/// keyctl(KEYCTL_SET_TIMEOUT): the key expires `seconds` from now (0 = never). 0 or -errno.
long CTouchgateSys_key_set_timeout(int32_t serial, unsigned int seconds);

/// keyctl(KEYCTL_SETPERM): possessor all, same uid view/read/write/search/setattr, nobody else. 0 or -errno.
long CTouchgateSys_key_restrict_to_user(int32_t serial);

/// keyctl(KEYCTL_INVALIDATE): the key becomes unreachable at once and is collected. 0 or -errno.
long CTouchgateSys_key_invalidate(int32_t serial);

#endif
