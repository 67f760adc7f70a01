/* pam_touchgate: fingerprint authentication through touchgated.
 *
 * A thin client of the daemon's socket protocol (docs/PROTOCOL.md): every decision (which
 * prints, lockout, audit, what a release needs) is the daemon's. This module only asks,
 * shows the daemon's prompts through the PAM conversation and maps the answer to a PAM
 * result. It links nothing but libc and libpam: it runs inside sudo, login and screen
 * lockers.
 *
 *   auth sufficient pam_touchgate.so [mode=either] [max-tries=N] [timeout=S] [debug]
 *                                    [socket=PATH] [authtok-from=ITEM]
 *   auth optional   pam_touchgate.so unlock-with-password
 *
 * mode=either asks for the password while the daemon waits for the finger; whichever comes
 * first wins (see "finger or password at once" below).
 *
 * Results of a touch: PAM_SUCCESS on a match; PAM_MAXTRIES after max-tries no-matches;
 * PAM_AUTH_ERR when the fingerprint is locked out (or a no-match starts the lockout);
 * PAM_AUTHINFO_UNAVAIL (use the password instead) for a remote session, no daemon, no
 * reader, nothing enrolled, a locked vault, a timeout, or any other refusal. A session is
 * remote when PAM_RHOST names another host (checked here) or when systemd-logind says so:
 * every touch request is `local-only`, and the daemon asks logind about the session of
 * this process, found from its peer credentials (nothing this module says could make a
 * session local).
 * unlock-with-password always returns PAM_IGNORE: it never decides a login. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define PAM_SM_AUTH
#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "json.h"
#include "reader.h"

#define DEFAULT_SOCKET "/run/touchgate/socket"
#define SECRET_LIMIT (64 * 1024) /* DaemonProtocol.maximumSecretBytes */
#define UNLOCK_SECONDS 120       /* Argon2id at its hardest, and the daemon's queue */
/* pam_set_data key: PAM_AUTHTOK came from the vault, so it is no passphrase to try. */
#define AUTHTOK_FROM_VAULT "pam_touchgate_authtok_from_vault"

struct options {
    int debug;
    int either;
    int max_tries;
    int timeout;
    const char *socket;
    int unlock_with_password;
    const char *authtok_from;
};

struct either;

/* One connection to the daemon. `in` holds bytes read but not yet used. */
struct session {
    pam_handle_t *pamh;
    struct either *either;  /* mode=either: the touch runs beside a password prompt */
    const struct options *options;
    int flags;
    int fd;
    unsigned long long next_id;
    size_t have;
    char in[TG_LINE_LIMIT];
    char line[TG_LINE_LIMIT];
    size_t line_length;
};

/* The end of one request. */
struct reply {
    enum { REPLY_RESULT, REPLY_FAILURE, REPLY_TIMEOUT, REPLY_BROKEN } kind;
    struct tg_span result;  /* REPLY_RESULT: the report, inside session.line */
    char code[64];          /* REPLY_FAILURE */
    char message[1024];
    long long attempts_left; /* -1 when absent */
    unsigned char *secret;  /* REPLY_RESULT with secret bytes: malloc'd, wiped by free_reply */
    size_t secret_length;
};

static void debug_log(const struct session *s, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void debug_log(const struct session *s, const char *format, ...) {
    if (!s->options->debug) return;
    va_list arguments;
    va_start(arguments, format);
    pam_vsyslog(s->pamh, LOG_DEBUG, format, arguments);
    va_end(arguments);
}

static void free_reply(struct reply *reply) {
    if (reply->secret) {
        explicit_bzero(reply->secret, reply->secret_length);
        free(reply->secret);
    }
    reply->secret = NULL;
    reply->secret_length = 0;
}

/* ---- options ---- */

static int parse_number(const char *text, int low, int high, int *out) {
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno || end == text || *end || value < low || value > high) return 0;
    *out = (int)value;
    return 1;
}

static void parse_options(pam_handle_t *pamh, int argc, const char **argv, struct options *o) {
    o->debug = 0;
    o->either = 0;
    o->max_tries = 3;
    o->timeout = 30;
    o->socket = DEFAULT_SOCKET;
    o->unlock_with_password = 0;
    o->authtok_from = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "debug") == 0) {
            o->debug = 1;
        } else if (strcmp(a, "mode=either") == 0) {
            o->either = 1;
        } else if (strcmp(a, "mode=touch") == 0) {
            o->either = 0;
        } else if (strcmp(a, "unlock-with-password") == 0) {
            o->unlock_with_password = 1;
        } else if (strncmp(a, "max-tries=", 10) == 0) {
            if (!parse_number(a + 10, 1, 100, &o->max_tries))
                pam_syslog(pamh, LOG_ERR, "ignoring %s: give a number from 1 to 100", a);
        } else if (strncmp(a, "timeout=", 8) == 0) {
            if (!parse_number(a + 8, 1, 3600, &o->timeout))
                pam_syslog(pamh, LOG_ERR, "ignoring %s: give seconds from 1 to 3600", a);
        } else if (strncmp(a, "socket=", 7) == 0 && a[7] == '/') {
            o->socket = a + 7;
        } else if (strncmp(a, "authtok-from=", 13) == 0 && a[13]) {
            o->authtok_from = a + 13;
        } else {
            pam_syslog(pamh, LOG_ERR, "unknown option '%s' ignored (see pam_touchgate(8))", a);
        }
    }
}

/* ---- time ---- */

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ---- the conversation ---- */

static void either_note(struct session *s, int style, const char *message);

