/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * DESIGN. src/transport/ owns how messages reach a server and leave it:
 * newline-delimited connections (lineconn.c), one WebSocket connection
 * (ws.c), and behind one interface (this header) the listeners on loopback
 * TCP or a unix socket, their bearer-token authentication and the
 * connections they accept (transport.c). It knows messages, never methods.
 * One-way rule: it calls src/rpc and src/basic. The servers above it
 * (src/execserver, src/mcp) call it, and hear from it only through the
 * callbacks they hand down (struct ward__conn_handler,
 * struct ward__lineconn_ops).
 */

#include "basic/loop.h"
#include "basic/macro.h"
#include "transport/ws.h"
#include "ward/ward.h"

/*
 * The transports of `ward serve`: one message-oriented connection type over
 * newline-delimited stdio or a WebSocket (TCP on loopback, or a unix
 * socket), and the listeners that accept WebSocket connections. The exec
 * server sees only struct ward__conn: messages in, messages out, with
 * back-pressure (a congested connection stops delivering requests; the
 * server stops producing output for it until it drains).
 */

struct ward__conn;
struct ward__listener;

struct ward__conn_handler {
	/* A connection is open; returns its userdata (NULL refuses it: it is closed). */
	void *(*opened)(struct ward__conn *c, void *server_userdata);
	/* One message (valid during the call). */
	void (*message)(struct ward__conn *c, const char *data, size_t len, void *conn_userdata);
	/*
	 * A message over the size limit (newline transports; WebSocket closes with
	 * 1009 instead): its first bytes, to answer with the id they hold.
	 */
	void (*too_large)(struct ward__conn *c, const char *prefix, size_t len,
			  void *conn_userdata);
	/* The send queue went back below its low-water mark after being congested. */
	void (*drained)(struct ward__conn *c, void *conn_userdata);
	/* The connection is gone; c is freed right after this returns. */
	void (*closed)(struct ward__conn *c, void *conn_userdata);
	/*
	 * Optional, before a WebSocket upgrade is accepted: 0, or an HTTP status to
	 * refuse with (503 at capacity).
	 */
	int (*admit)(void *server_userdata);
};

struct ward__transport_limits {
	size_t max_message; /* bytes of one incoming message */
	size_t max_queue; /* bytes waiting to be sent to one client */
	size_t high_water; /* congested above this */
};

struct ward__listener_config {
	const char *url; /* "ws://HOST:PORT" or "unix:PATH" */
	/*
	 * Serve fd instead, a socket listening already (systemd's socket
	 * activation): url is ignored, the listener takes fd over (closes it
	 * when freed) and never removes its path.
	 */
	bool adopt;
	int fd;
	const char *token; /* bearer token, NULL: no authentication */
	bool allow_remote; /* a non-loopback address may be bound */
	struct ward__transport_limits limits;
};

/*
 * Binds and listens (or adopts cfg->fd). *ret_url (malloc()ed) is the bound address as a client
 * uses it ("ws://127.0.0.1:41567", "unix:/run/ward.sock"). A unix socket is
 * created 0600 and removed by ward__listener_free(); an existing socket file
 * nobody listens on is replaced, anything else there is an error.
 */
WARD_INTERNAL int ward__listener_new(struct ward__loop *l, const struct ward__listener_config *cfg,
				     const struct ward__conn_handler *h, void *server_userdata,
				     struct ward__listener **ret, char **ret_url,
				     struct ward_error *err);
/* Stops accepting; open connections stay. Accepts NULL. */
WARD_INTERNAL void ward__listener_free(struct ward__listener *ls);

/* The server's stdio as one connection (borrowed fds). */
WARD_INTERNAL int ward__conn_stdio(struct ward__loop *l, int in_fd, int out_fd,
				   const struct ward__transport_limits *lim,
				   const struct ward__conn_handler *h, void *server_userdata,
				   struct ward__conn **ret);

/* Queues one message. -ENOBUFS when the queue is full (nothing queued), -EPIPE when closed. */
WARD_INTERNAL int ward__conn_send(struct ward__conn *c, const void *data, size_t len);
/* True while the send queue is above the high-water mark. */
WARD_INTERNAL bool ward__conn_congested(const struct ward__conn *c);
/* Stops (or resumes) delivering messages. */
WARD_INTERNAL void ward__conn_pause(struct ward__conn *c, bool pause);
/* Closes after what is queued was sent (WebSocket close 1000, or the stdio output drained). */
WARD_INTERNAL void ward__conn_close(struct ward__conn *c);
/*
 * Closes now, dropping the queue (the client misbehaved, or the server is
 * stopping): the closed callback runs before this returns. Not from within
 * one of this connection's own callbacks (use ward__conn_close() there).
 */
WARD_INTERNAL void ward__conn_abort(struct ward__conn *c);
/* "stdio", "ws 127.0.0.1:41234", "unix": for logs. */
WARD_INTERNAL const char *ward__conn_peer(const struct ward__conn *c);
