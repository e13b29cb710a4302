/* SPDX-License-Identifier: MIT */
/*
 * The proxy engine (proxy.h): listeners, each connection from accept to
 * tunnel, and the questions connections wait on.
 *
 * A connection goes through these states, each with one thing it waits for:
 *
 *   HEAD        the client's HTTP request head or SOCKS5 request (bounded in
 *               bytes and in time: a slow-loris client is cut after
 *               WARD_NET_HEAD_TIMEOUT_MS)
 *   ASKING      a person's answer (the question is shared by every
 *               connection to the same host, port and protocol)
 *   RESOLVING   c-ares
 *   CONNECTING  one upstream address after the other, each with a timeout
 *   TUNNEL      tunnel.c moves the bytes
 *   CLOSING     a refusal was sent; what the client still sends is read and
 *               dropped for a moment, so that closing does not reset the
 *               connection before the client has read the refusal
 *
 * While it waits on anything but the client, a connection does not read
 * from it: a client cannot make ward buffer anything before the decision.
 */
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "basic/error.h"
#include "basic/loop.h"
#include "basic/util.h"
#include "net/net-internal.h"
#include "rpc/http.h"

#define HEAD_READ 4096
#define CLOSING_NS (2ull * 1000000000ull)
#define LISTENER_PAUSE_NS (100ull * 1000000ull)
#define MAX_FIXED_LISTENERS 8

enum state {
	ST_HEAD = 0,
	ST_ASKING,
	ST_RESOLVING,
	ST_CONNECTING,
	ST_TUNNEL,
	ST_CLOSING,
};

enum front {
	FRONT_HTTP = 0,
	FRONT_SOCKS5,
	FRONT_POOL,
};

struct question;

struct conn {
	struct ward_net_proxy *px;
	struct conn *next, *prev;
	struct conn *qnext; /* waiting on the same question */
	struct question *q;
	enum front front;
	enum state st;
	int fd;
	uint64_t io, timer;
	struct ward__http_parser *http;
	struct ward__socks5 *socks;
	uint8_t *early; /* bytes the client sent after its request head */
	size_t early_len;
	uint8_t *head; /* plain HTTP: the head to send upstream */
	size_t head_len;
	struct ward__body body;
	bool http_connect;
	char host[WARD_NET_HOST_MAX + 1];
	uint16_t port;
	enum ward_net_protocol proto;
	const char *by;
	uint64_t lookup;
	struct ward__net_addr addrs[WARD_RESOLVE_MAX_ADDRS];
	size_t n_addrs, next_addr;
	int up;
	uint64_t up_io;
	int up_error;
	char address[INET6_ADDRSTRLEN];
	struct ward__tunnel *tunnel;
	struct ward__udp_assoc *assoc; /* a SOCKS5 UDP ASSOCIATE's control connection */
};

struct question {
	struct question *next;
	uint64_t id;
	char host[WARD_NET_HOST_MAX + 1];
	uint16_t port;
	enum ward_net_protocol proto;
	struct conn *waiters;
};

struct listener {
	struct ward_net_proxy *px;
	enum ward_net_listener_kind kind;
	int fd;
	uint64_t io, timer;
};

/*
 * Bulk transfers whose pipes may grow to a megabyte at once, per proxy (one
 * sandbox): enough for a few parallel downloads at full speed; more get the
 * kernel's default pipe, slower, never refused.
 */
#define BULK_PIPES_MAX 8u

struct ward_net_proxy {
	struct ward__loop *loop;
	struct ward__net_policy np;
	struct ward__resolver *resolver;
	struct ward__stub *stub;
	struct ward__udp *udp;
	struct listener **listeners;
	size_t n_listeners;
	struct conn *conns;
	unsigned n_conns, max_conns;
	unsigned bulk_pipes; /* tunnels' grown pipes (net-internal.h), at most BULK_PIPES_MAX */
	bool shared; /* other proxies share the process (settings.shared) */
	uint64_t head_timeout_ns;
	struct question *questions;
	unsigned n_questions;
	uint64_t next_question;
	struct ward_net_stats stats;
};

static void conn_free(struct conn *c);
static void conn_decide(struct conn *c);

/* ------------------------------------------------------------ the process's descriptors */

/*
 * Every proxy of a process (a server holds one per sandbox) shares its
 * descriptors, and a connection may hold six of them (the client, the
 * upstream, a pipe per direction). The per-proxy cap alone let one sandbox
 * take 2048 x 6 descriptors: past the process's limit the server could no
 * longer start a process, accept a client or serve another sandbox. So the
 * proxies together keep a quarter of the limit (at least 256) free for
 * everything else, and where they share the process (settings.shared) each
 * takes at most a quarter of what they may hold: one sandbox cannot starve
 * the others (four such ones still can, but not the server). Past that, a
 * new connection is reset and a new pool listener closed, as past a proxy's
 * own cap.
 */
