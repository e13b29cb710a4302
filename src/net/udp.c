/* SPDX-License-Identifier: MIT */
/*
 * SOCKS5's UDP relay (RFC 1928 section 7) for the proxy: one UDP socket on
 * the sandbox's loopback (127.0.0.1:1080, made by init like the other
 * listeners) that every association shares, and sockets of ward's own
 * towards the hosts.
 *
 * UDP is allowed only where a network_rule line allows socks5_udp for the
 * host (Codex's rule): a host pattern allows streams, not datagrams, which
 * carry data out without a connection to refuse. Nobody is asked about a
 * datagram (it cannot wait for a person); it is dropped, and the refusal
 * reported once. The address checks are those of the streams: resolved by
 * ward, public (or --allow-address), sent to exactly the address checked;
 * an answer is relayed only from an address a datagram was sent to.
 *
 * Bounded: associations (one per SOCKS5 control connection), destinations
 * per association, one datagram kept while its name is being resolved.
 */
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "basic/loop.h"
#include "basic/util.h"
#include "net/net-internal.h"

#define MAX_DESTS 32
#define DGRAM_MAX 65536

struct dest {
	char host[WARD_NET_HOST_MAX + 1];
	struct ward__net_addr addr;
	uint16_t port;
	uint64_t out, in;
};

struct ward__udp_assoc {
	struct ward__udp *u;
	struct ward__udp_assoc *next;
	uint16_t
		client_port; /* the client's source port on the sandbox's loopback, 0: not yet known */
	int fd[2]; /* towards IPv4 and IPv6 hosts, made on first use */
	uint64_t io[2];
	struct dest dests[MAX_DESTS];
	unsigned n_dests;
	/* A datagram waiting for its name's resolution. */
	uint8_t *queued;
	size_t queued_len;
	char queued_host[WARD_NET_HOST_MAX + 1];
	uint16_t queued_port;
	uint64_t lookup;
};

struct ward__udp {
	struct ward__loop *loop;
	struct ward__net_policy *np;
	struct ward__resolver *resolver;
	int fd; /* the sandbox's socket */
	uint64_t io;
	struct ward__udp_assoc *assocs;
	uint8_t buf[DGRAM_MAX + 32];
};

static void report(struct ward__udp *u, const char *host, uint16_t port, bool allowed,
		   enum ward_net_reason reason, const char *detail, const struct dest *d)
{
	struct ward_net_target t = {
		.host = host, .port = port, .protocol = WARD_NET_PROTO_SOCKS5_UDP};
	char a[INET6_ADDRSTRLEN] = "";
	struct ward_net_event ev = {
		.target = &t,
		.allowed = allowed,
		.reason = reason,
		.decided_by = "rules",
		.detail = detail,
	};

	if (d) {
		ward__net_addr_format(&d->addr, a, sizeof(a));
		ev.address = a;
		ev.bytes_out = d->out;
		ev.bytes_in = d->in;
	}
	ward__net_policy_report(u->np, &ev);
}

