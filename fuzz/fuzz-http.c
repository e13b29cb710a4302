/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the HTTP request-head parser (src/rpc/http.c). The first byte picks
 * small or default limits and seeds how the rest is cut into reads; the rest
 * is what a client sends. Invariants checked:
 *
 *   - the outcome (result, status, bytes consumed, every parsed field) is
 *     the same whether the bytes arrive at once or in pieces;
 *   - a complete head ends with the empty line, lies within the limits, and
 *     every string extracted is free of CR, LF and NUL;
 *   - a refusal is one of the statuses the parser may give, and every
 *     status it or the upgrade check gives has a response;
 *   - the parser never keeps more than max_head bytes.
 *
 * Built with -fsanitize=fuzzer it is a libFuzzer target; linked with replay.c
 * it replays the corpus (in every test run).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "rpc/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

static void check_str(const char *s)
{
	if (!s)
		return;
	for (; *s; s++)
		CHECK(*s != '\r' && *s != '\n');
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Feeds everything, cut by the seed (0: at once); returns the result and the bytes consumed. */
static int run(struct ward__http_parser *p, const struct ward__http_limits *l, const uint8_t *d,
	       size_t n, uint32_t seed, size_t *ret_consumed)
{
	size_t off = 0;
	int r = WARD_HTTP_AGAIN;

	CHECK(ward__http_parser_init(p, l) == 0);
	while (off < n) {
		size_t chunk = n - off, used = (size_t)-1;

		if (seed) {
			seed = seed * 1103515245u + 12345u;
			chunk = MIN((size_t)(seed >> 16) % 64 + 1, n - off);
		}
		r = ward__http_feed(p, d + off, chunk, &used);
		CHECK(r >= 0 && used <= chunk);
		CHECK(p->head.len <= p->limits.max_head && p->head.alloc <= p->limits.max_head + 1);
		off += used;
		if (r != WARD_HTTP_AGAIN)
			break;
		CHECK(used == chunk);
	}
	*ret_consumed = off;
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ward__http_limits small = {.max_head = 256, .max_line = 64, .max_fields = 4};
	struct ward__http_parser a, b;
	const struct ward__http_limits *l;
	struct ward__buf out;
	size_t ca, cb;
	int ra, rb, status;

	if (size < 1)
		return 0;
	l = data[0] & 1 ? &small : NULL;
	ra = run(&a, l, data + 1, size - 1, 0, &ca);
	rb = run(&b, l, data + 1, size - 1, data[0] | 1u, &cb);

	CHECK(ra == rb && ca == cb);
	CHECK(ward__buf_init(&out, 4096) == 0);
	if (ra == WARD_HTTP_ERROR) {
		CHECK(a.status == b.status);
		CHECK(a.status == 400 || a.status == 414 || a.status == 431 || a.status == 505);
		CHECK(a.reason && a.reason[0]);
		CHECK(ward__http_respond(&out, a.status) == 0);
	} else if (ra == WARD_HTTP_DONE) {
		const struct ward__http_request *x = &a.request, *y = &b.request;

		CHECK(ca >= 16 && memcmp(data + 1 + ca - 4, "\r\n\r\n", 4) == 0);
		CHECK(ca <= a.limits.max_head);
		CHECK(x->method && x->method[0] && x->path && x->path[0] == '/');
		CHECK(x->version_minor == 0 || x->version_minor == 1);
		CHECK(x->version_minor == 0 || x->host);
		CHECK(x->n_fields <= a.limits.max_fields);
		CHECK(!x->bearer ||
		      (x->bearer_len > 0 && x->bearer >= x->authorization &&
		       x->bearer + x->bearer_len <= x->authorization + strlen(x->authorization)));
		CHECK(!x->ws_key_valid || (x->ws_key && strlen(x->ws_key) == 24));
		check_str(x->method);
		check_str(x->path);
		check_str(x->query);
		check_str(x->host);
		check_str(x->upgrade);
		check_str(x->authorization);
		for (size_t i = 0; i < x->n_fields; i++) {
			check_str(x->fields[i].name);
			check_str(x->fields[i].value);
			CHECK(strcmp(x->fields[i].name, y->fields[i].name) == 0);
			CHECK(strcmp(x->fields[i].value, y->fields[i].value) == 0);
		}
		CHECK(same_str(x->method, y->method) && same_str(x->path, y->path) &&
		      same_str(x->query, y->query) && same_str(x->host, y->host) &&
		      same_str(x->upgrade, y->upgrade) && same_str(x->ws_key, y->ws_key) &&
		      same_str(x->ws_version, y->ws_version) &&
		      same_str(x->authorization, y->authorization));
		CHECK(x->version_minor == y->version_minor && x->n_fields == y->n_fields &&
		      x->upgrade_websocket == y->upgrade_websocket &&
		      x->connection_upgrade == y->connection_upgrade &&
		      x->connection_close == y->connection_close &&
		      x->ws_key_valid == y->ws_key_valid && x->has_origin == y->has_origin &&
		      x->has_body == y->has_body && x->bearer_len == y->bearer_len);

		status = ward__http_check_upgrade(x, NULL);
		CHECK(status == 0 || status == 400 || status == 426);
		if (status == 0) {
			CHECK(ward__http_respond_upgrade(&out, x->ws_key) == 0);
			CHECK(out.len > 4 && memcmp(out.data + out.len - 4, "\r\n\r\n", 4) == 0);
		} else {
			CHECK(ward__http_respond(&out, status) == 0);
		}
	} else {
		CHECK(ra == WARD_HTTP_AGAIN && ca == size - 1);
	}
	ward__buf_release(&out);
	ward__http_parser_release(&a);
	ward__http_parser_release(&b);
	return 0;
}
