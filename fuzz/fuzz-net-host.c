/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes host names, host patterns and address ranges (src/net/pattern.c,
 * src/net/addr.c). The first byte picks what the rest is. Invariants:
 *
 *   - a normalised host normalises to itself, is lowercase ASCII without a
 *     final dot, within the RFC 1035 lengths;
 *   - a parsed pattern printed and parsed again is the same pattern, and an
 *     exact pattern without '*' matches its own host (an apex pattern too,
 *     a subdomain pattern a host one label below);
 *   - a range printed and parsed again is the same range, and contains its
 *     own address; whether an address is public never crashes.
 *
 * Built with -fsanitize=fuzzer it is a libFuzzer target; linked with replay.c
 * it replays the corpus (in every test run).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

static void check_host(const char *h, bool glob)
{
	char again[WARD_NET_HOST_MAX + 1];
	size_t n = strlen(h);

	CHECK(n > 0 && n <= WARD_NET_HOST_MAX);
	CHECK(h[n - 1] != '.' || strchr(h, ':'));
	for (const char *c = h; *c; c++)
		CHECK((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || strchr("-_.:", *c) ||
		      (glob && *c == '*'));
	CHECK(ward__net_host_normalize(h, n, glob, again) == 0);
	CHECK(strcmp(again, h) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[600], out[WARD_NET_HOST_MAX + 1];
	uint8_t mode;

	if (size < 1 || size > sizeof(text))
		return 0;
	mode = data[0] % 4;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	if (memchr(data + 1, '\0', size - 1))
		return 0;

	if (mode == 0 || mode == 1) {
		if (ward__net_host_normalize(text, size - 1, mode == 1, out) == 0)
			check_host(out, mode == 1);
	} else if (mode == 2) {
		struct ward__net_pattern p, q;
		const char *why = NULL;
		char buf[WARD_NET_HOST_MAX + 16], sub[WARD_NET_HOST_MAX + 8];
		bool deny = size > 1 && (data[1] & 1);

		if (ward__net_pattern_parse(text, deny, &p, &why) < 0) {
			CHECK(why && *why);
			return 0;
		}
		if (p.kind != WARD_NET_PATTERN_ANY)
			check_host(p.host, true);
		ward__net_pattern_format(&p, buf, sizeof(buf));
		CHECK(ward__net_pattern_parse(buf, deny, &q, &why) == 0);
		CHECK(q.kind == p.kind && q.port == p.port && strcmp(q.host, p.host) == 0);
		if (!strchr(p.host, '*')) {
			uint16_t port = p.port ? p.port : 443;

			if (p.kind == WARD_NET_PATTERN_EXACT || p.kind == WARD_NET_PATTERN_APEX)
				CHECK(ward__net_pattern_match(&p, p.host, port));
			if (p.kind == WARD_NET_PATTERN_SUBDOMAINS && !strchr(p.host, ':') &&
			    strlen(p.host) + 2 <= WARD_NET_HOST_MAX) {
				snprintf(sub, sizeof(sub), "a.%s", p.host);
				CHECK(ward__net_pattern_match(&p, sub, port));
				CHECK(!ward__net_pattern_match(&p, p.host, port));
			}
			if (p.port)
				CHECK(!ward__net_pattern_match(&p, p.host, (uint16_t)(p.port + 1)));
		}
	} else {
		struct ward__net_cidr c, d;
		char buf[80];

		if (ward__net_cidr_parse(text, &c) < 0)
			return 0;
		ward__net_cidr_format(&c, buf, sizeof(buf));
		CHECK(ward__net_cidr_parse(buf, &d) == 0);
		CHECK(d.prefix == c.prefix && memcmp(&d.addr, &c.addr, sizeof(c.addr)) == 0);
		CHECK(ward__net_cidr_contains(&c, &c.addr));
		(void)ward__net_addr_public(&c.addr, NULL);
	}
	return 0;
}
