/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/macro.h"
#include "rpc/http.h"

/*
 * One server-side WebSocket connection over a connected, non-blocking
 * stream socket, independent of any event loop: the owner calls
 * ward__ws_on_readable() / ward__ws_on_writable() when its poller says so,
 * sets its interest from ward__ws_want_read() / ward__ws_want_write() after
 * every call, arms a timer for ward__ws_deadline(), and frees the connection
 * once ward__ws_finished() says so. The interest is level-triggered (EPOLLIN
 * / EPOLLOUT without EPOLLET): a call reads at most read_budget bytes, so
 * one flooding client cannot starve the others, and relies on being called
 * again while bytes remain.
 *
 * Phases:
 *   1. The HTTP request, read and parsed with the limits of src/rpc/http.h,
 *      within handshake_ms (a client that trickles bytes is dropped). Then:
 *        - any Origin field: 403 (a web page must never reach the server:
 *          browsers always send Origin with a WebSocket handshake);
 *        - GET /readyz: 200 "ok", without authentication (a readiness probe
 *          carries no credentials and learns nothing but that the port
 *          answers); another method on it: 405;
 *        - with a token configured, a missing or wrong "Authorization: Bearer"
 *          token: 401, the same answer for both, compared in constant time;
 *        - a method other than GET: 405; a path other than "/": 404;
 *        - not a valid WebSocket handshake: 400 or 426;
 *        - the owner's authorize callback may refuse with a status (503 when
 *          it is at capacity, say);
 *        - else 101 and the connection is open.
 *      Every refusal is answered, the socket shut for writing, and what the
 *      client still sends is read and dropped until it closes or close_ms
 *      passes, so that the answer is not lost to a reset.
 *   2. Messages, framed by wslay: one complete message (text or binary,
 *      however fragmented) per on_message call. Client frames must be masked
 *      and use no reserved bits (no extension is negotiated); a message over
 *      max_message is refused with close 1009, a message of more than
 *      max_fragments frames with 1009 too (each fragment costs memory of its
 *      own), text that is not UTF-8 with 1007, any other protocol error with
 *      1002 or an empty close. Pings are answered with pongs; with
 *      keepalive_ms the server pings, and a client from which nothing at all
 *      arrived for a whole interval is dropped.
 *   3. Close: either side's close frame is answered, and the connection
 *      finishes once both were exchanged (or close_ms passed). A close asked
 *      for by the owner is sent after the messages it queued before.
 *
 * Back-pressure, both ways:
 *   - ward__ws_send() queues at most max_queue bytes and max_queue_msgs
 *     messages (pongs included) and refuses more with -ENOBUFS, so the owner
 *     stops its producers until ward__ws_queued_bytes() has dropped; while
 *     the queue is full the connection also stops reading, so a client that
 *     never reads cannot make the server answer (or pong) without limit.
 *     Every queued message is charged WARD_WS_MSG_COST bytes on top of its
 *     payload: wslay keeps each in allocations of its own, and a client
 *     that pings without reading would otherwise queue a million 20-byte
 *     pongs (120 MB held) charged as 20 MB;
 *   - on_message may return WARD_WS_PAUSE: no message is delivered and
 *     nothing more is read until ward__ws_resume(). The messages already
 *     read by then (the one in progress and at most 8 KiB of frames after
 *     it) are kept and delivered, in order, by ward__ws_resume().
 */

enum ward__ws_type {
	WARD_WS_TEXT = 1,
	WARD_WS_BINARY = 2,
};

/* on_message's return value asking to stop deliveries until ward__ws_resume(). */
#define WARD_WS_PAUSE 1

/*
 * What one queued message costs beyond its payload, as measured with wslay
 * 1.1 (its message record and the payload's own allocation, about 100
 * bytes): charged against max_queue with the payload.
 */
#define WARD_WS_MSG_COST ((size_t)128)

/* Defaults of struct ward__ws_config (docs/protocol.md explains them). */
#define WARD_WS_DEFAULT_MAX_MESSAGE ((size_t)16 << 20)
#define WARD_WS_DEFAULT_MAX_FRAGMENTS 4096u
#define WARD_WS_DEFAULT_MAX_QUEUE ((size_t)16 << 20)
#define WARD_WS_DEFAULT_MAX_QUEUE_MSGS 4096u
#define WARD_WS_DEFAULT_HANDSHAKE_MS 10000u
#define WARD_WS_DEFAULT_KEEPALIVE_MS 30000u
#define WARD_WS_DEFAULT_CLOSE_MS 5000u
#define WARD_WS_DEFAULT_READ_BUDGET ((size_t)256 << 10)
/* Longest token accepted in the configuration. */
#define WARD_WS_MAX_TOKEN 4096u

/*
 * Zero in any field means its default. The strings are copied: the
 * configuration may be freed after ward__ws_new().
 */
struct ward__ws_config {
	const char *token; /* the bearer token clients must present; NULL: no authentication */
	bool no_keepalive; /* no server pings (keepalive_ms ignored) */
	size_t max_message; /* largest message received, bytes */
	unsigned max_fragments; /* frames of one message */
	size_t max_queue; /* bytes queued for sending; also the largest message sent */
	unsigned max_queue_msgs; /* messages queued for sending */
	unsigned handshake_ms; /* from ward__ws_new() to a complete request */
	unsigned keepalive_ms; /* ping interval; a client silent for a whole interval is dropped */
	unsigned close_ms; /* waiting for the client's close frame, or its end after a refusal */
	size_t read_budget; /* bytes read per on_readable call */
	struct ward__http_limits http; /* all zero: the parser's defaults */
};