#define FDS_PER_CONN 6u

/* Atomic: libward's ward_run() may run sandboxes in several threads, each with its own proxy. */
static struct {
	_Atomic unsigned conns, listeners;
	_Atomic uint64_t budget; /* descriptors the proxies may hold together */
} process;

/* Read when a proxy starts: the holder raises its limit before (exec/netproxy.c, cli/). */
static void process_budget_update(void)
{
	struct rlimit rl;
	uint64_t limit = 1024, reserve;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		limit = rl.rlim_cur == RLIM_INFINITY ? UINT32_MAX : (uint64_t)rl.rlim_cur;
	reserve = MAX(limit / 4, (uint64_t)256);
	process.budget = limit > reserve ? limit - reserve : 0;
}

/* Whether px may hold fds more descriptors. */
static bool process_room(const struct ward_net_proxy *px, unsigned fds)
{
	uint64_t used = (uint64_t)process.conns * FDS_PER_CONN + process.listeners;
	uint64_t mine = (uint64_t)px->n_conns * FDS_PER_CONN + px->n_listeners;

	return used + fds <= process.budget && (!px->shared || mine + fds <= process.budget / 4);
}

/* ------------------------------------------------------------ events and refusals */

static void conn_report(struct conn *c, bool allowed, enum ward_net_reason reason,
			const char *detail)
{
	struct ward_net_target t = {.host = c->host, .port = c->port, .protocol = c->proto};
	struct ward_net_event ev = {
		.target = &t,
		.allowed = allowed,
		.reason = reason,
		.decided_by = c->by ? c->by : "policy",
		.address = c->address[0] ? c->address : NULL,
		.detail = detail,
	};

	if (c->tunnel)
		ward__tunnel_bytes(c->tunnel, &ev.bytes_out, &ev.bytes_in);
	if (allowed)
		c->px->stats.allowed++;
	else
		c->px->stats.denied++;
	ward__net_policy_report(&c->px->np, &ev);
}

static void on_closing_timer(struct ward__loop *l, void *userdata)
{
	struct conn *c = userdata;

	c->timer = 0;
	conn_free(c);
}

static void on_closing_io(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct conn *c = userdata;
	char drop[4096];
	ssize_t n = recv(fd, drop, sizeof(drop), MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) || (events & EPOLLERR))
		conn_free(c);
}

/*
 * Sends a last message (or none) and closes: shut down our side, then read
 * and drop until the client closes or CLOSING_NS passes. With rst, no
 * message can be sent (a raw connection to a pool address): the connection
 * is reset, which the client sees at once as ECONNRESET.
 */
static void conn_close_with(struct conn *c, const void *msg, size_t len, bool rst)
{
	struct ward__loop *l = c->px->loop;

	if (rst) {
		struct linger lg = {.l_onoff = 1, .l_linger = 0};

		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		conn_free(c);
		return;
	}
	/* A refusal is a few hundred bytes: an empty socket buffer always takes it. */
	if (len > 0)
		send(c->fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	shutdown(c->fd, SHUT_WR);
	c->st = ST_CLOSING;
	ward__loop_del_io(l, c->io);
	ward__loop_del_timer(l, c->timer);
	c->io = c->timer = 0;
	if (ward__loop_add_io(l, c->fd, EPOLLIN, on_closing_io, c, &c->io) < 0 ||
	    ward__loop_add_timer(l, ward__loop_now_ns(l) + CLOSING_NS, on_closing_timer, c,
				 &c->timer) < 0)
		conn_free(c);
}

static void http_refuse(struct conn *c, int status, const char *proxy_error, const char *message)
{
	struct ward__buf out;

	ward__buf_init(&out, 4096);
	if (ward__httpfwd_error(&out, status, proxy_error, message) < 0)
		ward__buf_clear(&out);
	conn_close_with(c, out.data, out.len, false);
	ward__buf_release(&out);
}

static void socks_refuse(struct conn *c, uint8_t code)
{
	uint8_t reply[22];
	size_t n = ward__socks5_reply(code, NULL, 0, reply);

	conn_close_with(c, reply, n, false);
}

/* A refusal by policy: reported, and told to the client in its protocol. */
static void conn_deny(struct conn *c, enum ward_net_reason reason, const char *detail)
{
	char msg[WARD_NET_HOST_MAX + 256];
	bool v6 = strchr(c->host, ':') != NULL;

	conn_report(c, false, reason, detail);
	switch (c->front) {
	case FRONT_HTTP:
		snprintf(msg, sizeof(msg), "ward: network access to %s%s%s:%u refused: %s%s%s",
			 v6 ? "[" : "", c->host, v6 ? "]" : "", c->port,
			 ward__net_reason_name(reason), detail ? " (" : "", detail ? detail : "");
		if (detail)
			snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), ")");
		http_refuse(c, 403, ward__net_reason_proxy_error(reason), msg);
		return;
	case FRONT_SOCKS5:
		socks_refuse(c, WARD_SOCKS5_NOT_ALLOWED);
		return;
	case FRONT_POOL:
		conn_close_with(c, NULL, 0, true);
		return;
	}
}

