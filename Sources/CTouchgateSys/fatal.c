#include "CTouchgateSys.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// Why this is C: a fatal-signal handler may only do async-signal-safe work (atomics,
// mprotect, write, _exit), must not touch the Swift runtime, and has to replace the
// handler the Swift runtime's backtracer installs at start-up. sigaction's union and
// sigaltstack are also awkward from Swift.

// The signals whose default action dumps core, which includes every one the Swift
// backtracer hooks (SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV; SIGQUIT in some
// releases).
static const int fatal_signals[] = {
    SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS, SIGQUIT, SIGXCPU, SIGXFSZ,
};

// A slot moves FREE -> BUSY -> LIVE -> BUSY -> FREE as its owner registers and
// unregisters, or LIVE -> WIPING once the handler claims it (for good: the process
// is exiting). Address and length are written only while the owner holds BUSY and
// read only by whoever moved the slot out of LIVE, so the release store of LIVE and
// the acquiring compare-and-swap order them.
enum { SLOT_FREE, SLOT_BUSY, SLOT_LIVE, SLOT_WIPING };

struct secret_slot {
    _Atomic int state;
    _Atomic uintptr_t address;
    _Atomic size_t length;
};

static struct secret_slot slots[CTOUCHGATESYS_SECRET_REGION_SLOTS];
static _Atomic size_t next_hint;
static _Atomic int stopping;
static size_t page_size = 4096;
static char program_name[64] = "touchgate";

long CTouchgateSys_secret_register(void *pointer, size_t length) {
    if (pointer == NULL || length == 0) return -1;
    size_t start = atomic_load_explicit(&next_hint, memory_order_relaxed);
    for (size_t k = 0; k < CTOUCHGATESYS_SECRET_REGION_SLOTS; k++) {
        size_t i = (start + k) % CTOUCHGATESYS_SECRET_REGION_SLOTS;
        int expected = SLOT_FREE;
        if (!atomic_compare_exchange_strong_explicit(&slots[i].state, &expected, SLOT_BUSY,
                                                     memory_order_acquire, memory_order_relaxed)) {
            continue;
        }
        atomic_store_explicit(&slots[i].address, (uintptr_t)pointer, memory_order_relaxed);
        atomic_store_explicit(&slots[i].length, length, memory_order_relaxed);
        atomic_store_explicit(&slots[i].state, SLOT_LIVE, memory_order_release);
        atomic_store_explicit(&next_hint, i + 1, memory_order_relaxed);
        return (long)i;
    }
    return -1;
}

int CTouchgateSys_secret_unregister(long slot, const void *pointer) {
    if (slot < 0 || slot >= CTOUCHGATESYS_SECRET_REGION_SLOTS) return -1;
    struct secret_slot *entry = &slots[slot];
    int expected = SLOT_LIVE;
    if (!atomic_compare_exchange_strong_explicit(&entry->state, &expected, SLOT_BUSY,
                                                 memory_order_acquire, memory_order_relaxed)) {
        if (expected != SLOT_WIPING) return -1;
        // The fatal-signal handler is zeroing this region and will _exit: freeing it
        // now would pull the memory from under the handler. Wait for the end.
        for (;;) pause();
    }
    if (atomic_load_explicit(&entry->address, memory_order_relaxed) != (uintptr_t)pointer) {
        atomic_store_explicit(&entry->state, SLOT_LIVE, memory_order_release);
        return -1;
    }
    atomic_store_explicit(&entry->address, 0, memory_order_relaxed);
    atomic_store_explicit(&entry->length, 0, memory_order_relaxed);
    atomic_store_explicit(&entry->state, SLOT_FREE, memory_order_release);
    return 0;
}

