/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>

#include "basic/macro.h"

/*
 * One filesystem operation as the exec server hands it down: the request
 * (which operation, on which normalised paths, with which options) and its
 * result (a JSON-RPC error, or what the operation produced), with the caps
 * every operation keeps. The operations themselves (fsimpl.c, fswalk.c)
 * and the helper that carries a request into a sandbox (fshelper.c) share
 * these; they sit here, below all of them, so that none of those files
 * needs another's header for them.
 */

/* Bytes fs/readFile returns (the answer is base64, a third larger, in one message). */
#define WARD_XFS_READ_MAX ((size_t)16 << 20)
/* Entries fs/readDirectory returns (Codex's limit), and the bytes its answer may take. */
#define WARD_XFS_READDIR_MAX 50000u
#define WARD_XFS_READDIR_BYTES ((size_t)48 << 20)
/* fs/walk: Codex's maximum limits and its answer budget (64 bytes charged per entry). */
#define WARD_XFS_WALK_MAX_DEPTH 64u
#define WARD_XFS_WALK_MAX_DIRS 10000u
#define WARD_XFS_WALK_MAX_ENTRIES 50000u
#define WARD_XFS_WALK_BUDGET ((size_t)4 << 20)
/* Names read from one directory by fs/walk (it sorts them), and their bytes. */
#define WARD_XFS_WALK_DIR_NAMES 1000000u
/* Directory levels a recursive copy or removal descends (one descriptor pair per level). */
#define WARD_XFS_TREE_DEPTH 4096u

enum ward__xfs_op {
	WARD_XFS_READ_FILE = 1,
	WARD_XFS_WRITE_FILE,
	WARD_XFS_CREATE_DIRECTORY,
	WARD_XFS_GET_METADATA,
	WARD_XFS_CANONICALIZE,
	WARD_XFS_READ_DIRECTORY,
	WARD_XFS_REMOVE,
	WARD_XFS_COPY,
	WARD_XFS_OPEN,
	WARD_XFS_WALK,
	WARD_XFS_OP_MAX,
};

/* One operation (for the helper it travels as a fixed header, the paths and the data). */
struct ward__xfs_req {
	enum ward__xfs_op op;
	char *path; /* normalised absolute path */
	char *path2; /* fs/copy: the destination */
	bool follow; /* followSymlinks (default true) */
	bool recursive;
	bool force;
	bool replace; /* fs/open mode "replace" */
	bool follow_dirs; /* fs/walk followDirectorySymlinks */
	bool prune_hidden; /* fs/walk pruneHiddenDirectories */
	uint64_t max_depth, max_dirs, max_entries; /* fs/walk */
	uint8_t *data; /* fs/writeFile */
	size_t len;
};

/* The answer: a JSON-RPC error, or a result. */
struct ward__xfs_res {
	int code; /* 0, or the JSON-RPC error code */
	char *message; /* with code */
	json_t *result; /* the result object, except for fs/readFile and fs/open */
	uint8_t *data; /* fs/readFile: the file's bytes */
	size_t len;
	int fd; /* fs/open: the file, O_CLOEXEC; -1 otherwise */
};

WARD_INTERNAL void ward__xfs_req_release(struct ward__xfs_req *rq);
WARD_INTERNAL void ward__xfs_res_init(struct ward__xfs_res *res);
WARD_INTERNAL void ward__xfs_res_release(struct ward__xfs_res *res);
/* Sets res to an error (message formatted; the previous contents released). */
WARD_INTERNAL void ward__xfs_res_fail(struct ward__xfs_res *res, int code, const char *fmt, ...)
	_printf_(3, 4);
/* Sets res to the error of an errno value, worded as Codex words it. */
WARD_INTERNAL void ward__xfs_res_errno(struct ward__xfs_res *res, int errnum);