/* The upstream could not be reached (not a policy refusal): 502/504, or SOCKS5's own codes. */
static void conn_fail_upstream(struct conn *c, int error, const char *what)
{
	char msg[WARD_NET_HOST_MAX + 256];

	conn_report(c, true, WARD_NET_REASON_NONE, what);
	switch (c->front) {
	case FRONT_HTTP:
		snprintf(msg, sizeof(msg), "ward: %s %s:%u: %s", what, c->host, c->port,
			 strerror(-error));
		http_refuse(c, error == -ETIMEDOUT ? 504 : 502, NULL, msg);
		return;
	case FRONT_SOCKS5:
		socks_refuse(c,
			     error == -ENOENT		      ? WARD_SOCKS5_HOST_UNREACHABLE
				     : error == -ECONNREFUSED ? WARD_SOCKS5_REFUSED
				     : error == -ENETUNREACH  ? WARD_SOCKS5_NET_UNREACHABLE
				     : error == -ETIMEDOUT    ? WARD_SOCKS5_TTL_EXPIRED
							      : WARD_SOCKS5_HOST_UNREACHABLE);
		return;
	case FRONT_POOL:
		conn_close_with(c, NULL, 0, true);
		return;
	}
}

/* ------------------------------------------------------------ the tunnel */

static void on_tunnel_done(void *userdata, int error)
{
	struct conn *c = userdata;

	conn_report(c, true, WARD_NET_REASON_NONE, NULL);
	conn_free(c);
}

static void conn_established(struct conn *c)
{
	static const char connect_ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	struct ward__tunnel_opts o = {.client = c->fd,
				      .upstream = c->up,
				      .bulk_pipes = &c->px->bulk_pipes,
				      .bulk_pipes_max = BULK_PIPES_MAX};
	uint8_t socks_reply[22];
	struct ward__loop *l = c->px->loop;
	int r;

	ward__loop_del_io(l, c->up_io);
	ward__loop_del_io(l, c->io);
	ward__loop_del_timer(l, c->timer);
	c->up_io = c->io = c->timer = 0;
	switch (c->front) {
	case FRONT_HTTP:
		if (c->http_connect) {
			o.to_client = connect_ok;
			o.to_client_len = sizeof(connect_ok) - 1;
			o.to_upstream = c->early;
			o.to_upstream_len = c->early_len;
		} else {
			o.to_upstream = c->head;
			o.to_upstream_len = c->head_len;
			o.to_upstream_ends = c->body.done;
			o.body = &c->body;
		}
		break;
	case FRONT_SOCKS5:
		o.to_client = socks_reply;
		o.to_client_len = ward__socks5_reply(WARD_SOCKS5_OK, NULL, 0, socks_reply);
		o.to_upstream = c->early;
		o.to_upstream_len = c->early_len;
		break;
	case FRONT_POOL:
		break;
	}
	/* The tunnel owns both sockets from here, whatever happens. */
	c->fd = c->up = -1;
	c->st = ST_TUNNEL;
	r = ward__tunnel_new(l, &o, on_tunnel_done, c, &c->tunnel);
	free(c->early);
	free(c->head);
	c->early = c->head = NULL;
	if (r < 0) {
		conn_report(c, true, WARD_NET_REASON_NONE, "cannot relay");
		conn_free(c);
	}
}

/* ------------------------------------------------------------ connecting */

static void connect_next(struct conn *c);

static void up_close(struct conn *c)
{
	ward__loop_del_io(c->px->loop, c->up_io);
	ward__loop_del_timer(c->px->loop, c->timer);
	c->up_io = c->timer = 0;
	if (c->up >= 0)
		close(c->up);
	c->up = -1;
}