/* An answer from a host: relayed only from an address a datagram went to. */
static void on_upstream(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct ward__udp_assoc *as = userdata;
	struct ward__udp *u = as->u;

	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		struct sockaddr_in to = {.sin_family = AF_INET,
					 .sin_port = htons(as->client_port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		struct ward__net_addr a;
		uint16_t port;
		size_t h;
		ssize_t n = recvfrom(fd, u->buf + 22, DGRAM_MAX, MSG_DONTWAIT,
				     (struct sockaddr *)&from, &fl);
		struct dest *d = NULL;

		if (n < 0)
			return;
		if (ward__net_addr_from_sockaddr((struct sockaddr *)&from, fl, &a, &port) < 0)
			continue;
		for (unsigned k = 0; k < as->n_dests; k++)
			if (as->dests[k].port == port &&
			    memcmp(&as->dests[k].addr, &a, sizeof(a)) == 0)
				d = &as->dests[k];
		if (!d || !as->client_port)
			continue;
		/* The header goes right before the data, in the room left for it. */
		{
			uint8_t hdr[22];

			h = ward__socks5_udp_header(&a, port, hdr);
			memcpy(u->buf + 22 - h, hdr, h);
		}
		if (sendto(u->fd, u->buf + 22 - h, h + (size_t)n, MSG_DONTWAIT,
			   (struct sockaddr *)&to, sizeof(to)) > 0)
			d->in += (uint64_t)n;
	}
}

static int upstream_fd(struct ward__udp_assoc *as, int family)
{
	int i = family == AF_INET6;

	if (as->fd[i] >= 0)
		return as->fd[i];
	as->fd[i] = socket(family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (as->fd[i] < 0)
		return -errno;
	if (ward__loop_add_io(as->u->loop, as->fd[i], EPOLLIN, on_upstream, as, &as->io[i]) < 0) {
		close(as->fd[i]);
		as->fd[i] = -1;
		return -ENOMEM;
	}
	return as->fd[i];
}

/* Sends to a checked address; the destination is remembered so that its answers come back. */
static void send_to(struct ward__udp_assoc *as, const char *host, const struct ward__net_addr *a,
		    uint16_t port, const void *data, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = ward__net_addr_to_sockaddr(a, port, &ss);
	struct dest *d = NULL;
	int fd;

	for (unsigned k = 0; k < as->n_dests; k++)
		if (as->dests[k].port == port && memcmp(&as->dests[k].addr, a, sizeof(*a)) == 0)
			d = &as->dests[k];
	if (!d) {
		if (as->n_dests >= MAX_DESTS)
			return;
		d = &as->dests[as->n_dests++];
		*d = (struct dest){.addr = *a, .port = port};
		snprintf(d->host, sizeof(d->host), "%s", host);
	}
	fd = upstream_fd(as, a->family);
	if (fd >= 0 && sendto(fd, data, len, MSG_DONTWAIT, (struct sockaddr *)&ss, sl) > 0)
		d->out += len;
}

static bool addresses_ok(struct ward__udp *u, const char *host, uint16_t port,
			 const struct ward__net_addr *a, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *why = NULL;

		if (!ward__net_policy_address_ok(u->np, &a[i], &why)) {
			report(u, host, port, false, WARD_NET_REASON_NON_PUBLIC, why, NULL);
			return false;
		}
	}
	return n > 0;
}

static void on_resolved(void *userdata, int error, const struct ward__net_addr *addrs, size_t n)
{
	struct ward__udp_assoc *as = userdata;

	as->lookup = 0;
	if (error >= 0 && addresses_ok(as->u, as->queued_host, as->queued_port, addrs, n))
		send_to(as, as->queued_host, &addrs[0], as->queued_port, as->queued,
			as->queued_len);
	free(as->queued);
	as->queued = NULL;
	as->queued_len = 0;
}

static struct ward__udp_assoc *assoc_for(struct ward__udp *u, uint16_t sport)
{
	struct ward__udp_assoc *unbound = NULL;

	for (struct ward__udp_assoc *as = u->assocs; as; as = as->next) {
		if (as->client_port == sport)
			return as;
		if (!as->client_port)
			unbound = as;
	}
	/* An association that did not say its port belongs to the first client that sends. */
	if (unbound)
		unbound->client_port = sport;
	return unbound;
}

static void on_datagram(struct ward__udp *u, const uint8_t *msg, size_t len, uint16_t sport)
{
	struct ward__udp_assoc *as = assoc_for(u, sport);
	struct ward_net_target t = {.protocol = WARD_NET_PROTO_SOCKS5_UDP};
	char raw[256], host[WARD_NET_HOST_MAX + 1];
	struct ward__net_addr a;
	enum ward_net_reason reason;
	const char *by;
	bool is_addr;
	uint16_t port;
	int h;

	if (!as)
		return;
	h = ward__socks5_udp_parse(msg, len, raw, &a, &is_addr, &port);
	if (h < 0 || port == 0 || ward__net_host_normalize(raw, strlen(raw), false, host) < 0)
		return;
	t.host = host;
	t.port = port;
	if (ward__net_policy_decide(u->np, &t, &reason, &by) != WARD_NET_OUTCOME_ALLOW) {
		report(u, host, port, false,
		       reason == WARD_NET_REASON_NONE ? WARD_NET_REASON_NOT_ALLOWED : reason,
		       "UDP needs a network_rule with protocol socks5_udp", NULL);
		return;
	}
	if (ward__net_addr_parse(host, &a)) {
		if (addresses_ok(u, host, port, &a, 1))
			send_to(as, host, &a, port, msg + h, len - (size_t)h);
		return;
	}
	/* A known destination's name is not asked again: its checked address is used. */
	for (unsigned k = 0; k < as->n_dests; k++)
		if (as->dests[k].port == port && strcmp(as->dests[k].host, host) == 0) {
			send_to(as, host, &as->dests[k].addr, port, msg + h, len - (size_t)h);
			return;
		}
	/* One datagram waits for its name; more are dropped meanwhile (UDP may drop). */
	if (as->queued)
		return;
	as->queued = malloc(len - (size_t)h + 1);
	if (!as->queued)
		return;
	memcpy(as->queued, msg + h, len - (size_t)h);
	as->queued_len = len - (size_t)h;
	snprintf(as->queued_host, sizeof(as->queued_host), "%s", host);
	as->queued_port = port;
	if (ward__resolver_lookup(u->resolver, host, on_resolved, as, &as->lookup) < 0) {
		free(as->queued);
		as->queued = NULL;
	}
}

static void on_sandbox(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct ward__udp *u = userdata;

	for (int i = 0; i < 64; i++) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(fd, u->buf, DGRAM_MAX, MSG_DONTWAIT, (struct sockaddr *)&from,
				     &fl);

		if (n < 0)
			return;
		if (fl >= sizeof(from) && from.sin_family == AF_INET)
			on_datagram(u, u->buf, (size_t)n, ntohs(from.sin_port));
	}
}

