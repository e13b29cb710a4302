/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/macro.h"
#include "net/net.h"
#include "ward/ward.h"

/*
 * The egress proxy of one sandbox, on the event loop of whoever holds the
 * sandbox (ward run, ward serve, ward mcp: src/basic/loop.h).
 *
 * The sandbox keeps an empty network namespace. Its init makes listening
 * sockets on the sandbox's loopback (the HTTP proxy, SOCKS5, the DNS stub
 * on 127.0.0.1:53, and one per address and port of ward's pool a command
 * connects to) and hands them out as descriptors; ward_proxy_add_listener()
 * takes them. Every connection a command makes therefore ends in ward's own
 * process, where the proxy:
 *
 *   - reads what the client wants (an HTTP request or CONNECT, a SOCKS5
 *     request, or for a pool address the name the DNS stub gave it out for);
 *   - decides: the policy's deny patterns, then its allow patterns, then the
 *     holder's decide hook (the network_rule lines of the rules, the answers
 *     given for this session), then, with approvals on, a question to a
 *     person while the connection waits (connections to the same host, port
 *     and protocol share one question);
 *   - resolves the name itself (c-ares, outside the sandbox), refuses every
 *     address that is not public unless --allow-address names it, and
 *     connects to exactly the address it checked, so that no second lookup
 *     can be answered differently (DNS rebinding);
 *   - then moves bytes with splice(2) through a pipe per direction, reading
 *     from one side only while the other takes what was read: the memory a
 *     connection holds is a pipe's worth of kernel buffer per direction,
 *     whatever the peers do.
 *
 * Everything a sandbox can grow is capped: connections, pending questions,
 * DNS names given out, pool listeners, bytes of a request head. The proxies
 * of one process together leave a quarter of its open-file limit to the
 * rest of it (a server's clients and processes), and in a server each takes
 * at most a quarter of what is left to them. The proxy and everything it
 * holds go when it is freed, with the sandbox.
 */

struct ward__loop;
struct ward_net_proxy;

/* Per proxy, whatever the sandbox does; past them connections are refused at once. */
#define WARD_NET_DEFAULT_MAX_CONNS 2048
#define WARD_NET_MAX_QUESTIONS 32 /* distinct questions waiting for a person */
#define WARD_NET_MAX_NAMES 4096 /* names the DNS stub has given an address */
#define WARD_NET_MAX_LISTENERS 512 /* pool listeners */
#define WARD_NET_HEAD_TIMEOUT_MS 10000 /* a client has this long to say what it wants */
#define WARD_NET_CONNECT_TIMEOUT_MS 10000 /* per address tried upstream */
#define WARD_NET_DNS_TTL 60
/*
 * The pool the DNS stub hands addresses from (inside the sandbox only):
 * 198.18.0.0/16, half of the benchmarking range, which no real host uses.
 */
#define WARD_NET_POOL_V4 0xc6120000u
#define WARD_NET_POOL_PREFIX 16

enum ward_net_listener_kind {
	WARD_NET_LISTEN_HTTP = 1, /* the HTTP proxy (absolute-form requests and CONNECT) */
	WARD_NET_LISTEN_SOCKS5 = 2, /* SOCKS5 over TCP */
	WARD_NET_LISTEN_DNS_UDP = 3, /* the DNS stub, a bound UDP socket */
	WARD_NET_LISTEN_DNS_TCP = 4, /* the DNS stub over TCP */
	WARD_NET_LISTEN_POOL = 5, /* a pool address and port: a tunnel to the name behind it */
	WARD_NET_LISTEN_SOCKS5_UDP = 6, /* the UDP relay of SOCKS5 UDP ASSOCIATE */
};

/* Codex's protocols of network_rule (and of its network approvals). */
enum ward_net_protocol {
	WARD_NET_PROTO_HTTP = 1, /* a plain HTTP request through the proxy */
	WARD_NET_PROTO_HTTPS = 2, /* CONNECT, and a connection to a pool address (a tunnel too) */
	WARD_NET_PROTO_SOCKS5_TCP = 3,
	WARD_NET_PROTO_SOCKS5_UDP = 4,
	WARD_NET_PROTO_DNS = 5, /* a DNS stub question (no port; never asked about) */
};
WARD_INTERNAL const char *ward__net_protocol_name(enum ward_net_protocol p);

/* Why a connection was refused (the "reason" of a network denial, docs/json.md). */
enum ward_net_reason {
	WARD_NET_REASON_NONE = 0,
	WARD_NET_REASON_NOT_ALLOWED = 1, /* no pattern or rule allows it */
	WARD_NET_REASON_DENIED = 2, /* a deny pattern or rule */
	WARD_NET_REASON_NON_PUBLIC = 3, /* it resolves to an address that is not public */
	WARD_NET_REASON_ASKED_DENIED = 4, /* a person said no (or nobody could be asked) */
};
WARD_INTERNAL const char *ward__net_reason_name(enum ward_net_reason r);
/* The X-Proxy-Error value both peers send for it. */
WARD_INTERNAL const char *ward__net_reason_proxy_error(enum ward_net_reason r);

