/* SPDX-License-Identifier: MIT */
/*
 * Transports of `ward serve` (see transport.h): listeners for WebSocket over
 * TCP and over unix sockets, and connections over WebSocket (ws.c)
 * or newline-delimited stdio (lineconn.c), behind one interface.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "transport/lineconn.h"
#include "transport/transport.h"

enum conn_kind {
	CONN_LINES = 1,
	CONN_WS,
};

struct ward__conn {
	enum conn_kind kind;
	struct ward__loop *loop;
	const struct ward__conn_handler *h;
	void *server_userdata;
	void *userdata;
	bool opened;
	bool paused;
	bool congested;
	bool closing;
	bool in_callback;
	bool dead;
	char peer[96];
	struct ward__transport_limits lim;
	/* CONN_WS */
	struct ward__ws *ws;
	uint64_t io, timer;
	uint32_t events;
	uint64_t deadline;
	struct ward__listener *listener;
	struct ward__conn *prev, *next; /* the listener's connections */
	/* CONN_LINES */
	struct ward__lineconn *lc;
	uint64_t deferred; /* a timer that ends the connection from the loop */
};

struct ward__listener {
	struct ward__loop *loop;
	int fd;
	uint64_t io;
	const struct ward__conn_handler *h;
	void *server_userdata;
	struct ward__ws_config ws;
	char *token;
	char *unix_path; /* to remove at the end */
	struct ward__transport_limits lim;
	bool is_unix;
	struct ward__conn *conns;
	uint64_t backoff; /* a timer that resumes accepting after EMFILE */
};

/*
 * Connections of a listener that have not completed (or been refused) their
 * handshake. Anyone who can reach a loopback port can open these without a
 * token: beyond this many, the oldest is dropped for the newest, so that
 * they can neither exhaust the server's descriptors nor lock out a client
 * with the token by holding every slot until the handshake timeout.
 */
#define MAX_HANDSHAKES 64
/* How long accepting pauses when the process is out of descriptors. */
#define ACCEPT_BACKOFF_MS 100

/* ------------------------------------------------------------ common */

static void conn_destroy(struct ward__conn *c)
{
	ward__loop_del_timer(c->loop, c->deferred);
	if (c->kind == CONN_WS) {
		ward__loop_del_io(c->loop, c->io);
		ward__loop_del_timer(c->loop, c->timer);
		ward__ws_free(c->ws);
		if (c->listener) {
			if (c->prev)
				c->prev->next = c->next;
			else if (c->listener->conns == c)
				c->listener->conns = c->next;
			if (c->next)
				c->next->prev = c->prev;
		}
	} else {
		ward__lineconn_free(c->lc);
	}
	free(c);
}

/* The connection ended: tell the owner once, then free it. */
static void conn_finish(struct ward__conn *c)
{
	if (c->dead)
		return;
	c->dead = true;
	if (c->opened && c->h->closed)
		c->h->closed(c, c->userdata);
	conn_destroy(c);
}

bool ward__conn_congested(const struct ward__conn *c)
{
	return c->congested;
}

const char *ward__conn_peer(const struct ward__conn *c)
{
	return c->peer;
}

/* ------------------------------------------------------------ WebSocket */

static void ws_update(struct ward__conn *c);

static int ws_authorize(struct ward__ws *ws, const struct ward__http_request *req, void *ud)
{
	struct ward__conn *c = ud;

	return c->h->admit ? c->h->admit(c->server_userdata) : 0;
}

static void ws_open(struct ward__ws *ws, const struct ward__http_request *req, void *ud)
{
	struct ward__conn *c = ud;

	c->userdata = c->h->opened(c, c->server_userdata);
	c->opened = c->userdata != NULL;
	if (!c->opened)
		ward__ws_close(ws, 1013, "the server cannot take this connection");
}

static int ws_message(struct ward__ws *ws, enum ward__ws_type type, const uint8_t *data, size_t len,
		      void *ud)
{
	struct ward__conn *c = ud;

	if (!c->opened || c->closing)
		return 0;
	/* One JSON-RPC message per WebSocket message, text or binary alike (as Codex). */
	c->h->message(c, (const char *)data, len, c->userdata);
	return c->paused || c->congested ? WARD_WS_PAUSE : 0;
}

