/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/buf.h"
#include "basic/macro.h"

/*
 * Newline-delimited framing (stdio and unix-socket transports: one JSON-RPC
 * message per line). Pure: the caller reads bytes however it likes and hands
 * them over; the framer finds the lines in them.
 *
 * A line is the bytes before a "\n", without it and without one "\r" just
 * before it (CRLF is tolerated; any other "\r" stays). A line longer than
 * max_line bytes is reported once, as WARD_LINES_TOO_LONG with its first
 * max_line bytes (so the caller can still find the request id in them), and
 * everything after up to its "\n" is skipped without being kept. Memory is
 * bounded whatever the input: the framer keeps at most max_line + 1 bytes
 * (the start of a line that straddles two reads), and nothing when lines
 * arrive whole.
 *
 * Pull interface, so the caller can stop after any line (back-pressure) and
 * resume with the bytes it has not handed over yet:
 *
 *	while (off < n) {
 *		int ev = ward__lines_next(&l, buf + off, n - off, &used, &line);
 *		off += used;
 *		if (ev == WARD_LINES_NEED_MORE)
 *			break;          // everything consumed; read more
 *		handle(ev, &line);      // may decide to stop here and keep buf + off
 *	}
 *
 * Empty lines (and lines of only "\r") are returned like any other; a
 * JSON-RPC server skips them.
 */

enum ward__lines_event {
	WARD_LINES_NEED_MORE = 0, /* all bytes consumed, no complete line in them */
	WARD_LINES_LINE = 1, /* a line */
	WARD_LINES_TOO_LONG = 2, /* a line over max_line: its first max_line bytes */
};

/* A line, or the prefix of one too long. Points into the caller's bytes or the framer. */
struct ward__line {
	const uint8_t *data;
	size_t len;
};

struct ward__lines {
	struct ward__buf
		partial; /* the start of a line split across calls, <= max_line + 1 bytes */
	size_t max_line;
	bool discarding; /* skipping the rest of a line already reported too long */
	bool reset; /* partial was handed out by the last call: forget it at the next */
};

/* Largest max_line accepted. */
#define WARD_LINES_MAX_LINE ((size_t)1 << 30)

/* Sets up a framer for lines of at most max_line bytes (1..WARD_LINES_MAX_LINE). Allocates nothing. */
WARD_INTERNAL int ward__lines_init(struct ward__lines *l, size_t max_line);
/* Frees what the framer holds. Accepts a zeroed framer. */
WARD_INTERNAL void ward__lines_release(struct ward__lines *l);

/*
 * Consumes bytes from data[0, len) up to and including the end of the next
 * line, or all of them. Returns the event; *ret_consumed says how many bytes
 * were used (all of them for NEED_MORE); *ret_line is set for LINE and
 * TOO_LONG and stays valid until the next call on this framer and as long as
 * data is unchanged. -ENOMEM when the framer cannot keep a partial line (the
 * bytes are then not consumed; the call may be repeated).
 */
WARD_INTERNAL int ward__lines_next(struct ward__lines *l, const void *data, size_t len,
				   size_t *ret_consumed, struct ward__line *ret_line);

/*
 * At the end of the input: a last line that had no "\n" is returned as a
 * LINE (one trailing "\r" removed); otherwise NEED_MORE. The framer is then
 * empty and can be used again.
 */
WARD_INTERNAL int ward__lines_finish(struct ward__lines *l, struct ward__line *ret_line);
