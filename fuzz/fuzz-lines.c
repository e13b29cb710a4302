/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the newline framer (src/rpc/lines.c) against a reference model
 * that sees the whole input at once. The first byte picks max_line (1-64),
 * the second seeds how the rest is cut into reads (1-40 bytes each), and the
 * rest is the byte stream. Invariants checked:
 *
 *   - the events (lines and too-long reports with their bytes) are exactly
 *     the model's, however the stream is cut;
 *   - every call consumes what it says, and NEED_MORE consumes everything;
 *   - the framer never keeps more than max_line + 1 bytes.
 *
 * Built with -fsanitize=fuzzer it is a libFuzzer target; linked with replay.c
 * it replays the corpus (in every test run).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/lines.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

struct event {
	int type;
	size_t len;
	uint8_t *bytes;
};

struct events {
	struct event *v;
	size_t n;
};

static void add(struct events *e, int type, const uint8_t *p, size_t len)
{
	e->v = realloc(e->v, (e->n + 1) * sizeof(*e->v));
	CHECK(e->v);
	e->v[e->n].type = type;
	e->v[e->n].len = len;
	e->v[e->n].bytes = malloc(len + 1);
	CHECK(e->v[e->n].bytes);
	if (len)
		memcpy(e->v[e->n].bytes, p, len);
	e->n++;
}

static void free_events(struct events *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i].bytes);
	free(e->v);
}

/* The model: split at every "\n", drop one "\r" before it, classify by length. */
static void model(const uint8_t *p, size_t n, size_t max, struct events *e)
{
	size_t start = 0;

	while (start < n) {
		const uint8_t *nl = memchr(p + start, '\n', n - start);
		size_t end = nl ? (size_t)(nl - p) : n, raw = end - start;
		size_t content = raw - (raw > 0 && p[end - 1] == '\r');

		if (content > max)
			add(e, WARD_LINES_TOO_LONG, p + start, max);
		else if (nl || raw > 0)
			add(e, WARD_LINES_LINE, p + start, content);
		start = end + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct events want = {0}, got = {0};
	struct ward__lines l;
	struct ward__line line;
	uint32_t seed;
	size_t max, off = 0;
	int ev;

	if (size < 2)
		return 0;
	max = (size_t)(data[0] % 64) + 1;
	seed = data[1] * 2654435761u + 1;
	data += 2;
	size -= 2;

	model(data, size, max, &want);
	CHECK(ward__lines_init(&l, max) == 0);
	while (off < size) {
		size_t chunk, pos = 0;

		seed = seed * 1103515245u + 12345u;
		chunk = MIN((size_t)(seed >> 16) % 40 + 1, size - off);
		while (pos < chunk) {
			size_t used = (size_t)-1;

			ev = ward__lines_next(&l, data + off + pos, chunk - pos, &used, &line);
			CHECK(ev >= 0 && used <= chunk - pos);
			CHECK(l.partial.len <= max + 1);
			pos += used;
			if (ev == WARD_LINES_NEED_MORE) {
				CHECK(pos == chunk);
				break;
			}
			CHECK(ev == WARD_LINES_LINE || ev == WARD_LINES_TOO_LONG);
			CHECK(line.len <= max);
			CHECK(ev == WARD_LINES_LINE || line.len == max);
			add(&got, ev, line.data, line.len);
		}
		off += chunk;
	}
	ev = ward__lines_finish(&l, &line);
	if (ev == WARD_LINES_LINE)
		add(&got, ev, line.data, line.len);
	else
		CHECK(ev == WARD_LINES_NEED_MORE);
	CHECK(ward__lines_finish(&l, &line) == WARD_LINES_NEED_MORE);

	CHECK(got.n == want.n);
	for (size_t i = 0; i < got.n; i++) {
		CHECK(got.v[i].type == want.v[i].type);
		CHECK(got.v[i].len == want.v[i].len);
		CHECK(memcmp(got.v[i].bytes, want.v[i].bytes, got.v[i].len) == 0);
	}
	free_events(&want);
	free_events(&got);
	ward__lines_release(&l);
	return 0;
}
