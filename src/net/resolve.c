/* SPDX-License-Identifier: MIT */
/*
 * Name resolution for the proxy, with c-ares on ward's event loop.
 *
 * Why c-ares: the proxy must not block its loop (every sandbox's
 * connections share it in a server), glibc's getaddrinfo() blocks and its
 * asynchronous getaddrinfo_a() runs threads, and a resolver written here
 * would be one more parser of untrusted answers. c-ares is Debian's
 * well-kept asynchronous resolver (libc-ares-dev), used by curl and Node;
 * it tells us which sockets to watch (ARES_OPT_SOCK_STATE_CB) and when its
 * next timeout is, which maps directly onto the loop.
 *
 * Search domains are off (ARES_FLAG_NOSEARCH): the name that was checked
 * against the patterns must be the name resolved, never "name.corp.example".
 */
#include <ares.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <sys/epoll.h>

#include "basic/error.h"
#include "basic/loop.h"
#include "basic/util.h"
#include "net/net-internal.h"

#define MAX_SOCKS 16

struct lookup {
	struct lookup *next, *prev;
	struct ward__resolver *r;
	uint64_t id;
	ward__resolve_fn fn;
	void *userdata;
	bool cancelled;
};

struct sock {
	int fd;
	uint64_t io;
};

struct ward__resolver {
	struct ward__loop *loop;
	ares_channel channel;
	bool have_channel;
	char csv[INET6_ADDRSTRLEN + 16]; /* the named server, or empty: the host's */
	struct sock socks[MAX_SOCKS];
	uint64_t timer;
	uint64_t next_id;
	struct lookup *lookups;
};

static void reschedule(struct ward__resolver *r);

static void on_sock_io(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct ward__resolver *r = userdata;

	ares_process_fd(r->channel, events & (EPOLLIN | EPOLLHUP | EPOLLERR) ? fd : ARES_SOCKET_BAD,
			events & EPOLLOUT ? fd : ARES_SOCKET_BAD);
	reschedule(r);
}

static void on_sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
	struct ward__resolver *r = data;
	uint32_t ev = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);
	struct sock *free_slot = NULL;

	for (size_t i = 0; i < MAX_SOCKS; i++) {
		struct sock *s = &r->socks[i];

		if (s->io && s->fd == fd) {
			if (ev == 0) {
				ward__loop_del_io(r->loop, s->io);
				s->io = 0;
			} else {
				ward__loop_mod_io(r->loop, s->io, ev);
			}
			return;
		}
		if (!s->io && !free_slot)
			free_slot = s;
	}
	/*
	 * c-ares opens a socket or two per server; should it ever open more
	 * than the table holds, its queries on the others time out.
	 */
	if (ev && free_slot &&
	    ward__loop_add_io(r->loop, fd, ev, on_sock_io, r, &free_slot->io) >= 0)
		free_slot->fd = fd;
}