static void on_up_io(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct conn *c = userdata;
	int e = 0;
	socklen_t el = sizeof(e);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
		e = errno;
	if (e == 0 && !(events & (EPOLLERR | EPOLLHUP))) {
		conn_established(c);
		return;
	}
	c->up_error = -(e ? e : ECONNRESET);
	up_close(c);
	connect_next(c);
}

static void on_up_timeout(struct ward__loop *l, void *userdata)
{
	struct conn *c = userdata;

	c->timer = 0;
	c->up_error = -ETIMEDOUT;
	up_close(c);
	connect_next(c);
}

/* Tries the next checked address; the one connected to is exactly one of those checked. */
static void connect_next(struct conn *c)
{
	struct ward__loop *l = c->px->loop;

	while (c->next_addr < c->n_addrs) {
		const struct ward__net_addr *a = &c->addrs[c->next_addr++];
		struct sockaddr_storage ss;
		socklen_t sl = ward__net_addr_to_sockaddr(a, c->port, &ss);
		int one = 1;

		ward__net_addr_format(a, c->address, sizeof(c->address));
		c->up = socket(a->family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (c->up < 0) {
			c->up_error = -errno;
			continue;
		}
		setsockopt(c->up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(c->up, (struct sockaddr *)&ss, sl) < 0 && errno != EINPROGRESS) {
			c->up_error = -errno;
			up_close(c);
			continue;
		}
		if (ward__loop_add_io(l, c->up, EPOLLOUT, on_up_io, c, &c->up_io) < 0 ||
		    ward__loop_add_timer(
			    l, ward__loop_now_ns(l) + WARD_NET_CONNECT_TIMEOUT_MS * 1000000ull,
			    on_up_timeout, c, &c->timer) < 0) {
			c->up_error = -ENOMEM;
			up_close(c);
			continue;
		}
		c->st = ST_CONNECTING;
		return;
	}
	conn_fail_upstream(c, c->up_error ? c->up_error : -EHOSTUNREACH, "cannot connect to");
}

/* ------------------------------------------------------------ resolving */

static void on_resolved(void *userdata, int error, const struct ward__net_addr *addrs, size_t n)
{
	struct conn *c = userdata;
	char detail[160];
	const char *why = NULL;

	c->lookup = 0;
	if (error < 0) {
		conn_fail_upstream(c, error, "cannot resolve");
		return;
	}
	/*
	 * Every address must pass, not just the first: a name that resolves to
	 * a public address and a private one is a rebinding attempt as often
	 * as not, and the connection must not depend on which one is tried.
	 */
	for (size_t i = 0; i < n; i++)
		if (!ward__net_policy_address_ok(&c->px->np, &addrs[i], &why)) {
			char a[INET6_ADDRSTRLEN];

			ward__net_addr_format(&addrs[i], a, sizeof(a));
			snprintf(detail, sizeof(detail), "resolves to %s, %s", a,
				 why ? why : "not public");
			conn_deny(c, WARD_NET_REASON_NON_PUBLIC, detail);
			return;
		}
	memcpy(c->addrs, addrs, n * sizeof(*addrs));
	c->n_addrs = n;
	c->next_addr = 0;
	connect_next(c);
}

static void conn_allowed(struct conn *c, const char *by)
{
	struct ward__net_addr a;
	int r;

	c->by = by;
	c->st = ST_RESOLVING;
	if (ward__net_addr_parse(c->host, &a)) {
		on_resolved(c, 0, &a, 1);
		return;
	}
	r = ward__resolver_lookup(c->px->resolver, c->host, on_resolved, c, &c->lookup);
	if (r < 0)
		conn_fail_upstream(c, r, "cannot resolve");
}

/* ------------------------------------------------------------ questions */

static struct question *question_find(struct ward_net_proxy *px, uint64_t id)
{
	for (struct question *q = px->questions; q; q = q->next)
		if (q->id == id)
			return q;
	return NULL;
}

static void question_unlink(struct ward_net_proxy *px, struct question *q)
{
	for (struct question **p = &px->questions; *p; p = &(*p)->next)
		if (*p == q) {
			*p = q->next;
			px->n_questions--;
			return;
		}
}

static void conn_leave_question(struct conn *c)
{
	if (!c->q)
		return;
	for (struct conn **p = &c->q->waiters; *p; p = &(*p)->qnext)
		if (*p == c) {
			*p = c->qnext;
			break;
		}
	c->q = NULL;
	c->qnext = NULL;
}

static void conn_ask(struct conn *c)
{
	struct ward_net_proxy *px = c->px;
	struct ward_net_target t = {.host = c->host, .port = c->port, .protocol = c->proto};
	struct question *q;
	uint64_t id;

	c->st = ST_ASKING;
	for (q = px->questions; q; q = q->next)
		if (q->port == c->port && q->proto == c->proto && strcmp(q->host, c->host) == 0) {
			c->q = q;
			c->qnext = q->waiters;
			q->waiters = c;
			return;
		}
	if (px->n_questions >= WARD_NET_MAX_QUESTIONS) {
		conn_deny(c, WARD_NET_REASON_ASKED_DENIED, "too many questions waiting");
		return;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		conn_deny(c, WARD_NET_REASON_ASKED_DENIED, "out of memory");
		return;
	}
	q->id = id = px->next_question++;
	snprintf(q->host, sizeof(q->host), "%s", c->host);
	q->port = c->port;
	q->proto = c->proto;
	q->next = px->questions;
	px->questions = q;
	px->n_questions++;
	c->q = q;
	q->waiters = c;
	/* The hook may answer before it returns (nobody can be asked): the id says whether it did. */
	if (px->np.hooks.ask(px->np.hooks.userdata, px, id, &t) < 0)
		ward__net_proxy_answer(px, id, false, "nobody could be asked");
}

void ward__net_proxy_answer(struct ward_net_proxy *px, uint64_t id, bool allow, const char *by)
{
	struct question *q = question_find(px, id);
	struct conn *w;

	if (!q)
		return;
	question_unlink(px, q);
	w = q->waiters;
	free(q);
	while (w) {
		struct conn *next = w->qnext;

		w->q = NULL;
		w->qnext = NULL;
		if (allow)
			conn_allowed(w, by ? by : "person");
		else {
			w->by = by ? by : "person";
			conn_deny(w, WARD_NET_REASON_ASKED_DENIED, NULL);
		}
		w = next;
	}
}

/* The client hung up while its connection waited for a person, c-ares or the upstream. */
static void on_wait_io(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct conn *c = userdata;

	if (events & (EPOLLHUP | EPOLLERR))
		conn_free(c);
}

static void conn_decide(struct conn *c)
{
	enum ward_net_reason reason;
	const char *by = NULL;

	/*
	 * Nothing more is read from the client until the decision is made and
	 * acted on; only its hanging up (which cannot be masked) is watched.
	 */
	ward__loop_del_io(c->px->loop, c->io);
	ward__loop_del_timer(c->px->loop, c->timer);
	c->io = c->timer = 0;
	if (ward__loop_add_io(c->px->loop, c->fd, 0, on_wait_io, c, &c->io) < 0) {
		conn_free(c);
		return;
	}
	switch (ward__net_policy_decide(
		&c->px->np,
		&(struct ward_net_target){.host = c->host, .port = c->port, .protocol = c->proto},
		&reason, &by)) {
	case WARD_NET_OUTCOME_ALLOW:
		conn_allowed(c, by);
		return;
	case WARD_NET_OUTCOME_DENY:
		c->by = by;
		conn_deny(c, reason, NULL);
		return;
	case WARD_NET_OUTCOME_ASK:
		conn_ask(c);
		return;
	}
}

/* ------------------------------------------------------------ the client's request */

static int keep_early(struct conn *c, const uint8_t *d, size_t n)
{
	if (n == 0)
		return 0;
	c->early = malloc(n);
	if (!c->early)
		return -ENOMEM;
	memcpy(c->early, d, n);
	c->early_len = n;
	return 0;
}

static void http_head_done(struct conn *c, const uint8_t *rest, size_t rest_len)
{
	const struct ward__http_request *req = &c->http->request;
	const char *why = "bad request";
	struct ward__buf head;
	int status;

	status = ward__httpfwd_target(req, &c->http_connect, c->host, &c->port, &c->body, &why);
	if (status) {
		http_refuse(c, status, NULL, why);
		return;
	}
	c->proto = c->http_connect ? WARD_NET_PROTO_HTTPS : WARD_NET_PROTO_HTTP;
	if (!c->http_connect) {
		ssize_t m;

		ward__buf_init(&head, WARD_HTTP_DEFAULT_MAX_HEAD + 1024);
		if (ward__httpfwd_head(req, &head) < 0) {
			ward__buf_release(&head);
			http_refuse(c, 431, NULL, "request head too large");
			return;
		}
		/* The body bytes that came with the head go upstream after it, and only they. */
		m = ward__body_feed(&c->body, rest, rest_len);
		if (m < 0 || ward__buf_append(&head, rest, (size_t)m) < 0) {
			ward__buf_release(&head);
			http_refuse(c, 400, NULL, "malformed request body");
			return;
		}
		c->head = ward__buf_steal(&head, &c->head_len);
		ward__buf_release(&head);
		if (!c->head) {
			conn_free(c);
			return;
		}
		/* A body of length 0 (or none) is complete already. */
		if (c->body.kind == WARD_BODY_NONE ||
		    (c->body.kind == WARD_BODY_LENGTH && c->body.left == 0))
			c->body.done = true;
	} else if (keep_early(c, rest, rest_len) < 0) {
		conn_free(c);
		return;
	}
	ward__http_parser_release(c->http);
	free(c->http);
	c->http = NULL;
	conn_decide(c);
}

/* The control connection of an association: it only has to stay open; its end ends it. */
static void on_udp_control(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct conn *c = userdata;
	char drop[256];
	ssize_t n = recv(fd, drop, sizeof(drop), MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) || (events & EPOLLERR))
		conn_free(c);
}