/* What one decision is about. */
struct ward_net_target {
	const char *host; /* normalised */
	uint16_t port; /* 0 for DNS questions */
	enum ward_net_protocol protocol;
};

enum ward_net_decision {
	WARD_NET_DECIDE_NONE = 0, /* the hook does not know: not allowed, or asked */
	WARD_NET_DECIDE_ALLOW = 1,
	WARD_NET_DECIDE_DENY = 2,
};

/*
 * An allowed connection that ended, or a refusal. Reported once per
 * connection (a DNS refusal once per name), for the run's denials and the
 * audit log.
 */
struct ward_net_event {
	const struct ward_net_target *target;
	bool allowed;
	enum ward_net_reason reason; /* when !allowed */
	/* Who decided: "policy" (the patterns), or what the hooks said ("rules", "person"...). */
	const char *decided_by;
	const char *address; /* the address connected to (text), or NULL */
	uint64_t bytes_out; /* from the sandbox to the host */
	uint64_t bytes_in;
	const char *detail; /* a refusal's one line for people ("resolves to loopback"), or NULL */
};

struct ward_net_hooks {
	/*
	 * Decides a target no pattern decides (the rules' network_rule lines,
	 * answers remembered for the session). *ret_by names who ("rules",
	 * "session"). NULL: nothing decides beyond the patterns.
	 */
	enum ward_net_decision (*decide)(void *userdata, const struct ward_net_target *t,
					 const char **ret_by);
	/*
	 * Asks a person about t (only when the settings say questions may be
	 * asked); the proxy waits for ward_net_proxy_answer() with the same id.
	 * Returns 0 when the question is on its way, -errno when it cannot be
	 * asked (the connection is refused at once as asked-denied).
	 */
	int (*ask)(void *userdata, struct ward_net_proxy *px, uint64_t id,
		   const struct ward_net_target *t);
	/*
	 * The proxy is going (its sandbox ended) while question id waits: the
	 * asker drops it, and must not answer it. NULL: nothing to drop.
	 */
	void (*cancelled)(void *userdata, struct ward_net_proxy *px, uint64_t id);
	/* Each event (see above). NULL: none reported. */
	void (*event)(void *userdata, const struct ward_net_event *ev);
	void *userdata;
};

struct ward_net_settings {
	const struct ward__net_pattern *allow;
	size_t n_allow;
	const struct ward__net_pattern *deny;
	size_t n_deny;
	const struct ward__net_cidr *allow_addresses;
	size_t n_allow_addresses;
	/* The DNS server the proxy resolves with ("IP" or "IP:PORT"), or NULL: the host's. */
	const char *dns_server;
	bool ask; /* questions may be asked (approvals on, a front end that can ask) */
	unsigned max_conns; /* 0: WARD_NET_DEFAULT_MAX_CONNS */
	unsigned head_timeout_ms; /* 0: WARD_NET_HEAD_TIMEOUT_MS */
	/*
	 * Other proxies share the process (a server's sandboxes, each with one):
	 * this one holds at most a quarter of the descriptors the proxies may
	 * hold together (proxy.c), so that one sandbox cannot starve the others.
	 */
	bool shared;
};

/*
 * Creates the proxy of one sandbox on loop. The settings are copied.
 * -EINVAL for a malformed dns_server (err says which), -ENOMEM, or c-ares'
 * failure to start as -EIO.
 */
WARD_INTERNAL int ward__net_proxy_new(struct ward__loop *loop, const struct ward_net_settings *s,
				      const struct ward_net_hooks *hooks,
				      struct ward_net_proxy **ret, struct ward_error *err);
/* Closes every listener and connection, cancels every question. Accepts NULL. */
WARD_INTERNAL void ward__net_proxy_free(struct ward_net_proxy *px);

/*
 * Takes ownership of a listening socket (or, for the DNS stub over UDP, a
 * bound one) and serves it. For WARD_NET_LISTEN_POOL the socket's own local
 * address says which name it stands for. Made non-blocking here. Closed on
 * failure too. -EMFILE past WARD_NET_MAX_LISTENERS.
 */
WARD_INTERNAL int ward__net_proxy_add_listener(struct ward_net_proxy *px,
					       enum ward_net_listener_kind kind, int fd);

/*
 * The answer to a question (ward_net_hooks.ask): allow (by says who, e.g.
 * "person"), or not. Every connection waiting on it goes on or is refused.
 * A stale id is ignored.
 */
WARD_INTERNAL void ward__net_proxy_answer(struct ward_net_proxy *px, uint64_t id, bool allow,
					  const char *by);

/* Whether the DNS stub handed out addr (network order, IPv4), and for which name. */
WARD_INTERNAL const char *ward__net_proxy_pool_name(const struct ward_net_proxy *px,
						    const struct ward__net_addr *addr);

/* Counters, for tests and ward's reports. */
struct ward_net_stats {
	unsigned conns; /* open now */
	unsigned questions; /* waiting now */
	unsigned names; /* given out by the DNS stub */
	unsigned listeners;
	uint64_t refused_cap; /* connections refused because of the cap */
	uint64_t allowed, denied;
};
WARD_INTERNAL void ward__net_proxy_stats(const struct ward_net_proxy *px,
					 struct ward_net_stats *ret);
