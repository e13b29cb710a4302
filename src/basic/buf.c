/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "basic/buf.h"

/* First allocation: small outputs (the common case) stay small. */
#define BUF_MIN_ALLOC 256

/*
 * Large buffers are pre-faulted ahead of the writes, 256 KiB at a time, with
 * one madvise(MADV_POPULATE_WRITE) instead of one page fault per 4 KiB. Under
 * nested virtualisation (the CI machines) a page fault costs about 10 us, and
 * a captured run with full caps touches ~1,200 pages: 12 ms, more than the
 * whole sandbox launch. The window bounds the memory faulted but not yet
 * used. Kernels before 5.14 answer EINVAL and the pages fault as usual.
 */
#define BUF_POPULATE_MIN ((size_t)64 << 10)
#define BUF_POPULATE_AHEAD ((size_t)256 << 10)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

int ward__buf_init(struct ward__buf *b, size_t max)
{
	if (max > WARD_BUF_MAX_CAPACITY)
		return -EINVAL;
	*b = (struct ward__buf){.max = max};
	return 0;
}

void ward__buf_release(struct ward__buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
	b->populated = 0;
}

void ward__buf_clear(struct ward__buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

static void populate(struct ward__buf *b, size_t need)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), from, to;
	size_t end = MIN(b->alloc, need + BUF_POPULATE_AHEAD);

	if (b->alloc < BUF_POPULATE_MIN || need <= b->populated)
		return;
	/* Whole pages holding bytes of ours are mapped, so rounding outwards stays valid. */
	from = (uintptr_t)(b->data + b->populated) & ~(page - 1);
	to = ((uintptr_t)(b->data + end) + page - 1) & ~(page - 1);
	/* Only a hint: on failure the pages simply fault one by one when written. */
	(void)madvise((void *)from, to - from, MADV_POPULATE_WRITE);
	b->populated = end;
}

int ward__buf_reserve(struct ward__buf *b, size_t extra)
{
	size_t need, want;
	uint8_t *p;

	if (extra > b->max - b->len)
		return -ENOBUFS;
	need = b->len + extra + 1; /* <= max + 1, cannot overflow: max <= 2^40 */
	if (need <= b->alloc) {
		populate(b, need);
		return 0;
	}
	/* Doubling keeps appends amortised O(1); the cap keeps it bounded. */
	want = MAX(need, MAX(b->alloc * 2, (size_t)BUF_MIN_ALLOC));
	want = MIN(want, b->max + 1);
	p = realloc(b->data, want);
	if (!p)
		return -ENOMEM;
	if (!b->data)
		p[0] = '\0';
	b->data = p;
	b->alloc = want;
	/* The contents moved or were copied: what was written is faulted in, nothing beyond. */
	b->populated = MIN(b->populated, b->len + 1);
	populate(b, need);
	return 0;
}

int ward__buf_append(struct ward__buf *b, const void *p, size_t n)
{
	int r;

	if (n == 0)
		return ward__buf_reserve(b, 0);
	r = ward__buf_reserve(b, n);
	if (r < 0)
		return r;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int ward__buf_append_str(struct ward__buf *b, const char *s)
{
	return ward__buf_append(b, s, strlen(s));
}

int ward__buf_append_byte(struct ward__buf *b, uint8_t c)
{
	return ward__buf_append(b, &c, 1);
}

int ward__buf_printf(struct ward__buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, r;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	r = ward__buf_reserve(b, (size_t)n);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	/* The room for n + 1 bytes (with the NUL) was reserved just above. */
	vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

int ward__buf_insert(struct ward__buf *b, size_t off, const void *p, size_t n)
{
	int r;

	if (off > b->len)
		return -EINVAL;
	r = ward__buf_reserve(b, n);
	if (r < 0)
		return r;
	/* Moves the tail and its terminating NUL. */
	memmove(b->data + off + n, b->data + off, b->len - off + 1);
	memcpy(b->data + off, p, n);
	b->len += n;
	return 0;
}

uint8_t *ward__buf_steal(struct ward__buf *b, size_t *ret_len)
{
	uint8_t *p;

	if (!b->data) {
		p = malloc(1);
		if (!p)
			return NULL;
		p[0] = '\0';
	} else {
		p = b->data;
	}
	if (ret_len)
		*ret_len = b->len;
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
	b->populated = 0;
	return p;
}
