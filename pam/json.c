/* See json.h. RFC 8259 syntax, nesting limited to MAX_DEPTH, strings UTF-8, an object's
 * keys plain and distinct. */
#include "json.h"

#include <limits.h>
#include <string.h>

#define MAX_DEPTH 32
#define MAX_KEYS 128 /* per object; the daemon's reports have a few dozen at most */

static const char *skip_space(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits at p (p + 4 <= end checked by the caller). */
static long hex4(const char *p) {
    long value = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_value(p[i]);
        if (digit < 0) return -1;
        value = value * 16 + digit;
    }
    return value;
}

/* The code point of the UTF-8 character at p (a lead byte of 0x80 or more) and its length
 * in *length; -1 when it is not well-formed UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF, nothing cut off by `end`). */
static long utf8_character(const char *p, const char *end, size_t *length) {
    const unsigned char *u = (const unsigned char *)p;
    unsigned char low = 0x80, high = 0xBF;
    long code;
    size_t count;
    if (u[0] >= 0xC2 && u[0] <= 0xDF) {
        count = 2;
        code = u[0] & 0x1F;
    } else if (u[0] >= 0xE0 && u[0] <= 0xEF) {
        count = 3;
        code = u[0] & 0x0F;
        if (u[0] == 0xE0) low = 0xA0;
        if (u[0] == 0xED) high = 0x9F;
    } else if (u[0] >= 0xF0 && u[0] <= 0xF4) {
        count = 4;
        code = u[0] & 0x07;
        if (u[0] == 0xF0) low = 0x90;
        if (u[0] == 0xF4) high = 0x8F;
    } else {
        return -1;
    }
    if ((size_t)(end - p) < count) return -1;
    for (size_t i = 1; i < count; i++) {
        if (u[i] < (i == 1 ? low : 0x80) || u[i] > (i == 1 ? high : 0xBF)) return -1;
        code = code << 6 | (u[i] & 0x3F);
    }
    *length = count;
    return code;
}

/* Past the string starting at p (which is '"'), or NULL when malformed: a control
 * character, a bad escape, or bytes that are not UTF-8 (the daemon's reader refuses them
 * too, so both ends agree on what every string says). */
static const char *skip_string(const char *p, const char *end) {
    if (p >= end || *p != '"') return NULL;
    for (p++; p < end; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') return p + 1;
        if (c < 0x20) return NULL;
        if (c >= 0x80) {
            size_t length;
            if (utf8_character(p, end, &length) < 0) return NULL;
            p += length - 1;
            continue;
        }
        if (c != '\\') continue;
        if (++p >= end) return NULL;
        switch (*p) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            break;
        case 'u':
            if (end - p < 5 || hex4(p + 1) < 0) return NULL;
            p += 4;
            break;
        default:
            return NULL;
        }
    }
    return NULL;
}

static const char *skip_digits(const char *p, const char *end) {
    const char *start = p;
    while (p < end && *p >= '0' && *p <= '9') p++;
    return p > start ? p : NULL;
}

static const char *skip_number(const char *p, const char *end) {
    if (p < end && *p == '-') p++;
    if (p < end && *p == '0') {
        p++;
    } else if (!(p = skip_digits(p, end))) {
        return NULL;
    }
    if (p < end && *p == '.' && !(p = skip_digits(p + 1, end))) return NULL;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (!(p = skip_digits(p, end))) return NULL;
    }
    return p;
}

static const char *skip_literal(const char *p, const char *end, const char *word) {
    size_t length = strlen(word);
    if ((size_t)(end - p) < length || memcmp(p, word, length) != 0) return NULL;
    return p + length;
}

static const char *skip_value(const char *p, const char *end, int depth);

/* Whether the key at [start, end) (quotes included) is plain: no escape, so it reads the
 * same to every reader and tg_json_member can match it. */
static int plain_key(const char *start, const char *end) {
    return memchr(start, '\\', (size_t)(end - start)) == NULL;
}

/* Past the array or object at p; `close` is ']' or '}'. An object's keys must be plain
 * and distinct, at most MAX_KEYS of them: with a key twice, or one spelled with escapes,
 * two readers (this one and the daemon's) could each see a different message. */
static const char *skip_container(const char *p, const char *end, int depth, char close) {
    struct tg_span keys[MAX_KEYS];
    size_t key_count = 0;
    if (depth >= MAX_DEPTH) return NULL;
    p = skip_space(p + 1, end);
    if (p < end && *p == close) return p + 1;
    while (p < end) {
        if (close == '}') {
            const char *key = p;
            if (!(p = skip_string(p, end)) || !plain_key(key, p) || key_count == MAX_KEYS) return NULL;
            for (size_t i = 0; i < key_count; i++) {
                if (keys[i].end - keys[i].start == p - key && memcmp(keys[i].start, key, (size_t)(p - key)) == 0)
                    return NULL;
            }
            keys[key_count].start = key;
            keys[key_count++].end = p;
            p = skip_space(p, end);
            if (p >= end || *p != ':') return NULL;
            p = skip_space(p + 1, end);
        }
        if (!(p = skip_value(p, end, depth + 1))) return NULL;
        p = skip_space(p, end);
        if (p < end && *p == close) return p + 1;
        if (p >= end || *p != ',') return NULL;
        p = skip_space(p + 1, end);
    }
    return NULL;
}

static const char *skip_value(const char *p, const char *end, int depth) {
    if (p >= end) return NULL;
    switch (*p) {
    case '"': return skip_string(p, end);
    case '{': return skip_container(p, end, depth, '}');
    case '[': return skip_container(p, end, depth, ']');
    case 't': return skip_literal(p, end, "true");
    case 'f': return skip_literal(p, end, "false");
    case 'n': return skip_literal(p, end, "null");
    default: return skip_number(p, end);
    }
}

