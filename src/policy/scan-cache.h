/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The scan cache (scan-cache.c): what the launch scan for autorun names
 * (autorun.c) found in a directory, kept under the directory's identity and
 * status-change time, in this process's memory and, where the caller gives
 * a directory for it (ward run, ward mcp, ward serve), in files there. Why
 * a record can be trusted is the DESIGN note of scan-cache.c.
 */
#include <sys/stat.h>

#include "basic/macro.h"

/*
 * What one directory holds, as far as the scan can ever care: every entry
 * whose name starts with a dot, every directory, and every name a later
 * component of an autorun entry could match (autorun.c decides which), with
 * the count of all its entries. names holds n of them, each a flag byte (1:
 * a directory, 2: a symlink, 0: anything else) then the name and its NUL;
 * len bytes in all.
 */
struct ward__scan_listing {
	uint32_t entries;
	uint32_t n;
	uint32_t len;
	const char *names;
};

/* Bounds of one directory's record: a larger listing is read every time, never kept. */
#define WARD_SCAN_CACHE_MAX_NAMES 1024
#define WARD_SCAN_CACHE_MAX_LEN (16 << 10)

/*
 * Uses dir (absolute; made 0700 when a first file is saved) for the files of
 * the cache, or none with NULL (the default: memory only). For the CLI,
 * before the first policy is resolved. Where dir cannot be used, the cache
 * stays in memory.
 */
WARD_INTERNAL int ward__scan_cache_set_dir(const char *dir);
/* The directory given, or NULL: resolve.c protects it inside writable roots. */
WARD_INTERNAL const char *ward__scan_cache_dir(void);
/* The directory ward would use: $XDG_RUNTIME_DIR/ward, else $XDG_CACHE_HOME/ward or ~/.cache/ward. */
WARD_INTERNAL int ward__scan_cache_default_dir(char **ret_dir);

/*
 * One scan: begin locks the process's cache (one scan at a time) for
 * n_starts starts, end saves what changed and unlocks. Between them, start
 * i is named by its open directory (start), and each directory looked into
 * is either found (get: its listing, valid until the next put) or, after it
 * was read, recorded (put). dir is the statx of the directory, taken before
 * it was read.
 */
struct ward__scan_cache;
WARD_INTERNAL struct ward__scan_cache *ward__scan_cache_begin(size_t n_starts);
WARD_INTERNAL void ward__scan_cache_start(struct ward__scan_cache *c, size_t i, int fd);
WARD_INTERNAL bool ward__scan_cache_get(struct ward__scan_cache *c, size_t i,
					const struct statx *dir, struct ward__scan_listing *ret);
WARD_INTERNAL void ward__scan_cache_put(struct ward__scan_cache *c, size_t i,
					const struct statx *dir,
					const struct ward__scan_listing *l);
/* The statx of start i, taken by ward__scan_cache_start(), or NULL. */
WARD_INTERNAL const struct statx *ward__scan_cache_start_stat(const struct ward__scan_cache *c,
							      size_t i);
/*
 * Whether records of start i's directories may be at hand (its file was
 * read, or this process scanned it before): only then is a statx before
 * opening a directory worth its cost.
 */
WARD_INTERNAL bool ward__scan_cache_worth(const struct ward__scan_cache *c, size_t i);
/* Whether directories of start i may be read in one getdents (see autorun.c). */
WARD_INTERNAL bool ward__scan_cache_local(const struct ward__scan_cache *c, size_t i,
					  const struct statx *dir);
WARD_INTERNAL void ward__scan_cache_end(struct ward__scan_cache *c);
/* Forgets every record in memory (tests). */
WARD_INTERNAL void ward__scan_cache_clear(void);
