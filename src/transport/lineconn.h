/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/loop.h"
#include "basic/macro.h"

/*
 * A newline-delimited message connection over a pair of fds (stdin/stdout of
 * `ward mcp` and `ward serve --listen stdio`) or one socket (`--listen
 * unix:`), driven by the event loop.
 *
 * Input: lines of at most max_line bytes are delivered one by one; a longer
 * line is reported once (too_large) and skipped up to its newline without
 * being stored. Output: send() queues one message and its newline; the queue
 * is bounded by max_queue (-ENOBUFS beyond, nothing queued). While more than
 * high_water bytes wait to be written, input is not read (back-pressure: a
 * client that does not read its replies stops being served, and ward's
 * memory stays bounded); it resumes below high_water / 4.
 */

struct ward__lineconn;

struct ward__lineconn_limits {
	size_t max_line;
	size_t max_queue;
	size_t high_water;
};

struct ward__lineconn_ops {
	/* One line, without its newline (nor a CR before it); valid for the call only. */
	void (*message)(struct ward__lineconn *c, const char *line, size_t len, void *userdata);
	/*
	 * A line longer than max_line was skipped; prefix holds its first bytes
	 * (so that a request id in them can still be answered).
	 */
	void (*too_large)(struct ward__lineconn *c, const char *prefix, size_t len, void *userdata);
	/*
	 * The input ended (EOF or a read error, error = -errno or 0). Output may
	 * still be queued: see ward__lineconn_flush().
	 */
	void (*input_closed)(struct ward__lineconn *c, int error, void *userdata);
	/* Optional: the queue went back below high_water / 4 after being above high_water. */
	void (*drained)(struct ward__lineconn *c, void *userdata);
	/* The output side failed (the peer went away, -EPIPE...): nothing more can be sent. */
	void (*output_failed)(struct ward__lineconn *c, int error, void *userdata);
};

/*
 * in_fd and out_fd are borrowed (never closed) unless own_fds; they are made
 * non-blocking, and their previous flags are restored by free (stdio may be
 * shared with the parent).
 */
WARD_INTERNAL int ward__lineconn_new(struct ward__loop *l, int in_fd, int out_fd, bool own_fds,
				     const struct ward__lineconn_limits *lim,
				     const struct ward__lineconn_ops *ops, void *userdata,
				     struct ward__lineconn **ret);
WARD_INTERNAL void ward__lineconn_free(struct ward__lineconn *c);
/* Queues data plus a newline. data must not contain a newline (-EINVAL). */
WARD_INTERNAL int ward__lineconn_send(struct ward__lineconn *c, const void *data, size_t len);
WARD_INTERNAL size_t ward__lineconn_queued(const struct ward__lineconn *c);
/* True while more than high_water bytes wait (input is not read meanwhile). */
WARD_INTERNAL bool ward__lineconn_congested(const struct ward__lineconn *c);
/* Stops (or resumes) reading input, whatever the queue. */
WARD_INTERNAL void ward__lineconn_pause(struct ward__lineconn *c, bool pause);
/*
 * Writes the queue out, blocking at most timeout_ms (for a clean shutdown).
 * Returns 0 when everything was written, -ETIMEDOUT or -errno otherwise.
 */
WARD_INTERNAL int ward__lineconn_flush(struct ward__lineconn *c, int timeout_ms);
