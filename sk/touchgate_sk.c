/* libtouchgate-sk.so: an OpenSSH security-key provider (SecurityKeyProvider, ssh-keygen -w)
 * whose "authenticator" is the vault behind `touchgate agent`. ssh-sk-helper loads it; it
 * holds no key and decides nothing: each call is one request over the agent's socket
 * (sk-enroll@touchgate, sk-sign@touchgate), and the agent's service makes the key, asks for
 * the finger, and signs with the user-verified flag only after a match.
 *
 * C, like the PAM module, so no Swift runtime is loaded into ssh. Errors are one line on
 * standard error (ssh shows it), never with key material or the data signed. */
#define _GNU_SOURCE
#include "sk_api.h"
#include "sk_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* How long an answer may take: a signature waits for a finger (the service gives up on
 * the reader well before this). */
#define REPLY_TIMEOUT_MS (10 * 60 * 1000)

static void say(const char *message) { fprintf(stderr, "touchgate-sk: %s\n", message); }

/* The agent's socket: $TOUCHGATE_AGENT_SOCKET, else where `touchgate agent` listens by
 * default ($XDG_RUNTIME_DIR/touchgate/ssh-agent.sock). 0, or -1 when neither is set. */
static int socket_path(char *path, size_t size) {
    const char *given = getenv("TOUCHGATE_AGENT_SOCKET");
    int written;
    if (given && *given) {
        written = snprintf(path, size, "%s", given);
    } else {
        const char *runtime = getenv("XDG_RUNTIME_DIR");
        if (!runtime || runtime[0] != '/') {
            say("XDG_RUNTIME_DIR is not set, so touchgate agent's socket cannot be found; "
                "set TOUCHGATE_AGENT_SOCKET to it");
            return -1;
        }
        written = snprintf(path, size, "%s/touchgate/ssh-agent.sock", runtime);
    }
    if (written < 0 || (size_t)written >= size) {
        say("the path of touchgate agent's socket is too long");
        return -1;
    }
    return 0;
}

/* Runs `touchgate agent --launch` (found on PATH) and waits for it: it starts the agent
 * at its default place unless one listens there, and returns once it does, as gpg starts
 * gpg-agent. 0 when it succeeded. */
