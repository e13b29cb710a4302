/* SPDX-License-Identifier: MIT */
/*
 * Addresses, ranges, and which addresses are the public internet.
 *
 * The proxy connects only to addresses this file calls public, unless an
 * --allow-address range names them: a hostile command must not reach the
 * host's own services (loopback), the local network, or the cloud metadata
 * service (169.254.169.254, link-local) through an allowed name that
 * resolves there, which is how DNS rebinding and SSRF go. The ranges are
 * the IANA special-purpose registries (RFC 6890 and its updates) less what
 * is globally reachable.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "net/net.h"

bool ward__net_addr_parse(const char *text, struct ward__net_addr *ret)
{
	struct ward__net_addr a = {0};

	if (inet_pton(AF_INET, text, a.bytes) == 1) {
		a.family = AF_INET;
	} else if (inet_pton(AF_INET6, text, a.bytes) == 1) {
		a.family = AF_INET6;
	} else {
		return false;
	}
	*ret = a;
	return true;
}

int ward__net_addr_from_sockaddr(const struct sockaddr *sa, socklen_t len,
				 struct ward__net_addr *ret, uint16_t *ret_port)
{
	struct ward__net_addr a = {0};
	uint16_t port;

	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)sa;

		a.family = AF_INET;
		memcpy(a.bytes, &s->sin_addr, 4);
		port = ntohs(s->sin_port);
	} else if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;

		a.family = AF_INET6;
		memcpy(a.bytes, &s->sin6_addr, 16);
		port = ntohs(s->sin6_port);
	} else {
		return -EAFNOSUPPORT;
	}
	*ret = a;
	if (ret_port)
		*ret_port = port;
	return 0;
}

socklen_t ward__net_addr_to_sockaddr(const struct ward__net_addr *a, uint16_t port,
				     struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		s->sin_port = htons(port);
		memcpy(&s->sin_addr, a->bytes, 4);
		return sizeof(*s);
	}
	struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

	s->sin6_family = AF_INET6;
	s->sin6_port = htons(port);
	memcpy(&s->sin6_addr, a->bytes, 16);
	return sizeof(*s);
}

void ward__net_addr_format(const struct ward__net_addr *a, char *buf, size_t size)
{
	char t[INET6_ADDRSTRLEN];

	if (!inet_ntop(a->family, a->bytes, t, sizeof(t)))
		snprintf(t, sizeof(t), "?");
	snprintf(buf, size, "%s", t);
}

static bool prefix_equal(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned full = bits / 8, rest = bits % 8;

	if (memcmp(a, b, full) != 0)
		return false;
	if (rest == 0)
		return true;
	return ((a[full] ^ b[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

int ward__net_cidr_parse(const char *text, struct ward__net_cidr *ret)
{
	struct ward__net_cidr c = {0};
	char tmp[INET6_ADDRSTRLEN + 8];
	const char *slash;
	unsigned max, prefix;
	size_t n;

	if (!text || strlen(text) >= sizeof(tmp))
		return -EINVAL;
	slash = strchr(text, '/');
	n = slash ? (size_t)(slash - text) : strlen(text);
	memcpy(tmp, text, n);
	tmp[n] = '\0';
	/* Brackets are how IPv6 addresses are usually quoted next to ports: accept them here too. */
	if (tmp[0] == '[' && n > 2 && tmp[n - 1] == ']') {
		memmove(tmp, tmp + 1, n - 2);
		tmp[n - 2] = '\0';
	}
	if (!ward__net_addr_parse(tmp, &c.addr))
		return -EINVAL;
	max = c.addr.family == AF_INET ? 32 : 128;
	prefix = max;
	if (slash) {
		const char *p = slash + 1;

		if (!*p || strlen(p) > 3 || strspn(p, "0123456789") != strlen(p))
			return -EINVAL;
		prefix = 0;
		for (; *p; p++)
			prefix = prefix * 10 + (unsigned)(*p - '0');
		if (prefix > max)
			return -EINVAL;
	}
	c.prefix = prefix;
	/* Host bits set ("10.1.2.3/8") are a typo as often as not: refuse rather than guess. */
	for (unsigned bit = prefix; bit < max; bit++)
		if (c.addr.bytes[bit / 8] & (0x80 >> (bit % 8)))
			return -EINVAL;
	*ret = c;
	return 0;
}

void ward__net_cidr_format(const struct ward__net_cidr *c, char *buf, size_t size)
{
	char a[INET6_ADDRSTRLEN];

	ward__net_addr_format(&c->addr, a, sizeof(a));
	snprintf(buf, size, "%s/%u", a, c->prefix);
}

bool ward__net_cidr_contains(const struct ward__net_cidr *c, const struct ward__net_addr *a)
{
	return c->addr.family == a->family && prefix_equal(c->addr.bytes, a->bytes, c->prefix);
}

