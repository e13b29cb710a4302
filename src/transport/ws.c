/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <wslay/wslay.h>

#include "transport/ws.h"

enum phase {
	PH_REQUEST, /* reading the HTTP request */
	PH_RESPOND, /* writing a refusal (or the readiness answer) */
	PH_OPEN, /* WebSocket framing, the close handshake included */
	PH_LINGER, /* our side is shut: reading and dropping until the client ends */
	PH_DONE,
};

/* A message read while deliveries were paused. */
struct held {
	struct held *next;
	enum ward__ws_type type;
	size_t len;
	uint8_t data[];
};

/* Bytes read per read(2) before the upgrade; also the most read past the request head. */
#define READ_CHUNK 4096
/* The HTTP responses are a few hundred bytes. */
#define OUT_MAX 4096

struct ward__ws {
	int fd;
	enum phase phase;
	struct ward__ws_config cfg;
	char *token;
	size_t token_len;
	struct ward__ws_callbacks cb;
	void *userdata;

	struct ward__http_parser http;
	struct ward__buf out; /* raw bytes to write first: the HTTP response */
	size_t out_off;
	struct ward__buf pending; /* bytes read past the request head: the first frames */
	size_t pending_off;

	wslay_event_context_ptr ctx;
	uint64_t deadline;
	size_t budget; /* bytes this on_readable call may still read */
	bool eof; /* read(2) returned 0 */
	int io_err; /* errno of a failed read(2) or send(2) */
	bool paused; /* on_message asked for WARD_WS_PAUSE */
	unsigned in_callback;
	bool closing; /* a close was asked for, queued, sent or received */
	bool close_deferred; /* the owner's close waits for the queue to drain */
	uint16_t close_code;
	char close_reason[124];
	uint8_t hdr[14]; /* a frame header wslay thinks sent, leaving with its payload */
	size_t hdr_len, hdr_off;
	bool received; /* bytes arrived since the last keepalive ping */
	bool ping_outstanding;
	unsigned fragments; /* frames of the message being received */
	struct held *held, **held_tail;
	struct ward__ws_info info;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t after_ms(unsigned ms)
{
	return now_ns() + (uint64_t)ms * 1000000u;
}

/* Records why the connection is ending; the first explanation wins. */
static void set_error(struct ward__ws *ws, int error, const char *reason)
{
	if (ws->info.error == 0 && error != 0) {
		ws->info.error = error;
		ws->info.reason = reason;
	} else if (!ws->info.reason) {
		ws->info.reason = reason;
	}
}

static void record_close_codes(struct ward__ws *ws)
{
	if (!ws->ctx)
		return;
	if (wslay_event_get_close_sent(ws->ctx))
		ws->info.close_sent = wslay_event_get_status_code_sent(ws->ctx);
	if (wslay_event_get_close_received(ws->ctx))
		ws->info.close_received = wslay_event_get_status_code_received(ws->ctx);
}

static void finish(struct ward__ws *ws, int error, const char *reason)
{
	if (ws->phase == PH_DONE)
		return;
	set_error(ws, error, reason);
	record_close_codes(ws);
	ws->phase = PH_DONE;
	ws->deadline = 0;
}

/* ------------------------------------------------------------------ the raw output */

/* Writes the HTTP response bytes; on their end a refusal shuts our side and lingers. */
static void flush_out(struct ward__ws *ws)
{
	while (ws->out_off < ws->out.len) {
		ssize_t n = send(ws->fd, ws->out.data + ws->out_off, ws->out.len - ws->out_off,
				 MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			finish(ws, -errno, "cannot write the response");
			return;
		}
		ws->out_off += (size_t)n;
	}
	ward__buf_clear(&ws->out);
	ws->out_off = 0;
	if (ws->phase == PH_RESPOND) {
		/*
		 * Closing now, with the client's bytes unread, would send a reset
		 * that can destroy the answer before the client reads it: shut our
		 * side, and read and drop until the client closes (RFC 9112 9.6).
		 */
		shutdown(ws->fd, SHUT_WR);
		ws->phase = PH_LINGER;
		ws->deadline = after_ms(ws->cfg.close_ms);
	}
}

static void respond(struct ward__ws *ws, int status, const char *reason)
{
	ws->info.http_status = status;
	if (status != 200)
		set_error(ws, -ECONNREFUSED, reason);
	else
		set_error(ws, 0, reason);
	ward__buf_clear(&ws->out);
	ws->out_off = 0;
	if (ward__http_respond(&ws->out, status) < 0 && ward__http_respond(&ws->out, 500) < 0) {
		finish(ws, -ENOMEM, "cannot build the response");
		return;
	}
	ws->phase = PH_RESPOND;
	flush_out(ws);
}

/* ------------------------------------------------------------------ wslay callbacks */

/* What the queue holds: its payloads and each message's own cost (WARD_WS_MSG_COST). */
static size_t queue_charge(const struct ward__ws *ws)
{
	return wslay_event_get_queued_msg_length(ws->ctx) +
		wslay_event_get_queued_msg_count(ws->ctx) * WARD_WS_MSG_COST;
}

static bool queue_full(const struct ward__ws *ws)
{
	return queue_charge(ws) >= ws->cfg.max_queue ||
		wslay_event_get_queued_msg_count(ws->ctx) >= ws->cfg.max_queue_msgs;
}

static ssize_t recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
		       void *user_data)
{
	struct ward__ws *ws = user_data;
	ssize_t n;

	(void)flags;
	if (ws->pending_off < ws->pending.len) {
		size_t k = MIN(len, ws->pending.len - ws->pending_off);

		memcpy(buf, ws->pending.data + ws->pending_off, k);
		ws->pending_off += k;
		if (ws->pending_off == ws->pending.len) {
			ward__buf_release(&ws->pending);
			ws->pending_off = 0;
		}
		return (ssize_t)k;
	}
	/*
	 * Stop reading (for this call) when paused, when the budget is spent,
	 * or when the send queue is full: a client that does not read must not
	 * make the server queue pongs or answers without end.
	 */
	if (ws->paused || ws->budget == 0 || queue_full(ws)) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	do {
		n = read(ws->fd, buf, MIN(len, ws->budget));
	} while (n < 0 && errno == EINTR);
	if (n > 0) {
		ws->budget -= (size_t)n;
		ws->received = true;
		return n;
	}
	if (n == 0) {
		ws->eof = true;
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
	} else {
		ws->io_err = errno;
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	}
	return -1;
}

