/* The bytes libtouchgate-sk exchanges with `touchgate agent`: SSH agent protocol frames
 * carrying Touchgate's two extensions (sk-enroll@touchgate, sk-sign@touchgate; see
 * docs/PROTOCOL.md and TouchgateSSH's SecurityKeyMessages.swift). Pure functions over
 * memory, apart from the socket, so `make fuzz` runs the reply readers
 * (fuzz/sk-reader.swift) on any bytes an impostor on the socket could send. */
#ifndef TOUCHGATE_SK_WIRE_H
#define TOUCHGATE_SK_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* The agent's AgentFrame.maximumLength: no message, either way, is longer. */
#define TG_SK_MESSAGE_LIMIT (256 * 1024)
#define TG_SK_ED25519_KEY 32
#define TG_SK_ED25519_SIGNATURE 64

/* A growing byte buffer; `failed` is set once an allocation or the limit fails, and every
 * later write is ignored. */
struct tg_sk_buffer {
    uint8_t *data;
    size_t length;
    size_t capacity;
    int failed;
};

void tg_sk_buffer_free(struct tg_sk_buffer *buffer);

/* A whole frame (length prefix, SSH_AGENTC_EXTENSION, name, contents) for each request.
 * Returns 0, or -1 when memory or the limit ran out. */
int tg_sk_enroll_request(struct tg_sk_buffer *frame, uint32_t algorithm, const char *application,
                         uint8_t flags, const char *user);
int tg_sk_sign_request(struct tg_sk_buffer *frame, uint32_t algorithm, const char *application,
                       const uint8_t *key_handle, size_t key_handle_len, uint8_t flags,
                       const uint8_t *data, size_t data_len);

/* The length a frame's 4-byte prefix announces, or -1 when it is 0 or over the limit. */
long tg_sk_frame_length(const uint8_t prefix[4]);

enum tg_sk_reply {
    TG_SK_REPLY_OK = 0,
    TG_SK_REPLY_REFUSED = 1,   /* SSH_AGENT_FAILURE or SSH_AGENT_EXTENSION_FAILURE */
    TG_SK_REPLY_MALFORMED = 2  /* anything else: another type, a field cut short, extra bytes */
};

/* An enrollment's reply body: a 32-byte public key, a key handle of 1 to 1024 bytes, flags.
 * The pointers point into `body`. */
struct tg_sk_enrolled {
    const uint8_t *public_key;
    const uint8_t *key_handle;
    size_t key_handle_len;
    uint8_t flags;
};
enum tg_sk_reply tg_sk_read_enrolled(const uint8_t *body, size_t length, struct tg_sk_enrolled *out);

/* A signature's reply body: flags, counter, a 64-byte signature (pointing into `body`). */
struct tg_sk_signed {
    uint8_t flags;
    uint32_t counter;
    const uint8_t *signature;
};
enum tg_sk_reply tg_sk_read_signed(const uint8_t *body, size_t length, struct tg_sk_signed *out);

#endif
