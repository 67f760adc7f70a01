#ifndef TOUCHGATE_CTOUCHGATESYS_H
#define TOUCHGATE_CTOUCHGATESYS_H
// Wrappers for the few system calls Swift cannot make itself.

/// Makes the process non-dumpable (prctl(PR_SET_DUMPABLE, 0), variadic in C) and sets
/// RLIMIT_CORE to 0 so that no core file can hold secret memory. Returns 0 or -errno.
int CTouchgateSys_harden_process(void);

/// Whether the process is currently dumpable (prctl(PR_GET_DUMPABLE)): 1, 0, or -errno.
int CTouchgateSys_is_dumpable(void);

#endif
