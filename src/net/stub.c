/* SPDX-License-Identifier: MIT */
/*
 * The DNS stub of a sandbox whose network is by domain: what tools that
 * ignore the proxy variables find when they call getaddrinfo() (the
 * sandbox's /etc/resolv.conf names 127.0.0.1, where init bound the sockets
 * served here).
 *
 * An allowed name gets an address of ward's pool, 198.18.0.0/16, inside
 * the sandbox only: the next free one, kept for that name while the proxy
 * lives and never given to another, so that a connection to an address is
 * a connection to exactly one name (an address reused across names would
 * let a connection made for one name reach another). A connection to such
 * an address reaches ward through a pool listener (see proxy.c), where the
 * name is checked again with the port, resolved for real and connected.
 * A name the policy refuses gets REFUSED at once: getaddrinfo() fails fast
 * with "no address" instead of waiting for a timeout. Nothing is forwarded
 * anywhere, so a query name cannot carry data out.
 */
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "basic/loop.h"
#include "basic/util.h"
#include "net/net-internal.h"

#define HASH_SIZE (2 * WARD_NET_MAX_NAMES)
#define MAX_TCP 16
#define TCP_IDLE_NS (10ull * 1000000000ull)
#define TCP_MAX_QUERIES 64
#define UDP_BATCH 64

struct tcp_conn {
	struct ward__stub *s;
	int fd;
	uint64_t io, timer;
	uint8_t in[2 + WARD_DNS_MAX_MESSAGE];
	size_t in_len;
	uint8_t out[2 + WARD_DNS_MAX_MESSAGE];
	size_t out_len, out_off;
	unsigned queries;
};

struct ward__stub {
	struct ward__loop *loop;
	struct ward__net_policy *np;
	int udp_fd, tcp_fd;
	uint64_t udp_io, tcp_io;
	char *names[WARD_NET_MAX_NAMES];
	unsigned n_names;
	uint16_t hash[HASH_SIZE]; /* index + 1 into names, 0: empty */
	struct tcp_conn *tcp[MAX_TCP];
};

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static struct ward__net_addr pool_addr(unsigned index)
{
	struct ward__net_addr a = {.family = AF_INET};
	uint32_t v = htonl(WARD_NET_POOL_V4 + 1 + index);

	memcpy(a.bytes, &v, 4);
	return a;
}

/* The name's pool index, given out now if it has none; -ENOSPC when the pool is used up. */
static int name_index(struct ward__stub *s, const char *name)
{
	uint32_t h = fnv1a(name) % HASH_SIZE;

	for (;;) {
		unsigned slot = s->hash[h];

		if (slot == 0)
			break;
		if (strcmp(s->names[slot - 1], name) == 0)
			return (int)slot - 1;
		h = (h + 1) % HASH_SIZE;
	}
	if (s->n_names >= WARD_NET_MAX_NAMES)
		return -ENOSPC;
	s->names[s->n_names] = strdup(name);
	if (!s->names[s->n_names])
		return -ENOMEM;
	s->hash[h] = (uint16_t)(s->n_names + 1);
	return (int)s->n_names++;
}

const char *ward__stub_name(const struct ward__stub *s, const struct ward__net_addr *a)
{
	uint32_t v;

	if (!s || a->family != AF_INET)
		return NULL;
	memcpy(&v, a->bytes, 4);
	v = ntohl(v);
	if (v <= WARD_NET_POOL_V4 || v - WARD_NET_POOL_V4 - 1 >= s->n_names)
		return NULL;
	return s->names[v - WARD_NET_POOL_V4 - 1];
}

unsigned ward__stub_names(const struct ward__stub *s)
{
	return s ? s->n_names : 0;
}

static void report_refusal(struct ward__stub *s, const char *name, enum ward_net_reason reason)
{
	struct ward_net_target t = {.host = name, .protocol = WARD_NET_PROTO_DNS};
	struct ward_net_event ev = {
		.target = &t, .reason = reason, .decided_by = "policy", .detail = "DNS question"};

	ward__net_policy_report(s->np, &ev);
}