/*
 * wslay writes a frame as two calls, the header (flagged WSLAY_MSG_MORE when
 * a payload follows) and then the payload. One sendmsg(2) for both halves
 * the system calls of a stream of messages: the header is kept here (wslay
 * is told it went) and leaves with the start of the payload, which wslay
 * always offers next, in the same call. Bytes of it a short write left
 * behind go first at the next attempt.
 */
static ssize_t send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
		       void *user_data)
{
	struct ward__ws *ws = user_data;
	struct iovec iov[2];
	struct msghdr mh = {.msg_iov = iov};
	size_t pending = ws->hdr_len - ws->hdr_off;
	ssize_t n;

	if ((flags & WSLAY_MSG_MORE) && pending == 0 && len <= sizeof(ws->hdr)) {
		memcpy(ws->hdr, data, len);
		ws->hdr_len = len;
		ws->hdr_off = 0;
		return (ssize_t)len;
	}
	if (pending > 0)
		iov[mh.msg_iovlen++] = (struct iovec){ws->hdr + ws->hdr_off, pending};
	iov[mh.msg_iovlen++] = (struct iovec){(void *)data, len};
	do {
		n = sendmsg(ws->fd, &mh, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		} else {
			ws->io_err = errno;
			wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		}
		return -1;
	}
	if ((size_t)n < pending) {
		ws->hdr_off += (size_t)n;
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	ws->hdr_len = ws->hdr_off = 0;
	if ((size_t)n == pending) {
		/* Only the header went: the socket is full; wslay offers the payload again. */
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	return n - (ssize_t)pending;
}

/* Fails the connection from inside wslay: close with code, read nothing more. */
static void fail_from_callback(struct ward__ws *ws, uint16_t code, const char *text, int error,
			       const char *reason)
{
	set_error(ws, error, reason);
	wslay_event_queue_close(ws->ctx, code, (const uint8_t *)text, strlen(text));
	wslay_event_shutdown_read(ws->ctx);
	ws->closing = true;
}

static void frame_start_cb(wslay_event_context_ptr ctx,
			   const struct wslay_event_on_frame_recv_start_arg *arg, void *user_data)
{
	struct ward__ws *ws = user_data;

	(void)ctx;
	if (arg->opcode >= 0x8) /* control frames may come between fragments */
		return;
	ws->fragments = arg->opcode == WSLAY_CONTINUATION_FRAME ? ws->fragments + 1 : 1;
	/*
	 * wslay keeps each fragment in an allocation of its own: a message of
	 * a million one-byte fragments would cost a hundred times its size.
	 */
	if (ws->fragments > ws->cfg.max_fragments && !ws->closing)
		fail_from_callback(ws, WSLAY_CODE_MESSAGE_TOO_BIG, "too many fragments", -EMSGSIZE,
				   "message in too many fragments");
}

static void deliver(struct ward__ws *ws, enum ward__ws_type type, const uint8_t *data, size_t len)
{
	int r;

	ws->in_callback++;
	r = ws->cb.on_message(ws, type, data ? data : (const uint8_t *)"", len, ws->userdata);
	ws->in_callback--;
	if (r == WARD_WS_PAUSE) {
		ws->paused = true;
	} else if (r < 0) {
		set_error(ws, r, "the server failed on a message");
		ward__ws_close(ws, WSLAY_CODE_INTERNAL_SERVER_ERROR, NULL);
	}
}

static void hold(struct ward__ws *ws, enum ward__ws_type type, const uint8_t *data, size_t len)
{
	struct held *h = malloc(sizeof(*h) + len);

	if (!h) {
		fail_from_callback(ws, WSLAY_CODE_INTERNAL_SERVER_ERROR, "", -ENOMEM,
				   "out of memory");
		return;
	}
	h->next = NULL;
	h->type = type;
	h->len = len;
	if (len)
		memcpy(h->data, data, len);
	*ws->held_tail = h;
	ws->held_tail = &h->next;
}

static void msg_cb(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
		   void *user_data)
{
	struct ward__ws *ws = user_data;
	enum ward__ws_type type;

	(void)ctx;
	if (arg->opcode == WSLAY_TEXT_FRAME)
		type = WARD_WS_TEXT;
	else if (arg->opcode == WSLAY_BINARY_FRAME)
		type = WARD_WS_BINARY;
	else
		return; /* wslay answers pings and closes itself */
	/* After a close was asked for, the rest is dropped (RFC 6455 section 1.4). */
	if (ws->closing)
		return;
	if (ws->paused || ws->held)
		hold(ws, type, arg->msg, arg->msg_length);
	else
		deliver(ws, type, arg->msg, arg->msg_length);
}

static void deliver_held(struct ward__ws *ws)
{
	while (ws->held && !ws->paused && !ws->closing && ws->phase == PH_OPEN) {
		struct held *h = ws->held;

		ws->held = h->next;
		if (!ws->held)
			ws->held_tail = &ws->held;
		deliver(ws, h->type, h->data, h->len);
		free(h);
	}
}

/* ------------------------------------------------------------------ the open connection */

static void start_closing(struct ward__ws *ws)
{
	if (ws->closing)
		return;
	ws->closing = true;
	ws->deadline = after_ms(ws->cfg.close_ms);
}

/* The owner's close goes after what is queued: wslay sends control frames first. */
static void queue_deferred_close(struct ward__ws *ws)
{
	if (!ws->close_deferred || ws->out.len > 0 || wslay_event_want_write(ws->ctx))
		return;
	ws->close_deferred = false;
	wslay_event_queue_close(ws->ctx, ws->close_code, (const uint8_t *)ws->close_reason,
				strlen(ws->close_reason));
}

static int error_of_close_code(uint16_t code, const char **reason)
{
	switch (code) {
	case WSLAY_CODE_MESSAGE_TOO_BIG:
		*reason = "message too big";
		return -EMSGSIZE;
	case WSLAY_CODE_INVALID_FRAME_PAYLOAD_DATA:
		*reason = "text message not UTF-8";
		return -EILSEQ;
	default:
		*reason = "websocket protocol error";
		return -EPROTO;
	}
}

/* After every read and write: is the close handshake done, or must we linger? */
static void check_close(struct ward__ws *ws)
{
	const char *reason;
	int error;

	if (ws->phase != PH_OPEN || !ws->ctx)
		return;
	if (wslay_event_get_close_received(ws->ctx) || !wslay_event_get_read_enabled(ws->ctx))
		start_closing(ws);
	if (!wslay_event_get_close_sent(ws->ctx))
		return;
	record_close_codes(ws);
	if (wslay_event_get_close_received(ws->ctx)) {
		finish(ws, 0, "closed");
		return;
	}
	if (!wslay_event_get_read_enabled(ws->ctx)) {
		/* We failed the connection: shut our side, drop what still comes. */
		error = error_of_close_code(ws->info.close_sent, &reason);
		set_error(ws, error, reason);
		shutdown(ws->fd, SHUT_WR);
		ws->phase = PH_LINGER;
		ws->deadline = after_ms(ws->cfg.close_ms);
	}
	/* Else our close is out and theirs is awaited, until the deadline. */
}

static void write_frames(struct ward__ws *ws)
{
	if (ws->phase != PH_OPEN || ws->out.len > 0 || ws->in_callback)
		return;
	/* Twice: a deferred close can be queued once the first pass emptied the queue. */
	for (int pass = 0; pass < 2; pass++) {
		int r;

		queue_deferred_close(ws);
		r = wslay_event_send(ws->ctx);
		if (r == 0)
			continue;
		/* After their close, an echo that cannot go changes nothing: it is over. */
		if (wslay_event_get_close_received(ws->ctx))
			finish(ws, 0, "closed");
		else if (r == WSLAY_ERR_NOMEM)
			finish(ws, -ENOMEM, "out of memory");
		else
			finish(ws, ws->io_err ? -ws->io_err : -EIO, "cannot write");
		return;
	}
	check_close(ws);
}

static void read_frames(struct ward__ws *ws)
{
	int r;

	if (ws->phase != PH_OPEN || !wslay_event_get_read_enabled(ws->ctx))
		return;
	r = wslay_event_recv(ws->ctx);
	if (r != 0) {
		if (r == WSLAY_ERR_NOMEM) {
			finish(ws, -ENOMEM, "out of memory");
			return;
		}
		if (ws->eof) {
			/* After our close, a client may just hang up: that ends it as well. */
			if (wslay_event_get_close_sent(ws->ctx))
				finish(ws, 0, "closed");
			else
				finish(ws, -ECONNRESET, "connection closed without a close frame");
			return;
		}
		if (ws->io_err) {
			finish(ws, -ws->io_err, "cannot read");
			return;
		}
		/*
		 * A malformed frame header (a bad length, a long or fragmented
		 * control frame): wslay queued a close without a code.
		 */
		set_error(ws, -EPROTO, "websocket protocol error");
	}
	deliver_held(ws);
	check_close(ws);
}

static int open_connection(struct ward__ws *ws)
{
	const struct wslay_event_callbacks callbacks = {
		.recv_callback = recv_cb,
		.send_callback = send_cb,
		.on_frame_recv_start_callback = frame_start_cb,
		.on_msg_recv_callback = msg_cb,
	};
	const struct ward__http_request *req = &ws->http.request;
	int r;

	ward__buf_clear(&ws->out);
	ws->out_off = 0;
	r = ward__http_respond_upgrade(&ws->out, req->ws_key);
	if (r < 0)
		return r;
	if (wslay_event_context_server_init(&ws->ctx, &callbacks, ws) != 0) {
		ws->ctx = NULL;
		return -ENOMEM;
	}
	wslay_event_config_set_max_recv_msg_length(ws->ctx, ws->cfg.max_message);
	ws->phase = PH_OPEN;
	ws->info.http_status = 101;
	ws->deadline = ws->cfg.no_keepalive ? 0 : after_ms(ws->cfg.keepalive_ms);
	if (ws->cb.on_open) {
		ws->in_callback++;
		ws->cb.on_open(ws, req, ws->userdata);
		ws->in_callback--;
	}
	return 0;
}

/* ------------------------------------------------------------------ the request */

static bool known_status(int status)
{
	struct ward__buf b;
	bool ok;

	if (ward__buf_init(&b, OUT_MAX) < 0)
		return false;
	ok = ward__http_respond(&b, status) == 0;
	ward__buf_release(&b);
	return ok;
}

/* The answer to a complete request: 0 to upgrade, else the status; *reason for the logs. */
static int judge(struct ward__ws *ws, const char **reason)
{
	const struct ward__http_request *req = &ws->http.request;
	int status;

	/*
	 * Browsers send Origin with every WebSocket handshake and cannot omit
	 * it: refusing any Origin keeps every web page (and DNS rebinding
	 * through one) away from the server, whatever the token.
	 */
	if (req->has_origin) {
		*reason = "request with an Origin field (from a web page)";
		return 403;
	}
	if (strcmp(req->path, "/readyz") == 0) {
		*reason = "readiness probe";
		return strcmp(req->method, "GET") == 0 ? 200 : 405;
	}
	/* The same answer for a missing and a wrong token: nothing to learn from it. */
	if (ws->token &&
	    !(req->bearer &&
	      ward__http_token_equal(req->bearer, req->bearer_len, ws->token, ws->token_len))) {
		*reason = req->authorization ? "wrong credentials" : "no credentials";
		return 401;
	}
	if (strcmp(req->method, "GET") != 0) {
		*reason = "method not allowed";
		return 405;
	}
	if (strcmp(req->path, "/") != 0) {
		*reason = "no such path";
		return 404;
	}
	status = ward__http_check_upgrade(req, reason);
	if (status != 0)
		return status;
	if (ws->cb.authorize) {
		ws->in_callback++;
		status = ws->cb.authorize(ws, req, ws->userdata);
		ws->in_callback--;
		if (status != 0) {
			*reason = "refused by the server";
			return status >= 400 && known_status(status) ? status : 403;
		}
	}
	return 0;
}

static void decide(struct ward__ws *ws)
{
	const char *reason = NULL;
	int status = judge(ws, &reason), r;

	if (ws->phase != PH_REQUEST)
		return; /* the authorize callback closed it */
	if (status != 0) {
		respond(ws, status, reason);
		return;
	}
	r = open_connection(ws);
	if (r < 0)
		finish(ws, r, "cannot open the connection");
}

static void read_request(struct ward__ws *ws)
{
	uint8_t buf[READ_CHUNK];

	while (ws->phase == PH_REQUEST && ws->budget > 0) {
		ssize_t n = read(ws->fd, buf, MIN(sizeof(buf), ws->budget));
		size_t used = 0;
		int r;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				finish(ws, -errno, "cannot read the request");
			return;
		}
		if (n == 0) {
			finish(ws, -ECONNRESET, "connection closed before a complete request");
			return;
		}
		ws->budget -= (size_t)n;
		r = ward__http_feed(&ws->http, buf, (size_t)n, &used);
		if (r < 0) {
			finish(ws, r, "out of memory");
			return;
		}
		if (r == WARD_HTTP_AGAIN)
			continue;
		if (r == WARD_HTTP_ERROR) {
			respond(ws, ws->http.status, ws->http.reason);
			return;
		}
		/* What came after the head is the first frames: wslay reads them first. */
		if (used < (size_t)n &&
		    ward__buf_append(&ws->pending, buf + used, (size_t)n - used) < 0) {
			finish(ws, -ENOMEM, "out of memory");
			return;
		}
		decide(ws);
	}
}

/* Reads and drops until the client closes its side (or the deadline). */
static void linger(struct ward__ws *ws)
{
	uint8_t buf[READ_CHUNK];

	while (ws->phase == PH_LINGER && ws->budget > 0) {
		ssize_t n = read(ws->fd, buf, MIN(sizeof(buf), ws->budget));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				finish(ws, 0, "closed");
			return;
		}
		if (n == 0) {
			finish(ws, 0, "closed");
			return;
		}
		ws->budget -= (size_t)n;
	}
}