/* Shows a message of the daemon, with control characters (terminal escapes) made spaces:
 * C1 ones were made '?' when the message was decoded (tg_json_string). In mode=either the
 * conversation may be waiting for the password on another thread, so the message goes
 * to either_note instead. */
static void show(struct session *s, int style, const char *message) {
    char clean[1024];
    size_t i;
    for (i = 0; message[i] && i < sizeof clean - 1; i++) {
        unsigned char c = (unsigned char)message[i];
        clean[i] = (c < 0x20 || c == 0x7F) ? ' ' : (char)c;
    }
    clean[i] = '\0';
    if (!clean[0]) return;
    if (s->either) {
        either_note(s, style, clean);
    } else {
        pam_prompt(s->pamh, style, NULL, "%s", clean);
    }
}

/* ---- the socket ---- */

static int either_connected(struct session *s);
static int either_stopped(struct session *s);

/* Connects before `deadline` (ms, CLOCK_MONOTONIC). A Unix socket whose listener has a full
 * backlog (a daemon that stopped accepting) would block connect() for ever, so it is tried
 * without blocking and again every 50 ms. In mode=either the connection is handed to the
 * prompt's thread at once, so that a password typed meanwhile can break it off. */
static int connect_daemon(struct session *s, long long deadline) {
    struct sockaddr_un address = { .sun_family = AF_UNIX };
    if (strlen(s->options->socket) >= sizeof address.sun_path) return 0;
    strcpy(address.sun_path, s->options->socket);
    s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s->fd < 0) return 0;
    while (connect(s->fd, (struct sockaddr *)&address, sizeof address) != 0) {
        int busy = errno == EAGAIN || errno == EINTR;
        if (!busy || now_ms() >= deadline || (s->either && either_stopped(s))) {
            debug_log(s, "cannot connect to %s: %s", s->options->socket, busy ? "no room in its queue" : strerror(errno));
            close(s->fd);
            s->fd = -1;
            return 0;
        }
        struct timespec pause = { 0, 50 * 1000000L };
        nanosleep(&pause, NULL);
    }
    int flags = fcntl(s->fd, F_GETFL);
    if (flags < 0 || fcntl(s->fd, F_SETFL, flags & ~O_NONBLOCK) != 0 || (s->either && !either_connected(s))) {
        close(s->fd);
        s->fd = -1;
        return 0;
    }
    return 1;
}

static int send_all(struct session *s, const void *data, size_t length) {
    const char *p = data;
    while (length > 0) {
        /* MSG_NOSIGNAL: a daemon that went away must not kill sudo with SIGPIPE. */
        ssize_t sent = send(s->fd, p, length, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR) continue;
        if (sent <= 0) return 0;
        p += sent;
        length -= (size_t)sent;
    }
    return 1;
}

/* Reads more bytes into `in` before `deadline` (ms, CLOCK_MONOTONIC): 1, 0 on end of
 * stream or error, -1 on timeout. */
static int fill(struct session *s, long long deadline) {
    if (s->have >= sizeof s->in) return 0;
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0) return -1;
        struct pollfd waiting = { .fd = s->fd, .events = POLLIN };
        int ready = poll(&waiting, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) return 0;
        if (ready == 0) return -1;
        ssize_t count = read(s->fd, s->in + s->have, sizeof s->in - s->have);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) return 0;
        s->have += (size_t)count;
        return 1;
    }
}

/* The next line (without its newline) into `line`: 1, 0 when broken or too long, -1 on timeout. */
static int read_line(struct session *s, long long deadline) {
    for (;;) {
        size_t length;
        switch (tg_frame_line(s->in, s->have, sizeof s->in, &length)) {
        case TG_FRAME_LINE:
            memcpy(s->line, s->in, length);
            s->line[length] = '\0';
            s->line_length = length;
            s->have -= length + 1;
            memmove(s->in, s->in + length + 1, s->have);
            return 1;
        case TG_FRAME_TOO_LONG:
            return 0;
        case TG_FRAME_MORE:
            break;
        }
        int filled = fill(s, deadline);
        if (filled <= 0) return filled;
    }
}

/* Exactly `length` bytes into `out`: 1, 0 when broken, -1 on timeout. */
static int read_bytes(struct session *s, unsigned char *out, size_t length, long long deadline) {
    size_t got = 0;
    while (got < length) {
        if (s->have == 0) {
            int filled = fill(s, deadline);
            if (filled <= 0) return filled;
        }
        size_t take = s->have < length - got ? s->have : length - got;
        memcpy(out + got, s->in, take);
        explicit_bzero(s->in, take);
        memmove(s->in, s->in + take, s->have - take);
        s->have -= take;
        got += take;
    }
    return 1;
}

/* `text` as a JSON string (quotes included) appended at out[*used]; 0 when it does not fit. */
static int append_quoted(char *out, size_t size, size_t *used, const char *text) {
    size_t u = *used;
    if (u + 1 >= size) return 0;
    out[u++] = '"';
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        char escaped[8];
        if (*p == '"' || *p == '\\') {
            snprintf(escaped, sizeof escaped, "\\%c", *p);
        } else if (*p < 0x20 || *p == 0x7F) {
            snprintf(escaped, sizeof escaped, "\\u%04x", *p);
        } else {
            escaped[0] = (char)*p;
            escaped[1] = '\0';
        }
        size_t length = strlen(escaped);
        if (u + length + 1 >= size) return 0;
        memcpy(out + u, escaped, length);
        u += length;
    }
    out[u++] = '"';
    out[u] = '\0';
    *used = u;
    return 1;
}