static int launch_agent(void) {
    posix_spawn_file_actions_t actions;
    if (posix_spawn_file_actions_init(&actions) != 0) return -1;
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    char *argv[] = {"touchgate", "agent", "--launch", NULL};
    extern char **environ;
    pid_t pid;
    int error = posix_spawnp(&pid, "touchgate", &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (error != 0) return -1;
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return -1;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int try_connect(const struct sockaddr_un *address) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, (const struct sockaddr *)address, sizeof *address) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

static int connect_agent(void) {
    struct sockaddr_un address;
    memset(&address, 0, sizeof address);
    address.sun_family = AF_UNIX;
    if (socket_path(address.sun_path, sizeof address.sun_path) != 0) return -1;
    int fd = try_connect(&address);
    /* Nothing at the default place: start the agent there, once, as gpg starts gpg-agent. */
    const char *given = getenv("TOUCHGATE_AGENT_SOCKET");
    if (fd < 0 && (errno == ENOENT || errno == ECONNREFUSED) && !(given && *given) && launch_agent() == 0)
        fd = try_connect(&address);
    if (fd < 0) {
        fprintf(stderr, "touchgate-sk: cannot reach touchgate agent at %s (%s); start it: "
                "systemctl --user start touchgate-agent.socket, or touchgate agent --launch\n",
                address.sun_path, strerror(errno));
        return -1;
    }
    return fd;
}

static int write_all(int fd, const uint8_t *bytes, size_t count) {
    while (count > 0) {
        ssize_t written = send(fd, bytes, count, MSG_NOSIGNAL);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return -1;
        bytes += written;
        count -= (size_t)written;
    }
    return 0;
}

static int read_all(int fd, uint8_t *bytes, size_t count) {
    while (count > 0) {
        struct pollfd waiting = {.fd = fd, .events = POLLIN};
        int ready = poll(&waiting, 1, REPLY_TIMEOUT_MS);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return -1;
        ssize_t got = read(fd, bytes, count);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        bytes += got;
        count -= (size_t)got;
    }
    return 0;
}

/* Sends `frame` and reads one reply body into `body` (malloc'd; the caller frees it). */
static int exchange(const struct tg_sk_buffer *frame, uint8_t **body, size_t *length) {
    int fd = connect_agent();
    if (fd < 0) return -1;
    uint8_t prefix[4];
    long announced = -1;
    int ok = write_all(fd, frame->data, frame->length) == 0 && read_all(fd, prefix, 4) == 0 &&
             (announced = tg_sk_frame_length(prefix)) > 0;
    uint8_t *reply = ok ? malloc((size_t)announced) : NULL;
    if (reply && read_all(fd, reply, (size_t)announced) == 0) {
        close(fd);
        *body = reply;
        *length = (size_t)announced;
        return 0;
    }
    free(reply);
    close(fd);
    say("touchgate agent did not answer as expected; see its log (journalctl --user -u touchgate-agent)");
    return -1;
}

static uint8_t *copy(const uint8_t *bytes, size_t count) {
    uint8_t *copied = malloc(count);
    if (copied) memcpy(copied, bytes, count);
    return copied;
}

EXPORT uint32_t sk_api_version(void) { return SSH_SK_VERSION_MAJOR; }

/* The name ssh-keygen's -O user= gives the key, or "" for a name the vault derives. */
static const char *option(struct sk_option **options, const char *name) {
    for (size_t i = 0; options && options[i]; i++)
        if (options[i]->name && strcmp(options[i]->name, name) == 0) return options[i]->value ? options[i]->value : "";
    return NULL;
}

/* An option this provider does not know, which ssh marked required: 1 (and said so). */
static int unknown_required_option(struct sk_option **options) {
    for (size_t i = 0; options && options[i]; i++) {
        const char *name = options[i]->name ? options[i]->name : "";
        if (options[i]->required && strcmp(name, "user") != 0 && strcmp(name, "device") != 0) {
            say("a required option is not supported by Touchgate's provider");
            return 1;
        }
    }
    return 0;
}

EXPORT int sk_enroll(uint32_t alg, const uint8_t *challenge, size_t challenge_len, const char *application,
                     uint8_t flags, const char *pin, struct sk_option **options,
                     struct sk_enroll_response **enroll_response) {
    (void)challenge;
    (void)challenge_len;
    (void)pin; /* the finger verifies the user, not a PIN */
    if (!enroll_response || !application) return SSH_SK_ERR_GENERAL;
    *enroll_response = NULL;
    if (alg != SSH_SK_ED25519) {
        say("only ed25519-sk keys are made in the vault; run ssh-keygen -t ed25519-sk");
        return SSH_SK_ERR_UNSUPPORTED;
    }
    if (flags & SSH_SK_RESIDENT_KEY) {
        say("the vault makes no resident keys; run ssh-keygen without -O resident");
        return SSH_SK_ERR_UNSUPPORTED;
    }
    if (unknown_required_option(options)) return SSH_SK_ERR_UNSUPPORTED;
    const char *user = option(options, "user");
    struct tg_sk_buffer frame = {0};
    uint8_t *body = NULL;
    size_t length = 0;
    int result = SSH_SK_ERR_GENERAL;
    if (tg_sk_enroll_request(&frame, alg, application, flags, user ? user : "") != 0 ||
        exchange(&frame, &body, &length) != 0) {
        tg_sk_buffer_free(&frame);
        return SSH_SK_ERR_DEVICE_NOT_FOUND;
    }
    tg_sk_buffer_free(&frame);
    struct tg_sk_enrolled enrolled;
    switch (tg_sk_read_enrolled(body, length, &enrolled)) {
    case TG_SK_REPLY_OK: {
        struct sk_enroll_response *response = calloc(1, sizeof *response);
        if (response) {
            response->flags = enrolled.flags;
            response->public_key = copy(enrolled.public_key, TG_SK_ED25519_KEY);
            response->public_key_len = TG_SK_ED25519_KEY;
            response->key_handle = copy(enrolled.key_handle, enrolled.key_handle_len);
            response->key_handle_len = enrolled.key_handle_len;
        }
        if (response && response->public_key && response->key_handle) {
            *enroll_response = response;
            result = 0;
        } else if (response) {
            free(response->public_key);
            free(response->key_handle);
            free(response);
        }
        break;
    }
    case TG_SK_REPLY_REFUSED:
        say("touchgate agent made no key (the reason is on this terminal or in its log)");
        break;
    default:
        say("touchgate agent's answer to an enrollment was malformed");
    }
    free(body);
    return result;
}

EXPORT int sk_sign(uint32_t alg, const uint8_t *data, size_t data_len, const char *application,
                   const uint8_t *key_handle, size_t key_handle_len, uint8_t flags, const char *pin,
                   struct sk_option **options, struct sk_sign_response **sign_response) {
    (void)pin;
    if (!sign_response || !application || !key_handle || (!data && data_len)) return SSH_SK_ERR_GENERAL;
    *sign_response = NULL;
    if (alg != SSH_SK_ED25519) return SSH_SK_ERR_UNSUPPORTED;
    if (unknown_required_option(options)) return SSH_SK_ERR_UNSUPPORTED;
    struct tg_sk_buffer frame = {0};
    uint8_t *body = NULL;
    size_t length = 0;
    int result = SSH_SK_ERR_GENERAL;
    if (tg_sk_sign_request(&frame, alg, application, key_handle, key_handle_len, flags, data, data_len) != 0 ||
        exchange(&frame, &body, &length) != 0) {
        tg_sk_buffer_free(&frame);
        return SSH_SK_ERR_DEVICE_NOT_FOUND;
    }
    tg_sk_buffer_free(&frame);
    struct tg_sk_signed made;
    switch (tg_sk_read_signed(body, length, &made)) {
    case TG_SK_REPLY_OK: {
        struct sk_sign_response *response = calloc(1, sizeof *response);
        if (response) {
            response->flags = made.flags;
            response->counter = made.counter;
            response->sig_r = copy(made.signature, TG_SK_ED25519_SIGNATURE);
            response->sig_r_len = TG_SK_ED25519_SIGNATURE;
        }
        if (response && response->sig_r) {
            *sign_response = response;
            result = 0;
        } else {
            free(response);
        }
        break;
    }
    case TG_SK_REPLY_REFUSED:
        say("nothing was signed (the reason is on this terminal or in touchgate agent's log)");
        break;
    default:
        say("touchgate agent's answer to a signature was malformed");
    }
    free(body);
    return result;
}

EXPORT int sk_load_resident_keys(const char *pin, struct sk_option **options, struct sk_resident_key ***rks,
                                 size_t *nrks) {
    (void)pin;
    (void)options;
    if (rks) *rks = NULL;
    if (nrks) *nrks = 0;
    say("the vault makes no resident keys: there are none to load (touchgate ssh list shows the vault's keys)");
    return SSH_SK_ERR_UNSUPPORTED;
}