static void on_timer(struct ward__loop *l, void *userdata)
{
	struct ward__resolver *r = userdata;

	r->timer = 0;
	ares_process_fd(r->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	reschedule(r);
}

static void reschedule(struct ward__resolver *r)
{
	struct timeval tv, *t;

	ward__loop_del_timer(r->loop, r->timer);
	r->timer = 0;
	if (!r->have_channel)
		return;
	t = ares_timeout(r->channel, NULL, &tv);
	if (!t)
		return;
	ward__loop_add_timer(r->loop,
			     ward__loop_now_ns(r->loop) + (uint64_t)t->tv_sec * 1000000000ull +
				     (uint64_t)t->tv_usec * 1000ull,
			     on_timer, r, &r->timer);
}

/* "IP", "IP:PORT" or "[IPv6]:PORT" into c-ares' CSV form; -EINVAL otherwise. */
static int server_csv(const char *server, char *buf, size_t size)
{
	struct ward__net_addr a;
	char host[INET6_ADDRSTRLEN + 2];
	const char *port = NULL;
	size_t hl;

	if (server[0] == '[') {
		const char *close = strchr(server, ']');

		if (!close)
			return -EINVAL;
		hl = (size_t)(close - server - 1);
		if (close[1] == ':')
			port = close + 2;
		else if (close[1])
			return -EINVAL;
		server++;
	} else {
		const char *colon = strchr(server, ':');

		hl = strlen(server);
		if (colon && !strchr(colon + 1, ':')) {
			hl = (size_t)(colon - server);
			port = colon + 1;
		}
	}
	if (hl == 0 || hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, server, hl);
	host[hl] = '\0';
	if (!ward__net_addr_parse(host, &a))
		return -EINVAL;
	if (port) {
		uint64_t p;

		if (ward__parse_u64(port, &p) < 0 || p == 0 || p > 65535)
			return -EINVAL;
		snprintf(buf, size, a.family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
	} else {
		snprintf(buf, size, "%s", host);
	}
	return 0;
}

/*
 * The channel is made at the first lookup, not with the resolver: c-ares
 * reads the host's resolver configuration when it starts, and a sandbox
 * that never connects anywhere (most commands) should not pay for it at
 * its launch.
 */
static int channel_start(struct ward__resolver *r)
{
	static bool library_ready;
	struct ares_options o = {
		.flags = ARES_FLAG_NOSEARCH,
		.timeout = 3000,
		.tries = 2,
		.sock_state_cb = on_sock_state,
		.sock_state_cb_data = r,
		.lookups = (char *)"b",
	};
	int mask = ARES_OPT_FLAGS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_SOCK_STATE_CB;

	if (r->have_channel)
		return 0;
	if (!library_ready) {
		if (ares_library_init(ARES_LIB_INIT_ALL) != ARES_SUCCESS)
			return -EIO;
		library_ready = true;
	}
	/* A named server alone decides: the host's /etc/hosts must not answer for it. */
	if (r->csv[0])
		mask |= ARES_OPT_LOOKUPS;
	if (ares_init_options(&r->channel, &o, mask) != ARES_SUCCESS)
		return -EIO;
	r->have_channel = true;
	if (r->csv[0] && ares_set_servers_ports_csv(r->channel, r->csv) != ARES_SUCCESS)
		return -EIO;
	return 0;
}

int ward__resolver_new(struct ward__loop *l, const char *server, struct ward__resolver **ret,
		       struct ward_error *err)
{
	struct ward__resolver *r;
	char csv[INET6_ADDRSTRLEN + 16] = "";

	if (server && server_csv(server, csv, sizeof(csv)) < 0)
		return ward__error(err, -EINVAL, "net",
				   "not a DNS server address '%s' (IP or IP:PORT)", server);
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->loop = l;
	r->next_id = 1;
	snprintf(r->csv, sizeof(r->csv), "%s", csv);
	*ret = r;
	return 0;
}

static void lookup_unlink(struct lookup *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else if (k->r->lookups == k)
		k->r->lookups = k->next;
	if (k->next)
		k->next->prev = k->prev;
	k->next = k->prev = NULL;
}

void ward__resolver_free(struct ward__resolver *r)
{
	if (!r)
		return;
	/* The pending callbacks run now, with ARES_EDESTRUCTION: mark them so none reaches its owner. */
	for (struct lookup *k = r->lookups; k; k = k->next)
		k->cancelled = true;
	if (r->have_channel)
		ares_destroy(r->channel);
	for (size_t i = 0; i < MAX_SOCKS; i++)
		ward__loop_del_io(r->loop, r->socks[i].io);
	ward__loop_del_timer(r->loop, r->timer);
	free(r);
}

static int ares_errno(int status)
{
	switch (status) {
	case ARES_ENOTFOUND:
	case ARES_ENODATA:
	case ARES_ENONAME:
		return -ENOENT;
	case ARES_ETIMEOUT:
		return -ETIMEDOUT;
	case ARES_ENOMEM:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

static void on_result(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	struct lookup *k = arg;
	struct ward__net_addr addrs[WARD_RESOLVE_MAX_ADDRS];
	size_t n = 0;

	lookup_unlink(k);
	if (!k->cancelled && status != ARES_EDESTRUCTION && status != ARES_ECANCELLED) {
		if (status == ARES_SUCCESS && res)
			for (struct ares_addrinfo_node *a = res->nodes;
			     a && n < WARD_RESOLVE_MAX_ADDRS; a = a->ai_next)
				if (ward__net_addr_from_sockaddr(a->ai_addr, a->ai_addrlen,
								 &addrs[n], NULL) >= 0)
					n++;
		if (status == ARES_SUCCESS && n == 0)
			status = ARES_ENODATA;
		k->fn(k->userdata, status == ARES_SUCCESS ? 0 : ares_errno(status), addrs, n);
	}
	if (res)
		ares_freeaddrinfo(res);
	free(k);
}

int ward__resolver_lookup(struct ward__resolver *r, const char *name, ward__resolve_fn fn,
			  void *userdata, uint64_t *ret_id)
{
	struct ares_addrinfo_hints hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct lookup *k;
	int e = channel_start(r);

	if (e < 0)
		return e;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->r = r;
	k->id = r->next_id++;
	k->fn = fn;
	k->userdata = userdata;
	k->next = r->lookups;
	if (r->lookups)
		r->lookups->prev = k;
	r->lookups = k;
	if (ret_id)
		*ret_id = k->id;
	/* The id is the caller's before c-ares may answer (at once, from its cache or an error). */
	ares_getaddrinfo(r->channel, name, NULL, &hints, on_result, k);
	reschedule(r);
	return 0;
}

void ward__resolver_cancel(struct ward__resolver *r, uint64_t id)
{
	if (!r || id == 0)
		return;
	for (struct lookup *k = r->lookups; k; k = k->next)
		if (k->id == id) {
			k->cancelled = true;
			return;
		}
}
