/* See sk_wire.h. Every length read from the agent is checked against what is left before
 * it is used; nothing is allocated from a length the peer chose. */
#include "sk_wire.h"

#include <stdlib.h>
#include <string.h>

enum {
    AGENT_FAILURE = 5,
    AGENT_SUCCESS = 6,
    AGENT_EXTENSION = 27,
    AGENT_EXTENSION_FAILURE = 28,
    KEY_HANDLE_LIMIT = 1024
};

void tg_sk_buffer_free(struct tg_sk_buffer *buffer) {
    free(buffer->data);
    buffer->data = NULL;
    buffer->length = buffer->capacity = 0;
}

static void put(struct tg_sk_buffer *buffer, const void *bytes, size_t count) {
    if (buffer->failed) return;
    if (count > TG_SK_MESSAGE_LIMIT + 4 - buffer->length) {
        buffer->failed = 1;
        return;
    }
    if (buffer->length + count > buffer->capacity) {
        size_t capacity = buffer->capacity ? buffer->capacity : 256;
        while (capacity < buffer->length + count) capacity *= 2;
        uint8_t *grown = realloc(buffer->data, capacity);
        if (!grown) {
            buffer->failed = 1;
            return;
        }
        buffer->data = grown;
        buffer->capacity = capacity;
    }
    if (count) memcpy(buffer->data + buffer->length, bytes, count);
    buffer->length += count;
}

static void put_u32(struct tg_sk_buffer *buffer, uint32_t value) {
    uint8_t bytes[4] = {(uint8_t)(value >> 24), (uint8_t)(value >> 16), (uint8_t)(value >> 8), (uint8_t)value};
    put(buffer, bytes, 4);
}

static void put_byte(struct tg_sk_buffer *buffer, uint8_t value) { put(buffer, &value, 1); }

static void put_string(struct tg_sk_buffer *buffer, const void *bytes, size_t count) {
    if (count > TG_SK_MESSAGE_LIMIT) {
        buffer->failed = 1;
        return;
    }
    put_u32(buffer, (uint32_t)count);
    put(buffer, bytes, count);
}

/* Starts a frame: a length to fill in, the extension message type and its name. */
static void begin(struct tg_sk_buffer *frame, const char *name) {
    frame->length = 0;
    frame->failed = 0;
    put_u32(frame, 0);
    put_byte(frame, AGENT_EXTENSION);
    put_string(frame, name, strlen(name));
}

static int finish(struct tg_sk_buffer *frame) {
    if (frame->failed || frame->length - 4 > TG_SK_MESSAGE_LIMIT) return -1;
    uint32_t body = (uint32_t)(frame->length - 4);
    frame->data[0] = (uint8_t)(body >> 24);
    frame->data[1] = (uint8_t)(body >> 16);
    frame->data[2] = (uint8_t)(body >> 8);
    frame->data[3] = (uint8_t)body;
    return 0;
}

int tg_sk_enroll_request(struct tg_sk_buffer *frame, uint32_t algorithm, const char *application,
                         uint8_t flags, const char *user) {
    begin(frame, "sk-enroll@touchgate");
    put_u32(frame, algorithm);
    put_string(frame, application, strlen(application));
    put_byte(frame, flags);
    put_string(frame, user, strlen(user));
    return finish(frame);
}

int tg_sk_sign_request(struct tg_sk_buffer *frame, uint32_t algorithm, const char *application,
                       const uint8_t *key_handle, size_t key_handle_len, uint8_t flags,
                       const uint8_t *data, size_t data_len) {
    begin(frame, "sk-sign@touchgate");
    put_u32(frame, algorithm);
    put_string(frame, application, strlen(application));
    put_string(frame, key_handle, key_handle_len);
    put_byte(frame, flags);
    put_string(frame, data, data_len);
    return finish(frame);
}

long tg_sk_frame_length(const uint8_t prefix[4]) {
    uint32_t length = (uint32_t)prefix[0] << 24 | (uint32_t)prefix[1] << 16 | (uint32_t)prefix[2] << 8 | prefix[3];
    if (length == 0 || length > TG_SK_MESSAGE_LIMIT) return -1;
    return (long)length;
}

/* A cursor over a reply body. */
struct cursor {
    const uint8_t *at;
    size_t left;
};

static int take_byte(struct cursor *cursor, uint8_t *value) {
    if (cursor->left < 1) return -1;
    *value = cursor->at[0];
    cursor->at += 1;
    cursor->left -= 1;
    return 0;
}

static int take_u32(struct cursor *cursor, uint32_t *value) {
    if (cursor->left < 4) return -1;
    const uint8_t *b = cursor->at;
    *value = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
    cursor->at += 4;
    cursor->left -= 4;
    return 0;
}

static int take_string(struct cursor *cursor, const uint8_t **bytes, size_t *count) {
    uint32_t length;
    if (take_u32(cursor, &length) != 0 || length > cursor->left) return -1;
    *bytes = cursor->at;
    *count = length;
    cursor->at += length;
    cursor->left -= length;
    return 0;
}

/* The reply's type: OK with the cursor past it for a success with contents. */
static enum tg_sk_reply open_reply(const uint8_t *body, size_t length, struct cursor *cursor) {
    cursor->at = body;
    cursor->left = length;
    uint8_t type;
    if (take_byte(cursor, &type) != 0) return TG_SK_REPLY_MALFORMED;
    if (type == AGENT_FAILURE || type == AGENT_EXTENSION_FAILURE)
        return cursor->left == 0 ? TG_SK_REPLY_REFUSED : TG_SK_REPLY_MALFORMED;
    return type == AGENT_SUCCESS ? TG_SK_REPLY_OK : TG_SK_REPLY_MALFORMED;
}

enum tg_sk_reply tg_sk_read_enrolled(const uint8_t *body, size_t length, struct tg_sk_enrolled *out) {
    struct cursor cursor;
    enum tg_sk_reply reply = open_reply(body, length, &cursor);
    if (reply != TG_SK_REPLY_OK) return reply;
    const uint8_t *key, *handle;
    size_t key_len, handle_len;
    uint8_t flags;
    if (take_string(&cursor, &key, &key_len) != 0 || key_len != TG_SK_ED25519_KEY) return TG_SK_REPLY_MALFORMED;
    if (take_string(&cursor, &handle, &handle_len) != 0 || handle_len == 0 || handle_len > KEY_HANDLE_LIMIT)
        return TG_SK_REPLY_MALFORMED;
    if (take_byte(&cursor, &flags) != 0 || cursor.left != 0) return TG_SK_REPLY_MALFORMED;
    out->public_key = key;
    out->key_handle = handle;
    out->key_handle_len = handle_len;
    out->flags = flags;
    return TG_SK_REPLY_OK;
}

enum tg_sk_reply tg_sk_read_signed(const uint8_t *body, size_t length, struct tg_sk_signed *out) {
    struct cursor cursor;
    enum tg_sk_reply reply = open_reply(body, length, &cursor);
    if (reply != TG_SK_REPLY_OK) return reply;
    uint8_t flags;
    uint32_t counter;
    const uint8_t *signature;
    size_t signature_len;
    if (take_byte(&cursor, &flags) != 0 || take_u32(&cursor, &counter) != 0) return TG_SK_REPLY_MALFORMED;
    if (take_string(&cursor, &signature, &signature_len) != 0 || signature_len != TG_SK_ED25519_SIGNATURE)
        return TG_SK_REPLY_MALFORMED;
    if (cursor.left != 0) return TG_SK_REPLY_MALFORMED;
    out->flags = flags;
    out->counter = counter;
    out->signature = signature;
    return TG_SK_REPLY_OK;
}
