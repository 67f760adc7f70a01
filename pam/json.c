/* See json.h. RFC 8259 syntax, nesting limited to MAX_DEPTH. */
#include "json.h"

#include <limits.h>
#include <string.h>

#define MAX_DEPTH 32

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

/* Past the string starting at p (which is '"'), or NULL when malformed. */
static const char *skip_string(const char *p, const char *end) {
    if (p >= end || *p != '"') return NULL;
    for (p++; p < end; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') return p + 1;
        if (c < 0x20) return NULL;
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

/* Past the array or object at p; `close` is ']' or '}'. */
static const char *skip_container(const char *p, const char *end, int depth, char close) {
    if (depth >= MAX_DEPTH) return NULL;
    p = skip_space(p + 1, end);
    if (p < end && *p == close) return p + 1;
    while (p < end) {
        if (close == '}') {
            if (!(p = skip_string(p, end))) return NULL;
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

/* Appends code point `code` as UTF-8; returns the bytes written, 0 when it does not fit. */
static size_t put_utf8(char *out, size_t room, unsigned long code) {
    unsigned char bytes[4];
    size_t count;
    if (code < 0x20) {
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
            unsigned char c = (unsigned char)*p;
            /* A multi-byte character is copied whole or not at all. */
            size_t length = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
            if (length > (size_t)(end - p)) length = (size_t)(end - p);
            if (length > room) break;
            memcpy(out + used, p, length);
            used += length;
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
