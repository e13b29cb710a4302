/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/macro.h"
#include "net/net.h"
#include "net/proxy.h"

/*
 * The pieces of the proxy engine under proxy.c, each on the event loop and
 * none calling another: the byte mover (tunnel.c), the resolver (resolve.c),
 * the decisions shared by the proxy and the DNS stub (decide.c, on local.c,
 * which asks the kernel whether an address is this machine's), and the DNS
 * stub with its address pool (stub.c, on decide.c).
 */

struct ward__loop;

/* ------------------------------------------------------------ tunnel.c */

/*
 * Moves bytes between a client (in the sandbox) and an upstream (the host
 * connected to) until both sides are done, with splice(2) through one pipe
 * per direction, made on first use. A direction reads only while what it
 * read before has been written: back-pressure, never buffering. EOF on one
 * side becomes shutdown(SHUT_WR) on the other.
 *
 * With a body framer (a plain HTTP request), the client's direction is
 * copied through a small buffer instead, exactly as far as the body goes,
 * and the tunnel ends when the upstream's answer has been delivered.
 */
struct ward__tunnel;
/* Called once, when the tunnel is over (error 0, or -errno); the tunnel may be freed in it. */
typedef void (*ward__tunnel_done_fn)(void *userdata, int error);

struct ward__tunnel_opts {
	int client; /* owned by the tunnel from the call on, even on failure */
	int upstream;
	const void *to_upstream; /* sent first (a request head); copied */
	size_t to_upstream_len;
	bool to_upstream_ends; /* nothing more goes upstream (the request is complete already) */
	const void *to_client; /* sent first (a CONNECT or SOCKS5 reply); copied */
	size_t to_client_len;
	const struct ward__body *body; /* NULL: a raw tunnel; else the request body still to come */
	/*
	 * The proxy's count of grown (bulk) pipes, shared by its tunnels, and
	 * how many it allows: a grown pipe may hold a megabyte of kernel memory
	 * while its writer waits. NULL: never grow.
	 */
	unsigned *bulk_pipes;
	unsigned bulk_pipes_max;
};

WARD_INTERNAL int ward__tunnel_new(struct ward__loop *l, const struct ward__tunnel_opts *o,
				   ward__tunnel_done_fn fn, void *userdata,
				   struct ward__tunnel **ret);
/* Closes both sockets and the pipes. Accepts NULL. */
WARD_INTERNAL void ward__tunnel_free(struct ward__tunnel *t);
/* Bytes delivered so far: to the upstream (out of the sandbox) and to the client. */
WARD_INTERNAL void ward__tunnel_bytes(const struct ward__tunnel *t, uint64_t *ret_out,
				      uint64_t *ret_in);

/* ------------------------------------------------------------ resolve.c */

/*
 * Name resolution with c-ares, on the loop: no thread, no blocking
 * getaddrinfo(). One resolver per proxy.
 */
struct ward__resolver;
#define WARD_RESOLVE_MAX_ADDRS 16
/* error 0 with n >= 1 addresses, or -errno (-ENOENT: no such name, -ETIMEDOUT, -EIO). */
typedef void (*ward__resolve_fn)(void *userdata, int error, const struct ward__net_addr *addrs,
				 size_t n);

WARD_INTERNAL int ward__resolver_new(struct ward__loop *l, const char *server,
				     struct ward__resolver **ret, struct ward_error *err);
/* Cancels every lookup (their callbacks are not called). Accepts NULL. */
WARD_INTERNAL void ward__resolver_free(struct ward__resolver *r);
/*
 * Starts a lookup of name (A and AAAA). The callback may run before this
 * returns. *ret_id (optional) identifies it for ward__resolver_cancel().
 */
WARD_INTERNAL int ward__resolver_lookup(struct ward__resolver *r, const char *name,
					ward__resolve_fn fn, void *userdata, uint64_t *ret_id);
/* The callback of lookup id will not be called. Safe with a finished or zero id. */
WARD_INTERNAL void ward__resolver_cancel(struct ward__resolver *r, uint64_t id);

/* ------------------------------------------------------------ local.c */

/*
 * Whether a is an address of the machine ward runs on (the kernel routes it
 * locally, or it is a broadcast address of one of its networks): 1, 0, or
 * -errno when the kernel could not be asked.
 */
WARD_INTERNAL int ward__net_addr_is_local(const struct ward__net_addr *a);

/* ------------------------------------------------------------ decide.c */

