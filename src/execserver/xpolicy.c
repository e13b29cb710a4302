/* SPDX-License-Identifier: MIT */
/* The policy of a request of `ward serve` (see xpolicy.h). */
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/uri.h"
#include "execserver/xpolicy.h"
#include "policy/policy.h"

int ward__xs_build_policy(const struct ward_policy *tmpl, bool allow_unsandboxed,
			  const char *own_dir, json_t *params, const char *cwd,
			  struct ward_policy **ret, bool *ret_sandboxed, struct ward_error *e)
{
	json_t *sb = json_object_get(params, "sandbox");
	json_t *own = json_object_get(params, "wardPolicy");
	const char *scwd = json_string_value(json_object_get(sb, "cwd"));
	_cleanup_free_ char *sandbox_cwd = NULL;
	struct ward_policy *p = NULL;
	int r;

	/* :project_roots: the sandbox's cwd (or the process's), then the workspace roots. */
	if (scwd && ward__path_or_file_uri(scwd, &sandbox_cwd) < 0)
		return ward__error(e, -EINVAL, "policy",
				   "sandbox.cwd must be an absolute file: URI");
	r = ward_policy_copy(tmpl, &p);
	/*
	 * The server's own policy keeps the server's workspace: a process's cwd
	 * is only where it starts. A request's own policy (a sandbox object,
	 * wardPolicy) has its workspace at the sandbox's cwd, else the process's.
	 */
	if (r >= 0 && ((own && !json_is_null(own)) || (sb && !json_is_null(sb))))
		r = ward_policy_set_cwd(p, sandbox_cwd ? sandbox_cwd : cwd);
	if (r < 0) {
		ward_policy_free(p);
		return ward__error(e, r, "policy", "cannot set up the policy: %m");
	}
	if (own && !json_is_null(own)) {
		/* ward's extension: its own policy JSON (or Codex's legacy SandboxPolicy). */
		_cleanup_free_ char *txt = json_dumps(own, JSON_COMPACT);

		r = txt ? ward_policy_load_json(p, txt, strlen(txt), "wardPolicy", e) : -ENOMEM;
	} else if (sb && !json_is_null(sb)) {
		json_t *perm = json_object_get(sb, "permissions");
		json_t *roots = json_object_get(sb, "workspaceRoots");
		char *rootv[65] = {0};
		size_t n = 0, i;
		json_t *v;

		if (!json_is_object(sb) || !json_is_object(perm)) {
			ward_policy_free(p);
			return ward__error(
				e, -EINVAL, "policy",
				"sandbox.permissions must be a permission profile object");
		}
		rootv[n++] = sandbox_cwd ? sandbox_cwd : (char *)cwd;
		r = 0;
		json_array_foreach(roots, i, v)
		{
			if (n >= ELEMENTSOF(rootv) - 1 || !json_is_string(v) ||
			    ward__path_or_file_uri(json_string_value(v), &rootv[n]) < 0) {
				r = ward__error(e, -EINVAL, "policy",
						"sandbox.workspaceRoots[%zu] must be an absolute "
						"file: URI (at most 64)",
						i);
				break;
			}
			n++;
		}
		if (r >= 0)
			r = ward__policy_apply_profile(p, perm, rootv, n, "sandbox.permissions", e);
		for (i = 1; i < n; i++)
			free(rootv[i]);
	} else if (allow_unsandboxed) {
		/* Codex's meaning of no sandbox, allowed by the operator. */
		r = ward_policy_set_mode(p, WARD_MODE_DANGER_FULL_ACCESS);
		if (r >= 0)
			r = ward_policy_set_network(p, true);
	}
	/* ward's extension: the process's own limits, over the server's defaults (docs/protocol.md). */
	if (r >= 0 && json_object_get(params, "limits") &&
	    !json_is_null(json_object_get(params, "limits")))
		r = ward__limits_from_json(json_object_get(params, "limits"), &p->limits, "limits",
					   e);
	if (r < 0) {
		ward_policy_free(p);
		return r;
	}
	if (p->mode == WARD_MODE_DANGER_FULL_ACCESS && !allow_unsandboxed) {
		ward_policy_free(p);
		return ward__error(e, -EPERM, "policy",
				   "this server runs every process in a sandbox (start it with "
				   "--allow-unsandboxed to allow processes without one)");
	}
	/* Only a workspace-write sandbox has writable roots ward's own directory could lie in. */
	if (own_dir && p->mode == WARD_MODE_WORKSPACE_WRITE) {
		r = ward_policy_add_protect(p, own_dir);
		if (r < 0) {
			ward_policy_free(p);
			return ward__error(e, r, "policy", "cannot set up the policy: %m");
		}
	}
	r = ward_policy_resolve(p, e);
	if (r < 0) {
		ward_policy_free(p);
		return r;
	}
	*ret_sandboxed = p->mode != WARD_MODE_DANGER_FULL_ACCESS;
	*ret = p;
	return 0;
}
