/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/macro.h"
#include "execserver/fsreq.h"

/* fs/walk (see fswalk.c), one of the operations ward__xfs_run() dispatches. */
WARD_INTERNAL void ward__xfs_walk(const struct ward__xfs_req *rq, struct ward__xfs_res *res);
