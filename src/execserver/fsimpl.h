/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/macro.h"
#include "execserver/fsreq.h"

/*
 * The filesystem operations themselves, on native absolute paths, in the
 * calling process's view of the filesystem. The server calls them directly
 * when a request runs unsandboxed; otherwise the helper (fshelper.c) calls
 * them inside a sandbox built exactly as a command's, where the mount view,
 * Landlock and seccomp decide what they can reach.
 *
 * They never block on a FIFO and never open a device or a socket: a file is
 * first opened O_PATH (which runs no driver code and needs no reader),
 * checked with fstat(), and only a regular file is then reopened through
 * /proc/self/fd with the access wanted, so a path swapped to a FIFO or a
 * device between the check and the use is never opened. Every count a
 * request or the filesystem controls has a cap (see the WARD_XFS_* of
 * fsreq.h).
 */

/* Runs the operation; the outcome (success or error) is in res. */
WARD_INTERNAL void ward__xfs_run(const struct ward__xfs_req *rq, struct ward__xfs_res *res);