static const struct ward__ws_callbacks ws_callbacks = {
	.authorize = ws_authorize,
	.on_open = ws_open,
	.on_message = ws_message,
};

static void ws_check_drain(struct ward__conn *c)
{
	size_t q = ward__ws_queued_bytes(c->ws);

	if (!c->congested && q > c->lim.high_water) {
		c->congested = true;
	} else if (c->congested && q <= c->lim.high_water / 4) {
		c->congested = false;
		if (c->opened && c->h->drained)
			c->h->drained(c, c->userdata);
		if (!c->dead && !c->paused)
			ward__ws_resume(c->ws);
	}
}

static void on_ws_timer(struct ward__loop *l, void *userdata)
{
	struct ward__conn *c = userdata;

	c->timer = 0;
	c->deadline = 0;
	c->in_callback = true;
	ward__ws_on_timer(c->ws, ward__now_ns());
	c->in_callback = false;
	ws_update(c);
}

/* After every call into the connection: interest, timer, end. */
static void ws_update(struct ward__conn *c)
{
	uint32_t ev = 0;
	uint64_t d;

	if (c->dead)
		return;
	if (ward__ws_finished(c->ws)) {
		conn_finish(c);
		return;
	}
	ws_check_drain(c);
	if (c->dead)
		return;
	if (ward__ws_want_read(c->ws))
		ev |= EPOLLIN;
	if (ward__ws_want_write(c->ws))
		ev |= EPOLLOUT;
	if (ev != c->events) {
		c->events = ev;
		ward__loop_mod_io(c->loop, c->io, ev);
	}
	d = ward__ws_deadline(c->ws);
	if (d != c->deadline) {
		ward__loop_del_timer(c->loop, c->timer);
		c->timer = 0;
		c->deadline = d;
		if (d)
			ward__loop_add_timer(c->loop, d, on_ws_timer, c, &c->timer);
	}
}

static void on_ws_io(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct ward__conn *c = userdata;

	c->in_callback = true;
	if (events & (EPOLLERR | EPOLLHUP))
		ward__ws_on_hangup(c->ws);
	else {
		if (events & EPOLLOUT)
			ward__ws_on_writable(c->ws);
		if ((events & EPOLLIN) && !ward__ws_finished(c->ws))
			ward__ws_on_readable(c->ws);
	}
	c->in_callback = false;
	ws_update(c);
}

static void on_accept(struct ward__loop *l, int fd, uint32_t events, void *userdata);

static void on_accept_backoff(struct ward__loop *l, void *userdata)
{
	struct ward__listener *ls = userdata;

	ls->backoff = 0;
	ward__loop_mod_io(l, ls->io, EPOLLIN);
}

/* Drops the oldest connection still in its handshake when there are too many. */
static void evict_handshakes(struct ward__listener *ls)
{
	struct ward__conn *oldest = NULL;
	size_t n = 0;

	/* The list is newest first: the last one found is the oldest. */
	for (struct ward__conn *c = ls->conns; c; c = c->next)
		if (!c->opened && !c->dead) {
			n++;
			oldest = c;
		}
	if (n >= MAX_HANDSHAKES && oldest)
		conn_finish(oldest);
}

