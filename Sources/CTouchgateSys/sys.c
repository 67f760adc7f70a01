#define _GNU_SOURCE  // struct ucred
#include "CTouchgateSys.h"
#include <errno.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>

// prctl is variadic, which Swift cannot call.
int CTouchgateSys_harden_process(void) {
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return -errno;
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) return -errno;
    return 0;
}

int CTouchgateSys_is_dumpable(void) {
    int r = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    return r < 0 ? -errno : r;
}

// struct ucred needs _GNU_SOURCE, which Swift's Glibc module does not define.
int CTouchgateSys_peer_credentials(int fd, uint32_t *uid, uint32_t *gid, int32_t *pid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -errno;
    *uid = credentials.uid;
    *gid = credentials.gid;
    *pid = credentials.pid;
    return 0;
}
