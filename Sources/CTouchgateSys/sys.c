#define _GNU_SOURCE  // struct ucred
#include "CTouchgateSys.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

// prctl is variadic, which Swift cannot call.
int CTouchgateSys_harden_process(void) {
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return -errno;
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) return -errno;
    return 0;
}

// Names the calling thread (the kernel keeps the first 15 bytes).
void CTouchgateSys_name_thread(const char *name) {
    (void) prctl(PR_SET_NAME, (unsigned long) name, 0, 0, 0);
}

// The path this program was started by (the kernel's AT_EXECFN: what execve was given,
// a symbolic link not resolved), or NULL.
const char *CTouchgateSys_exec_path(void) {
    return (const char *) getauxval(AT_EXECFN);
}

int CTouchgateSys_set_thread_egid(uint32_t egid) {
    if (syscall(SYS_setresgid, -1, (long)egid, -1) != 0) return -errno;
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

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

int CTouchgateSys_peer_pidfd(int fd) {
    int pidfd = -1;
    socklen_t length = sizeof pidfd;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &length) != 0) return -errno;
    return pidfd;
}

int CTouchgateSys_pidfd_open(int32_t pid) {
    long pidfd = syscall(SYS_pidfd_open, (long)pid, 0L);
    return pidfd < 0 ? -errno : (int)pidfd;
}

int CTouchgateSys_pidfd_exited(int pidfd) {
    struct pollfd watched = {pidfd, POLLIN, 0};
    int ready = poll(&watched, 1, 0);
    if (ready < 0) return -errno;
    return ready > 0 && (watched.revents & (POLLIN | POLLHUP)) ? 1 : 0;
}

// CMSG_* are macros over struct msghdr, which Swift cannot expand.
long CTouchgateSys_send_with_descriptors(int fd, const void *bytes, size_t length, const int *descriptors, int count) {
    if (count < 0 || count > CTOUCHGATESYS_MAXIMUM_DESCRIPTORS || length == 0) return -EINVAL;
    union {
        char buffer[CMSG_SPACE(sizeof(int) * CTOUCHGATESYS_MAXIMUM_DESCRIPTORS)];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct iovec vector = {(void *)bytes, length};
    struct msghdr message = {0};
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    if (count > 0) {
        message.msg_control = control.buffer;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)count);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)count);
        memcpy(CMSG_DATA(header), descriptors, sizeof(int) * (size_t)count);
    }
    ssize_t sent;
    do {
        sent = sendmsg(fd, &message, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    return sent < 0 ? -errno : (long)sent;
}

long CTouchgateSys_receive_with_descriptors(int fd, void *buffer, size_t length, int *descriptors, int *received) {
    *received = 0;
    union {
        char buffer[CMSG_SPACE(sizeof(int) * CTOUCHGATESYS_MAXIMUM_DESCRIPTORS)];
        struct cmsghdr align;
    } control;
    struct iovec vector = {buffer, length};
    struct msghdr message = {0};
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    message.msg_control = control.buffer;
    message.msg_controllen = sizeof control.buffer;
    ssize_t count;
    do {
        count = recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
    } while (count < 0 && errno == EINTR);
    if (count < 0) return -errno;
    int overflow = (message.msg_flags & MSG_CTRUNC) != 0;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        size_t n = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int *incoming = (int *)CMSG_DATA(header);
        for (size_t i = 0; i < n; i++) {
            int one;
            memcpy(&one, incoming + i, sizeof one);
            if (*received < CTOUCHGATESYS_MAXIMUM_DESCRIPTORS) {
                descriptors[(*received)++] = one;
            } else {
                close(one);
                overflow = 1;
            }
        }
    }
    if (overflow) return -EMSGSIZE;
    return (long)count;
}

// sys/signalfd.h is not in Swift's Glibc module.
int CTouchgateSys_interrupt_descriptor(void) {
    sigset_t interrupts;
    sigemptyset(&interrupts);
    sigaddset(&interrupts, SIGINT);
    sigaddset(&interrupts, SIGTERM);
    if (sigprocmask(SIG_BLOCK, &interrupts, NULL) != 0) return -errno;
    int fd = signalfd(-1, &interrupts, SFD_CLOEXEC | SFD_NONBLOCK);
    return fd < 0 ? -errno : fd;
}

// Both halves of a spawn's setup, or neither: 0, or the error (nothing to destroy then).
static int spawn_setup(posix_spawn_file_actions_t *actions, posix_spawnattr_t *attributes) {
    int error = posix_spawn_file_actions_init(actions);
    if (error != 0) return error;
    error = posix_spawnattr_init(attributes);
    if (error != 0) posix_spawn_file_actions_destroy(actions);
    return error;
}

