#include "CTouchgateSys.h"
#include <errno.h>
#include <sys/prctl.h>
#include <sys/resource.h>

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
