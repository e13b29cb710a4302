/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes what the plain HTTP proxy does with a request (src/rpc/http.c in
 * its proxy mode, src/net/httpfwd.c). The first byte seeds how the body is
 * cut; the rest is a request head and what follows it. Invariants:
 *
 *   - an accepted request names a normalised host and a port;
 *   - the head sent upstream is itself a valid strict request head in
 *     origin form (the server's parser accepts it whole, and nothing of it
 *     is left over), names the same host in Host and ends the connection;
 *   - the body framer claims the same bytes and reaches the same end
 *     however the body is cut, and never more bytes than it was given.
 *
 * Built with -fsanitize=fuzzer it is a libFuzzer target; linked with replay.c
 * it replays the corpus (in every test run).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "net/net.h"
#include "rpc/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

static void check_body(const struct ward__body *start, const uint8_t *d, size_t n, uint32_t seed)
{
	struct ward__body a = *start, b = *start;
	ssize_t whole = ward__body_feed(&a, d, n);
	size_t off = 0;
	bool failed = false;

	CHECK(whole < 0 || (size_t)whole <= n);
	/* An empty feed first: a body that is complete at once (none at all) says so. */
	CHECK(ward__body_feed(&b, d, 0) == 0);
	while (off < n && !b.done) {
		size_t chunk;
		ssize_t r;

		seed = seed * 1103515245u + 12345u;
		chunk = MIN((size_t)(seed >> 16) % 16 + 1, n - off);
		r = ward__body_feed(&b, d + off, chunk);
		if (r < 0) {
			failed = true;
			break;
		}
		CHECK((size_t)r <= chunk);
		off += (size_t)r;
		if ((size_t)r < chunk)
			CHECK(b.done);
	}
	CHECK(failed == (whole < 0));
	if (whole >= 0) {
		CHECK(off == (size_t)whole);
		CHECK(a.done == b.done);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ward__http_limits lim = {
		.max_head = 4096, .max_line = 2048, .max_fields = 32, .proxy = true};
	struct ward__http_parser p, q;
	struct ward__body body;
	struct ward__buf out;
	char host[WARD_NET_HOST_MAX + 1];
	const char *why = NULL;
	uint16_t port;
	bool connect;
	size_t used, used2;
	int status;

	if (size < 1 || size > 16384)
		return 0;
	CHECK(ward__http_parser_init(&p, &lim) == 0);
	if (ward__http_feed(&p, data + 1, size - 1, &used) != WARD_HTTP_DONE) {
		ward__http_parser_release(&p);
		return 0;
	}
	status = ward__httpfwd_target(&p.request, &connect, host, &port, &body, &why);
	if (status) {
		CHECK(status >= 400 && status < 600 && why);
		ward__http_parser_release(&p);
		return 0;
	}
	CHECK(port > 0 && host[0]);
	if (!connect) {
		char want[WARD_NET_HOST_MAX + 16];

		CHECK(ward__buf_init(&out, 65536) == 0);
		CHECK(ward__httpfwd_head(&p.request, &out) == 0);
		CHECK(ward__http_parser_init(&q, NULL) == 0);
		CHECK(ward__http_feed(&q, out.data, out.len, &used2) == WARD_HTTP_DONE ||
		      q.status == 431 || q.status == 414 || q.status == 400);
		if (q.state == WARD_HTTP_DONE) {
			CHECK(used2 == out.len);
			CHECK(q.request.connection_close);
			CHECK(ward__net_host_normalize(q.request.host, strlen(q.request.host),
						       false, want) == 0 ||
			      strchr(q.request.host, ':'));
		}
		ward__http_parser_release(&q);
		ward__buf_release(&out);
		check_body(&body, data + 1 + used, size - 1 - used, data[0] | 1u);
	}
	ward__http_parser_release(&p);
	return 0;
}
