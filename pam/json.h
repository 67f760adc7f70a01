/* A small, strict JSON reader for the few fields pam_touchgate reads from touchgated.
 *
 * It never allocates: a value is a span of the caller's buffer. Input is untrusted (a
 * compromised or impostor daemon), so every walk is bounded by the span and by a nesting
 * limit, and anything not well-formed is refused rather than guessed at. */
#ifndef TOUCHGATE_PAM_JSON_H
#define TOUCHGATE_PAM_JSON_H

#include <stddef.h>

struct tg_span {
    const char *start;
    const char *end; /* one past the last byte */
};

/* Whether [start, end) holds exactly one JSON object (whitespace around it allowed), every
 * string in it well-formed UTF-8, every object's keys written without escapes and distinct
 * (at most 128): what two readers could read differently is refused. */
int tg_json_is_object(const char *start, const char *end);

/* The value of member `key` of the object `object` (a span from tg_json_is_object or from a
 * member lookup); 0 when absent or not an object. */
int tg_json_member(struct tg_span object, const char *key, struct tg_span *value);

/* The string `value` decoded into `out` (NUL-terminated, at most `size` - 1 bytes, cut at
 * a character boundary when longer); 0 when it is not a string. Control characters (C0,
 * DEL and C1, written raw or as \u escapes), NUL and lone surrogates become '?'. */
int tg_json_string(struct tg_span value, char *out, size_t size);

/* Whether the string `value` equals `text` exactly. */
int tg_json_string_is(struct tg_span value, const char *text);

/* The integer `value` (no fraction or exponent, within long long); 0 otherwise. */
int tg_json_integer(struct tg_span value, long long *out);

/* The boolean `value`; 0 when it is not true or false. */
int tg_json_bool(struct tg_span value, int *out);

#endif