static void on_accept(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct ward__listener *ls = userdata;

	/* A few per event: the loop comes back while more wait (level-triggered). */
	for (int i = 0; i < 16; i++) {
		union {
			struct sockaddr_storage ss;
			struct sockaddr_in in;
			struct sockaddr_in6 in6;
		} sa;
		socklen_t salen = sizeof(sa);
		struct ward__conn *c;
		int cfd = accept4(fd, (struct sockaddr *)&sa, &salen, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (cfd < 0) {
			/*
			 * Out of descriptors (or memory), the pending connection
			 * stays queued and the level-triggered listener would wake
			 * the loop at once, forever: pause accepting for a while.
			 */
			if ((errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			     errno == ENOMEM) &&
			    !ls->backoff) {
				ward__loop_mod_io(l, ls->io, 0);
				ward__loop_add_timer(
					l, ward__now_ns() + (uint64_t)ACCEPT_BACKOFF_MS * 1000000u,
					on_accept_backoff, ls, &ls->backoff);
			}
			return; /* EAGAIN, or a transient error */
		}
		evict_handshakes(ls);
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(cfd);
			return;
		}
		c->kind = CONN_WS;
		c->loop = l;
		c->h = ls->h;
		c->server_userdata = ls->server_userdata;
		c->lim = ls->lim;
		c->listener = ls;
		if (ls->is_unix) {
			snprintf(c->peer, sizeof(c->peer), "unix");
		} else {
			char addr[INET6_ADDRSTRLEN] = "?";

			if (sa.ss.ss_family == AF_INET)
				inet_ntop(AF_INET, &sa.in.sin_addr, addr, sizeof(addr));
			else if (sa.ss.ss_family == AF_INET6)
				inet_ntop(AF_INET6, &sa.in6.sin6_addr, addr, sizeof(addr));
			snprintf(c->peer, sizeof(c->peer), "ws %s:%u", addr,
				 ntohs(sa.ss.ss_family == AF_INET ? sa.in.sin_port
								  : sa.in6.sin6_port));
		}
		if (ward__ws_new(cfd, &ls->ws, &ws_callbacks, c, &c->ws) < 0) {
			close(cfd);
			free(c);
			continue;
		}
		if (ward__loop_add_io(l, cfd, EPOLLIN, on_ws_io, c, &c->io) < 0) {
			ward__ws_free(c->ws);
			free(c);
			continue;
		}
		c->events = EPOLLIN;
		c->next = ls->conns;
		if (ls->conns)
			ls->conns->prev = c;
		ls->conns = c;
		ws_update(c);
	}
}

/* ------------------------------------------------------------ listeners */

static int parse_ws_url(const char *url, struct sockaddr_storage *ss, socklen_t *len,
			bool *ret_loopback)
{
	const char *hp = url + strlen("ws://");
	const char *colon, *host_end;
	char host[64];
	uint64_t port;
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (hp[0] == '[') {
		host_end = strchr(hp, ']');
		if (!host_end || host_end[1] != ':')
			return -EINVAL;
		colon = host_end + 1;
		hp++;
	} else {
		colon = strrchr(hp, ':');
		if (!colon)
			return -EINVAL;
		host_end = colon;
	}
	if ((size_t)(host_end - hp) >= sizeof(host) || host_end == hp)
		return -EINVAL;
	memcpy(host, hp, (size_t)(host_end - hp));
	host[host_end - hp] = '\0';
	if (ward__parse_u64(colon + 1, &port) < 0 || port > 65535)
		return -EINVAL;
	if (strcmp(host, "localhost") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		*len = sizeof(*in);
		*ret_loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
		return 0;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*in6);
		*ret_loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
		return 0;
	}
	return -EINVAL;
}

/* The address a bound TCP socket serves, as a client's URL. */
static int tcp_url(int fd, char **ret_url, bool *ret_loopback, struct ward_error *err)
{
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	char addr[INET6_ADDRSTRLEN];

	if (getsockname(fd, (struct sockaddr *)&bound, &blen) < 0)
		return ward__error(err, -errno, "serve", "cannot read the bound address: %m");
	if (bound.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&bound;

		*ret_loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
		inet_ntop(AF_INET, &in->sin_addr, addr, sizeof(addr));
		if (asprintf(ret_url, "ws://%s:%u", addr, ntohs(in->sin_port)) < 0)
			return ward__error(err, -ENOMEM, "serve", "out of memory");
	} else {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&bound;

		*ret_loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
		inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof(addr));
		if (asprintf(ret_url, "ws://[%s]:%u", addr, ntohs(in6->sin6_port)) < 0)
			return ward__error(err, -ENOMEM, "serve", "out of memory");
	}
	return 0;
}

/*
 * A listening socket made by someone else (systemd's socket activation):
 * a stream socket on a unix path or TCP, already listening. It is served as
 * one ward bound itself would be, under the same rules (a non-loopback
 * address needs allow_remote and a token), but its path is left alone when
 * the listener goes: the socket is its maker's.
 */
