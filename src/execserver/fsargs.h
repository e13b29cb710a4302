/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>

#include "basic/macro.h"
#include "execserver/fswire.h"

/*
 * The parameters of the filesystem methods, checked as Codex checks them
 * (see fsargs.c). A bad member is answered with Codex's code and message.
 */

enum ward__xfs_method {
	WARD_XFS_M_NONE = 0,
	WARD_XFS_M_READ_FILE,
	WARD_XFS_M_WRITE_FILE,
	WARD_XFS_M_CREATE_DIRECTORY,
	WARD_XFS_M_GET_METADATA,
	WARD_XFS_M_CANONICALIZE,
	WARD_XFS_M_READ_DIRECTORY,
	WARD_XFS_M_REMOVE,
	WARD_XFS_M_COPY,
	WARD_XFS_M_OPEN,
	WARD_XFS_M_READ_BLOCK,
	WARD_XFS_M_WRITE_BLOCK,
	WARD_XFS_M_CLOSE,
	WARD_XFS_M_WALK,
};

enum {
	WARD_XFS_HAVE_PATH = 1 << 0,
	WARD_XFS_HAVE_PATH2 = 1 << 1,
	WARD_XFS_HAVE_RECURSIVE = 1 << 2,
	WARD_XFS_HAVE_DATA = 1 << 3,
	WARD_XFS_HAVE_HANDLE = 1 << 4,
	WARD_XFS_HAVE_OFFSET = 1 << 5,
	WARD_XFS_HAVE_LEN = 1 << 6,
	WARD_XFS_HAVE_OPTIONS = 1 << 7,
};

struct ward__xfs_args {
	unsigned have;
	char *path; /* normalised native path (sourcePath for fs/copy) */
	char *path2; /* fs/copy destinationPath */
	/* A path URI with a host or drive letter: refused when the operation runs (-32600). */
	bool bad_host;
	char bad_host_message[WARD_XFS_MSG_MAX];
	bool follow, recursive, force, replace;
	const char *data; /* dataBase64 (fs/writeFile), chunk (fs/writeBlock): borrowed */
	size_t data_len;
	uint8_t *bytes; /* fs/writeBlock: the chunk decoded (Codex decodes it with the params) */
	size_t bytes_len;
	const char *handle; /* borrowed */
	size_t handle_len;
	uint64_t offset, len;
	uint64_t max_depth, max_dirs, max_entries;
	bool follow_dirs, prune_hidden;
	json_t *sandbox; /* borrowed; NULL when absent or null */
	/* When parsing failed: */
	int code;
	char message[WARD_XFS_MSG_MAX + 256];
};

WARD_INTERNAL enum ward__xfs_method ward__xfs_method_from_name(const char *name);
WARD_INTERNAL const char *ward__xfs_method_name(enum ward__xfs_method m);
/* 0, or -1 with a->code and a->message. Borrowed members point into params. */
WARD_INTERNAL int ward__xfs_args_parse(enum ward__xfs_method m, json_t *params,
				       struct ward__xfs_args *a);
WARD_INTERNAL void ward__xfs_args_release(struct ward__xfs_args *a);
