/* SPDX-License-Identifier: MIT */
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include "basic/macro.h"

/*
 * src/net: the egress proxy of a sandbox whose network is "by domain".
 *
 * This header holds the pure parts, bytes or strings in and structures out,
 * no I/O, each fuzzed (fuzz/fuzz-net-*.c): host names and the patterns that
 * match them (pattern.c), addresses and the ranges that are not the public
 * internet (addr.c), the SOCKS5 codec (socks5.c), the DNS stub's query and
 * answer codec (dns.c) and the framing of a request body a plain HTTP proxy
 * forwards (httpfwd.c). The proxy engine that uses them, on an event loop,
 * is in proxy.h.
 *
 * net/ sits on basic/ (and the HTTP head parser of rpc/, itself on basic/
 * only); it knows nothing of the sandbox. Its caller (exec/ for a sandbox
 * it holds) hands it listening descriptors and the policy's lists.
 */

/* ------------------------------------------------------------ host names (pattern.c) */

/* RFC 1035: 253 characters of a name without its final dot, 63 of a label. */
#define WARD_NET_HOST_MAX 253
#define WARD_NET_LABEL_MAX 63
/* Patterns in one list (allow or deny): a policy an agent writes stays small. */
#define WARD_NET_MAX_PATTERNS 1024

/*
 * Normalises a host as a client names it (an HTTP request target, a CONNECT
 * authority, a SOCKS5 domain, a DNS question, a pattern's host part) into
 * out (WARD_NET_HOST_MAX + 1 bytes): ASCII letters lowercased, one trailing
 * dot dropped, an IPv6 literal without its brackets in its canonical text
 * form, an IPv4 literal only as four decimal parts, a label that is not
 * ASCII in its IDNA ASCII form ("xn--" and Punycode). What is not a host is
 * refused (-EINVAL): empty labels, characters other than letters, digits,
 * '-' and '_', a label or a name too long, and a last label of digits (or
 * "0x...") that is not a four-part IPv4 address, which resolvers would read
 * as an address in another notation ("2130706433", "0x7f.1"). With
 * allow_glob, '*' is kept inside labels (patterns).
 */
WARD_INTERNAL int ward__net_host_normalize(const char *in, size_t len, bool allow_glob,
					   char out[WARD_NET_HOST_MAX + 1]);

enum ward__net_pattern_kind {
	WARD_NET_PATTERN_EXACT = 1, /* example.com (labels may hold '*': one label's characters) */
	WARD_NET_PATTERN_SUBDOMAINS = 2, /* *.example.com: strictly below, any depth */
	WARD_NET_PATTERN_APEX = 3, /* **.example.com: the name and everything below */
	WARD_NET_PATTERN_ANY = 4, /* *: every host (allow lists only) */
};

struct ward__net_pattern {
	enum ward__net_pattern_kind kind;
	char host[WARD_NET_HOST_MAX + 1]; /* normalised; empty for ANY */
	uint16_t port; /* 0: any port */
};

/*
 * Parses a pattern as Codex writes them (docs/policy.md): "example.com",
 * "*.example.com", "**.example.com", "*", each optionally ":PORT", an IPv6
 * literal as "[::1]" or "[::1]:PORT". deny refuses "*" (a deny list of
 * everything is "no network"). -EINVAL with a one-line reason in why
 * (static) for anything else.
 */
WARD_INTERNAL int ward__net_pattern_parse(const char *text, bool deny,
					  struct ward__net_pattern *ret, const char **why);
/* Whether a normalised host and port match. */
WARD_INTERNAL bool ward__net_pattern_match(const struct ward__net_pattern *p, const char *host,
					   uint16_t port);
/* Writes the pattern back in its canonical text form ("*.example.com:443"). */
WARD_INTERNAL void ward__net_pattern_format(const struct ward__net_pattern *p, char *buf,
					    size_t size);

/* The static lists of a policy: deny wins over allow. */
enum ward__net_verdict {
	WARD_NET_UNDECIDED = 0, /* no pattern matches: not allowed, or asked about */
	WARD_NET_ALLOW = 1,
	WARD_NET_DENY = 2,
};
WARD_INTERNAL enum ward__net_verdict ward__net_patterns_decide(
	const struct ward__net_pattern *allow, size_t n_allow, const struct ward__net_pattern *deny,
	size_t n_deny, const char *host, uint16_t port);

/* ------------------------------------------------------------ addresses (addr.c) */

/* An IPv4 or IPv6 address (IPv4 as such, never v4-mapped), with a prefix for ranges. */
struct ward__net_addr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t bytes[16]; /* network order; 4 used for AF_INET */
};

struct ward__net_cidr {
	struct ward__net_addr addr; /* host bits zero */
	unsigned prefix;
};

#define WARD_NET_MAX_CIDRS 256

/* "10.0.0.0/8", "fd00::/8", a bare address (a /32 or /128). -EINVAL otherwise. */
WARD_INTERNAL int ward__net_cidr_parse(const char *text, struct ward__net_cidr *ret);
WARD_INTERNAL void ward__net_cidr_format(const struct ward__net_cidr *c, char *buf, size_t size);
WARD_INTERNAL bool ward__net_cidr_contains(const struct ward__net_cidr *c,
					   const struct ward__net_addr *a);
