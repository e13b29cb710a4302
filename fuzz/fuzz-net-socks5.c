/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the SOCKS5 codec (src/net/socks5.c). The first byte seeds how the
 * rest is cut into reads; the rest is what a client sends, then (after the
 * negotiation) a UDP datagram header. Invariants: the same state, request
 * and bytes consumed however the input is cut; a completed request has a
 * NUL-terminated host of at most 255 bytes; a failure has a reply; the UDP
 * header parser never claims more bytes than it was given.
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

static enum ward__socks5_state run(struct ward__socks5 *s, const uint8_t *d, size_t n,
				   uint32_t seed, size_t *ret_used)
{
	size_t off = 0;
	enum ward__socks5_state st = WARD_SOCKS5_GREETING;

	*s = (struct ward__socks5){0};
	while (off < n) {
		size_t chunk = n - off, used, out_len;
		uint8_t out[2];

		if (seed) {
			seed = seed * 1103515245u + 12345u;
			chunk = MIN((size_t)(seed >> 16) % 8 + 1, n - off);
		}
		st = ward__socks5_feed(s, d + off, chunk, &used, out, &out_len);
		CHECK(used <= chunk);
		CHECK(out_len == 0 || out_len == 2);
		off += used;
		if (st == WARD_SOCKS5_DONE || st == WARD_SOCKS5_FAILED)
			break;
		/* A state change stops a feed early (the method reply goes first); anything else eats all. */
		if (used < chunk && st != WARD_SOCKS5_REQUEST)
			abort();
	}
	*ret_used = off;
	return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ward__socks5 a, b;
	size_t ua, ub;
	enum ward__socks5_state sa, sb;

	if (size < 1 || size > 4096)
		return 0;
	sa = run(&a, data + 1, size - 1, 0, &ua);
	sb = run(&b, data + 1, size - 1, data[0] | 1u, &ub);
	CHECK(sa == sb);
	CHECK(ua == ub);
	if (sa == WARD_SOCKS5_DONE) {
		CHECK(a.cmd == b.cmd && a.port == b.port && strcmp(a.host, b.host) == 0);
		CHECK(strlen(a.host) <= 255 && strlen(a.host) > 0);
	}
	if (sa == WARD_SOCKS5_FAILED)
		CHECK(a.reply == b.reply);
	{
		char host[256];
		struct ward__net_addr addr;
		bool is_addr;
		uint16_t port;
		int r = ward__socks5_udp_parse(data + 1, size - 1, host, &addr, &is_addr, &port);

		CHECK(r < 0 || (size_t)r <= size - 1);
	}
	return 0;
}