static int append_text(char *out, size_t size, size_t *used, const char *text) {
    size_t length = strlen(text);
    if (*used + length + 1 > size) return 0;
    memcpy(out + *used, text, length + 1);
    *used += length;
    return 1;
}

/* Reads the daemon's greeting: it must speak version 1. */
static int read_hello(struct session *s, long long deadline) {
    if (read_line(s, deadline) != 1) return 0;
    struct tg_span message = { s->line, s->line + s->line_length }, kind, versions;
    if (!tg_json_is_object(message.start, message.end) || !tg_json_member(message, "kind", &kind) ||
        !tg_json_string_is(kind, "hello") || !tg_json_member(message, "versions", &versions))
        return 0;
    /* Version 1 in the array: a "1" between brackets, commas or spaces. */
    for (const char *p = versions.start; p < versions.end; p++) {
        if (*p == '1' && (p[-1] == '[' || p[-1] == ',' || p[-1] == ' ') &&
            (p[1] == ']' || p[1] == ',' || p[1] == ' '))
            return 1;
    }
    return 0;
}

/* Connects and reads the greeting; 0 when the daemon cannot be reached. */
static int open_session(struct session *s, long long deadline) {
    s->have = 0;
    s->next_id = 1;
    if (!connect_daemon(s, deadline)) return 0;
    if (read_hello(s, deadline)) return 1;
    pam_syslog(s->pamh, LOG_ERR, "%s did not greet as touchgated protocol version 1", s->options->socket);
    close(s->fd);
    s->fd = -1;
    return 0;
}

static void close_session(struct session *s) {
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
    explicit_bzero(s->in, sizeof s->in);
    s->have = 0;
}

/* Answers the daemon's question: the passphrase with `secret` when it is one and we have
 * it (once), anything else with an error saying it cannot be asked here. */
static int answer(struct session *s, unsigned long long id, struct tg_span message, const char *secret,
                  int *secret_sent) {
    struct tg_span question, kind;
    char line[512];
    int is_passphrase = tg_json_member(message, "question", &question) && tg_json_member(question, "kind", &kind) &&
                        tg_json_string_is(kind, "passphrase");
    if (is_passphrase && secret && !*secret_sent) {
        size_t length = strlen(secret);
        snprintf(line, sizeof line, "{\"version\":1,\"kind\":\"answer\",\"id\":%llu,\"secret-length\":%zu}\n", id,
                 length);
        *secret_sent = 1;
        return send_all(s, line, strlen(line)) && send_all(s, secret, length);
    }
    snprintf(line, sizeof line,
             "{\"version\":1,\"kind\":\"answer\",\"id\":%llu,\"error\":{\"code\":\"%s\",\"message\":"
             "\"the PAM module cannot ask this during a login; run touchgate at a terminal\"}}\n",
             id, is_passphrase ? "passphrase-required" : "declined");
    return send_all(s, line, strlen(line));
}

static void either_ready(struct session *s);

/* Shows an event the person should see: the prompt to touch, a poor scan, a notice. */
static void show_event(struct session *s, struct tg_span message) {
    struct tg_span event, kind, text;
    char buffer[1024];
    if (!tg_json_member(message, "event", &event) || !tg_json_member(event, "event", &kind) ||
        !tg_json_member(event, "message", &text) || !tg_json_string(text, buffer, sizeof buffer))
        return;
    if (tg_json_string_is(kind, "finger-needed") && s->either) {
        either_ready(s);
    } else if (tg_json_string_is(kind, "finger-needed")) {
        show(s, PAM_TEXT_INFO, buffer);
    } else if (tg_json_string_is(kind, "retry")) {
        show(s, PAM_ERROR_MSG, buffer);
    } else if (tg_json_string_is(kind, "notice") && !(s->flags & PAM_SILENT)) {
        show(s, PAM_TEXT_INFO, buffer);
    }
}

/* Sends one request and follows it to its end. `arguments` is a JSON object's members (or
 * ""); `secret` answers a passphrase question. */
static void run_request(struct session *s, const char *operation, const char *arguments, const char *secret,
                        long long deadline, struct reply *reply) {
    char request[2048];
    unsigned long long id = s->next_id++;
    int secret_sent = 0;
    memset(reply, 0, sizeof *reply);
    reply->attempts_left = -1;
    reply->kind = REPLY_BROKEN;
    int length = snprintf(request, sizeof request,
                          "{\"version\":1,\"kind\":\"request\",\"id\":%llu,\"operation\":\"%s\",\"arguments\":{%s}}\n",
                          id, operation, arguments);
    if (length < 0 || (size_t)length >= sizeof request || !send_all(s, request, (size_t)length)) return;
    for (;;) {
        int got = read_line(s, deadline);
        if (got < 0) reply->kind = REPLY_TIMEOUT;
        if (got != 1) return;
        struct tg_span message = { s->line, s->line + s->line_length }, field;
        enum tg_message kind = tg_message_kind(message, id);
        if (kind == TG_MESSAGE_FAILURE) {
            struct tg_span error, code, text, left;
            if (!tg_json_member(message, "error", &error) || !tg_json_member(error, "code", &code) ||
                !tg_json_string(code, reply->code, sizeof reply->code))
                return;
            if (tg_json_member(error, "message", &text)) tg_json_string(text, reply->message, sizeof reply->message);
            if (tg_json_member(error, "attempts-left", &left)) tg_json_integer(left, &reply->attempts_left);
            reply->kind = REPLY_FAILURE;
            return;
        }
        if (kind == TG_MESSAGE_EVENT) {
            show_event(s, message);
        } else if (kind == TG_MESSAGE_ASK) {
            if (!answer(s, id, message, secret, &secret_sent)) return;
        } else if (kind == TG_MESSAGE_RESULT) {
            long long secret_length = 0;
            if (!tg_json_member(message, "result", &reply->result)) return;
            if (tg_json_member(message, "secret-length", &field) &&
                (!tg_json_integer(field, &secret_length) || secret_length < 0 || secret_length > SECRET_LIMIT))
                return;
            if (secret_length > 0) {
                reply->secret = malloc((size_t)secret_length + 1);
                if (!reply->secret) return;
                reply->secret_length = (size_t)secret_length;
                int read = read_bytes(s, reply->secret, reply->secret_length, deadline);
                if (read != 1) {
                    free_reply(reply);
                    if (read < 0) reply->kind = REPLY_TIMEOUT;
                    return;
                }
                reply->secret[secret_length] = 0;
            }
            reply->kind = REPLY_RESULT;
            return;
        } else if (kind != TG_MESSAGE_OUTPUT) {
            return;
        }
    }
}