int CTouchgateSys_spawn_detached(const char *path, char *const argv[], int log_fd) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int error = spawn_setup(&actions, &attributes);
    if (error != 0) return -error;
    error = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (error == 0) error = posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    if (error == 0) {
        error = log_fd >= 0 ? posix_spawn_file_actions_adddup2(&actions, log_fd, 2)
                            : posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    }
    if (error == 0) error = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
    sigset_t none;
    sigemptyset(&none);
    if (error == 0) error = posix_spawnattr_setsigmask(&attributes, &none);
    pid_t pid = -1;
    extern char **environ;
    if (error == 0) error = posix_spawn(&pid, path, &actions, &attributes, argv, environ);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return error != 0 ? -error : (int)pid;
}

int CTouchgateSys_spawn_piped(const char *file, char *const argv[], char *const envp[], const char *directory,
                              int stdin_fd, int stdout_fd, int stderr_fd, const int *extra_fds, int extra_count) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int error = spawn_setup(&actions, &attributes);
    if (error != 0) return -error;
    if (directory != NULL) error = posix_spawn_file_actions_addchdir_np(&actions, directory);
    if (error == 0) {
        error = stdin_fd >= 0 ? posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0)
                              : posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    }
    if (error == 0) error = posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
    if (error == 0) error = posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
    // Files passed as descriptors 3, 4, …: dup2 leaves the child's copy open across exec. Each
    // is first copied above every target, so that no dup2 overwrites a file still to be passed.
    int moved[16];
    if (extra_count < 0 || extra_count > 16) error = EINVAL;
    int kept = 0;
    for (; error == 0 && kept < extra_count; kept++) {
        moved[kept] = fcntl(extra_fds[kept], F_DUPFD_CLOEXEC, 3 + extra_count);
        if (moved[kept] < 0) error = errno;
    }
    for (int i = 0; error == 0 && i < extra_count; i++) error = posix_spawn_file_actions_adddup2(&actions, moved[i], 3 + i);
    // The child gets the signal dispositions a shell gives it: the caller ignores SIGINT and
    // SIGTERM while it waits, which a child would otherwise inherit.
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    int reset[] = {SIGINT, SIGTERM, SIGPIPE, SIGQUIT, SIGHUP};
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++) sigaddset(&defaults, reset[i]);
    if (error == 0) error = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (error == 0) error = posix_spawnattr_setsigmask(&attributes, &none);
    if (error == 0) error = posix_spawnattr_setsigdefault(&attributes, &defaults);
    pid_t pid = -1;
    // The path as shown and approved: no search of a PATH the asker chose.
    if (error == 0) error = posix_spawn(&pid, file, &actions, &attributes, argv, envp);
    for (int i = 0; i < kept; i++) if (moved[i] >= 0) close(moved[i]);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return error != 0 ? -error : (int)pid;
}

int CTouchgateSys_sealed_memory_file(const void *bytes, size_t count) {
    int fd = memfd_create("touchgate-secret", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -errno;
    size_t done = 0;
    while (done < count) {
        ssize_t written = write(fd, (const char *)bytes + done, count - done);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) {
            int error = errno;
            close(fd);
            return -(error ? error : EIO);
        }
        done += (size_t)written;
    }
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0 || lseek(fd, 0, SEEK_SET) != 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}

int CTouchgateSys_pipe(int fds[2]) {
    return pipe2(fds, O_CLOEXEC) == 0 ? 0 : -errno;
}

int CTouchgateSys_poller_create(void) {
    int fd = epoll_create1(EPOLL_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int CTouchgateSys_poller_add(int poller, int fd, uint64_t token, int edge) {
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = EPOLLIN | EPOLLRDHUP | (edge ? EPOLLET : 0);
    event.data.u64 = token;
    return epoll_ctl(poller, EPOLL_CTL_ADD, fd, &event) == 0 ? 0 : -errno;
}

int CTouchgateSys_poller_wait(int poller, uint64_t *tokens, int capacity, int timeout_ms) {
    enum { most = 64 };
    struct epoll_event events[most];
    if (capacity <= 0) return -EINVAL;
    int count = epoll_wait(poller, events, capacity < most ? capacity : most, timeout_ms);
    if (count < 0) return -errno;
    for (int index = 0; index < count; index++) tokens[index] = events[index].data.u64;
    return count;
}

int CTouchgateSys_wake_descriptor(void) {
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    return fd < 0 ? -errno : fd;
}

int CTouchgateSys_wake(int fd) {
    uint64_t one = 1;
    return write(fd, &one, sizeof one) == (ssize_t)sizeof one ? 0 : -errno;
}

int CTouchgateSys_watch_directory(const char *path) {
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) return -errno;
    uint32_t mask = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW;
    if (inotify_add_watch(fd, path, mask) < 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}

int CTouchgateSys_watch_drain(int fd) {
    char buffer[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    int any = 0;
    for (;;) {
        ssize_t count = read(fd, buffer, sizeof buffer);
        if (count > 0) {
            any = 1;
            continue;
        }
        if (count < 0 && errno == EINTR) continue;
        if (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return any;
        return count == 0 ? any : -errno;
    }
}
