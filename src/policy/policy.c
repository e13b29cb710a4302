/* SPDX-License-Identifier: MIT */
/* The policy object: setters, lists, and the lookups the sandbox uses. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/util.h"
#include "policy/policy.h"

int ward__strv_push(struct ward__strv *v, const char *s)
{
	char **nv;
	char *copy;

	if (v->n >= WARD_POLICY_MAX_PATHS)
		return -E2BIG;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	nv = realloc(v->v, (v->n + 2) * sizeof(*nv));
	if (!nv) {
		free(copy);
		return -ENOMEM;
	}
	nv[v->n++] = copy;
	nv[v->n] = NULL;
	v->v = nv;
	return 0;
}

void ward__strv_release(struct ward__strv *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->v[i]);
	free(v->v);
	v->v = NULL;
	v->n = 0;
}

bool ward__strv_contains(const struct ward__strv *v, const char *s)
{
	for (size_t i = 0; i < v->n; i++)
		if (strcmp(v->v[i], s) == 0)
			return true;
	return false;
}

void ward__policy_clear_resolved(struct ward_policy *p)
{
	free(p->resolved_cwd);
	p->resolved_cwd = NULL;
	ward__strv_release(&p->roots);
	for (size_t i = 0; i < p->n_protected; i++) {
		free(p->protected[i].path);
		free(p->protected[i].guard_dir);
		free(p->protected[i].guard_name);
	}
	free(p->protected);
	p->protected = NULL;
	p->n_protected = 0;
	for (size_t i = 0; i < p->n_deny; i++)
		free(p->deny[i].path);
	free(p->deny);
	p->deny = NULL;
	p->n_deny = 0;
	for (size_t i = 0; i < p->n_sockets; i++)
		free(p->sockets[i].path);
	free(p->sockets);
	p->sockets = NULL;
	p->n_sockets = 0;
	ward__strv_release(&p->notes);
	ward__strv_release(&p->unprotected);
	ward__strv_release(&p->path_missing);
	free(p->home);
	p->home = NULL;
	for (size_t i = 0; i < p->n_watches; i++)
		free(p->watches[i].path);
	free(p->watches);
	p->watches = NULL;
	p->n_watches = 0;
	p->scan_depth = 0;
	p->scan_cut = false;
	p->resolved = false;
}

WARD_PUBLIC int ward_policy_new(struct ward_policy **ret_policy)
{
	struct ward_policy *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->mode = WARD_MODE_WORKSPACE_WRITE;
	*ret_policy = p;
	return 0;
}

WARD_PUBLIC void ward_policy_free(struct ward_policy *p)
{
	if (!p)
		return;
	ward__policy_clear_resolved(p);
	free(p->cwd);
	ward__strv_release(&p->writable);
	ward__strv_release(&p->protect);
	ward__strv_release(&p->unprotect);
	ward__strv_release(&p->deny_read);
	ward__strv_release(&p->unix_sockets);
	free(p);
}

WARD_PUBLIC int ward_policy_mode_from_string(const char *s, enum ward_sandbox_mode *ret_mode)
{
	if (!s)
		return -EINVAL;
	if (strcmp(s, "read-only") == 0)
		*ret_mode = WARD_MODE_READ_ONLY;
	else if (strcmp(s, "workspace-write") == 0)
		*ret_mode = WARD_MODE_WORKSPACE_WRITE;
	else if (strcmp(s, "danger-full-access") == 0)
		*ret_mode = WARD_MODE_DANGER_FULL_ACCESS;
	else
		return -EINVAL;
	return 0;
}

WARD_PUBLIC const char *ward_policy_mode_to_string(enum ward_sandbox_mode mode)
{
	switch (mode) {
	case WARD_MODE_READ_ONLY:
		return "read-only";
	case WARD_MODE_WORKSPACE_WRITE:
		return "workspace-write";
	case WARD_MODE_DANGER_FULL_ACCESS:
		return "danger-full-access";
	}
	return "unknown";
}

WARD_PUBLIC int ward_policy_set_mode(struct ward_policy *p, enum ward_sandbox_mode mode)
{
	if (!p ||
	    (mode != WARD_MODE_READ_ONLY && mode != WARD_MODE_WORKSPACE_WRITE &&
	     mode != WARD_MODE_DANGER_FULL_ACCESS))
		return -EINVAL;
	p->mode = mode;
	p->resolved = false;
	return 0;
}

/* Paths are made absolute (lexically) when set, so a later chdir does not change their meaning. */
static int push_path(struct ward__strv *v, const char *path)
{
	_cleanup_free_ char *abs = NULL;

	if (!path || !*path)
		return -EINVAL;
	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	abs = ward__path_absolute(path);
	if (!abs)
		return -errno;
	if (ward__strv_contains(v, abs))
		return 0;
	return ward__strv_push(v, abs);
}