int tg_json_is_object(const char *start, const char *end) {
    const char *p = skip_space(start, end);
    if (p >= end || *p != '{') return 0;
    p = skip_value(p, end, 0);
    return p && skip_space(p, end) == end;
}

int tg_json_member(struct tg_span object, const char *key, struct tg_span *value) {
    const char *p = skip_space(object.start, object.end), *end = object.end;
    size_t key_length = strlen(key);
    if (p >= end || *p != '{') return 0;
    p = skip_space(p + 1, end);
    while (p < end && *p == '"') {
        const char *key_end = skip_string(p, end);
        if (!key_end) return 0;
        int matches = (size_t)(key_end - p - 2) == key_length && memcmp(p + 1, key, key_length) == 0;
        p = skip_space(key_end, end);
        if (p >= end || *p != ':') return 0;
        p = skip_space(p + 1, end);
        const char *value_end = skip_value(p, end, 1);
        if (!value_end) return 0;
        if (matches) {
            value->start = p;
            value->end = value_end;
            return 1;
        }
        p = skip_space(value_end, end);
        if (p >= end || *p != ',') return 0;
        p = skip_space(p + 1, end);
    }
    return 0;
}

/* Appends code point `code` as UTF-8; returns the bytes written, 0 when it does not fit.
 * A control character (C0, DEL or C1: a terminal acts on all three) becomes '?'. */
static size_t put_utf8(char *out, size_t room, unsigned long code) {
    unsigned char bytes[4];
    size_t count;
    if (code < 0x20 || (code >= 0x7F && code <= 0x9F)) {
        bytes[0] = '?';
        count = 1;
    } else if (code < 0x80) {
        bytes[0] = (unsigned char)code;
        count = 1;
    } else if (code < 0x800) {
        bytes[0] = (unsigned char)(0xC0 | (code >> 6));
        bytes[1] = (unsigned char)(0x80 | (code & 0x3F));
        count = 2;
    } else if (code < 0x10000) {
        bytes[0] = (unsigned char)(0xE0 | (code >> 12));
        bytes[1] = (unsigned char)(0x80 | ((code >> 6) & 0x3F));
        bytes[2] = (unsigned char)(0x80 | (code & 0x3F));
        count = 3;
    } else {
        bytes[0] = (unsigned char)(0xF0 | (code >> 18));
        bytes[1] = (unsigned char)(0x80 | ((code >> 12) & 0x3F));
        bytes[2] = (unsigned char)(0x80 | ((code >> 6) & 0x3F));
        bytes[3] = (unsigned char)(0x80 | (code & 0x3F));
        count = 4;
    }
    if (count > room) return 0;
    memcpy(out, bytes, count);
    return count;
}

int tg_json_string(struct tg_span value, char *out, size_t size) {
    const char *p = value.start, *end = value.end;
    if (size == 0 || skip_string(p, end) != end) return 0;
    size_t used = 0;
    end--; /* the closing quote */
    for (p++; p < end; p++) {
        size_t room = size - 1 - used, wrote;
        if (*p != '\\') {
            /* Well-formed (skip_string checked it); re-encoded, so a character is copied
             * whole or not at all and a control character is never passed on. */
            size_t length = 1;
            unsigned char c = (unsigned char)*p;
            unsigned long code = c < 0x80 ? c : (unsigned long)utf8_character(p, end, &length);
            if (!(wrote = put_utf8(out + used, room, code))) break;
            used += wrote;
            p += length - 1;
            continue;
        }
        p++;
        unsigned long code;
        switch (*p) {
        case 'b': code = '\b'; break;
        case 'f': code = '\f'; break;
        case 'n': code = '\n'; break;
        case 'r': code = '\r'; break;
        case 't': code = '\t'; break;
        case 'u':
            code = (unsigned long)hex4(p + 1);
            p += 4;
            /* A surrogate pair is one character; a lone surrogate is not one. */
            if (code >= 0xD800 && code <= 0xDBFF && end - p >= 7 && p[1] == '\\' && p[2] == 'u') {
                long low = hex4(p + 3);
                if (low >= 0xDC00 && low <= 0xDFFF) {
                    code = 0x10000 + ((code - 0xD800) << 10) + (unsigned long)(low - 0xDC00);
                    p += 6;
                }
            }
            if (code >= 0xD800 && code <= 0xDFFF) code = '?';
            break;
        default: code = (unsigned char)*p; break;
        }
        if (!(wrote = put_utf8(out + used, room, code))) break;
        used += wrote;
    }
    out[used] = '\0';
    return 1;
}

int tg_json_string_is(struct tg_span value, const char *text) {
    char decoded[256];
    size_t length = strlen(text);
    return length < sizeof decoded && tg_json_string(value, decoded, sizeof decoded) && strcmp(decoded, text) == 0;
}

int tg_json_integer(struct tg_span value, long long *out) {
    const char *p = value.start, *end = value.end;
    int negative = 0;
    unsigned long long magnitude = 0;
    if (p < end && *p == '-') {
        negative = 1;
        p++;
    }
    if (p >= end) return 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9') return 0;
        unsigned digit = (unsigned)(*p - '0');
        if (magnitude > ((unsigned long long)LLONG_MAX - digit) / 10) return 0;
        magnitude = magnitude * 10 + digit;
    }
    *out = negative ? -(long long)magnitude : (long long)magnitude;
    return 1;
}

int tg_json_bool(struct tg_span value, int *out) {
    size_t length = (size_t)(value.end - value.start);
    if (length == 4 && memcmp(value.start, "true", 4) == 0) {
        *out = 1;
        return 1;
    }
    if (length == 5 && memcmp(value.start, "false", 5) == 0) {
        *out = 0;
        return 1;
    }
    return 0;
}