/* The answer to one query into out; returns its length, 0 for nothing to send. */
static size_t answer(struct ward__stub *s, const uint8_t *msg, size_t len, uint8_t *out,
		     size_t size)
{
	struct ward__dns_query q;
	struct ward__net_addr addr;
	char host[WARD_NET_HOST_MAX + 1];
	enum ward_net_reason reason;
	bool id_valid;
	int r, idx;

	r = ward__dns_parse_query(msg, len, &q, &id_valid);
	if (r < 0)
		return 0;
	if (r > 0)
		return ward__dns_build_answer(&q, r, NULL, 0, out, size);
	if (q.qclass != WARD_DNS_CLASS_IN)
		return ward__dns_build_answer(&q, WARD_DNS_RCODE_NOTIMP, NULL, 0, out, size);
	/* An address literal is not a name (getaddrinfo never asks for one): nothing to give. */
	if (ward__net_host_normalize(q.name, strlen(q.name), false, host) < 0 ||
	    strspn(host, "0123456789.") == strlen(host) || strchr(host, ':'))
		return ward__dns_build_answer(&q, WARD_DNS_RCODE_REFUSED, NULL, 0, out, size);
	if (ward__net_policy_decide_name(s->np, host, &reason) == WARD_NET_OUTCOME_DENY) {
		report_refusal(s, host, reason);
		return ward__dns_build_answer(&q, WARD_DNS_RCODE_REFUSED, NULL, 0, out, size);
	}
	idx = name_index(s, host);
	if (idx < 0)
		return ward__dns_build_answer(&q, WARD_DNS_RCODE_SERVFAIL, NULL, 0, out, size);
	addr = pool_addr((unsigned)idx);
	/* AAAA and every other type: the name exists, with no record of that type. */
	return ward__dns_build_answer(&q, WARD_DNS_RCODE_NOERROR,
				      q.qtype == WARD_DNS_TYPE_A ? &addr : NULL, WARD_NET_DNS_TTL,
				      out, size);
}

static void on_udp(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct ward__stub *s = userdata;

	for (int i = 0; i < UDP_BATCH; i++) {
		uint8_t in[WARD_DNS_MAX_MESSAGE + 1], out[WARD_DNS_MAX_MESSAGE];
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		ssize_t n =
			recvfrom(fd, in, sizeof(in), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
		size_t m;

		if (n < 0)
			return;
		/* A datagram longer than any query is dropped, as is one nobody could answer. */
		if ((size_t)n > WARD_DNS_MAX_MESSAGE)
			continue;
		m = answer(s, in, (size_t)n, out, sizeof(out));
		if (m > 0)
			sendto(fd, out, m, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&from,
			       fl);
	}
}

static void tcp_close(struct tcp_conn *c)
{
	struct ward__stub *s = c->s;

	for (size_t i = 0; i < MAX_TCP; i++)
		if (s->tcp[i] == c)
			s->tcp[i] = NULL;
	ward__loop_del_io(s->loop, c->io);
	ward__loop_del_timer(s->loop, c->timer);
	close(c->fd);
	free(c);
}

static void on_tcp_idle(struct ward__loop *l, void *userdata)
{
	struct tcp_conn *c = userdata;

	c->timer = 0;
	tcp_close(c);
}

static void on_tcp_conn(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct tcp_conn *c = userdata;

	if (events & EPOLLERR) {
		tcp_close(c);
		return;
	}
	if (c->out_off < c->out_len) {
		ssize_t n = send(fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && errno != EAGAIN) {
			tcp_close(c);
			return;
		}
		if (n > 0)
			c->out_off += (size_t)n;
		if (c->out_off < c->out_len)
			return;
		c->out_off = c->out_len = 0;
		if (c->queries >= TCP_MAX_QUERIES) {
			tcp_close(c);
			return;
		}
		ward__loop_mod_io(l, c->io, EPOLLIN);
	}
	for (;;) {
		size_t want = c->in_len >= 2 ? (size_t)((c->in[0] << 8) | c->in[1]) : 0, m;

		if (c->in_len >= 2 && (want < 12 || want > WARD_DNS_MAX_MESSAGE)) {
			tcp_close(c);
			return;
		}
		if (c->in_len < 2 || c->in_len < 2 + want) {
			ssize_t n = recv(fd, c->in + c->in_len, sizeof(c->in) - c->in_len,
					 MSG_DONTWAIT);

			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
				tcp_close(c);
				return;
			}
			if (n < 0)
				return;
			c->in_len += (size_t)n;
			continue;
		}
		m = answer(c->s, c->in + 2, want, c->out + 2, sizeof(c->out) - 2);
		c->queries++;
		/* One query at a time: what follows it waits until this answer is out. */
		memmove(c->in, c->in + 2 + want, c->in_len - 2 - want);
		c->in_len -= 2 + want;
		if (m == 0) {
			tcp_close(c);
			return;
		}
		c->out[0] = (uint8_t)(m >> 8);
		c->out[1] = (uint8_t)m;
		c->out_len = m + 2;
		c->out_off = 0;
		ward__loop_mod_io(l, c->io, EPOLLOUT);
		ward__loop_del_timer(l, c->timer);
		ward__loop_add_timer(l, ward__loop_now_ns(l) + TCP_IDLE_NS, on_tcp_idle, c,
				     &c->timer);
		return;
	}
}