/*
 * UDP ASSOCIATE: the client sends its datagrams to the relay's address on
 * the sandbox's loopback, as long as this connection stays open (RFC 1928
 * section 7). Which datagrams go anywhere is udp.c's to decide, each.
 */
static void socks_udp(struct conn *c)
{
	struct ward__net_addr bound;
	uint16_t bport;
	uint8_t reply[22];
	size_t n;

	if (!ward__udp_available(c->px->udp, &bound, &bport) ||
	    ward__udp_associate(c->px->udp, c->socks->port, &c->assoc) < 0) {
		socks_refuse(c, WARD_SOCKS5_CMD_UNSUPPORTED);
		return;
	}
	n = ward__socks5_reply(WARD_SOCKS5_OK, &bound, bport, reply);
	free(c->socks);
	c->socks = NULL;
	ward__loop_del_io(c->px->loop, c->io);
	ward__loop_del_timer(c->px->loop, c->timer);
	c->io = c->timer = 0;
	c->st = ST_TUNNEL;
	if (send(c->fd, reply, n, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)n ||
	    ward__loop_add_io(c->px->loop, c->fd, EPOLLIN, on_udp_control, c, &c->io) < 0)
		conn_free(c);
}

static void socks_done(struct conn *c, const uint8_t *rest, size_t rest_len)
{
	struct ward__socks5 *s = c->socks;

	c->port = s->port;
	c->proto = WARD_NET_PROTO_SOCKS5_TCP;
	if (s->cmd == WARD_SOCKS5_CMD_UDP) {
		socks_udp(c);
		return;
	}
	if (ward__net_host_normalize(s->host, strlen(s->host), false, c->host) < 0) {
		snprintf(c->host, sizeof(c->host), "%.*s", 200, s->host);
		socks_refuse(c, WARD_SOCKS5_HOST_UNREACHABLE);
		return;
	}
	if (c->port == 0) {
		socks_refuse(c, WARD_SOCKS5_FAILURE);
		return;
	}
	if (keep_early(c, rest, rest_len) < 0) {
		conn_free(c);
		return;
	}
	free(c->socks);
	c->socks = NULL;
	conn_decide(c);
}