/* ------------------------------------------------------------------ the interface */

int ward__ws_new(int fd, const struct ward__ws_config *config,
		 const struct ward__ws_callbacks *callbacks, void *userdata, struct ward__ws **ret)
{
	struct ward__ws_config c = config ? *config : (struct ward__ws_config){0};
	const struct ward__http_limits zero = {0};
	struct ward__ws *ws;
	int one = 1, r;

	if (fd < 0 || !callbacks || !callbacks->on_message || !ret)
		return -EINVAL;
	if (c.token &&
	    (c.token[0] == '\0' || strnlen(c.token, WARD_WS_MAX_TOKEN + 1) > WARD_WS_MAX_TOKEN))
		return -EINVAL;
	c.max_message = c.max_message ? c.max_message : WARD_WS_DEFAULT_MAX_MESSAGE;
	c.max_fragments = c.max_fragments ? c.max_fragments : WARD_WS_DEFAULT_MAX_FRAGMENTS;
	c.max_queue = c.max_queue ? c.max_queue : WARD_WS_DEFAULT_MAX_QUEUE;
	c.max_queue_msgs = c.max_queue_msgs ? c.max_queue_msgs : WARD_WS_DEFAULT_MAX_QUEUE_MSGS;
	c.handshake_ms = c.handshake_ms ? c.handshake_ms : WARD_WS_DEFAULT_HANDSHAKE_MS;
	c.keepalive_ms = c.keepalive_ms ? c.keepalive_ms : WARD_WS_DEFAULT_KEEPALIVE_MS;
	c.close_ms = c.close_ms ? c.close_ms : WARD_WS_DEFAULT_CLOSE_MS;
	c.read_budget = c.read_budget ? c.read_budget : WARD_WS_DEFAULT_READ_BUDGET;
	/* wslay keeps a received message in memory whole; 1 GiB is more than any use. */
	if (c.max_message > ((size_t)1 << 30) || c.max_queue > ((size_t)1 << 30))
		return -EINVAL;

	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return -ENOMEM;
	ws->fd = fd;
	ws->phase = PH_REQUEST;
	ws->cb = *callbacks;
	ws->userdata = userdata;
	ws->held_tail = &ws->held;
	if (c.token) {
		ws->token = strdup(c.token);
		if (!ws->token) {
			free(ws);
			return -ENOMEM;
		}
		ws->token_len = strlen(ws->token);
		c.token = NULL; /* the copy above is the one used */
	}
	ws->cfg = c;
	r = ward__http_parser_init(&ws->http,
				   memcmp(&c.http, &zero, sizeof(zero)) ? &c.http : NULL);
	if (r < 0) {
		free(ws->token);
		free(ws);
		return r;
	}
	(void)ward__buf_init(&ws->out, OUT_MAX);
	(void)ward__buf_init(&ws->pending, READ_CHUNK);
	ws->deadline = after_ms(c.handshake_ms);
	/* Fails harmlessly (EOPNOTSUPP) on a unix socket. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*ret = ws;
	return 0;
}

void ward__ws_free(struct ward__ws *ws)
{
	if (!ws)
		return;
	wslay_event_context_free(ws->ctx);
	ward__http_parser_release(&ws->http);
	ward__buf_release(&ws->out);
	ward__buf_release(&ws->pending);
	while (ws->held) {
		struct held *h = ws->held;

		ws->held = h->next;
		free(h);
	}
	if (ws->token) {
		explicit_bzero(ws->token, ws->token_len);
		free(ws->token);
	}
	if (ws->fd >= 0)
		close(ws->fd);
	free(ws);
}

int ward__ws_fd(const struct ward__ws *ws)
{
	return ws->fd;
}

int ward__ws_on_readable(struct ward__ws *ws)
{
	if (ws->in_callback)
		return -EBUSY;
	ws->budget = ws->cfg.read_budget;
	switch (ws->phase) {
	case PH_REQUEST:
		read_request(ws);
		if (ws->phase == PH_OPEN) {
			/* The 101 first, then frames the client may have sent right behind it. */
			flush_out(ws);
			read_frames(ws);
			write_frames(ws);
		}
		break;
	case PH_OPEN:
		read_frames(ws);
		/* Pongs, close echoes: answer at once rather than after a poller round. */
		write_frames(ws);
		break;
	case PH_LINGER:
		linger(ws);
		break;
	case PH_RESPOND:
	case PH_DONE:
		break;
	}
	return ws->phase == PH_DONE ? ws->info.error : 0;
}

