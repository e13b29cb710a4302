/* SPDX-License-Identifier: MIT */
/*
 * Host names and the patterns of --allow-domain and --deny-domain.
 *
 * Names are compared in one normal form only: lowercase ASCII, no final dot,
 * IDNs in their "xn--" form, IP literals canonical. Every host a client
 * names reaches the matcher through ward__net_host_normalize(), so "EXAMPLE.com.",
 * "example.com" and "[::ffff:1.2.3.4]" each have one spelling, and a pattern
 * cannot be sidestepped by writing the same host differently.
 *
 * The IDNA conversion is Punycode (RFC 3492) of each non-ASCII label after
 * ASCII lowercasing, written here: the full UTS 46 mapping (case folding
 * of every script, NFC) needs Unicode tables ward does not carry (libidn2
 * would bring libunistring, which Debian ships only as a shared library,
 * and ward's CLI is linked statically). Clients send hosts already in
 * their ASCII form, so only a pattern typed with non-ASCII capitals could
 * differ; docs/policy.md says to write such patterns in lower case.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "net/net.h"

/* ------------------------------------------------------------ Punycode (RFC 3492 section 6.3) */

enum {
	PC_BASE = 36,
	PC_TMIN = 1,
	PC_TMAX = 26,
	PC_SKEW = 38,
	PC_DAMP = 700,
	PC_INITIAL_BIAS = 72,
	PC_INITIAL_N = 128,
};

static uint32_t pc_adapt(uint32_t delta, uint32_t numpoints, bool first)
{
	uint32_t k = 0;

	delta = first ? delta / PC_DAMP : delta / 2;
	delta += delta / numpoints;
	while (delta > ((PC_BASE - PC_TMIN) * PC_TMAX) / 2) {
		delta /= PC_BASE - PC_TMIN;
		k += PC_BASE;
	}
	return k + (PC_BASE - PC_TMIN + 1) * delta / (delta + PC_SKEW);
}

static char pc_digit(uint32_t d)
{
	return (char)(d < 26 ? 'a' + d : '0' + (d - 26));
}

/* Encodes cp[0..n) after "xn--" into out; -EINVAL on overflow or when it does not fit. */
static int punycode(const uint32_t *cp, size_t n, char *out, size_t size, size_t *ret_len)
{
	uint32_t cur = PC_INITIAL_N, delta = 0, bias = PC_INITIAL_BIAS, h, b = 0;
	size_t o = 0;

#define PUT(c)                          \
	do {                            \
		if (o + 1 >= size)      \
			return -EINVAL; \
		out[o++] = (c);         \
	} while (0)
	for (size_t i = 0; i < n; i++)
		if (cp[i] < 0x80) {
			PUT((char)cp[i]);
			b++;
		}
	h = b;
	if (b > 0)
		PUT('-');
	while (h < n) {
		uint32_t m = UINT32_MAX;

		for (size_t i = 0; i < n; i++)
			if (cp[i] >= cur && cp[i] < m)
				m = cp[i];
		if ((uint64_t)(m - cur) * (h + 1) > UINT32_MAX - delta)
			return -EINVAL;
		delta += (m - cur) * (h + 1);
		cur = m;
		for (size_t i = 0; i < n; i++) {
			if (cp[i] < cur && ++delta == 0)
				return -EINVAL;
			if (cp[i] != cur)
				continue;
			uint32_t q = delta;

			for (uint32_t k = PC_BASE;; k += PC_BASE) {
				uint32_t t = k <= bias	      ? PC_TMIN
					: k >= bias + PC_TMAX ? PC_TMAX
							      : k - bias;

				if (q < t)
					break;
				PUT(pc_digit(t + (q - t) % (PC_BASE - t)));
				q = (q - t) / (PC_BASE - t);
			}
			PUT(pc_digit(q));
			bias = pc_adapt(delta, h + 1, h == b);
			delta = 0;
			h++;
		}
		delta++;
		cur++;
	}
#undef PUT
	out[o] = '\0';
	*ret_len = o;
	return 0;
}