static void on_head_io(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct conn *c = userdata;
	uint8_t buf[HEAD_READ];
	size_t used = 0;
	ssize_t n;

	n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_free(c);
		return;
	}
	if (c->front == FRONT_HTTP) {
		int r = ward__http_feed(c->http, buf, (size_t)n, &used);

		if (r == WARD_HTTP_AGAIN)
			return;
		if (r == WARD_HTTP_DONE) {
			http_head_done(c, buf + used, (size_t)n - used);
			return;
		}
		if (r == WARD_HTTP_ERROR) {
			http_refuse(c, c->http->status, NULL, c->http->reason);
			return;
		}
		conn_free(c);
		return;
	}
	while (used < (size_t)n) {
		uint8_t out[2];
		size_t consumed, out_len;
		enum ward__socks5_state st = ward__socks5_feed(
			c->socks, buf + used, (size_t)n - used, &consumed, out, &out_len);

		used += consumed;
		if (out_len &&
		    send(fd, out, out_len, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)out_len) {
			conn_free(c);
			return;
		}
		if (st == WARD_SOCKS5_DONE) {
			socks_done(c, buf + used, (size_t)n - used);
			return;
		}
		if (st == WARD_SOCKS5_FAILED) {
			if (c->socks->reply == 0xff)
				conn_free(c);
			else
				socks_refuse(c, c->socks->reply);
			return;
		}
		if (consumed == 0)
			break;
	}
}

static void on_head_timeout(struct ward__loop *l, void *userdata)
{
	struct conn *c = userdata;

	c->timer = 0;
	if (c->front == FRONT_HTTP)
		http_refuse(c, 408, NULL, "the request head did not arrive in time");
	else
		conn_free(c);
}

