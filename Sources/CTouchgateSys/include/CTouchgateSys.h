#ifndef TOUCHGATE_CTOUCHGATESYS_H
#define TOUCHGATE_CTOUCHGATESYS_H
// Wrappers for the few system calls Swift cannot make itself.
#include <stddef.h>
#include <stdint.h>

/// Makes the process non-dumpable (prctl(PR_SET_DUMPABLE, 0), variadic in C) and sets
/// RLIMIT_CORE to 0 so that no core file can hold secret memory. Returns 0 or -errno.
int CTouchgateSys_harden_process(void);

/// Starts `path` with `argv` (NULL-terminated) in a session of its own, detached from this
/// process: standard input and output on /dev/null, standard error on `log_fd` (/dev/null
/// when -1). posix_spawn, so nothing runs between fork and exec in a threaded process.
/// Returns the new process's pid, or -errno.
int CTouchgateSys_spawn_detached(const char *path, char *const argv[], int log_fd);

/// Starts the program at the path `file` (no PATH search) with `argv` and `envp` in `directory` (NULL: this one),
/// standard input from `stdin_fd` (-1: /dev/null), output to `stdout_fd` and `stderr_fd`,
/// with default signal dispositions and no signal blocked. The pid, or -errno.
/// `extra_fds` become the child's descriptors 3, 4, … (`extra_count` of them, at most 16).
int CTouchgateSys_spawn_piped(const char *file, char *const argv[], char *const envp[], const char *directory,
                              int stdin_fd, int stdout_fd, int stderr_fd, const int *extra_fds, int extra_count);

/// A file in memory only (memfd, never on a file system) holding `bytes`, sealed against
/// any change and read from its start: the descriptor, or -errno.
int CTouchgateSys_sealed_memory_file(const void *bytes, size_t count);

/// A pipe whose ends close on exec: 0 or -errno.
int CTouchgateSys_pipe(int fds[2]);

/// Whether the process is currently dumpable (prctl(PR_GET_DUMPABLE)): 1, 0, or -errno.
int CTouchgateSys_is_dumpable(void);

// The path execve was given to start this program (AT_EXECFN; a symbolic link is not
// resolved, unlike /proc/self/exe), or NULL: which name of a program with several it runs as.
const char *CTouchgateSys_exec_path(void);

// Names the calling thread (prctl PR_SET_NAME; the first 15 bytes show).
void CTouchgateSys_name_thread(const char *name);

/// Blocks SIGINT and SIGTERM in the calling thread (and so in a single-threaded process)
/// and returns a signalfd(2) that becomes readable when one arrives (close-on-exec,
/// non-blocking), or -errno. The thin `touchgate` front polls it beside its socket.
int CTouchgateSys_interrupt_descriptor(void);

/// getsockopt(SO_PEERCRED) on a connected Unix socket: who is at the other end, as the
/// kernel recorded it when the peer connected (struct ucred needs _GNU_SOURCE). 0 or -errno.
int CTouchgateSys_peer_credentials(int fd, uint32_t *uid, uint32_t *gid, int32_t *pid);

/// getsockopt(SO_PEERPIDFD) (Linux 6.5): a pidfd of the process that connected to the Unix
/// socket `fd`, close-on-exec; the descriptor or -errno (-ENOPROTOOPT on older kernels).
int CTouchgateSys_peer_pidfd(int fd);

/// pidfd_open(pid, 0): a pidfd of process `pid` now (Linux 5.3); the descriptor or -errno.
int CTouchgateSys_pidfd_open(int32_t pid);

/// Whether the process of `pidfd` has exited (its pidfd polls readable): 1, 0, or -errno.
int CTouchgateSys_pidfd_exited(int pidfd);

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

/// keyctl(KEYCTL_UNLINK) from the calling user's keyring, which needs only write permission
/// on that keyring, not a permission on the key. 0 or -errno.
long CTouchgateSys_key_unlink_user(int32_t serial);

/// keyctl(KEYCTL_INVALIDATE): the key becomes unreachable at once and is collected. 0 or -errno.
long CTouchgateSys_key_invalidate(int32_t serial);

/// epoll_create1(EPOLL_CLOEXEC): a descriptor to wait on many sockets at once, or -errno.
int CTouchgateSys_poller_create(void);

/// Adds `fd` to `poller`, reported (as `token`) when it can be read or its peer hung up;
/// with `edge`, only when that changes (EPOLLET). 0 or -errno. A wrapper because
/// struct epoll_event is packed on x86-64.
int CTouchgateSys_poller_add(int poller, int fd, uint64_t token, int edge);

