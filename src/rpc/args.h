/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>

#include "basic/macro.h"

/*
 * The arguments of a server method or MCP tool, checked one by one. Each
 * getter returns 1 when the member is present and valid (*ret written), 0
 * when it is absent or null (*ret untouched), -1 when it is invalid, with a
 * one-line reason in why (size bytes) naming the member.
 */

/* False (and why) when args has a member not in allowed (NULL-terminated). */
WARD_INTERNAL bool ward__check_keys(const json_t *args, const char *const *allowed, char *why,
				    size_t size);
/*
 * An integer within [lo, hi]: a JSON integer, an integral number (a model may
 * write 1000.0) or a string of digits.
 */
WARD_INTERNAL int ward__arg_int(const json_t *args, const char *name, int64_t lo, int64_t hi,
				int64_t *ret, char *why, size_t size);
WARD_INTERNAL int ward__arg_bool(const json_t *args, const char *name, bool *ret, char *why,
				 size_t size);
/*
 * A string. With ret_len it may hold NUL characters (its length there);
 * without, a string holding a NUL is invalid.
 */
WARD_INTERNAL int ward__arg_str(const json_t *args, const char *name, const char **ret,
				size_t *ret_len, char *why, size_t size);