/* ------------------------------------------------------------ connections */

static void conn_free(struct conn *c)
{
	struct ward_net_proxy *px = c->px;

	conn_leave_question(c);
	ward__resolver_cancel(px->resolver, c->lookup);
	ward__loop_del_io(px->loop, c->io);
	ward__loop_del_io(px->loop, c->up_io);
	ward__loop_del_timer(px->loop, c->timer);
	if (c->fd >= 0)
		close(c->fd);
	if (c->up >= 0)
		close(c->up);
	ward__tunnel_free(c->tunnel);
	ward__udp_release(c->assoc);
	if (c->http) {
		ward__http_parser_release(c->http);
		free(c->http);
	}
	free(c->socks);
	free(c->early);
	free(c->head);
	if (c->prev)
		c->prev->next = c->next;
	else
		px->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	px->n_conns--;
	process.conns--;
	free(c);
}

static void listener_resume(struct ward__loop *l, void *userdata)
{
	struct listener *ls = userdata;

	ls->timer = 0;
	ward__loop_mod_io(l, ls->io, EPOLLIN);
}

static struct conn *conn_new(struct ward_net_proxy *px, int fd, enum front front)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->px = px;
	c->fd = fd;
	c->up = -1;
	c->front = front;
	c->next = px->conns;
	if (px->conns)
		px->conns->prev = c;
	px->conns = c;
	px->n_conns++;
	process.conns++;
	return c;
}

static void pool_accepted(struct conn *c)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct ward__net_addr a;
	const char *name;

	c->proto = WARD_NET_PROTO_HTTPS;
	if (getsockname(c->fd, (struct sockaddr *)&ss, &sl) < 0 ||
	    ward__net_addr_from_sockaddr((struct sockaddr *)&ss, sl, &a, &c->port) < 0) {
		conn_free(c);
		return;
	}
	name = ward__stub_name(c->px->stub, &a);
	if (!name) {
		/* An address of the pool no name was given: nothing to connect to. */
		ward__net_addr_format(&a, c->host, sizeof(c->host));
		conn_deny(c, WARD_NET_REASON_NOT_ALLOWED, "an address the DNS stub never gave out");
		return;
	}
	snprintf(c->host, sizeof(c->host), "%s", name);
	conn_decide(c);
}

static void on_accept(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct listener *ls = userdata;
	struct ward_net_proxy *px = ls->px;

	for (int i = 0; i < 64; i++) {
		int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		enum front front = ls->kind == WARD_NET_LISTEN_HTTP ? FRONT_HTTP
			: ls->kind == WARD_NET_LISTEN_SOCKS5	    ? FRONT_SOCKS5
								    : FRONT_POOL;
		struct conn *c;

		if (cfd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* Out of descriptors: wait a moment instead of spinning on the backlog. */
				ward__loop_mod_io(l, ls->io, 0);
				ward__loop_add_timer(l, ward__loop_now_ns(l) + LISTENER_PAUSE_NS,
						     listener_resume, ls, &ls->timer);
			}
			return;
		}
		if (px->n_conns >= px->max_conns || !process_room(px, FDS_PER_CONN)) {
			struct linger lg = {.l_onoff = 1, .l_linger = 0};

			/* Past a cap the connection is reset at once: the client fails fast. */
			setsockopt(cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
			close(cfd);
			px->stats.refused_cap++;
			continue;
		}
		c = conn_new(px, cfd, front);
		if (!c) {
			close(cfd);
			continue;
		}
		if (front == FRONT_POOL) {
			pool_accepted(c);
			continue;
		}
		if (front == FRONT_HTTP) {
			struct ward__http_limits lim = {
				.max_head = WARD_HTTP_DEFAULT_MAX_HEAD,
				.max_line = WARD_HTTP_DEFAULT_MAX_LINE,
				.max_fields = 100,
				.proxy = true,
			};

			c->http = calloc(1, sizeof(*c->http));
			if (!c->http || ward__http_parser_init(c->http, &lim) < 0) {
				conn_free(c);
				continue;
			}
		} else {
			c->socks = calloc(1, sizeof(*c->socks));
			if (!c->socks) {
				conn_free(c);
				continue;
			}
		}
		if (ward__loop_add_io(l, cfd, EPOLLIN, on_head_io, c, &c->io) < 0 ||
		    ward__loop_add_timer(l, ward__loop_now_ns(l) + px->head_timeout_ns,
					 on_head_timeout, c, &c->timer) < 0)
			conn_free(c);
	}
}