WARD_PUBLIC int ward_policy_set_cwd(struct ward_policy *p, const char *path)
{
	char *abs;

	if (!p || !path || !*path)
		return -EINVAL;
	abs = ward__path_absolute(path);
	if (!abs)
		return -errno;
	free(p->cwd);
	p->cwd = abs;
	p->resolved = false;
	return 0;
}

WARD_PUBLIC int ward_policy_add_writable(struct ward_policy *p, const char *path)
{
	return p ? (p->resolved = false, push_path(&p->writable, path)) : -EINVAL;
}

WARD_PUBLIC int ward_policy_add_protect(struct ward_policy *p, const char *path)
{
	return p ? (p->resolved = false, push_path(&p->protect, path)) : -EINVAL;
}

WARD_PUBLIC int ward_policy_add_unprotect(struct ward_policy *p, const char *path)
{
	return p ? (p->resolved = false, push_path(&p->unprotect, path)) : -EINVAL;
}

WARD_PUBLIC int ward_policy_add_deny_read(struct ward_policy *p, const char *path)
{
	return p ? (p->resolved = false, push_path(&p->deny_read, path)) : -EINVAL;
}

WARD_PUBLIC int ward_policy_add_unix_socket(struct ward_policy *p, const char *path)
{
	return p ? (p->resolved = false, push_path(&p->unix_sockets, path)) : -EINVAL;
}

WARD_PUBLIC int ward_policy_set_network(struct ward_policy *p, bool enabled)
{
	if (!p)
		return -EINVAL;
	p->network = enabled;
	p->network_set = true;
	p->resolved = false;
	return 0;
}

WARD_PUBLIC int ward_policy_set_exclude_slash_tmp(struct ward_policy *p, bool exclude)
{
	if (!p)
		return -EINVAL;
	p->exclude_slash_tmp = exclude;
	p->resolved = false;
	return 0;
}

WARD_PUBLIC int ward_policy_set_exclude_tmpdir_env_var(struct ward_policy *p, bool exclude)
{
	if (!p)
		return -EINVAL;
	p->exclude_tmpdir_env_var = exclude;
	p->resolved = false;
	return 0;
}

WARD_PUBLIC int ward_policy_set_require_isolation(struct ward_policy *p, bool require)
{
	if (!p)
		return -EINVAL;
	p->require_isolation = require;
	return 0;
}

bool ward__policy_path_writable(const struct ward_policy *p, const char *path)
{
	const struct ward__protected *e;
	bool in_root = false;

	for (size_t i = 0; i < p->roots.n; i++)
		if (ward__path_under(path, p->roots.v[i]))
			in_root = true;
	if (!in_root)
		return false;
	e = ward__policy_protected_for(p, path);
	return !e;
}

const struct ward__protected *ward__policy_protected_for(const struct ward_policy *p,
							 const char *path)
{
	/* Pins keep their contents writable; every other entry covers its subtree. */
	for (size_t i = 0; i < p->n_protected; i++) {
		const struct ward__protected *e = &p->protected[i];

		if (e->kind != WARD_PROTECT_PIN && ward__path_under(path, e->path))
			return e;
	}
	return NULL;
}

bool ward__policy_unprotected(const struct ward_policy *p, const char *path)
{
	for (size_t i = 0; i < p->unprotected.n; i++)
		if (ward__path_under(path, p->unprotected.v[i]))
			return true;
	return false;
}

const struct ward__deny *ward__policy_deny_for(const struct ward_policy *p, const char *path)
{
	for (size_t i = 0; i < p->n_deny; i++)
		if (ward__path_under(path, p->deny[i].path))
			return &p->deny[i];
	return NULL;
}