/* A canonical IP literal (as ward__net_host_normalize() leaves it) into an address. */
WARD_INTERNAL bool ward__net_addr_parse(const char *text, struct ward__net_addr *ret);
WARD_INTERNAL int ward__net_addr_from_sockaddr(const struct sockaddr *sa, socklen_t len,
					       struct ward__net_addr *ret, uint16_t *ret_port);
WARD_INTERNAL socklen_t ward__net_addr_to_sockaddr(const struct ward__net_addr *a, uint16_t port,
						   struct sockaddr_storage *ss);
WARD_INTERNAL void ward__net_addr_format(const struct ward__net_addr *a, char *buf, size_t size);

/*
 * Whether an address is on the public internet: not loopback, unspecified,
 * private (RFC 1918, IPv6 ULA), link-local (the cloud metadata address
 * 169.254.169.254 among them), CGNAT, documentation, benchmarking,
 * multicast, reserved or broadcast, nor an IPv6 form that carries an IPv4
 * address ward would have to check instead (v4-mapped, v4-compatible), nor
 * NAT64, 6to4 or Teredo carrying a non-public IPv4 address. When false,
 * *why (optional) names the range ("loopback", "link-local", ...).
 */
WARD_INTERNAL bool ward__net_addr_public(const struct ward__net_addr *a, const char **why);

/* ------------------------------------------------------------ SOCKS5 (socks5.c) */

/*
 * The server side of RFC 1928 without authentication (the listener exists
 * only on the sandbox's loopback): the method negotiation, then one request.
 * Incremental: feed what arrived, get AGAIN, DONE or an error with the reply
 * code to send. Strict: version 5, at least one method, no authentication
 * method other than "none" is selected, a domain of 1..255 bytes.
 */
enum ward__socks5_state {
	WARD_SOCKS5_GREETING = 0,
	WARD_SOCKS5_REQUEST = 1,
	WARD_SOCKS5_DONE = 2,
	WARD_SOCKS5_FAILED = 3,
};

#define WARD_SOCKS5_CMD_CONNECT 1
#define WARD_SOCKS5_CMD_BIND 2
#define WARD_SOCKS5_CMD_UDP 3
#define WARD_SOCKS5_ATYP_V4 1
#define WARD_SOCKS5_ATYP_DOMAIN 3
#define WARD_SOCKS5_ATYP_V6 4
/* Reply codes (RFC 1928 section 6). */
#define WARD_SOCKS5_OK 0
#define WARD_SOCKS5_FAILURE 1
#define WARD_SOCKS5_NOT_ALLOWED 2
#define WARD_SOCKS5_NET_UNREACHABLE 3
#define WARD_SOCKS5_HOST_UNREACHABLE 4
#define WARD_SOCKS5_REFUSED 5
#define WARD_SOCKS5_TTL_EXPIRED 6
#define WARD_SOCKS5_CMD_UNSUPPORTED 7
#define WARD_SOCKS5_ATYP_UNSUPPORTED 8

struct ward__socks5 {
	enum ward__socks5_state state;
	uint8_t buf[262]; /* the longest request: 4 + 1 + 255 + 2 */
	size_t len;
	bool no_auth_offered;
	/* DONE: the request */
	uint8_t cmd;
	uint8_t atyp;
	char host[256]; /* a domain as sent (NUL-terminated), or an address in text form */
	struct ward__net_addr addr; /* ATYP V4/V6 */
	uint16_t port;
	/* FAILED: the reply code to send (0xff: the method reply "no acceptable method") */
	uint8_t reply;
};

/*
 * Feeds bytes; *ret_consumed tells how many belonged to the negotiation. On
 * the way from GREETING to REQUEST, out (at least 2 bytes) receives the
 * method reply to send and *ret_out its length (0 otherwise). Returns the
 * state reached.
 */
WARD_INTERNAL enum ward__socks5_state ward__socks5_feed(struct ward__socks5 *s, const void *data,
							size_t len, size_t *ret_consumed,
							uint8_t *out, size_t *ret_out);
/* Builds a reply to a request (bound address 0.0.0.0:0 unless bound given). Returns its length (10 or 22). */
WARD_INTERNAL size_t ward__socks5_reply(uint8_t code, const struct ward__net_addr *bound,
					uint16_t bound_port, uint8_t out[22]);

/*
 * The header of a UDP datagram relayed under UDP ASSOCIATE (RFC 1928
 * section 7): RSV RSV FRAG ATYP DST.ADDR DST.PORT. Fragments (FRAG != 0) are
 * refused as the RFC allows. Returns the header length, or -EINVAL.
 */
WARD_INTERNAL int ward__socks5_udp_parse(const void *data, size_t len, char host[256],
					 struct ward__net_addr *addr, bool *ret_is_addr,
					 uint16_t *ret_port);
