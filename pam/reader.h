/* What pam_touchgate accepts from touchgated, as pure functions over bytes already read:
 * where a line ends, and whether a line is a message of the running request. Kept apart
 * from the socket and the conversation so `make fuzz` runs them (fuzz/pam-reader.swift)
 * against Foundation's JSON reader and the daemon's own framing rules. */
#ifndef TOUCHGATE_PAM_READER_H
#define TOUCHGATE_PAM_READER_H

#include <stddef.h>

#include "json.h"

/* DaemonProtocol.maximumLineBytes: a line, its newline included, is at most this long. */
#define TG_LINE_LIMIT (64 * 1024)

enum tg_frame {
    TG_FRAME_LINE,     /* a whole line: its length (without the newline) is set */
    TG_FRAME_MORE,     /* no newline yet, and room for one: read more */
    TG_FRAME_TOO_LONG  /* no newline within `limit` bytes: the peer broke the protocol */
};

/* Where the first line of `buffer` (`have` bytes) ends, with its newline within the first
 * `limit` bytes, as the daemon's FrameBuffer decides it. */
enum tg_frame tg_frame_line(const char *buffer, size_t have, size_t limit, size_t *length);

enum tg_message {
    TG_MESSAGE_BROKEN,  /* not an object, no kind or id, an unknown kind, or another request's */
    TG_MESSAGE_EVENT,
    TG_MESSAGE_ASK,
    TG_MESSAGE_RESULT,
    TG_MESSAGE_FAILURE,
    TG_MESSAGE_OUTPUT
};

/* What `line` is for request `id`. A message must carry that id; a failure may also carry
 * 0, the daemon's id for a failure of the connection rather than of a request. */
enum tg_message tg_message_kind(struct tg_span line, unsigned long long id);

#endif