static int adopt(struct ward__listener *ls, const struct ward__listener_config *cfg, char **ret_url,
		 struct ward_error *err)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int type = 0, listening = 0;
	socklen_t tl = sizeof(type), ll = sizeof(listening);
	bool loopback = false;
	int r;

	if (getsockopt(cfg->fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 ||
	    getsockopt(cfg->fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) < 0 ||
	    getsockname(cfg->fd, (struct sockaddr *)&ss, &len) < 0 || type != SOCK_STREAM ||
	    !listening ||
	    (ss.ss_family != AF_UNIX && ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
		return ward__error(err, -EINVAL, "serve",
				   "descriptor %d is not a listening stream socket (unix or TCP)",
				   cfg->fd);
	ls->fd = cfg->fd;
	/* The socket's maker passed it without close-on-exec: a command must not inherit it. */
	if (fcntl(ls->fd, F_SETFD, FD_CLOEXEC) < 0 || ward__fd_nonblock(ls->fd, true) < 0)
		return ward__error(err, -errno, "serve", "cannot set up descriptor %d: %m",
				   cfg->fd);
	if (ss.ss_family == AF_UNIX) {
		const struct sockaddr_un *sun = (const struct sockaddr_un *)&ss;

		ls->is_unix = true;
		if (len <= offsetof(struct sockaddr_un, sun_path) || sun->sun_path[0] == '\0')
			return ward__error(err, -EINVAL, "serve",
					   "descriptor %d is not a unix socket with a path",
					   cfg->fd);
		if (asprintf(ret_url, "unix:%.*s",
			     (int)strnlen(sun->sun_path,
					  len - offsetof(struct sockaddr_un, sun_path)),
			     sun->sun_path) < 0)
			return ward__error(err, -ENOMEM, "serve", "out of memory");
		return 0;
	}
	r = tcp_url(ls->fd, ret_url, &loopback, err);
	if (r < 0)
		return r;
	if (!loopback && (!cfg->allow_remote || !cfg->token))
		return ward__error(err, -EPERM, "serve",
				   "the socket passed as descriptor %d serves '%s', not a loopback "
				   "address: that needs --allow-remote and a token",
				   cfg->fd, *ret_url);
	return 0;
}

static int listen_tcp(struct ward__listener *ls, const struct ward__listener_config *cfg,
		      char **ret_url, struct ward_error *err)
{
	struct sockaddr_storage ss;
	socklen_t len;
	bool loopback = false;
	int one = 1;

	if (parse_ws_url(cfg->url, &ss, &len, &loopback) < 0)
		return ward__error(
			err, -EINVAL, "serve",
			"--listen '%s': expected ws://IP:PORT (an IPv4 or [IPv6] address)",
			cfg->url);
	if (!loopback && !cfg->allow_remote)
		return ward__error(err, -EPERM, "serve",
				   "--listen '%s': not a loopback address; add --allow-remote to "
				   "serve other machines",
				   cfg->url);
	ls->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ls->fd < 0)
		return ward__error(err, -errno, "serve", "cannot create a socket: %m");
	setsockopt(ls->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls->fd, (struct sockaddr *)&ss, len) < 0)
		return ward__error(err, -errno, "serve", "cannot bind '%s': %m", cfg->url);
	if (listen(ls->fd, 128) < 0)
		return ward__error(err, -errno, "serve", "cannot listen on '%s': %m", cfg->url);
	return tcp_url(ls->fd, ret_url, &loopback, err);
}

