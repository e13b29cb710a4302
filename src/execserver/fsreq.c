/* SPDX-License-Identifier: MIT */
/* A filesystem request's and result's lifetime, and results that are errors (see fsreq.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "execserver/fsreq.h"
#include "execserver/fswire.h"

void ward__xfs_req_release(struct ward__xfs_req *rq)
{
	free(rq->path);
	free(rq->path2);
	free(rq->data);
	*rq = (struct ward__xfs_req){0};
}

void ward__xfs_res_init(struct ward__xfs_res *res)
{
	*res = (struct ward__xfs_res){.fd = -1};
}

void ward__xfs_res_release(struct ward__xfs_res *res)
{
	free(res->message);
	json_decref(res->result);
	free(res->data);
	if (res->fd >= 0)
		close(res->fd);
	ward__xfs_res_init(res);
}

void ward__xfs_res_fail(struct ward__xfs_res *res, int code, const char *fmt, ...)
{
	va_list ap;
	char *m = NULL;

	ward__xfs_res_release(res);
	va_start(ap, fmt);
	if (vasprintf(&m, fmt, ap) < 0)
		m = NULL;
	va_end(ap);
	res->code = code;
	res->message = m ? m : strdup(ward__xfs_strerror(ENOMEM));
}

void ward__xfs_res_errno(struct ward__xfs_res *res, int errnum)
{
	char m[128];

	if (errnum < 0)
		errnum = -errnum;
	ward__xfs_errno_message(errnum, m, sizeof(m));
	ward__xfs_res_fail(res, ward__xfs_errno_code(errnum), "%s", m);
}