int ward__ws_on_writable(struct ward__ws *ws)
{
	if (ws->in_callback)
		return 0;
	switch (ws->phase) {
	case PH_RESPOND:
		flush_out(ws);
		break;
	case PH_OPEN:
		if (ws->out.len > 0)
			flush_out(ws);
		write_frames(ws);
		break;
	case PH_REQUEST:
	case PH_LINGER:
	case PH_DONE:
		break;
	}
	return ws->phase == PH_DONE ? ws->info.error : 0;
}

int ward__ws_on_hangup(struct ward__ws *ws)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (ws->phase == PH_DONE)
		return ws->info.error;
	if (getsockopt(ws->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err == 0)
		err = ECONNRESET;
	/* A refusal already answered, or a close already exchanged, ended as it should. */
	if (ws->phase == PH_LINGER)
		finish(ws, 0, "closed");
	else
		finish(ws, -err, "connection lost");
	return ws->info.error;
}

int ward__ws_on_timer(struct ward__ws *ws, uint64_t now)
{
	if (ws->phase == PH_DONE || ws->deadline == 0 || now < ws->deadline)
		return ws->phase == PH_DONE ? ws->info.error : 0;
	switch (ws->phase) {
	case PH_REQUEST:
	case PH_RESPOND:
		finish(ws, -ETIMEDOUT, "request not completed in time");
		break;
	case PH_LINGER:
		finish(ws, 0, "closed");
		break;
	case PH_OPEN:
		if (ws->closing || ws->close_deferred) {
			finish(ws, -ETIMEDOUT, "close handshake not completed in time");
			break;
		}
		/*
		 * Silent for a whole interval after a ping: gone. Not while the
		 * server itself stopped reading (paused, or the client not
		 * reading what is queued): its pong may be waiting unread.
		 */
		if (ws->ping_outstanding && !ws->received && !ws->paused && !queue_full(ws)) {
			finish(ws, -ETIMEDOUT, "no answer to ping");
			break;
		}
		/* A tiny control frame: not counted against the caps, the client's answer is. */
		(void)wslay_event_queue_msg(ws->ctx,
					    &(struct wslay_event_msg){
						    .opcode = WSLAY_PING,
						    .msg = (const uint8_t *)"ward",
						    .msg_length = 4,
					    });
		ws->ping_outstanding = true;
		ws->received = false;
		ws->deadline = now + (uint64_t)ws->cfg.keepalive_ms * 1000000u;
		write_frames(ws);
		break;
	case PH_DONE:
		break;
	}
	return ws->phase == PH_DONE ? ws->info.error : 0;
}

