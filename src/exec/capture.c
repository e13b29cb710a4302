/* SPDX-License-Identifier: MIT */
/*
 * Head+tail capture of a command's output.
 *
 * An agent needs the beginning of a command's output (what it was doing) and
 * the end (how it ended: the error, the summary), rarely the middle. Codex
 * keeps only the head and loses the final error message of a long build. We
 * keep both, in memory bounded by the cap, however much the command writes:
 * the middle is counted, never stored.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"

int ward__capture_init(struct ward__capture *c, size_t cap)
{
	int r;

	if (cap < WARD_OUTPUT_CAP_MIN || cap > WARD_OUTPUT_CAP_MAX)
		return -EINVAL;
	*c = (struct ward__capture){.cap = cap, .head_cap = cap / 2, .tail_cap = cap - cap / 2};
	/* The marker room is part of the hard capacity, so finishing never needs more. */
	r = ward__buf_init(&c->buf, cap + WARD_CAPTURE_MARKER_MAX);
	if (r < 0)
		return r;
	return 0;
}

void ward__capture_release(struct ward__capture *c)
{
	ward__buf_release(&c->buf);
	c->ring_pos = 0;
	c->total = 0;
}

uint64_t ward__capture_omitted(const struct ward__capture *c)
{
	return c->total > c->cap ? c->total - c->cap : 0;
}

size_t ward__capture_marker(uint64_t omitted, char *out)
{
	int n = snprintf(out, WARD_CAPTURE_MARKER_MAX, "\n... %" PRIu64 " bytes omitted ...\n",
			 omitted);

	return n > 0 ? (size_t)n : 0;
}

int ward__capture_append(struct ward__capture *c, const void *p, size_t n)
{
	const uint8_t *s = p;
	size_t k, tail_len, first;
	uint8_t *ring;
	int r;

	if (n == 0)
		return 0;

	/* Head: the first head_cap bytes, as they come. */
	if (c->buf.len < c->head_cap) {
		k = MIN(n, c->head_cap - c->buf.len);
		r = ward__buf_append(&c->buf, s, k);
		if (r < 0)
			return r;
		c->total += k;
		s += k;
		n -= k;
		if (n == 0)
			return 0;
	}

	/* Tail region, not yet full: fill it linearly. */
	tail_len = c->buf.len - c->head_cap;
	if (tail_len < c->tail_cap) {
		k = MIN(n, c->tail_cap - tail_len);
		r = ward__buf_append(&c->buf, s, k);
		if (r < 0)
			return r;
		c->total += k;
		s += k;
		n -= k;
		if (n == 0)
			return 0;
	}

	/* Tail region full: a ring whose oldest byte is at ring_pos. Only the last tail_cap bytes can survive. */
	ring = c->buf.data + c->head_cap;
	c->total += n;
	if (n >= c->tail_cap) {
		memcpy(ring, s + (n - c->tail_cap), c->tail_cap);
		c->ring_pos = 0;
		return 0;
	}
	first = MIN(n, c->tail_cap - c->ring_pos);
	memcpy(ring + c->ring_pos, s, first);
	memcpy(ring, s + first, n - first);
	c->ring_pos = (c->ring_pos + n) % c->tail_cap;
	return 0;
}

static void reverse(uint8_t *p, size_t n)
{
	for (size_t i = 0, j = n; i + 1 < j; i++, j--) {
		uint8_t t = p[i];

		p[i] = p[j - 1];
		p[j - 1] = t;
	}
}

int ward__capture_finish(struct ward__capture *c, uint8_t **ret, size_t *ret_len,
			 uint64_t *ret_omitted)
{
	uint64_t omitted = ward__capture_omitted(c);
	size_t len;
	uint8_t *p;
	int r;

	if (omitted > 0) {
		char marker[WARD_CAPTURE_MARKER_MAX];
		size_t m = ward__capture_marker(omitted, marker);

		/* Reserve first, so that on -ENOMEM the ring is still in its original order. */
		r = ward__buf_reserve(&c->buf, m);
		if (r < 0)
			return r;
		if (c->ring_pos > 0) {
			/* Rotate the full ring left by ring_pos, in place: oldest byte first. */
			uint8_t *ring = c->buf.data + c->head_cap;

			reverse(ring, c->ring_pos);
			reverse(ring + c->ring_pos, c->tail_cap - c->ring_pos);
			reverse(ring, c->tail_cap);
			c->ring_pos = 0;
		}
		r = ward__buf_insert(&c->buf, c->head_cap, marker, m);
		if (r < 0)
			return r; /* Cannot happen: the room was reserved above. */
	}
	p = ward__buf_steal(&c->buf, &len);
	if (!p)
		return -ENOMEM;
	ward__capture_release(c);
	*ret = p;
	*ret_len = len;
	if (ret_omitted)
		*ret_omitted = omitted;
	return 0;
}
