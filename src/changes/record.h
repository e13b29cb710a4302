/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The text form of a run's record (record.c): one line per field and per
 * change, every string escaped (%XX for bytes outside '!'..'~' and for '%'),
 * and a last line "sum <SHA-256 of everything before it>", so that a
 * damaged or cut record is refused, never half read.
 */
#include "basic/buf.h"
#include "changes/changes.h"

#define WARD_RECORD_VERSION 1

WARD_INTERNAL int ward__record_write(const struct ward__changes_run *run, struct ward__buf *out);
/*
 * Fills run (its id, mode, state, roots, changes, notes...) from a record;
 * -EBADMSG with why (a short reason: "checksum mismatch", "line 12") for a
 * damaged or incomplete one, -ENOMEM.
 */
WARD_INTERNAL int ward__record_read(struct ward__changes_run *run, const char *data, size_t len,
				    char *why, size_t why_size);
