/* SPDX-License-Identifier: MIT */
/*
 * A sandbox's network by domain, served (netproxy.h): the glue between the
 * sandbox's net socket and src/net's proxy engine, and between the
 * engine's refusals and the sandbox's denials.
 */
#include <sys/epoll.h>
#include <sys/resource.h>

#include "basic/error.h"
#include "basic/loop.h"
#include "exec/netproxy.h"

struct ward__netproxy {
	struct ward__loop *loop;
	bool own_loop;
	struct ward__sandbox *sb;
	struct ward_net_proxy *px;
	struct ward_net_hooks caller; /* the holder's hooks, called after ours */
	uint64_t io;
};

static enum ward_net_decision on_decide(void *userdata, const struct ward_net_target *t,
					const char **ret_by)
{
	struct ward__netproxy *np = userdata;

	if (!np->caller.decide)
		return WARD_NET_DECIDE_NONE;
	return np->caller.decide(np->caller.userdata, t, ret_by);
}

static int on_ask(void *userdata, struct ward_net_proxy *px, uint64_t id,
		  const struct ward_net_target *t)
{
	struct ward__netproxy *np = userdata;

	if (!np->caller.ask)
		return -EOPNOTSUPP;
	return np->caller.ask(np->caller.userdata, px, id, t);
}

static void on_cancelled(void *userdata, struct ward_net_proxy *px, uint64_t id)
{
	struct ward__netproxy *np = userdata;

	if (np->caller.cancelled)
		np->caller.cancelled(np->caller.userdata, px, id);
}

static void on_event(void *userdata, const struct ward_net_event *ev)
{
	struct ward__netproxy *np = userdata;

	if (!ev->allowed) {
		char target[WARD_NET_HOST_MAX + 16];
		bool v6 = strchr(ev->target->host, ':') != NULL;

		/* A DNS question has no port, nor the "*" that stands for refusals past the cap. */
		if (ev->target->protocol == WARD_NET_PROTO_DNS || ev->target->port == 0)
			snprintf(target, sizeof(target), "%s", ev->target->host);
		else
			snprintf(target, sizeof(target), "%s%s%s:%u", v6 ? "[" : "",
				 ev->target->host, v6 ? "]" : "", ev->target->port);
		ward__sandbox_add_net_denial(np->sb, target, ward__net_reason_name(ev->reason));
	}
	if (np->caller.event)
		np->caller.event(np->caller.userdata, ev);
}

static enum ward_net_listener_kind kind_of(char tag)
{
	switch (tag) {
	case WARD_NETFD_HTTP:
		return WARD_NET_LISTEN_HTTP;
	case WARD_NETFD_SOCKS5:
		return WARD_NET_LISTEN_SOCKS5;
	case WARD_NETFD_DNS_UDP:
		return WARD_NET_LISTEN_DNS_UDP;
	case WARD_NETFD_DNS_TCP:
		return WARD_NET_LISTEN_DNS_TCP;
	case WARD_NETFD_POOL:
		return WARD_NET_LISTEN_POOL;
	case WARD_NETFD_SOCKS5_UDP:
		return WARD_NET_LISTEN_SOCKS5_UDP;
	default:
		return 0;
	}
}

/* Takes every descriptor the sandbox sent; stops watching when it closed its end. */
static void on_net_fd(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct ward__netproxy *np = userdata;

	for (int i = 0; i < 64; i++) {
		char tag = 0;
		int lfd = ward__recv_fd_tag(fd, &tag);
		enum ward_net_listener_kind kind;

		if (lfd == -EAGAIN || lfd == -EINTR)
			return;
		if (lfd < 0) {
			/* init is gone (or sent garbage): no more listeners will come. */
			ward__loop_del_io(l, np->io);
			np->io = 0;
			return;
		}
		kind = kind_of(tag);
		if (!kind) {
			close(lfd);
			continue;
		}
		ward__net_proxy_add_listener(np->px, kind, lfd);
	}
}

static void raise_nofile(void)
{
	static bool done;
	struct rlimit rl;

	if (done)
		return;
	done = true;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		/*
		 * Enough for the connection cap at six descriptors each within the
		 * three quarters of the limit the proxies may hold (proxy.c), not
		 * the whole hard limit.
		 */
		rlim_t want = (rlim_t)WARD_NET_DEFAULT_MAX_CONNS * 8;

		rl.rlim_cur = MIN(rl.rlim_max, MAX(rl.rlim_cur, want));
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int ward__netproxy_start(struct ward__loop *loop, struct ward__sandbox *sb,
			 const struct ward_policy *p, const struct ward_net_hooks *hooks, bool ask,
			 struct ward__netproxy **ret, struct ward_error *err)
{
	struct ward_net_settings s = {
		.allow = p->allow_domains,
		.n_allow = p->n_allow_domains,
		.deny = p->deny_domains,
		.n_deny = p->n_deny_domains,
		.allow_addresses = p->allow_addresses,
		.n_allow_addresses = p->n_allow_addresses,
		.dns_server = p->dns_server,
		.ask = ask,
		/* On a holder's loop (a server's), other sandboxes' proxies share the process. */
		.shared = loop != NULL,
	};
	struct ward_net_hooks own = {
		.decide = on_decide, .ask = on_ask, .cancelled = on_cancelled, .event = on_event};
	struct ward__netproxy *np;
	int r;

	if (sb->net_fd < 0)
		return ward__error(err, -EINVAL, "network", "the sandbox has no network by domain");
	np = calloc(1, sizeof(*np));
	if (!np)
		return ward__error(err, -ENOMEM, "network", "out of memory");
	np->sb = sb;
	if (hooks)
		np->caller = *hooks;
	own.userdata = np;
	if (loop) {
		np->loop = loop;
	} else {
		r = ward__loop_new(&np->loop);
		if (r < 0) {
			free(np);
			return ward__error(err, r, "network", "cannot create an event loop: %m");
		}
		np->own_loop = true;
	}
	raise_nofile();
	r = ward__net_proxy_new(np->loop, &s, &own, &np->px, err);
	if (r >= 0)
		r = ward__loop_add_io(np->loop, sb->net_fd, EPOLLIN, on_net_fd, np, &np->io);
	if (r < 0) {
		if (!err || !err->message[0])
			ward__error(err, r, "network", "cannot start the proxy: %m");
		ward__netproxy_free(np);
		return r;
	}
	/* The listeners sent during set-up are waiting: take them now. */
	on_net_fd(np->loop, sb->net_fd, EPOLLIN, np);
	if (np->own_loop)
		ward__loop_iterate(np->loop, 0);
	*ret = np;
	return 0;
}

void ward__netproxy_free(struct ward__netproxy *np)
{
	if (!np)
		return;
	ward__net_proxy_free(np->px);
	ward__loop_del_io(np->loop, np->io);
	if (np->own_loop)
		ward__loop_free(np->loop);
	free(np);
}

int ward__netproxy_fd(const struct ward__netproxy *np)
{
	return np && np->own_loop ? ward__loop_fd(np->loop) : -1;
}

void ward__netproxy_dispatch(struct ward__netproxy *np)
{
	if (np && np->own_loop)
		ward__loop_iterate(np->loop, 0);
}

struct ward_net_proxy *ward__netproxy_engine(struct ward__netproxy *np)
{
	return np ? np->px : NULL;
}