/* The static part of the settings, and the hooks, that both the proxy and the stub decide with. */
struct ward__net_policy {
	struct ward__net_pattern *allow;
	size_t n_allow;
	struct ward__net_pattern *deny;
	size_t n_deny;
	struct ward__net_cidr *allow_addresses;
	size_t n_allow_addresses;
	bool ask;
	struct ward_net_hooks hooks;
	/* (target, reason) pairs already reported, so a retrying client is one denial. */
	char **reported;
	size_t n_reported;
	uint64_t n_unreported; /* new refusals past the cap, not reported one by one */
};

enum ward__net_outcome {
	WARD_NET_OUTCOME_ALLOW = 1,
	WARD_NET_OUTCOME_DENY = 2,
	WARD_NET_OUTCOME_ASK = 3, /* undecided, and a person may be asked */
};

WARD_INTERNAL int ward__net_policy_init(struct ward__net_policy *np,
					const struct ward_net_settings *s,
					const struct ward_net_hooks *hooks);
WARD_INTERNAL void ward__net_policy_release(struct ward__net_policy *np);
/* Patterns, then the decide hook. *ret_reason for DENY, *ret_by who decided. */
WARD_INTERNAL enum ward__net_outcome ward__net_policy_decide(struct ward__net_policy *np,
							     const struct ward_net_target *t,
							     enum ward_net_reason *ret_reason,
							     const char **ret_by);
/*
 * For the DNS stub: whether a name may get a pool address. Ports are not
 * known yet: a name is answered when a pattern or rule for any port allows
 * it (or a person may be asked), refused when a deny pattern without a port
 * or a deny rule names it.
 */
WARD_INTERNAL enum ward__net_outcome ward__net_policy_decide_name(struct ward__net_policy *np,
								  const char *name,
								  enum ward_net_reason *ret_reason);
/*
 * Whether an address may be connected to: inside an --allow-address range, or
 * public and not an address of this machine (local.c).
 */
WARD_INTERNAL bool ward__net_policy_address_ok(const struct ward__net_policy *np,
					       const struct ward__net_addr *a, const char **why);
/* Reports ev through the hooks (a refusal only once per target and reason). */
WARD_INTERNAL void ward__net_policy_report(struct ward__net_policy *np,
					   const struct ward_net_event *ev);

/* ------------------------------------------------------------ udp.c */

/*
 * SOCKS5's UDP relay: the sandbox's UDP socket and one association per
 * UDP ASSOCIATE control connection (see udp.c for what is allowed).
 */
struct ward__udp;
struct ward__udp_assoc;
WARD_INTERNAL int ward__udp_new(struct ward__loop *l, struct ward__net_policy *np,
				struct ward__resolver *r, struct ward__udp **ret);
WARD_INTERNAL void ward__udp_free(struct ward__udp *u);
/* Serves the sandbox's bound UDP socket; owns fd (closed on failure). */
WARD_INTERNAL int ward__udp_add_socket(struct ward__udp *u, int fd);
/* Whether datagrams can be relayed, and where clients send them (the socket's address). */
WARD_INTERNAL bool ward__udp_available(const struct ward__udp *u, struct ward__net_addr *ret_addr,
				       uint16_t *ret_port);
/* An association; client_port 0: it belongs to the first client port that sends. */
WARD_INTERNAL int ward__udp_associate(struct ward__udp *u, uint16_t client_port,
				      struct ward__udp_assoc **ret);
/* The control connection ended: the association goes, its destinations are reported. */
WARD_INTERNAL void ward__udp_release(struct ward__udp_assoc *as);

/* ------------------------------------------------------------ stub.c */

/*
 * The DNS stub: answers the sandbox's questions from the pool. An allowed
 * name gets the next address of 198.18.0.0/16, kept for it as long as the
 * proxy lives (never given to another name: a connection to an address is
 * a connection to one name); a refused name gets REFUSED at once, so
 * getaddrinfo() fails fast instead of timing out. Nothing is forwarded.
 */
struct ward__stub;
WARD_INTERNAL int ward__stub_new(struct ward__loop *l, struct ward__net_policy *np,
				 struct ward__stub **ret);
WARD_INTERNAL void ward__stub_free(struct ward__stub *s);
/* Serves a UDP socket (bound) or a TCP listener; owns fd (closed on failure). */
WARD_INTERNAL int ward__stub_add_udp(struct ward__stub *s, int fd);
WARD_INTERNAL int ward__stub_add_tcp(struct ward__stub *s, int fd);
/* The name behind a pool address, or NULL. */
WARD_INTERNAL const char *ward__stub_name(const struct ward__stub *s,
					  const struct ward__net_addr *a);
WARD_INTERNAL unsigned ward__stub_names(const struct ward__stub *s);