/* ---- deciding who asks ---- */

/* Whether the session comes from another machine (PAM_RHOST names one). */
static int is_remote(pam_handle_t *pamh) {
    const void *item = NULL;
    if (pam_get_item(pamh, PAM_RHOST, &item) != PAM_SUCCESS || !item) return 0;
    const char *host = item;
    if (!*host || strcmp(host, "localhost") == 0 || strcmp(host, "127.0.0.1") == 0 || strcmp(host, "::1") == 0)
        return 0;
    /* sudo's pam_rhost option names the local host itself. */
    char local[HOST_NAME_MAX + 1];
    if (gethostname(local, sizeof local) == 0) {
        local[HOST_NAME_MAX] = '\0';
        if (strcmp(host, local) == 0) return 0;
    }
    return 1;
}

/* The `"user":…` argument, always PAM_USER: whether this process may ask for that user is
 * touchgated's rule (root acts for anyone; anyone else only for themself), decided from the
 * kernel's credentials of this connection, not here. 0 when it does not fit. */
static int user_argument(const char *user, char *out, size_t size) {
    size_t used = 0;
    out[0] = '\0';
    return append_text(out, size, &used, "\"user\":") && append_quoted(out, size, &used, user) &&
           append_text(out, size, &used, ",");
}

/* ---- auth: a touch ---- */

static int either_stopped(struct session *s);

/* What a failure that is not a no-match means for the stack. */
static int unavailable(struct session *s, const struct reply *reply) {
    if (s->either && either_stopped(s)) {
        debug_log(s, "the password came first; the touch was broken off");
    } else if (reply->kind == REPLY_TIMEOUT) {
        if (!(s->flags & PAM_SILENT)) show(s, PAM_ERROR_MSG, "Fingerprint timed out.");
        debug_log(s, "no finger within %d s", s->options->timeout);
    } else if (reply->kind == REPLY_BROKEN) {
        pam_syslog(s->pamh, LOG_ERR, "touchgated at %s broke off the conversation", s->options->socket);
    } else if (strcmp(reply->code, "remote-session") == 0) {
        /* Refused before any reader was used: nothing to show, the password follows. */
        debug_log(s, "remote session (systemd-logind): no fingerprint");
        pam_syslog(s->pamh, LOG_NOTICE, "no fingerprint for a remote session: %s", reply->message);
    } else {
        /* The daemon's messages name no secret; they say what to do next. */
        pam_syslog(s->pamh, LOG_NOTICE, "fingerprint not available (%s): %s", reply->code, reply->message);
        if (strcmp(reply->code, "vault-locked") == 0 && !(s->flags & PAM_SILENT))
            show(s, PAM_TEXT_INFO, "Fingerprint unavailable until the Touchgate vault is unlocked with its passphrase.");
    }
    return PAM_AUTHINFO_UNAVAIL;
}

/* Hands the released value to the modules below as PAM_AUTHTOK. */
static void set_authtok(struct session *s, const struct reply *reply) {
    if (!reply->secret || memchr(reply->secret, 0, reply->secret_length)) {
        pam_syslog(s->pamh, LOG_ERR, "'%s' is empty or holds a NUL byte, so it cannot be a password; "
                   "nothing was handed to the modules below", s->options->authtok_from);
        return;
    }
    if (pam_set_item(s->pamh, PAM_AUTHTOK, reply->secret) != PAM_SUCCESS) {
        pam_syslog(s->pamh, LOG_ERR, "could not set PAM_AUTHTOK");
        return;
    }
    pam_set_data(s->pamh, AUTHTOK_FROM_VAULT, (void *)1, NULL);
}

/* The request a touch sends, into `arguments`: a plain `verify`, or with authtok-from the
 * release of that item. NULL when the arguments do not fit. `wait-seconds` tells the daemon
 * how long this module waits for the answer (timeout=), so that it never queues the request
 * behind others for longer, nor holds the reader for a module that has given up. */
static const char *touch_request(struct session *s, const char *user, char *arguments, size_t size) {
    char who[512], wait[64];
    size_t used = 0;
    arguments[0] = '\0';
    if (!user_argument(user, who, sizeof who)) return NULL;
    snprintf(wait, sizeof wait, "\"wait-seconds\":%d,", s->options->timeout);
    if (!append_text(arguments, size, &used, wait)) return NULL;
    if (s->options->authtok_from) {
        /* The release is the touch: `fresh` makes the daemon demand one now, never a reused
         * session, and refuse an item that could be released without a finger. */
        if (!append_text(arguments, size, &used, who) || !append_text(arguments, size, &used, "\"item\":") ||
            !append_quoted(arguments, size, &used, s->options->authtok_from) ||
            !append_text(arguments, size, &used, ",\"fresh\":true,\"can-ask-again\":false,\"local-only\":true"))
            return NULL;
        return "secret.get";
    }
    if (!append_text(arguments, size, &used, who) ||
        !append_text(arguments, size, &used, "\"can-ask-again\":false,\"local-only\":true"))
        return NULL;
    return "verify";
}