/* Decodes one UTF-8 sequence (strict: no overlong forms, surrogates or values past U+10FFFF). */
static int utf8_next(const unsigned char *s, size_t len, uint32_t *ret_cp)
{
	uint32_t c, min;
	size_t n;

	if (len == 0)
		return -EINVAL;
	c = s[0];
	if (c < 0x80) {
		*ret_cp = c;
		return 1;
	}
	if ((c & 0xe0) == 0xc0) {
		n = 2, c &= 0x1f, min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		n = 3, c &= 0x0f, min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		n = 4, c &= 0x07, min = 0x10000;
	} else {
		return -EINVAL;
	}
	if (len < n)
		return -EINVAL;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -EINVAL;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return -EINVAL;
	*ret_cp = c;
	return (int)n;
}

/* ------------------------------------------------------------ names */

static bool label_byte(char c, bool allow_glob)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		(allow_glob && c == '*');
}

/* Four decimal parts 0..255 without leading zeros: the one IPv4 form ward reads as an address. */
static bool ipv4_strict(const char *s)
{
	for (int part = 0; part < 4; part++) {
		unsigned v = 0, digits = 0;

		while (*s >= '0' && *s <= '9') {
			if (digits == 1 && v == 0)
				return false;
			v = v * 10 + (unsigned)(*s - '0');
			if (++digits > 3 || v > 255)
				return false;
			s++;
		}
		if (digits == 0)
			return false;
		if (part < 3 && *s++ != '.')
			return false;
	}
	return *s == '\0';
}

/* The last label looks numeric ("123", "0x7f"): resolvers would take the name for an address. */
static bool numeric_last_label(const char *name)
{
	const char *l = strrchr(name, '.');

	l = l ? l + 1 : name;
	if (l[0] == '0' && l[1] == 'x')
		return true;
	return l[0] && strspn(l, "0123456789") == strlen(l);
}

static int ipv6_literal(const char *in, size_t len, char out[WARD_NET_HOST_MAX + 1])
{
	char tmp[INET6_ADDRSTRLEN + 1];
	struct in6_addr a;

	if (len == 0 || len >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, in, len);
	tmp[len] = '\0';
	if (inet_pton(AF_INET6, tmp, &a) != 1)
		return -EINVAL;
	if (!inet_ntop(AF_INET6, &a, out, WARD_NET_HOST_MAX + 1))
		return -EINVAL;
	return 0;
}

int ward__net_host_normalize(const char *in, size_t len, bool allow_glob,
			     char out[WARD_NET_HOST_MAX + 1])
{
	size_t o = 0, i = 0;

	if (!in || len == 0)
		return -EINVAL;
	if (in[0] == '[') {
		if (len < 3 || in[len - 1] != ']')
			return -EINVAL;
		return ipv6_literal(in + 1, len - 2, out);
	}
	if (memchr(in, ':', len))
		return ipv6_literal(in, len, out);
	/* One final dot names the root; it is not part of the host. */
	if (in[len - 1] == '.')
		len--;
	if (len == 0)
		return -EINVAL;

	while (i < len) {
		size_t end = i, start_o = o;
		bool ascii = true;

		while (end < len && in[end] != '.') {
			if ((unsigned char)in[end] >= 0x80)
				ascii = false;
			end++;
		}
		if (end == i)
			return -EINVAL; /* an empty label */
		if (o > 0) {
			if (o + 1 > WARD_NET_HOST_MAX)
				return -EINVAL;
			out[o++] = '.';
			start_o = o;
		}
		if (ascii) {
			for (size_t k = i; k < end; k++) {
				char c = in[k];

				if (c >= 'A' && c <= 'Z')
					c = (char)(c - 'A' + 'a');
				if (!label_byte(c, allow_glob) || o + 1 > WARD_NET_HOST_MAX)
					return -EINVAL;
				out[o++] = c;
			}
		} else {
			uint32_t cp[WARD_NET_LABEL_MAX * 4];
			char enc[WARD_NET_LABEL_MAX + 1];
			size_t n = 0, elen;

			for (size_t k = i; k < end;) {
				uint32_t c;
				int r = utf8_next((const unsigned char *)in + k, end - k, &c);

				if (r < 0 || n >= ELEMENTSOF(cp))
					return -EINVAL;
				if (c >= 'A' && c <= 'Z')
					c = c - 'A' + 'a';
				/* A glob inside a Punycode label would be a glob over its encoding. */
				if (c < 0x80 && !label_byte((char)c, false))
					return -EINVAL;
				cp[n++] = c;
				k += (size_t)r;
			}
			if (punycode(cp, n, enc, sizeof(enc), &elen) < 0 ||
			    o + 4 + elen > WARD_NET_HOST_MAX)
				return -EINVAL;
			memcpy(out + o, "xn--", 4);
			memcpy(out + o + 4, enc, elen);
			o += 4 + elen;
		}
		if (o - start_o > WARD_NET_LABEL_MAX)
			return -EINVAL;
		i = end + 1;
		if (end + 1 == len)
			return -EINVAL; /* "a..": the one final dot was dropped already */
	}
	out[o] = '\0';
	if (numeric_last_label(out) && !ipv4_strict(out))
		return -EINVAL;
	return 0;
}