// Zeroes every region still registered. The pages are made writable first, since
// the region may have been made read-only (sodium_mprotect_readonly); a region whose
// pages cannot be made writable is skipped rather than faulted on.
static void wipe_registered_regions(void) {
    for (size_t i = 0; i < CTOUCHGATESYS_SECRET_REGION_SLOTS; i++) {
        int expected = SLOT_LIVE;
        if (!atomic_compare_exchange_strong_explicit(&slots[i].state, &expected, SLOT_WIPING,
                                                     memory_order_acquire, memory_order_relaxed)) {
            continue;
        }
        uintptr_t address = atomic_load_explicit(&slots[i].address, memory_order_relaxed);
        size_t length = atomic_load_explicit(&slots[i].length, memory_order_relaxed);
        uintptr_t first = address & ~(uintptr_t)(page_size - 1);
        uintptr_t end = (address + length + page_size - 1) & ~(uintptr_t)(page_size - 1);
        if (mprotect((void *)first, end - first, PROT_READ | PROT_WRITE) != 0) continue;
        volatile unsigned char *bytes = (volatile unsigned char *)address;
        for (size_t j = 0; j < length; j++) bytes[j] = 0;
    }
}

static const char *signal_name(int signo) {
    switch (signo) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGQUIT: return "SIGQUIT";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    default: return "?";
    }
}

static size_t append(char *line, size_t used, size_t capacity, const char *text) {
    while (*text != '\0' && used < capacity) line[used++] = *text++;
    return used;
}

static void on_fatal_signal(int signo) {
    // One thread reports and exits; any other that faults meanwhile waits for it.
    if (atomic_exchange(&stopping, 1) != 0) {
        for (;;) pause();
    }
    wipe_registered_regions();

    char reversed[12];
    size_t count = 0;
    unsigned int value = (unsigned int)signo;
    do {
        reversed[count++] = (char)('0' + value % 10);
        value /= 10;
    } while (value != 0 && count < sizeof reversed);
    char number[sizeof reversed + 1];
    for (size_t i = 0; i < count; i++) number[i] = reversed[count - 1 - i];
    number[count] = '\0';

    char line[192];
    size_t used = 0;
    used = append(line, used, sizeof line, program_name);
    used = append(line, used, sizeof line, ": stopped by fatal signal ");
    used = append(line, used, sizeof line, number);
    used = append(line, used, sizeof line, " (");
    used = append(line, used, sizeof line, signal_name(signo));
    used = append(line, used, sizeof line, "); memory wiped, nothing further released\n");
    ssize_t written = write(STDERR_FILENO, line, used);
    (void)written;
    _exit(128 + signo);
}

int CTouchgateSys_install_fatal_signal_handlers(const char *program) {
    if (program != NULL) {
        size_t length = strnlen(program, sizeof program_name - 1);
        memcpy(program_name, program, length);
        program_name[length] = '\0';
    }
    long size = sysconf(_SC_PAGESIZE);
    if (size > 0) page_size = (size_t)size;

    // This thread gets an alternate stack, so a stack overflow on it still reaches the
    // handler (other threads without one are killed by the kernel, silently).
    static char alternate_stack[64 * 1024];
    stack_t current;
    if (sigaltstack(NULL, &current) != 0) return -errno;
    if (current.ss_flags & SS_DISABLE) {
        stack_t stack = {.ss_sp = alternate_stack, .ss_size = sizeof alternate_stack, .ss_flags = 0};
        if (sigaltstack(&stack, NULL) != 0) return -errno;
    }

    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_fatal_signal;
    action.sa_flags = SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    size_t count = sizeof fatal_signals / sizeof fatal_signals[0];
    // While the handler runs every fatal signal is blocked: a fault inside it kills
    // the process outright instead of re-entering.
    for (size_t i = 0; i < count; i++) sigaddset(&action.sa_mask, fatal_signals[i]);
    for (size_t i = 0; i < count; i++) {
        if (sigaction(fatal_signals[i], &action, NULL) != 0) return -errno;
    }
    // A signal sent with kill(2) that every thread blocks stays pending while the
    // process carries on. Dispatch's worker threads block SIGABRT, SIGQUIT, SIGXCPU
    // and SIGXFSZ, so the calling (main) thread must accept them all.
    int failed = pthread_sigmask(SIG_UNBLOCK, &action.sa_mask, NULL);
    if (failed != 0) return -failed;
    return 0;
}
