/* SPDX-License-Identifier: MIT */
/* Copying a policy: what a session or a server request starts from before it sets its own cwd. */
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

static int strv_copy(struct ward__strv *dst, const struct ward__strv *src)
{
	for (size_t i = 0; i < src->n; i++) {
		int r = ward__strv_push(dst, src->v[i]);

		if (r < 0)
			return r;
	}
	return 0;
}

WARD_PUBLIC int ward_policy_copy(const struct ward_policy *src, struct ward_policy **ret_policy)
{
	struct ward_policy *p;
	int r;

	if (!src || !ret_policy)
		return -EINVAL;
	r = ward_policy_new(&p);
	if (r < 0)
		return r;
	p->mode = src->mode;
	p->network = src->network;
	p->network_set = src->network_set;
	p->exclude_slash_tmp = src->exclude_slash_tmp;
	p->exclude_tmpdir_env_var = src->exclude_tmpdir_env_var;
	p->require_isolation = src->require_isolation;
	if (src->cwd) {
		p->cwd = strdup(src->cwd);
		if (!p->cwd) {
			ward_policy_free(p);
			return -ENOMEM;
		}
	}
	r = strv_copy(&p->writable, &src->writable);
	if (r >= 0)
		r = strv_copy(&p->protect, &src->protect);
	if (r >= 0)
		r = strv_copy(&p->deny_read, &src->deny_read);
	if (r >= 0)
		r = strv_copy(&p->unix_sockets, &src->unix_sockets);
	if (r < 0) {
		ward_policy_free(p);
		return r;
	}
	*ret_policy = p;
	return 0;
}