/* ------------------------------------------------------------ patterns */

static int parse_port(const char *s, uint16_t *ret)
{
	unsigned v = 0;

	if (!*s || strlen(s) > 5)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(*s - '0');
	}
	if (v == 0 || v > 65535)
		return -EINVAL;
	*ret = (uint16_t)v;
	return 0;
}

int ward__net_pattern_parse(const char *text, bool deny, struct ward__net_pattern *ret,
			    const char **why)
{
	struct ward__net_pattern p = {.kind = WARD_NET_PATTERN_EXACT};
	char host[WARD_NET_HOST_MAX + 16];
	const char *h, *colon;
	size_t hl;

	*why = "not a host pattern";
	/* The host part is copied below: the whole text must fit, with its NUL. */
	if (!text || !*text || strlen(text) >= sizeof(host))
		return -EINVAL;
	if (text[0] == '[') {
		const char *close = strchr(text, ']');

		if (!close)
			return -EINVAL;
		hl = (size_t)(close - text) + 1;
		if (close[1] == ':') {
			if (parse_port(close + 2, &p.port) < 0) {
				*why = "not a port (1..65535)";
				return -EINVAL;
			}
		} else if (close[1]) {
			return -EINVAL;
		}
	} else {
		colon = strchr(text, ':');
		hl = strlen(text);
		if (colon && !strchr(colon + 1, ':')) {
			hl = (size_t)(colon - text);
			if (parse_port(colon + 1, &p.port) < 0) {
				*why = "not a port (1..65535)";
				return -EINVAL;
			}
		}
	}
	memcpy(host, text, hl);
	host[hl] = '\0';

	if (strcmp(host, "*") == 0) {
		if (deny) {
			*why = "'*' is for allow lists only (a deny list of every host is --network off)";
			return -EINVAL;
		}
		p.kind = WARD_NET_PATTERN_ANY;
		*ret = p;
		return 0;
	}
	h = host;
	if (strncmp(h, "**.", 3) == 0) {
		p.kind = WARD_NET_PATTERN_APEX;
		h += 3;
	} else if (strncmp(h, "*.", 2) == 0) {
		p.kind = WARD_NET_PATTERN_SUBDOMAINS;
		h += 2;
	}
	if (strstr(h, "**")) {
		*why = "'**' only as the first label ('**.example.com')";
		return -EINVAL;
	}
	if (strchr(h, '*') && (h[0] == '[' || strchr(h, ':'))) {
		*why = "an IP address cannot hold '*'";
		return -EINVAL;
	}
	if (ward__net_host_normalize(h, strlen(h), true, p.host) < 0) {
		*why = "not a host name or IP address";
		return -EINVAL;
	}
	if (p.kind != WARD_NET_PATTERN_EXACT && (strchr(p.host, ':') || ipv4_strict(p.host))) {
		*why = "an IP address cannot hold '*'";
		return -EINVAL;
	}
	/* A pattern of wildcards alone would be "*" written another way: say so instead. */
	if (strspn(p.host, "*.") == strlen(p.host) && p.kind != WARD_NET_PATTERN_EXACT) {
		*why = "a wildcard needs a domain after it ('*.example.com')";
		return -EINVAL;
	}
	if (deny && strspn(p.host, "*.") == strlen(p.host)) {
		*why = "'*' is for allow lists only (a deny list of every host is --network off)";
		return -EINVAL;
	}
	*ret = p;
	return 0;
}

