/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/macro.h"
#include "execserver/fsreq.h"

/*
 * The helper that runs one filesystem operation inside a sandbox (see
 * fshelper.c): `ward-serve __fs-op REQ_FD SOCK_FD`, its request in a memfd,
 * its answer on stdout, an opened file over the socket.
 */

/* What a request may carry: paths (the kernel's own limit is far below), data. */
#define WARD_XFS_HELPER_PATH_MAX 65536u
#define WARD_XFS_HELPER_DATA_MAX ((uint64_t)256 << 20)

/* The kinds of answer. */
enum {
	WARD_XFS_RES_MESSAGE = 1, /* an error: code and message */
	WARD_XFS_RES_JSON = 2, /* the result object */
	WARD_XFS_RES_DATA = 3, /* fs/readFile: the bytes */
	WARD_XFS_RES_FD = 4, /* fs/open: the file came over the socket */
};

/* The request in a new memfd (O_CLOEXEC) for the helper to read. */
WARD_INTERNAL int ward__xfs_req_encode(const struct ward__xfs_req *rq, int *ret_fd);
/* The helper's answer, checked; -EPROTO when it is not one. */
WARD_INTERNAL int ward__xfs_res_decode(const uint8_t *buf, size_t len, struct ward__xfs_res *res);
/* The helper's main (argv[1] is "__fs-op"). Does not return when it ran an operation. */
WARD_INTERNAL int ward__xfs_helper_main(int argc, char **argv);