/* ------------------------------------------------------------ the proxy */

int ward__net_proxy_new(struct ward__loop *loop, const struct ward_net_settings *s,
			const struct ward_net_hooks *hooks, struct ward_net_proxy **ret,
			struct ward_error *err)
{
	struct ward_net_proxy *px = calloc(1, sizeof(*px));
	int r;

	if (!px)
		return -ENOMEM;
	px->loop = loop;
	px->max_conns = s->max_conns ? s->max_conns : WARD_NET_DEFAULT_MAX_CONNS;
	px->shared = s->shared;
	px->head_timeout_ns =
		(uint64_t)(s->head_timeout_ms ? s->head_timeout_ms : WARD_NET_HEAD_TIMEOUT_MS) *
		1000000ull;
	px->next_question = 1;
	process_budget_update();
	r = ward__net_policy_init(&px->np, s, hooks);
	if (r < 0) {
		free(px);
		return ward__error(err, r, "net", "cannot set up the proxy: %m");
	}
	r = ward__resolver_new(loop, s->dns_server, &px->resolver, err);
	if (r >= 0)
		r = ward__stub_new(loop, &px->np, &px->stub);
	if (r >= 0)
		r = ward__udp_new(loop, &px->np, px->resolver, &px->udp);
	if (r < 0) {
		ward__net_proxy_free(px);
		return r;
	}
	*ret = px;
	return 0;
}

void ward__net_proxy_free(struct ward_net_proxy *px)
{
	if (!px)
		return;
	while (px->conns)
		conn_free(px->conns);
	while (px->questions) {
		struct question *q = px->questions;

		px->questions = q->next;
		if (px->np.hooks.cancelled)
			px->np.hooks.cancelled(px->np.hooks.userdata, px, q->id);
		free(q);
	}
	for (size_t i = 0; i < px->n_listeners; i++) {
		ward__loop_del_io(px->loop, px->listeners[i]->io);
		ward__loop_del_timer(px->loop, px->listeners[i]->timer);
		close(px->listeners[i]->fd);
		free(px->listeners[i]);
		process.listeners--;
	}
	free(px->listeners);
	ward__stub_free(px->stub);
	ward__udp_free(px->udp);
	ward__resolver_free(px->resolver);
	ward__net_policy_release(&px->np);
	free(px);
}

int ward__net_proxy_add_listener(struct ward_net_proxy *px, enum ward_net_listener_kind kind,
				 int fd)
{
	struct listener *ls, **n;
	int r;

	switch (kind) {
	case WARD_NET_LISTEN_DNS_UDP:
		return ward__stub_add_udp(px->stub, fd);
	case WARD_NET_LISTEN_DNS_TCP:
		return ward__stub_add_tcp(px->stub, fd);
	case WARD_NET_LISTEN_SOCKS5_UDP:
		return ward__udp_add_socket(px->udp, fd);
	case WARD_NET_LISTEN_HTTP:
	case WARD_NET_LISTEN_SOCKS5:
	case WARD_NET_LISTEN_POOL:
		break;
	default:
		close(fd);
		return -EINVAL;
	}
	if (px->n_listeners >= WARD_NET_MAX_LISTENERS + MAX_FIXED_LISTENERS ||
	    !process_room(px, 1)) {
		close(fd);
		return -EMFILE;
	}
	ls = calloc(1, sizeof(*ls));
	n = reallocarray(px->listeners, px->n_listeners + 1, sizeof(*n));
	if (!ls || !n) {
		free(ls);
		if (n)
			px->listeners = n;
		close(fd);
		return -ENOMEM;
	}
	px->listeners = n;
	ls->px = px;
	ls->kind = kind;
	ls->fd = fd;
	r = ward__fd_nonblock(fd, true);
	if (r >= 0)
		r = ward__loop_add_io(px->loop, fd, EPOLLIN, on_accept, ls, &ls->io);
	if (r < 0) {
		close(fd);
		free(ls);
		return r;
	}
	px->listeners[px->n_listeners++] = ls;
	process.listeners++;
	return 0;
}

const char *ward__net_proxy_pool_name(const struct ward_net_proxy *px,
				      const struct ward__net_addr *addr)
{
	return ward__stub_name(px->stub, addr);
}

void ward__net_proxy_stats(const struct ward_net_proxy *px, struct ward_net_stats *ret)
{
	*ret = px->stats;
	ret->conns = px->n_conns;
	ret->questions = px->n_questions;
	ret->names = ward__stub_names(px->stub);
	ret->listeners = (unsigned)px->n_listeners;
}