bool ward__ws_want_read(const struct ward__ws *ws)
{
	switch (ws->phase) {
	case PH_REQUEST:
	case PH_LINGER:
		return true;
	case PH_OPEN:
		return wslay_event_get_read_enabled(ws->ctx) && !ws->paused && !queue_full(ws);
	case PH_RESPOND:
	case PH_DONE:
		return false;
	}
	return false;
}

bool ward__ws_want_write(const struct ward__ws *ws)
{
	switch (ws->phase) {
	case PH_RESPOND:
		return true;
	case PH_OPEN:
		return ws->out.len > 0 || wslay_event_want_write(ws->ctx) || ws->close_deferred;
	case PH_REQUEST:
	case PH_LINGER:
	case PH_DONE:
		return false;
	}
	return false;
}

uint64_t ward__ws_deadline(const struct ward__ws *ws)
{
	return ws->phase == PH_DONE ? 0 : ws->deadline;
}

bool ward__ws_finished(const struct ward__ws *ws)
{
	return ws->phase == PH_DONE;
}

bool ward__ws_is_open(const struct ward__ws *ws)
{
	return ws->phase == PH_OPEN && !ws->closing && !ws->close_deferred &&
		wslay_event_get_read_enabled(ws->ctx) && !wslay_event_get_close_sent(ws->ctx);
}

