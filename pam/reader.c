/* See reader.h. */
#include "reader.h"

#include <string.h>

enum tg_frame tg_frame_line(const char *buffer, size_t have, size_t limit, size_t *length) {
    const char *newline = memchr(buffer, '\n', have < limit ? have : limit);
    if (newline) {
        *length = (size_t)(newline - buffer);
        return TG_FRAME_LINE;
    }
    return have >= limit ? TG_FRAME_TOO_LONG : TG_FRAME_MORE;
}

enum tg_message tg_message_kind(struct tg_span line, unsigned long long id) {
    struct tg_span kind, field;
    long long message_id;
    if (!tg_json_is_object(line.start, line.end) || !tg_json_member(line, "kind", &kind) ||
        !tg_json_member(line, "id", &field) || !tg_json_integer(field, &message_id) || message_id < 0)
        return TG_MESSAGE_BROKEN;
    int failure = tg_json_string_is(kind, "failure");
    /* The id is compared before anything else is believed, a failure included: another
     * request's failure (a replayed or forged line) must not end this one. */
    if ((unsigned long long)message_id != id && !(failure && message_id == 0)) return TG_MESSAGE_BROKEN;
    if (failure) return TG_MESSAGE_FAILURE;
    if (tg_json_string_is(kind, "event")) return TG_MESSAGE_EVENT;
    if (tg_json_string_is(kind, "ask")) return TG_MESSAGE_ASK;
    if (tg_json_string_is(kind, "result")) return TG_MESSAGE_RESULT;
    if (tg_json_string_is(kind, "output")) return TG_MESSAGE_OUTPUT;
    return TG_MESSAGE_BROKEN;
}