/* Writes a header for an address; returns its length (10 or 22). */
WARD_INTERNAL size_t ward__socks5_udp_header(const struct ward__net_addr *a, uint16_t port,
					     uint8_t out[22]);

/* ------------------------------------------------------------ the DNS stub's codec (dns.c) */

/* A query over UDP is at most this; over TCP its two-byte length says (capped the same). */
#define WARD_DNS_MAX_MESSAGE 1232
#define WARD_DNS_TYPE_A 1
#define WARD_DNS_TYPE_AAAA 28
#define WARD_DNS_CLASS_IN 1
#define WARD_DNS_RCODE_NOERROR 0
#define WARD_DNS_RCODE_FORMERR 1
#define WARD_DNS_RCODE_SERVFAIL 2
#define WARD_DNS_RCODE_NXDOMAIN 3
#define WARD_DNS_RCODE_NOTIMP 4
#define WARD_DNS_RCODE_REFUSED 5

struct ward__dns_query {
	uint16_t id;
	uint16_t flags; /* as received */
	char name[WARD_NET_HOST_MAX +
		  2]; /* the question's name in text form, lowercased, no final dot */
	uint16_t qtype;
	uint16_t qclass;
	size_t question_len; /* bytes of the question section, to echo */
	const uint8_t *question; /* points into the message */
};

/*
 * Parses a query: a header with QR=0, opcode QUERY, exactly one question
 * whose name uses no compression (stub resolvers never compress a lone
 * question), answer and authority sections empty; additional records (EDNS)
 * are ignored. Returns 0, or the rcode to answer with when the header could
 * be read (*ret_id_valid then true: FORMERR, NOTIMP), or -EINVAL when not
 * even an id could be read (nothing is answered).
 */
WARD_INTERNAL int ward__dns_parse_query(const void *msg, size_t len, struct ward__dns_query *q,
					bool *ret_id_valid);
/*
 * Builds the answer to q into out (at least WARD_DNS_MAX_MESSAGE bytes):
 * rcode, and with rcode NOERROR and an address of q's type the one answer
 * record (TTL ttl). q->question NULL (a query whose question could not be
 * read) answers with the header alone. Returns the length.
 */
WARD_INTERNAL size_t ward__dns_build_answer(const struct ward__dns_query *q, int rcode,
					    const struct ward__net_addr *addr, uint32_t ttl,
					    uint8_t *out, size_t size);

/* ------------------------------------------------------------ plain HTTP forwarding (httpfwd.c) */

/*
 * The body of a request forwarded by the plain HTTP proxy, framed exactly as
 * RFC 9112 section 6 says, so that exactly one request reaches the upstream
 * and nothing after its body is ever taken for another (request smuggling).
 * A chunked body is passed through byte for byte while its chunk sizes are
 * followed; trailers are allowed, bounded.
 */
enum ward__body_kind {
	WARD_BODY_NONE = 0,
	WARD_BODY_LENGTH = 1,
	WARD_BODY_CHUNKED = 2,
};

struct ward__body {
	enum ward__body_kind kind;
	uint64_t left; /* LENGTH: bytes left; CHUNKED: bytes left of the current chunk's data */
	int cstate; /* the chunked framer's state */
	unsigned line; /* bytes of the current size or trailer line */
	unsigned trailer_bytes;
	bool done;
	bool failed;
};

/*
 * Feeds body bytes; returns how many of them belong to the body (the rest
 * must not be forwarded), or -EINVAL for a malformed chunked body. done is
 * set when the body ended.
 */
WARD_INTERNAL ssize_t ward__body_feed(struct ward__body *b, const void *data, size_t len);

struct ward__http_request;
/*
 * Checks a proxy request (a complete head from ward__http_feed in proxy mode)
 * and extracts its destination: CONNECT's authority, or an absolute-form
 * http:// target's host and port (default 80). "https://" targets are
 * refused (a client that wants TLS uses CONNECT). Sets the body framing:
 * Content-Length (one, decimal) or Transfer-Encoding exactly "chunked";
 * any other transfer coding is refused. Returns 0, or the HTTP status to
 * answer with and *why.
 */
WARD_INTERNAL int ward__httpfwd_target(const struct ward__http_request *req, bool *ret_connect,
				       char host[WARD_NET_HOST_MAX + 1], uint16_t *ret_port,
				       struct ward__body *ret_body, const char **why);
struct ward__buf;
/*
 * Writes the head to send upstream: the request line in origin form, every
 * field but the hop-by-hop ones (Connection and the fields it names,
 * Keep-Alive, Proxy-*, TE, Upgrade, Trailer), and "Connection: close" (one
 * request per upstream connection). -ENOBUFS past out's cap.
 */
WARD_INTERNAL int ward__httpfwd_head(const struct ward__http_request *req, struct ward__buf *out);
/*
 * A refusal: status (403, 400, 502, 504, ...), an X-Proxy-Error value
 * (blocked-by-allowlist ...) or NULL, and a one-line message body.
 */
WARD_INTERNAL int ward__httpfwd_error(struct ward__buf *out, int status, const char *proxy_error,
				      const char *message);