void ward__ws_get_info(const struct ward__ws *ws, struct ward__ws_info *ret)
{
	*ret = ws->info;
	if (ws->ctx) {
		if (wslay_event_get_close_sent(ws->ctx))
			ret->close_sent = wslay_event_get_status_code_sent(ws->ctx);
		if (wslay_event_get_close_received(ws->ctx))
			ret->close_received = wslay_event_get_status_code_received(ws->ctx);
	}
	if (!ret->reason)
		ret->reason = ws->phase == PH_DONE ? "closed" : "open";
}

int ward__ws_send(struct ward__ws *ws, enum ward__ws_type type, const void *data, size_t len)
{
	struct wslay_event_msg msg = {
		.opcode = type == WARD_WS_BINARY ? WSLAY_BINARY_FRAME : WSLAY_TEXT_FRAME,
		.msg = data,
		.msg_length = len,
	};
	int r;

	if (type != WARD_WS_TEXT && type != WARD_WS_BINARY)
		return -EINVAL;
	if (!ward__ws_is_open(ws))
		return -EPIPE;
	if (len > ws->cfg.max_queue)
		return -EMSGSIZE;
	/* An empty queue takes any message that fits alone, its cost aside. */
	if ((wslay_event_get_queued_msg_count(ws->ctx) > 0 &&
	     queue_charge(ws) + len + WARD_WS_MSG_COST > ws->cfg.max_queue) ||
	    wslay_event_get_queued_msg_count(ws->ctx) + 1 > ws->cfg.max_queue_msgs)
		return -ENOBUFS;
	r = wslay_event_queue_msg(ws->ctx, &msg);
	if (r == WSLAY_ERR_NOMEM)
		return -ENOMEM;
	if (r != 0)
		return -EPIPE;
	return 0;
}