static void on_tcp_listen(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct ward__stub *s = userdata;
	struct tcp_conn *c;
	size_t slot = MAX_TCP;
	int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (cfd < 0)
		return;
	for (size_t i = 0; i < MAX_TCP; i++)
		if (!s->tcp[i]) {
			slot = i;
			break;
		}
	c = slot < MAX_TCP ? calloc(1, sizeof(*c)) : NULL;
	if (!c) {
		close(cfd);
		return;
	}
	c->s = s;
	c->fd = cfd;
	if (ward__loop_add_io(l, cfd, EPOLLIN, on_tcp_conn, c, &c->io) < 0 ||
	    ward__loop_add_timer(l, ward__loop_now_ns(l) + TCP_IDLE_NS, on_tcp_idle, c, &c->timer) <
		    0) {
		ward__loop_del_io(l, c->io);
		close(cfd);
		free(c);
		return;
	}
	s->tcp[slot] = c;
}

int ward__stub_new(struct ward__loop *l, struct ward__net_policy *np, struct ward__stub **ret)
{
	struct ward__stub *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->loop = l;
	s->np = np;
	s->udp_fd = s->tcp_fd = -1;
	*ret = s;
	return 0;
}

void ward__stub_free(struct ward__stub *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < MAX_TCP; i++)
		if (s->tcp[i])
			tcp_close(s->tcp[i]);
	ward__loop_del_io(s->loop, s->udp_io);
	ward__loop_del_io(s->loop, s->tcp_io);
	if (s->udp_fd >= 0)
		close(s->udp_fd);
	if (s->tcp_fd >= 0)
		close(s->tcp_fd);
	for (unsigned i = 0; i < s->n_names; i++)
		free(s->names[i]);
	free(s);
}

static int add_fd(struct ward__stub *s, int fd, int *slot, uint64_t *io, ward__loop_io_fn fn)
{
	int r;

	if (*slot >= 0) {
		close(fd);
		return -EEXIST;
	}
	r = ward__fd_nonblock(fd, true);
	if (r >= 0)
		r = ward__loop_add_io(s->loop, fd, EPOLLIN, fn, s, io);
	if (r < 0) {
		close(fd);
		return r;
	}
	*slot = fd;
	return 0;
}

int ward__stub_add_udp(struct ward__stub *s, int fd)
{
	return add_fd(s, fd, &s->udp_fd, &s->udp_io, on_udp);
}

int ward__stub_add_tcp(struct ward__stub *s, int fd)
{
	return add_fd(s, fd, &s->tcp_fd, &s->tcp_io, on_tcp_listen);
}
