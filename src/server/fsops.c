/* SPDX-License-Identifier: MIT */
/*
 * The filesystem methods of `ward serve` (see fsops.h). Not served yet: every
 * fs method is answered as unknown (-32601) until this file implements them.
 */
#include <stdlib.h>

#include "server/fsops.h"

struct ward__xfs {
	int unused;
};

int ward__xfs_new(struct ward__xfs **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void ward__xfs_free(struct ward__xfs *fs)
{
	free(fs);
}

bool ward__xfs_is_method(const char *method)
{
	return false;
}

void ward__xfs_handle(struct ward__loop *l, struct ward__xfs *fs,
		      const struct ward__xfs_context *ctx, const char *method, json_t *params,
		      ward__xfs_reply_fn reply, void *reply_ctx)
{
	reply(reply_ctx, NULL, -32601, "filesystem methods are not served");
}
