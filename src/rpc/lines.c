/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "rpc/lines.h"

int ward__lines_init(struct ward__lines *l, size_t max_line)
{
	int r;

	if (max_line < 1 || max_line > WARD_LINES_MAX_LINE)
		return -EINVAL;
	*l = (struct ward__lines){.max_line = max_line};
	/* Room for a whole line and the "\r" that may turn out to precede its "\n". */
	r = ward__buf_init(&l->partial, max_line + 1);
	if (r < 0)
		return r;
	return 0;
}

void ward__lines_release(struct ward__lines *l)
{
	if (!l)
		return;
	ward__buf_release(&l->partial);
	l->discarding = false;
	l->reset = false;
}

/*
 * The first max_line bytes of a line too long, contiguous: the caller's bytes
 * when the line started in them, else the kept start completed from them.
 */
static int prefix(struct ward__lines *l, const uint8_t *start, size_t avail,
		  struct ward__line *ret_line)
{
	size_t have = l->partial.len;

	if (have == 0) {
		*ret_line = (struct ward__line){start, l->max_line};
		return 0;
	}
	if (have < l->max_line) {
		int r = ward__buf_append(&l->partial, start, MIN(avail, l->max_line - have));
		if (r < 0)
			return r;
	}
	*ret_line = (struct ward__line){l->partial.data, l->max_line};
	l->reset = true;
	return 0;
}

int ward__lines_next(struct ward__lines *l, const void *data, size_t len, size_t *ret_consumed,
		     struct ward__line *ret_line)
{
	const uint8_t *p = data, *start, *nl;
	size_t i = 0, have, avail, window;
	bool was_discarding = l->discarding;
	int r;

	if (l->reset) {
		ward__buf_clear(&l->partial);
		l->reset = false;
	}
	if (len > 0 && !p)
		return -EINVAL;
	if (l->discarding) {
		nl = len > 0 ? memchr(p, '\n', len) : NULL;
		if (!nl) {
			*ret_consumed = len;
			return WARD_LINES_NEED_MORE;
		}
		i = (size_t)(nl - p) + 1;
		l->discarding = false;
	}

	have = l->partial.len;
	start = p + i;
	avail = len - i;
	/*
	 * A line within the limit has at most max_line bytes, one "\r" and the
	 * "\n": past that window without a "\n" it is too long, so nothing
	 * beyond it is ever searched or kept.
	 */
	window = l->max_line + 2 - have;
	nl = avail > 0 ? memchr(start, '\n', MIN(avail, window)) : NULL;
	if (nl) {
		size_t n = (size_t)(nl - start), total = have + n, content;
		uint8_t last = n > 0 ? start[n - 1] : have > 0 ? l->partial.data[have - 1] : 0;

		content = total - (total > 0 && last == '\r');
		*ret_consumed = i + n + 1;
		if (content > l->max_line) {
			r = prefix(l, start, n, ret_line);
			if (r < 0)
				goto fail;
			return WARD_LINES_TOO_LONG;
		}
		if (have == 0) {
			*ret_line = (struct ward__line){start, content};
			return WARD_LINES_LINE;
		}
		r = ward__buf_append(&l->partial, start, n);
		if (r < 0)
			goto fail;
		*ret_line = (struct ward__line){l->partial.data, content};
		l->reset = true;
		return WARD_LINES_LINE;
	}

	if (avail < window) {
		size_t total = have + avail;
		uint8_t last = avail > 0 ? start[avail - 1]
			: have > 0	 ? l->partial.data[have - 1]
					 : 0;

		/* max_line + 1 bytes are only fine if the last is the "\r" of a CRLF. */
		if (total == l->max_line + 1 && last != '\r') {
			r = prefix(l, start, avail, ret_line);
			if (r < 0)
				goto fail;
			l->discarding = true;
			*ret_consumed = len;
			return WARD_LINES_TOO_LONG;
		}
		r = avail > 0 ? ward__buf_append(&l->partial, start, avail) : 0;
		if (r < 0)
			goto fail;
		*ret_consumed = len;
		return WARD_LINES_NEED_MORE;
	}

	/* window bytes and no "\n": too long. The rest is skipped by the next calls. */
	r = prefix(l, start, avail, ret_line);
	if (r < 0)
		goto fail;
	l->discarding = true;
	*ret_consumed = i + window;
	return WARD_LINES_TOO_LONG;

fail:
	/* Appends are all or nothing: with the flag back, the same call can be repeated. */
	l->discarding = was_discarding;
	return r;
}

int ward__lines_finish(struct ward__lines *l, struct ward__line *ret_line)
{
	size_t have;

	if (l->reset) {
		ward__buf_clear(&l->partial);
		l->reset = false;
	}
	l->discarding = false;
	have = l->partial.len;
	if (have == 0)
		return WARD_LINES_NEED_MORE;
	/* At most max_line + 1 bytes are kept, and then only when the last is "\r". */
	*ret_line =
		(struct ward__line){l->partial.data, have - (l->partial.data[have - 1] == '\r')};
	l->reset = true;
	return WARD_LINES_LINE;
}