size_t ward__ws_queued_bytes(const struct ward__ws *ws)
{
	return (ws->ctx ? queue_charge(ws) : 0) + ws->out.len - ws->out_off;
}

size_t ward__ws_queued_msgs(const struct ward__ws *ws)
{
	return ws->ctx ? wslay_event_get_queued_msg_count(ws->ctx) : 0;
}

int ward__ws_close(struct ward__ws *ws, uint16_t code, const char *reason)
{
	size_t n = reason ? strlen(reason) : 0;

	/* The codes an endpoint may send (RFC 6455 section 7.4). */
	if (!((code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
	      (code >= 3000 && code <= 4999)))
		return -EINVAL;
	if (n > 123)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if ((uint8_t)reason[i] < 0x20 || (uint8_t)reason[i] > 0x7e)
			return -EINVAL;
	switch (ws->phase) {
	case PH_REQUEST:
	case PH_RESPOND:
	case PH_LINGER:
		finish(ws, 0, "closed by the server");
		return 0;
	case PH_OPEN:
		break;
	case PH_DONE:
		return 0;
	}
	if (ws->closing || ws->close_deferred)
		return 0;
	ws->close_code = code;
	memcpy(ws->close_reason, reason ? reason : "", n);
	ws->close_reason[n] = '\0';
	ws->close_deferred = true;
	start_closing(ws);
	queue_deferred_close(ws);
	return 0;
}

void ward__ws_resume(struct ward__ws *ws)
{
	ws->paused = false;
	if (!ws->in_callback)
		deliver_held(ws);
}