/* Asks for a touch up to max-tries times on an open session; the PAM result. With
 * authtok-from, the released value is moved into `released` (the caller hands it on). */
static int touch_loop(struct session *s, const char *user, const char *operation, const char *arguments,
                      struct reply *released) {
    int result = PAM_MAXTRIES;
    for (int attempt = 1; attempt <= s->options->max_tries; attempt++) {
        struct reply reply;
        long long deadline = now_ms() + 1000LL * s->options->timeout;
        run_request(s, operation, arguments, NULL, deadline, &reply);
        int matched = 0, no_match = 0;
        long long left = reply.attempts_left;
        if (reply.kind == REPLY_RESULT && !s->options->authtok_from) {
            struct tg_span field;
            if (!tg_json_member(reply.result, "match", &field) || !tg_json_bool(field, &matched)) {
                reply.kind = REPLY_BROKEN;
            } else if (!matched) {
                no_match = 1;
                if (!tg_json_member(reply.result, "attempts-left", &field) || !tg_json_integer(field, &left)) left = -1;
            }
        } else if (reply.kind == REPLY_RESULT) {
            matched = 1;
        } else if (reply.kind == REPLY_FAILURE && strcmp(reply.code, "no-match") == 0) {
            no_match = 1;
        }
        if (matched) {
            debug_log(s, "%s's finger matched", user);
            if (s->options->authtok_from) {
                released->secret = reply.secret;
                released->secret_length = reply.secret_length;
                reply.secret = NULL;
            }
            free_reply(&reply);
            result = PAM_SUCCESS;
            break;
        }
        if (reply.kind == REPLY_FAILURE && strcmp(reply.code, "locked-out") == 0) {
            show(s, PAM_ERROR_MSG, reply.message);
            pam_syslog(s->pamh, LOG_NOTICE, "%s is locked out of fingerprint authentication", user);
            result = PAM_AUTH_ERR;
            break;
        }
        if (!no_match) {
            result = unavailable(s, &reply);
            free_reply(&reply);
            break;
        }
        debug_log(s, "no match for %s (attempt %d of %d)", user, attempt, s->options->max_tries);
        if (left == 0) {
            show(s, PAM_ERROR_MSG, "Fingerprint: no match; too many failed touches, so it is locked out for now.");
            result = PAM_AUTH_ERR;
            break;
        }
        /* The words `touchgate verify` prints for a no-match (TerminalText.noMatch). */
        if (left > 0) {
            char line[96];
            snprintf(line, sizeof line, "Fingerprint: no match (%lld more before a lockout).", left);
            show(s, PAM_ERROR_MSG, line);
        } else {
            show(s, PAM_ERROR_MSG, "Fingerprint: no match.");
        }
    }
    return result;
}

/* Opens the session a touch needs; 0 (logged) when no daemon answers. */
static int open_for_touch(struct session *s) {
    if (open_session(s, now_ms() + 1000LL * s->options->timeout)) return 1;
    pam_syslog(s->pamh, LOG_NOTICE, "touchgated is not reachable at %s; falling back", s->options->socket);
    return 0;
}

static int authenticate_touch(struct session *s, const char *user) {
    char arguments[1024];
    const char *operation = touch_request(s, user, arguments, sizeof arguments);
    if (!operation || !open_for_touch(s)) return PAM_AUTHINFO_UNAVAIL;
    struct reply released = { 0 };
    int result = touch_loop(s, user, operation, arguments, &released);
    if (result == PAM_SUCCESS && s->options->authtok_from) set_authtok(s, &released);
    free_reply(&released);
    close_session(s);
    return result;
}

/* ---- auth: finger or password at once (mode=either) ----
 *
 * A PAM conversation blocks until the person answers, and PAM runs modules one after
 * another, so the touch runs on a thread of its own (connecting to the daemon included:
 * a hung daemon must not hold the prompt) while this thread asks for the password. That
 * thread never calls the conversation (it is not made for two threads): it tells the
 * person about poor scans and no-matches on the terminal, if this process holds one in
 * the foreground.
 *
 * - The password comes first: the touch is broken off (the daemon ends a request whose
 *   connection closed), the password becomes PAM_AUTHTOK and PAM_AUTHINFO_UNAVAIL sends
 *   it to the password module below (`try_first_pass` or `use_first_pass`). Nothing typed:
 *   a touch in progress has three seconds to match, then that module asks for itself.
 * - The finger comes first: the password prompt is ended by putting one Enter into the
 *   terminal's input (TIOCSTI), only while the terminal reads a password (canonical mode,
 *   echo off) for this process's foreground group and holds no whole line yet; whatever
 *   was typed is wiped. Where that cannot be done (no terminal: a greeter; a kernel that
 *   refuses TIOCSTI), the person presses Enter. Either way the match counts only if the
 *   prompt ends within EITHER_MATCH_MS of it: a match is never left for whoever comes to
 *   the keyboard later.
 * - No finger can be asked for (no daemon, nothing enrolled, a locked vault, a remote
 *   session, a closed lid): no prompt of ours at all, the password module asks as usual. */

