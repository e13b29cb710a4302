/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdarg.h>
#include <sys/types.h>

#include "basic/macro.h"

/*
 * The one bounded byte buffer of ward.
 *
 * Every byte count that a command, an agent or a client controls (captured
 * output, JSON we emit, messages we assemble) lives in one of these, so that a
 * hostile producer can never make ward's memory grow past a limit fixed when
 * the buffer was set up. The limit is hard: an append that would go past it
 * fails with -ENOBUFS and leaves the buffer exactly as it was (fail closed,
 * all or nothing, never a silent partial append).
 *
 * Invariants, true between any two calls:
 *   - len <= max: the hard capacity, fixed by ward__buf_init() and never changed;
 *   - data == NULL exactly when alloc == 0 (nothing allocated yet: init never
 *     allocates, so an unused buffer costs nothing);
 *   - when data != NULL: len < alloc <= max + 1 and data[len] == '\0', so the
 *     contents can be handed out as a C string (they may contain other NULs);
 *   - storage grows geometrically on demand, never beyond max + 1 bytes;
 *   - populated only says how far large storage was pre-faulted; it never
 *     changes what the buffer holds.
 *
 * The fields are visible so that code that manages a region in place (the
 * output capture's tail ring) can write inside [0, len) directly; nothing but
 * the functions below may change len, alloc or data.
 */
struct ward__buf {
	uint8_t *data;
	size_t len; /* bytes in use */
	size_t alloc; /* bytes allocated (0, or len + 1 .. max + 1) */
	size_t max; /* hard capacity in bytes */
	size_t populated; /* a hint: storage below this offset was pre-faulted (see buf.c) */
};

/* Largest capacity a buffer may be given (keeps max + 1 and doublings from overflowing). */
#define WARD_BUF_MAX_CAPACITY ((size_t)1 << 40)

/* Sets up an empty buffer holding at most max bytes. Allocates nothing. -EINVAL if max is too large. */
WARD_INTERNAL int ward__buf_init(struct ward__buf *b, size_t max);
/* Frees the storage and leaves an empty buffer with the same max. Accepts a zeroed buffer. */
WARD_INTERNAL void ward__buf_release(struct ward__buf *b);
/* Forgets the contents, keeps the storage. */
WARD_INTERNAL void ward__buf_clear(struct ward__buf *b);

/* Bytes that can still be appended before the hard capacity. */
static inline size_t ward__buf_room(const struct ward__buf *b)
{
	return b->max - b->len;
}

/* Makes sure extra more bytes fit without reallocation. -ENOBUFS past max, -ENOMEM. */
WARD_INTERNAL int ward__buf_reserve(struct ward__buf *b, size_t extra);
/* Appends n bytes, all or nothing: -ENOBUFS when len + n > max, -ENOMEM. */
WARD_INTERNAL int ward__buf_append(struct ward__buf *b, const void *p, size_t n);
WARD_INTERNAL int ward__buf_append_str(struct ward__buf *b, const char *s);
WARD_INTERNAL int ward__buf_append_byte(struct ward__buf *b, uint8_t c);
/* Appends formatted text, all or nothing. */
WARD_INTERNAL int ward__buf_printf(struct ward__buf *b, const char *fmt, ...) _printf_(2, 3);
/* Inserts n bytes at offset off (<= len), moving the rest up. All or nothing. */
WARD_INTERNAL int ward__buf_insert(struct ward__buf *b, size_t off, const void *p, size_t n);

/*
 * Hands the storage to the caller (free() it) and leaves the buffer empty.
 * The result is NUL-terminated and never NULL on success, even when empty;
 * *ret_len (optional) receives len. Returns NULL only on ENOMEM (empty buffer
 * with nothing allocated), with the buffer unchanged.
 */
WARD_INTERNAL uint8_t *ward__buf_steal(struct ward__buf *b, size_t *ret_len);