/* '*' in pattern label pl matches any run of characters of host label hl (neither crosses a dot). */
static bool label_glob(const char *pl, size_t pn, const char *hl, size_t hn)
{
	size_t pi = 0, hi = 0, star = SIZE_MAX, mark = 0;

	while (hi < hn) {
		if (pi < pn && pl[pi] == '*') {
			star = pi++;
			mark = hi;
		} else if (pi < pn && pl[pi] == hl[hi]) {
			pi++;
			hi++;
		} else if (star != SIZE_MAX) {
			pi = star + 1;
			hi = ++mark;
		} else {
			return false;
		}
	}
	while (pi < pn && pl[pi] == '*')
		pi++;
	return pi == pn;
}

/* Whether host ends with labels matching pattern (label by label, from the right). */
static bool labels_match(const char *pattern, const char *host, size_t host_len)
{
	const char *pe = pattern + strlen(pattern), *he = host + host_len;

	for (;;) {
		const char *ps = pe, *hs = he;

		while (ps > pattern && ps[-1] != '.')
			ps--;
		while (hs > host && hs[-1] != '.')
			hs--;
		if (!label_glob(ps, (size_t)(pe - ps), hs, (size_t)(he - hs)))
			return false;
		if (ps == pattern)
			return hs == host;
		if (hs == host)
			return false;
		pe = ps - 1;
		he = hs - 1;
	}
}

/* Strictly below the pattern: at least one label, a dot, then the pattern's labels. */
static bool below(const char *pattern, size_t pl, const char *host, size_t hl)
{
	if (hl < pl + 2)
		return false;
	for (size_t i = hl - pl - 1; i > 0; i--)
		if (host[i] == '.' && labels_match(pattern, host + i + 1, hl - i - 1))
			return true;
	return false;
}

bool ward__net_pattern_match(const struct ward__net_pattern *p, const char *host, uint16_t port)
{
	size_t hl = strlen(host), pl = strlen(p->host);
	bool literal = strchr(host, ':') != NULL; /* an IPv6 address has no labels */

	if (p->port && p->port != port)
		return false;
	switch (p->kind) {
	case WARD_NET_PATTERN_ANY:
		return true;
	case WARD_NET_PATTERN_EXACT:
		if (literal || !strchr(p->host, '*'))
			return strcmp(p->host, host) == 0;
		return labels_match(p->host, host, hl);
	case WARD_NET_PATTERN_APEX:
		return !literal &&
			(labels_match(p->host, host, hl) || below(p->host, pl, host, hl));
	case WARD_NET_PATTERN_SUBDOMAINS:
		return !literal && below(p->host, pl, host, hl);
	}
	return false;
}

void ward__net_pattern_format(const struct ward__net_pattern *p, char *buf, size_t size)
{
	const char *prefix = p->kind == WARD_NET_PATTERN_SUBDOMAINS ? "*."
		: p->kind == WARD_NET_PATTERN_APEX		    ? "**."
								    : "";
	const char *host = p->kind == WARD_NET_PATTERN_ANY ? "*" : p->host;
	bool v6 = strchr(host, ':') != NULL;

	if (p->port)
		snprintf(buf, size, "%s%s%s%s:%u", prefix, v6 ? "[" : "", host, v6 ? "]" : "",
			 p->port);
	else
		snprintf(buf, size, "%s%s", prefix, host);
}

enum ward__net_verdict ward__net_patterns_decide(const struct ward__net_pattern *allow,
						 size_t n_allow,
						 const struct ward__net_pattern *deny,
						 size_t n_deny, const char *host, uint16_t port)
{
	for (size_t i = 0; i < n_deny; i++)
		if (ward__net_pattern_match(&deny[i], host, port))
			return WARD_NET_DENY;
	for (size_t i = 0; i < n_allow; i++)
		if (ward__net_pattern_match(&allow[i], host, port))
			return WARD_NET_ALLOW;
	return WARD_NET_UNDECIDED;
}