/* How long the prompt waits for the daemon to ask for the finger (it may be busy with
 * another touch): the password must never wait for the reader. */
#define EITHER_READY_MS 1000
/* How long a match stays good for the prompt to end. */
#define EITHER_MATCH_MS 5000
/* How long a match waits for the terminal to start reading the password, to end it. */
#define EITHER_READ_WAIT_MS 1000
/* How long Enter on an empty prompt waits for a touch in progress. */
#define EITHER_EMPTY_WAIT_MS 3000

struct either {
    pthread_mutex_t lock;
    pthread_cond_t changed;  /* on CLOCK_MONOTONIC */
    const char *prompt;
    int silent;     /* PAM_SILENT: no notice of ours on the terminal (errors still are) */
    int erred;      /* an error of the touch (a no-match, a lockout) was written under the prompt */
    int fd;         /* the touch's connection, once made (-1 before) */
    int ready;      /* the daemon asked for the finger */
    int asking;     /* the conversation is waiting for the password */
    int done;       /* the touch ended with `result` */
    int stopped;    /* the password came first and the touch was broken off */
    int result;
    long long matched_at;  /* when the touch matched (ms, CLOCK_MONOTONIC) */
    char pending[1024];    /* what the touch said before the prompt was up */
};

struct either_job {
    struct session *s;
    const char *user;
    const char *operation;
    const char *arguments;
    struct reply released;
};

/* The controlling terminal, when this process is in its foreground group; -1 otherwise.
 * Non-blocking: a terminal whose output is stopped must not hold anything here. */
static int foreground_terminal(void) {
    int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return -1;
    if (tcgetpgrp(fd) != getpgrp()) {
        close(fd);
        return -1;
    }
    return fd;
}

static void write_terminal(const char *text) {
    int fd = foreground_terminal();
    if (fd < 0) return;
    size_t length = strlen(text);
    while (length > 0) {
        ssize_t written = write(fd, text, length);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) break;
        text += written;
        length -= (size_t)written;
    }
    close(fd);
}

/* Whether the terminal now reads a password (canonical, echo off) with no whole line
 * waiting: 1, and then `*fd` is open on it; 0 otherwise. */
static int password_read_waiting(int *fd) {
    *fd = foreground_terminal();
    if (*fd < 0) return 0;
    struct termios mode;
    int queued = 0;
    if (tcgetattr(*fd, &mode) == 0 && !(mode.c_lflag & ECHO) && (mode.c_lflag & ICANON) &&
        ioctl(*fd, FIONREAD, &queued) == 0 && queued == 0)
        return 1;
    close(*fd);
    *fd = -1;
    return 0;
}

/* A deadline `ms` from now on CLOCK_MONOTONIC, for pthread_cond_timedwait. */
static struct timespec deadline_in(long long ms) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    return until;
}

/* Hands the new connection to the prompt's thread; 0 when the password already won. */
static int either_connected(struct session *s) {
    struct either *e = s->either;
    pthread_mutex_lock(&e->lock);
    e->fd = s->fd;
    int stopped = e->stopped;
    pthread_mutex_unlock(&e->lock);
    return !stopped;
}

static int either_stopped(struct session *s) {
    struct either *e = s->either;
    pthread_mutex_lock(&e->lock);
    int stopped = e->stopped;
    pthread_mutex_unlock(&e->lock);
    return stopped;
}

/* The daemon asks for the finger: the prompt may go up; on a later attempt (after a
 * no-match shown under it), the prompt is shown again. */
static void either_ready(struct session *s) {
    struct either *e = s->either;
    pthread_mutex_lock(&e->lock);
    int again = e->ready && e->asking && (!e->silent || e->erred);
    e->ready = 1;
    pthread_cond_broadcast(&e->changed);
    pthread_mutex_unlock(&e->lock);
    if (again) {
        char text[128];
        snprintf(text, sizeof text, "\r\n%s", e->prompt);
        write_terminal(text);
    }
}

/* A message of the touch: on the terminal under the waiting prompt (written outside the
 * lock), or kept for the conversation when the prompt is not up. Under PAM_SILENT only
 * errors are written: sudo always authenticates with PAM_SILENT, and a person left at
 * "Password or touch the reader:" after a wrong finger or a lockout would not know. */
static void either_note(struct session *s, int style, const char *message) {
    struct either *e = s->either;
    char text[1400];
    text[0] = '\0';
    pthread_mutex_lock(&e->lock);
    if (e->asking && (!e->silent || style == PAM_ERROR_MSG)) {
        snprintf(text, sizeof text, "\r\n%s", message);
        if (style == PAM_ERROR_MSG) e->erred = 1;
    } else if (!e->asking) {
        snprintf(e->pending, sizeof e->pending, "%s", message);
    }
    pthread_mutex_unlock(&e->lock);
    if (text[0]) write_terminal(text);
}

/* Ends the password read with one Enter, once the terminal reads a password with nothing
 * queued, waiting at most EITHER_READ_WAIT_MS for it to start (the match may come just as
 * the prompt opens). Called without the lock. */
static void end_password_read(struct either *e) {
    long long until = now_ms() + EITHER_READ_WAIT_MS;
    for (;;) {
        pthread_mutex_lock(&e->lock);
        int asking = e->asking;
        pthread_mutex_unlock(&e->lock);
        if (!asking) return;
        int fd;
        if (password_read_waiting(&fd)) {
            char enter = '\n';
            if (ioctl(fd, TIOCSTI, &enter) != 0 && !e->silent)
                write_terminal("\r\nFingerprint matched: press Enter within 5 seconds.");
            close(fd);
            return;
        }
        if (now_ms() >= until) return;
        struct timespec pause = { 0, 25 * 1000000L };
        nanosleep(&pause, NULL);
    }
}