struct range {
	uint8_t bytes[16];
	unsigned prefix;
	const char *why;
};

/* IPv4 special-purpose ranges that are not the public internet. */
static const struct range v4_ranges[] = {
	{{0}, 8, "this network (0.0.0.0/8)"},
	{{10}, 8, "private (10.0.0.0/8)"},
	{{100, 64}, 10, "shared address space, CGNAT (100.64.0.0/10)"},
	{{127}, 8, "loopback"},
	{{169, 254}, 16, "link-local, the cloud metadata service among it (169.254.0.0/16)"},
	{{172, 16}, 12, "private (172.16.0.0/12)"},
	{{192, 0, 0}, 24, "IETF protocol assignments (192.0.0.0/24)"},
	{{192, 0, 2}, 24, "documentation (192.0.2.0/24)"},
	{{192, 88, 99}, 24, "6to4 relay anycast (192.88.99.0/24)"},
	{{192, 168}, 16, "private (192.168.0.0/16)"},
	{{198, 18}, 15, "benchmarking (198.18.0.0/15)"},
	{{198, 51, 100}, 24, "documentation (198.51.100.0/24)"},
	{{203, 0, 113}, 24, "documentation (203.0.113.0/24)"},
	{{224}, 4, "multicast"},
	{{240}, 4, "reserved, broadcast among it (240.0.0.0/4)"},
};

/* IPv6 ranges that are not the public internet (those carrying IPv4 are handled apart). */
static const struct range v6_ranges[] = {
	{{0}, 128, "unspecified (::)"},
	{{[15] = 1}, 128, "loopback"},
	{{0x01, 0x00}, 64, "discard-only (100::/64)"},
	{{0x20, 0x01, 0x0d, 0xb8}, 32, "documentation (2001:db8::/32)"},
	{{0x20, 0x01, 0x00, 0x02, 0, 0}, 48, "benchmarking (2001:2::/48)"},
	{{0x3f, 0xff}, 20, "documentation (3fff::/20)"},
	{{0xfc}, 7, "unique local, ULA (fc00::/7)"},
	{{0xfe, 0x80}, 10, "link-local (fe80::/10)"},
	{{0xfe, 0xc0}, 10, "site-local (fec0::/10)"},
	{{0xff}, 8, "multicast"},
	{{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, "local-use NAT64 (64:ff9b:1::/48)"},
};

static bool v4_public(const uint8_t *b, const char **why)
{
	for (size_t i = 0; i < ELEMENTSOF(v4_ranges); i++)
		if (prefix_equal(b, v4_ranges[i].bytes, v4_ranges[i].prefix)) {
			if (why)
				*why = v4_ranges[i].why;
			return false;
		}
	return true;
}

bool ward__net_addr_public(const struct ward__net_addr *a, const char **why)
{
	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
	static const uint8_t zero[12] = {0};
	static const uint8_t nat64[12] = {0x00, 0x64, 0xff, 0x9b};
	const uint8_t *b = a->bytes;

	if (a->family == AF_INET)
		return v4_public(b, why);
	if (a->family != AF_INET6) {
		if (why)
			*why = "not an IP address";
		return false;
	}
	for (size_t i = 0; i < ELEMENTSOF(v6_ranges); i++)
		if (prefix_equal(b, v6_ranges[i].bytes, v6_ranges[i].prefix)) {
			if (why)
				*why = v6_ranges[i].why;
			return false;
		}
	/*
	 * Forms that carry an IPv4 address: on a dual-stack socket ::ffff:a.b.c.d
	 * is a.b.c.d, and the old v4-compatible ::a.b.c.d is deprecated. Both
	 * are refused outright (as Codex does): the proxy connects to IPv4 as
	 * IPv4, so nothing legitimate needs them.
	 */
	if (memcmp(b, mapped, 12) == 0) {
		if (why)
			*why = "IPv4-mapped IPv6 (::ffff:0:0/96)";
		return false;
	}
	if (memcmp(b, zero, 12) == 0) {
		if (why)
			*why = "IPv4-compatible IPv6 (::/96)";
		return false;
	}
	/* NAT64 (64:ff9b::/96), 6to4 (2002::/16) and Teredo (2001::/32) reach an IPv4 address: check it. */
	if (memcmp(b, nat64, 12) == 0)
		return v4_public(b + 12, why);
	if (b[0] == 0x20 && b[1] == 0x02)
		return v4_public(b + 2, why);
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) {
		uint8_t client[4];

		/* Teredo's client address is stored inverted. */
		for (int i = 0; i < 4; i++)
			client[i] = (uint8_t)~b[12 + i];
		if (!v4_public(b + 4, why) || !v4_public(client, why))
			return false;
		return true;
	}
	return true;
}