/// epoll_wait: up to `capacity` tokens of ready descriptors into `tokens`, waiting at most
/// `timeout_ms` (-1: without limit). Their count, or -errno (-EINTR when a signal came).
int CTouchgateSys_poller_wait(int poller, uint64_t *tokens, int capacity, int timeout_ms);

/// eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK): a descriptor another thread makes readable
/// (CTouchgateSys_wake) to end a poller's wait. The descriptor, or -errno.
int CTouchgateSys_wake_descriptor(void);

/// Makes a wake descriptor readable. 0 or -errno.
int CTouchgateSys_wake(int fd);

/// inotify on the directory `path` (not following a link) for anything that changes it or
/// a file in it: a write, a change of mode or owner, a file made, removed or renamed, the
/// directory itself removed or moved. A non-blocking, close-on-exec descriptor, or -errno.
int CTouchgateSys_watch_directory(const char *path);

/// Reads and discards every event pending on a watch descriptor: 1 when there were any
/// (or the queue overflowed), 0 when none, -errno on error.
int CTouchgateSys_watch_drain(int fd);

/// How many secret regions the fatal-signal registry holds at once.
#define CTOUCHGATESYS_SECRET_REGION_SLOTS 1024

/// Records [pointer, pointer + length) as secret memory that the fatal-signal handler
/// zeroes. Lock-free and thread-safe. Returns the slot to pass to
/// CTouchgateSys_secret_unregister, or -1 when the registry is full (the region is
/// then still freed and zeroed normally, just not by the handler) or the region is empty.
long CTouchgateSys_secret_register(void *pointer, size_t length);

/// Removes a region before it is freed. Returns 0, or -1 when `slot` does not hold
/// `pointer` (a programmer error). If the fatal-signal handler is wiping the region at
/// that moment it never returns: the process is exiting and the memory must stay mapped.
int CTouchgateSys_secret_unregister(long slot, const void *pointer);

/// Replaces the handlers of every core-dumping signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE,
/// SIGABRT, SIGTRAP, SIGSYS, SIGQUIT, SIGXCPU, SIGXFSZ), including the Swift runtime's
/// backtracer, with one that zeroes every registered region, writes the single line
/// "PROGRAM: stopped by fatal signal N (NAME); memory wiped, nothing further released"
/// to descriptor 2 and calls _exit(128 + N). Nothing else is printed: no registers,
/// no backtrace. Also unblocks those signals in the calling thread (so a kill(2) always
/// finds a thread to deliver to) and gives it an alternate signal stack if it has none.
/// `program` (at most 63 bytes are kept) may be NULL for "touchgate". Returns 0 or -errno.
int CTouchgateSys_install_fatal_signal_handlers(const char *program);

/// The most descriptors one message may carry (SCM_RIGHTS), either way.
#define CTOUCHGATESYS_MAXIMUM_DESCRIPTORS 4

/// sendmsg(2) of `length` bytes on a connected Unix socket with `count` descriptors
/// (at most CTOUCHGATESYS_MAXIMUM_DESCRIPTORS) attached as SCM_RIGHTS, MSG_NOSIGNAL.
/// The descriptors travel with the first byte. Returns the bytes sent or -errno.
long CTouchgateSys_send_with_descriptors(int fd, const void *bytes, size_t length, const int *descriptors, int count);

/// recvmsg(2) into `buffer`; descriptors that arrive (SCM_RIGHTS, close-on-exec) are
/// stored in `descriptors` (room for CTOUCHGATESYS_MAXIMUM_DESCRIPTORS) and counted in
/// `*received`. More than fit are closed and reported as -EMSGSIZE after the bytes are
/// taken (the caller drops the connection). Returns bytes read, 0 at end, or -errno.
long CTouchgateSys_receive_with_descriptors(int fd, void *buffer, size_t length, int *descriptors, int *received);

/// Sets the effective group of the calling thread alone (the setresgid system call, which
/// glibc's wrappers would apply to every thread): `egid`, real and saved unchanged. 0 or -errno.
int CTouchgateSys_set_thread_egid(uint32_t egid);

/// The inode of the socket at the other end of the Unix socket with inode `inode`
/// (NETLINK_SOCK_DIAG, UNIX_DIAG_PEER), into `*peer`: 0 when it has none (listening or
/// unconnected). 0, or -errno (-ENOENT when no such socket exists).
int CTouchgateSys_unix_peer_inode(uint32_t inode, uint32_t *peer);

#endif