/* Tells the daemon that the match it answered was not used (the prompt ended `seconds` after
 * it): the service records so, and the trail shows no login that did not happen. Best effort:
 * a daemon that does not answer within two seconds is left alone. */
static void record_unused(struct session *s, const char *user, long long seconds) {
    char who[512], arguments[640];
    if (!user_argument(user, who, sizeof who)) return;
    snprintf(arguments, sizeof arguments, "%s\"seconds-after\":%lld", who, seconds);
    long long deadline = now_ms() + 2000;
    if (!open_session(s, deadline)) return;
    struct reply reply;
    run_request(s, "verify.unused", arguments, NULL, deadline, &reply);
    if (reply.kind != REPLY_RESULT) debug_log(s, "the unused match of %s was not recorded", user);
    free_reply(&reply);
    close_session(s);
}

static void *either_touch(void *argument) {
    struct either_job *job = argument;
    struct session *s = job->s;
    struct either *e = s->either;
    int result = PAM_AUTHINFO_UNAVAIL;
    if (open_for_touch(s) && !either_stopped(s))
        result = touch_loop(s, job->user, job->operation, job->arguments, &job->released);
    pthread_mutex_lock(&e->lock);
    e->done = 1;
    e->result = result;
    if (result == PAM_SUCCESS) e->matched_at = now_ms();
    int end_prompt = result == PAM_SUCCESS && e->asking;
    /* No more touches: the prompt that stays up is for the password only. */
    int password_only = result != PAM_SUCCESS && e->asking && !e->stopped && (!e->silent || e->erred);
    pthread_cond_broadcast(&e->changed);
    pthread_mutex_unlock(&e->lock);
    if (end_prompt) end_password_read(e);
    if (password_only) write_terminal("\r\nPassword: ");
    return NULL;
}

/* Waits until the daemon asked for the finger or the touch ended, for at most `ms`. */
static void either_wait_ready(struct either *e, long long ms) {
    struct timespec until = deadline_in(ms);
    pthread_mutex_lock(&e->lock);
    while (!e->ready && !e->done && pthread_cond_timedwait(&e->changed, &e->lock, &until) == 0) {}
    pthread_mutex_unlock(&e->lock);
}

/* Starts `routine` with every signal blocked in it: the host's handlers (sudo's SIGINT,
 * SIGALRM) must run on its own thread, whose read they interrupt. */
static int start_quiet_thread(pthread_t *thread, void *(*routine)(void *), void *argument) {
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    int started = pthread_create(thread, NULL, routine, argument);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    return started;
}

static int authenticate_either(struct session *s, const char *user) {
    char arguments[1024];
    const char *operation = touch_request(s, user, arguments, sizeof arguments);
    if (!operation) return PAM_AUTHINFO_UNAVAIL;
    struct either e = { .prompt = "Password or touch the reader: ", .result = PAM_AUTHINFO_UNAVAIL, .fd = -1,
                        .silent = (s->flags & PAM_SILENT) != 0 };
    struct either_job job = { .s = s, .user = user, .operation = operation, .arguments = arguments };
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_mutex_init(&e.lock, NULL);
    pthread_cond_init(&e.changed, &attributes);
    pthread_condattr_destroy(&attributes);
    s->either = &e;
    pthread_t thread;
    if (start_quiet_thread(&thread, either_touch, &job) != 0) {
        pam_syslog(s->pamh, LOG_ERR, "cannot start the touch beside the password prompt; password only");
        s->either = NULL;
        pthread_cond_destroy(&e.changed);
        pthread_mutex_destroy(&e.lock);
        return PAM_AUTHINFO_UNAVAIL;
    }
    either_wait_ready(&e, EITHER_READY_MS);

    pthread_mutex_lock(&e.lock);
    int ended_first = e.done;
    if (!ended_first) e.asking = 1;
    pthread_mutex_unlock(&e.lock);
    char *typed = NULL;
    int conversation = PAM_SUCCESS, cannot_ask = 0;
    long long answered = 0;
    if (!ended_first) {
        long long asked = now_ms();
        conversation = pam_prompt(s->pamh, PAM_PROMPT_ECHO_OFF, &typed, "%s", e.prompt);
        answered = now_ms();
        /* A conversation that refuses at once cannot ask (sudo -n): the touch goes on alone.
         * One that fails later was cancelled (Ctrl-C): the touch is broken off. */
        cannot_ask = conversation != PAM_SUCCESS && answered - asked < 100;
        pthread_mutex_lock(&e.lock);
        e.asking = 0;
        pthread_cond_broadcast(&e.changed);
        if (conversation == PAM_SUCCESS && (!typed || !*typed)) {
            /* Enter on an empty prompt: a touch may be matching (at a greeter the person
             * touches, then presses Enter); it has EITHER_EMPTY_WAIT_MS to finish. */
            struct timespec until = deadline_in(EITHER_EMPTY_WAIT_MS);
            while (!e.done && pthread_cond_timedwait(&e.changed, &e.lock, &until) == 0) {}
        }
        int break_off = !e.done && !cannot_ask;
        if (break_off) e.stopped = 1;
        int fd = e.fd;
        pthread_mutex_unlock(&e.lock);
        /* Breaks the touch off: its thread's poll sees the end of the stream. */
        if (break_off && fd >= 0) shutdown(fd, SHUT_RDWR);
    }
    pthread_join(thread, NULL);
    s->either = NULL;
    close_session(s);

    int matched = e.done && e.result == PAM_SUCCESS;
    if (matched && !ended_first && conversation == PAM_SUCCESS && answered - e.matched_at > EITHER_MATCH_MS) {
        /* The prompt ended long after the match: whoever pressed Enter now is not known to
         * be the person who touched. */
        pam_syslog(s->pamh, LOG_NOTICE, "%s's finger matched, but the prompt ended %lld s later; not taken",
                   user, (answered - e.matched_at) / 1000);
        matched = 0;
        record_unused(s, user, (answered - e.matched_at) / 1000);
    }
    int result;
    if (matched) {
        /* The finger: whatever was typed is no password to try. */
        if (s->options->authtok_from) set_authtok(s, &job.released);
        result = PAM_SUCCESS;
    } else if (ended_first || cannot_ask) {
        /* No finger to ask for, or a conversation that cannot ask: the touch's own answer,
         * as without mode=either. */
        if (ended_first && e.pending[0]) pam_prompt(s->pamh, PAM_ERROR_MSG, NULL, "%s", e.pending);
        result = e.result == PAM_AUTH_ERR || e.result == PAM_MAXTRIES ? e.result : PAM_AUTHINFO_UNAVAIL;
    } else if (conversation != PAM_SUCCESS) {
        debug_log(s, "the password prompt was cancelled");
        result = PAM_CONV_ERR;
    } else {
        if (typed && *typed && pam_set_item(s->pamh, PAM_AUTHTOK, typed) != PAM_SUCCESS)
            pam_syslog(s->pamh, LOG_ERR, "could not set PAM_AUTHTOK");
        debug_log(s, "%s typed a password before touching", user);
        result = PAM_AUTHINFO_UNAVAIL;
    }
    if (typed) {
        explicit_bzero(typed, strlen(typed));
        free(typed);
    }
    free_reply(&job.released);
    pthread_cond_destroy(&e.changed);
    pthread_mutex_destroy(&e.lock);
    return result;
}

