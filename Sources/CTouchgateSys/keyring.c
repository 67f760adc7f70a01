#include "CTouchgateSys.h"
#include <errno.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/keyctl.h>

// Permission bits from keyutils.h (not in the kernel UAPI headers): possessor and user masks.
#define TG_KEY_POS_ALL     0x3f000000u
#define TG_KEY_USR_VIEW    0x00010000u
#define TG_KEY_USR_READ    0x00020000u
#define TG_KEY_USR_WRITE   0x00040000u
#define TG_KEY_USR_SEARCH  0x00080000u
#define TG_KEY_USR_SETATTR 0x00200000u

// The kernel keyring has no glibc wrapper (libkeyutils is not a dependency) and
// syscall(2) is variadic, which Swift cannot call: each keyring operation the vault
// needs gets one fixed-signature wrapper here. All return -errno on failure.

long CTouchgateSys_key_add_user(const char *description, const void *payload, size_t length) {
    long serial = syscall(SYS_add_key, "user", description, payload, length, KEY_SPEC_USER_KEYRING);
    return serial < 0 ? -errno : serial;
}

long CTouchgateSys_key_search_user(const char *description) {
    long serial = syscall(SYS_keyctl, KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, "user", description, 0);
    return serial < 0 ? -errno : serial;
}

long CTouchgateSys_key_read(int32_t serial, void *buffer, size_t length) {
    long count = syscall(SYS_keyctl, KEYCTL_READ, serial, buffer, length);
    return count < 0 ? -errno : count;
}

long CTouchgateSys_key_set_timeout(int32_t serial, unsigned int seconds) {
    long result = syscall(SYS_keyctl, KEYCTL_SET_TIMEOUT, serial, seconds);
    return result < 0 ? -errno : result;
}

long CTouchgateSys_key_restrict_to_user(int32_t serial) {
    // Possessor: everything. Same uid (not possessing it, e.g. another login session):
    // view, read, update, search, set timeout. Group and others: nothing.
    unsigned int perm = TG_KEY_POS_ALL | TG_KEY_USR_VIEW | TG_KEY_USR_READ | TG_KEY_USR_WRITE
                      | TG_KEY_USR_SEARCH | TG_KEY_USR_SETATTR;
    long result = syscall(SYS_keyctl, KEYCTL_SETPERM, serial, perm);
    return result < 0 ? -errno : result;
}

long CTouchgateSys_key_unlink_user(int32_t serial) {
    long result = syscall(SYS_keyctl, KEYCTL_UNLINK, serial, KEY_SPEC_USER_KEYRING);
    return result < 0 ? -errno : result;
}

long CTouchgateSys_key_invalidate(int32_t serial) {
    long result = syscall(SYS_keyctl, KEYCTL_INVALIDATE, serial);
    return result < 0 ? -errno : result;
}