struct ward__ws;

struct ward__ws_callbacks {
	/*
	 * Optional, after every check of phase 1 passed: 0 accepts, an HTTP
	 * status that ward__http_respond() knows refuses (anything else
	 * becomes 403). req is valid during the call only.
	 */
	int (*authorize)(struct ward__ws *ws, const struct ward__http_request *req, void *userdata);
	/* Optional: the connection is open (the 101 is queued). req as above. */
	void (*on_open)(struct ward__ws *ws, const struct ward__http_request *req, void *userdata);
	/*
	 * Required: one complete message, valid during the call only. Returns
	 * 0 to go on, WARD_WS_PAUSE to stop deliveries, or a negative errno to
	 * close the connection with 1011. It may call ward__ws_send(),
	 * ward__ws_close() and ward__ws_resume(), never ward__ws_free().
	 */
	int (*on_message)(struct ward__ws *ws, enum ward__ws_type type, const uint8_t *data,
			  size_t len, void *userdata);
};

/* How the connection ended, for the owner's logs. */
struct ward__ws_info {
	int http_status; /* the status answered to the request (101 when upgraded), 0 before */
	uint16_t close_sent; /* close codes exchanged, 0 for none (1005: a close without code) */
	uint16_t close_received;
	int error; /* 0, or -errno: ETIMEDOUT, ECONNRESET, EPIPE, EPROTO, EMSGSIZE, ENOMEM, ... */
	const char *reason; /* a short lowercase explanation, never NULL */
};

/*
 * Takes a connected, non-blocking stream socket (on success the connection
 * owns it and ward__ws_free() closes it; on failure the caller still does).
 * Sets TCP_NODELAY where the socket is TCP: messages are whole writes, and
 * Nagle's algorithm against delayed ACKs would hold small answers for 40 ms.
 * -EINVAL for a bad configuration (a token longer than WARD_WS_MAX_TOKEN or
 * empty, a limit out of range), -ENOMEM.
 */
WARD_INTERNAL int ward__ws_new(int fd, const struct ward__ws_config *config,
			       const struct ward__ws_callbacks *callbacks, void *userdata,
			       struct ward__ws **ret);
/* Closes the socket and frees everything. Accepts NULL. Never from a callback. */
WARD_INTERNAL void ward__ws_free(struct ward__ws *ws);

WARD_INTERNAL int ward__ws_fd(const struct ward__ws *ws);

/*
 * Event entry points. Each does what it can without blocking and may call
 * the callbacks. They return 0, or a negative errno when the connection
 * failed (it is then finished); either way check ward__ws_finished().
 */
WARD_INTERNAL int ward__ws_on_readable(struct ward__ws *ws);
WARD_INTERNAL int ward__ws_on_writable(struct ward__ws *ws);
/* EPOLLERR or EPOLLHUP: the socket is gone; the connection finishes. */
WARD_INTERNAL int ward__ws_on_hangup(struct ward__ws *ws);
/* The timer for ward__ws_deadline() fired; now is CLOCK_MONOTONIC in ns. */
WARD_INTERNAL int ward__ws_on_timer(struct ward__ws *ws, uint64_t now_ns);

/* Interest to set after every call. */
WARD_INTERNAL bool ward__ws_want_read(const struct ward__ws *ws);
WARD_INTERNAL bool ward__ws_want_write(const struct ward__ws *ws);
/* When to call ward__ws_on_timer(): CLOCK_MONOTONIC ns, 0 for never. */
WARD_INTERNAL uint64_t ward__ws_deadline(const struct ward__ws *ws);
/* True once the connection is over: free it. */
WARD_INTERNAL bool ward__ws_finished(const struct ward__ws *ws);
/* True from the 101 until a close was asked for, sent or received: ward__ws_send() works. */
WARD_INTERNAL bool ward__ws_is_open(const struct ward__ws *ws);
WARD_INTERNAL void ward__ws_get_info(const struct ward__ws *ws, struct ward__ws_info *ret);

/*
 * Queues one message (copied). -ENOBUFS when max_queue bytes or
 * max_queue_msgs messages would be exceeded (nothing queued: try again once
 * ward__ws_queued_bytes() dropped), -EMSGSIZE when len alone is over
 * max_queue, -EPIPE when the connection is not open, -ENOMEM. Sending
 * happens in ward__ws_on_writable(): call it right after queuing (the socket
 * is usually writable) rather than waiting for the poller.
 */
WARD_INTERNAL int ward__ws_send(struct ward__ws *ws, enum ward__ws_type type, const void *data,
				size_t len);
/*
 * Bytes queued and not yet written, each message charged its payload and
 * WARD_WS_MSG_COST; and the number of messages.
 */
WARD_INTERNAL size_t ward__ws_queued_bytes(const struct ward__ws *ws);
WARD_INTERNAL size_t ward__ws_queued_msgs(const struct ward__ws *ws);

/*
 * Starts the close handshake with code (1000-4999, not 1004-1006 or 1015)
 * and a reason (NULL or at most 123 bytes of UTF-8), after what is queued.
 * Before the upgrade, the connection simply finishes. -EINVAL for a bad
 * code or reason.
 */
WARD_INTERNAL int ward__ws_close(struct ward__ws *ws, uint16_t code, const char *reason);

/* Lifts WARD_WS_PAUSE: delivers the messages held meanwhile (may call on_message). */
WARD_INTERNAL void ward__ws_resume(struct ward__ws *ws);