/* ---- auth: the typed password unlocks the vault ---- */

static int unlock_with_password(struct session *s, const char *user) {
    const void *item = NULL, *marker = NULL;
    char who[512];
    if (pam_get_data(s->pamh, AUTHTOK_FROM_VAULT, &marker) == PAM_SUCCESS && marker) return PAM_IGNORE;
    if (pam_get_item(s->pamh, PAM_AUTHTOK, &item) != PAM_SUCCESS || !item || !*(const char *)item) {
        debug_log(s, "no password to unlock the vault with");
        return PAM_IGNORE;
    }
    if (!user_argument(user, who, sizeof who)) return PAM_IGNORE;
    size_t used = strlen(who);
    /* Drop the trailing comma: these requests have no other argument. */
    if (used > 0) who[used - 1] = '\0';
    char arguments[600];
    snprintf(arguments, sizeof arguments, "%s%s\"can-ask-again\":false,\"only-if-due\":true", who, used > 0 ? "," : "");
    long long deadline = now_ms() + 1000LL * UNLOCK_SECONDS;
    if (!open_session(s, deadline)) {
        debug_log(s, "touchgated is not reachable at %s", s->options->socket);
        return PAM_IGNORE;
    }
    /* `only-if-due`: the daemon asks for the passphrase (answered with the login password)
     * only when it is due, a locked vault or the fingerprint-only time over; otherwise a
     * login password that is not the passphrase would be tried, and audited as a wrong
     * passphrase, on every sudo. The rule is the daemon's: this module only asks. */
    struct reply reply;
    run_request(s, "unlock", arguments, item, deadline, &reply);
    struct tg_span field;
    int unlocked = 0;
    if (reply.kind == REPLY_RESULT && tg_json_member(reply.result, "unlocked", &field) && tg_json_bool(field, &unlocked) &&
        !unlocked) {
        debug_log(s, "%s's vault needs no passphrase now", user);
    } else if (reply.kind == REPLY_RESULT) {
        debug_log(s, "unlocked %s's vault with the login password", user);
    } else if (reply.kind == REPLY_FAILURE) {
        /* A password that is not the passphrase is no error: the vault stays locked. */
        debug_log(s, "vault of %s not unlocked (%s)", user, reply.code);
    }
    free_reply(&reply);
    close_session(s);
    return PAM_IGNORE;
}

/* ---- entry points ---- */

PAM_EXTERN __attribute__((visibility("default"))) int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    struct options options;
    const char *user = NULL;
    parse_options(pamh, argc, argv, &options);
    int fallback = options.unlock_with_password ? PAM_IGNORE : PAM_AUTHINFO_UNAVAIL;
    if (pam_get_user(pamh, &user, NULL) != PAM_SUCCESS || !user || !*user) return fallback;
    struct session *s = calloc(1, sizeof *s);
    if (!s) return fallback;
    s->pamh = pamh;
    s->options = &options;
    s->flags = flags;
    s->fd = -1;
    int result;
    if (options.unlock_with_password) {
        result = unlock_with_password(s, user);
    } else if (is_remote(pamh)) {
        debug_log(s, "remote session: no fingerprint");
        result = PAM_AUTHINFO_UNAVAIL;
    } else if (options.either) {
        result = authenticate_either(s, user);
    } else {
        result = authenticate_touch(s, user);
    }
    explicit_bzero(s, sizeof *s);
    free(s);
    return result;
}

PAM_EXTERN __attribute__((visibility("default"))) int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh;
    (void)flags;
    (void)argc;
    (void)argv;
    return PAM_SUCCESS;
}
