/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>

#include "basic/macro.h"

/*
 * The arguments of a server method or MCP tool, checked one by one. Each
 * getter returns 1 when the member is present and valid (*ret written), 0
 * when it is absent or null (*ret untouched), -1 when it is invalid, with a
 * one-line reason in why (size bytes) naming the member.
 *
 * A member the method does not know is never looked at, so never refused:
 * a client upgraded before the server (Codex adds members to its requests,
 * as "metadata" in process/start) keeps working, as with Codex's own
 * server. Only a known member of the wrong type or value is an error.
 */

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

/*
 * The bytes a JSON value holds in memory, an estimate never below the truth
 * (nodes, strings, keys), for queues that must charge what they keep; above
 * limit it stops counting and answers some value above limit.
 */
WARD_INTERNAL size_t ward__json_weight(const json_t *v, size_t limit);