static int listen_unix(struct ward__listener *ls, const struct ward__listener_config *cfg,
		       char **ret_url, struct ward_error *err)
{
	const char *path = cfg->url + strlen("unix:");
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct stat st;
	mode_t old;
	int r;

	if (path[0] != '/' || strlen(path) >= sizeof(sun.sun_path))
		return ward__error(
			err, -EINVAL, "serve",
			"--listen '%s': expected unix:/absolute/path (at most %zu bytes)", cfg->url,
			sizeof(sun.sun_path) - 1);
	memcpy(sun.sun_path, path, strlen(path) + 1);
	ls->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ls->fd < 0)
		return ward__error(err, -errno, "serve", "cannot create a socket: %m");
	if (lstat(path, &st) == 0) {
		int probe;

		/* Replace only a socket nobody listens on any more (a crashed server's). */
		if (!S_ISSOCK(st.st_mode))
			return ward__error(err, -EEXIST, "serve",
					   "--listen '%s': the path exists and is not a socket",
					   cfg->url);
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe >= 0 && connect(probe, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
			close(probe);
			return ward__error(err, -EADDRINUSE, "serve",
					   "--listen '%s': another server listens there", cfg->url);
		}
		if (probe >= 0)
			close(probe);
		unlink(path);
	}
	/* Only the owner may connect; the token is the second lock. */
	old = umask(0177);
	r = bind(ls->fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (r < 0)
		return ward__error(err, -errno, "serve", "cannot bind '%s': %m", path);
	ls->unix_path = strdup(path);
	if (!ls->unix_path)
		return ward__error(err, -ENOMEM, "serve", "out of memory");
	if (listen(ls->fd, 128) < 0)
		return ward__error(err, -errno, "serve", "cannot listen on '%s': %m", path);
	*ret_url = strdup(cfg->url);
	return *ret_url ? 0 : ward__error(err, -ENOMEM, "serve", "out of memory");
}

int ward__listener_new(struct ward__loop *l, const struct ward__listener_config *cfg,
		       const struct ward__conn_handler *h, void *server_userdata,
		       struct ward__listener **ret, char **ret_url, struct ward_error *err)
{
	struct ward__listener *ls = calloc(1, sizeof(*ls));
	char *url = NULL;
	int r;

	if (!ls)
		return ward__error(err, -ENOMEM, "serve", "out of memory");
	ls->loop = l;
	ls->fd = -1;
	ls->h = h;
	ls->server_userdata = server_userdata;
	ls->lim = cfg->limits;
	if (cfg->token) {
		ls->token = strdup(cfg->token);
		if (!ls->token) {
			r = ward__error(err, -ENOMEM, "serve", "out of memory");
			goto fail;
		}
	}
	ls->ws.token = ls->token;
	ls->ws.max_message = cfg->limits.max_message;
	/* The queue holds at most one whole answer beyond the high-water mark. */
	ls->ws.max_queue = cfg->limits.max_queue;
	ls->ws.max_queue_msgs = 1u << 20;
	if (cfg->adopt) {
		r = adopt(ls, cfg, &url, err);
	} else if (strncmp(cfg->url, "ws://", 5) == 0) {
		r = listen_tcp(ls, cfg, &url, err);
	} else if (strncmp(cfg->url, "unix:", 5) == 0) {
		ls->is_unix = true;
		r = listen_unix(ls, cfg, &url, err);
	} else {
		r = ward__error(err, -EINVAL, "serve",
				"--listen '%s': expected stdio, ws://IP:PORT or unix:PATH",
				cfg->url);
	}
	if (r < 0)
		goto fail;
	r = ward__loop_add_io(l, ls->fd, EPOLLIN, on_accept, ls, &ls->io);
	if (r < 0) {
		ward__error(err, r, "serve", "cannot watch the listening socket: %m");
		goto fail;
	}
	*ret = ls;
	*ret_url = url;
	return 0;
fail:
	free(url);
	ward__listener_free(ls);
	return r;
}

void ward__listener_free(struct ward__listener *ls)
{
	if (!ls)
		return;
	/* Its connections outlive it, as they are; they just stop being listed here. */
	for (struct ward__conn *c = ls->conns; c; c = c->next)
		c->listener = NULL;
	ward__loop_del_io(ls->loop, ls->io);
	ward__loop_del_timer(ls->loop, ls->backoff);
	if (ls->fd >= 0)
		close(ls->fd);
	if (ls->unix_path)
		unlink(ls->unix_path);
	free(ls->unix_path);
	free(ls->token);
	free(ls);
}

/* ------------------------------------------------------------ stdio */

static void lc_message(struct ward__lineconn *lc, const char *line, size_t len, void *ud)
{
	struct ward__conn *c = ud;

	if (c->closing || c->dead)
		return;
	c->h->message(c, line, len, c->userdata);
}

static void lc_too_large(struct ward__lineconn *lc, const char *prefix, size_t len, void *ud)
{
	struct ward__conn *c = ud;

	if (!c->closing && !c->dead && c->h->too_large)
		c->h->too_large(c, prefix, len, c->userdata);
}