int ward__udp_new(struct ward__loop *l, struct ward__net_policy *np, struct ward__resolver *r,
		  struct ward__udp **ret)
{
	struct ward__udp *u = calloc(1, sizeof(*u));

	if (!u)
		return -ENOMEM;
	u->loop = l;
	u->np = np;
	u->resolver = r;
	u->fd = -1;
	*ret = u;
	return 0;
}

int ward__udp_add_socket(struct ward__udp *u, int fd)
{
	int r;

	if (u->fd >= 0) {
		close(fd);
		return -EEXIST;
	}
	r = ward__fd_nonblock(fd, true);
	if (r >= 0)
		r = ward__loop_add_io(u->loop, fd, EPOLLIN, on_sandbox, u, &u->io);
	if (r < 0) {
		close(fd);
		return r;
	}
	u->fd = fd;
	return 0;
}

bool ward__udp_available(const struct ward__udp *u, struct ward__net_addr *ret_addr,
			 uint16_t *ret_port)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (!u || u->fd < 0 || getsockname(u->fd, (struct sockaddr *)&ss, &sl) < 0)
		return false;
	return ward__net_addr_from_sockaddr((struct sockaddr *)&ss, sl, ret_addr, ret_port) >= 0;
}

int ward__udp_associate(struct ward__udp *u, uint16_t client_port, struct ward__udp_assoc **ret)
{
	struct ward__udp_assoc *as = calloc(1, sizeof(*as));

	if (!as)
		return -ENOMEM;
	as->u = u;
	as->client_port = client_port;
	as->fd[0] = as->fd[1] = -1;
	as->next = u->assocs;
	u->assocs = as;
	*ret = as;
	return 0;
}

void ward__udp_release(struct ward__udp_assoc *as)
{
	struct ward__udp *u;

	if (!as)
		return;
	u = as->u;
	for (struct ward__udp_assoc **p = &u->assocs; *p; p = &(*p)->next)
		if (*p == as) {
			*p = as->next;
			break;
		}
	for (unsigned k = 0; k < as->n_dests; k++)
		report(u, as->dests[k].host, as->dests[k].port, true, WARD_NET_REASON_NONE, NULL,
		       &as->dests[k]);
	ward__resolver_cancel(u->resolver, as->lookup);
	for (int i = 0; i < 2; i++) {
		ward__loop_del_io(u->loop, as->io[i]);
		if (as->fd[i] >= 0)
			close(as->fd[i]);
	}
	free(as->queued);
	free(as);
}

void ward__udp_free(struct ward__udp *u)
{
	if (!u)
		return;
	while (u->assocs)
		ward__udp_release(u->assocs);
	ward__loop_del_io(u->loop, u->io);
	if (u->fd >= 0)
		close(u->fd);
	free(u);
}