static void on_stdio_finish(struct ward__loop *l, void *userdata)
{
	struct ward__conn *c = userdata;

	c->deferred = 0;
	conn_finish(c);
}

static void lc_closed(struct ward__lineconn *lc, int error, void *ud)
{
	struct ward__conn *c = ud;

	/* Not from within the lineconn's own callback: from the loop. */
	if (!c->deferred)
		ward__loop_add_timer(c->loop, 0, on_stdio_finish, c, &c->deferred);
}

static void lc_output_failed(struct ward__lineconn *lc, int error, void *ud)
{
	lc_closed(lc, error, ud);
}

static void lc_drained(struct ward__lineconn *lc, void *ud)
{
	struct ward__conn *c = ud;

	c->congested = false;
	if (c->h->drained)
		c->h->drained(c, c->userdata);
}

static const struct ward__lineconn_ops lc_ops = {
	.message = lc_message,
	.too_large = lc_too_large,
	.input_closed = lc_closed,
	.output_failed = lc_output_failed,
	.drained = lc_drained,
};

int ward__conn_stdio(struct ward__loop *l, int in_fd, int out_fd,
		     const struct ward__transport_limits *lim, const struct ward__conn_handler *h,
		     void *server_userdata, struct ward__conn **ret)
{
	struct ward__lineconn_limits ll = {
		.max_line = lim->max_message,
		.max_queue = lim->max_queue,
		.high_water = lim->high_water,
	};
	struct ward__conn *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	c->kind = CONN_LINES;
	c->loop = l;
	c->h = h;
	c->server_userdata = server_userdata;
	c->lim = *lim;
	snprintf(c->peer, sizeof(c->peer), "stdio");
	r = ward__lineconn_new(l, in_fd, out_fd, false, &ll, &lc_ops, c, &c->lc);
	if (r < 0) {
		free(c);
		return r;
	}
	c->userdata = h->opened(c, server_userdata);
	c->opened = c->userdata != NULL;
	if (!c->opened) {
		ward__lineconn_free(c->lc);
		free(c);
		return -ECONNREFUSED;
	}
	*ret = c;
	return 0;
}

/* ------------------------------------------------------------ sending, closing */

int ward__conn_send(struct ward__conn *c, const void *data, size_t len)
{
	int r;

	if (c->dead || c->closing)
		return -EPIPE;
	if (c->kind == CONN_LINES) {
		r = ward__lineconn_send(c->lc, data, len);
		c->congested = ward__lineconn_congested(c->lc);
		return r;
	}
	r = ward__ws_send(c->ws, WARD_WS_TEXT, data, len);
	if (r == -EMSGSIZE)
		r = -ENOBUFS;
	if (r >= 0 && !c->in_callback) {
		/* The socket is usually writable: send now rather than after the next poll. */
		c->in_callback = true;
		ward__ws_on_writable(c->ws);
		c->in_callback = false;
		ws_update(c);
	} else if (r >= 0) {
		ws_check_drain(c);
	}
	return r;
}

void ward__conn_pause(struct ward__conn *c, bool pause)
{
	if (c->paused == pause)
		return;
	c->paused = pause;
	if (c->kind == CONN_LINES) {
		ward__lineconn_pause(c->lc, pause);
	} else if (!pause && !c->congested && !c->in_callback) {
		c->in_callback = true;
		ward__ws_resume(c->ws);
		c->in_callback = false;
		ws_update(c);
	}
}

static void on_lines_flushed(struct ward__loop *l, void *userdata)
{
	struct ward__conn *c = userdata;

	c->deferred = 0;
	ward__lineconn_flush(c->lc, 2000);
	conn_finish(c);
}

void ward__conn_close(struct ward__conn *c)
{
	if (c->closing || c->dead)
		return;
	c->closing = true;
	if (c->kind == CONN_WS) {
		ward__ws_close(c->ws, 1000, NULL);
		if (!c->in_callback)
			ws_update(c);
		return;
	}
	ward__loop_del_timer(c->loop, c->deferred);
	ward__loop_add_timer(c->loop, 0, on_lines_flushed, c, &c->deferred);
}

void ward__conn_abort(struct ward__conn *c)
{
	conn_finish(c);
}
