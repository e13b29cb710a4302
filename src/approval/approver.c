/* SPDX-License-Identifier: MIT */
/*
 * libward's approval objects: the approver (rules, mode, session cache, audit
 * log) and the per-call request, and ward_run_with_approval(), the blocking
 * driver of the step machine (approval.c) for `ward run` and library users.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "approval/approval.h"
#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"

/* ------------------------------------------------------------ the approver */

WARD_PUBLIC int ward_approver_new(struct ward_approver **ret_approver)
{
	struct ward_approver *a;
	_cleanup_free_ char *dir = NULL;

	if (!ret_approver)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	ward__rules_init(&a->rules);
	a->mode = WARD_APPROVAL_ON_REQUEST;
	a->granular = (struct ward_approval_granular){
		.sandbox_approval = true,
		.rules = true,
		.skill_approval = true,
		.request_permissions = true,
		.mcp_elicitations = true,
	};
	/* Without a home directory there is no default for these: none, until set. */
	(void)ward__home_dir(&a->home);
	if (ward__rules_user_dir(&dir) == 0) {
		a->amend_path = ward__path_join(dir, "default.rules");
		a->rules_dir = TAKE_PTR(dir);
	}
	(void)ward__audit_default_path(&a->audit_path);
	*ret_approver = a;
	return 0;
}

WARD_PUBLIC void ward_approver_free(struct ward_approver *a)
{
	if (!a)
		return;
	ward__rules_release(&a->rules);
	ward__cache_release(a);
	free(a->home);
	free(a->amend_path);
	free(a->audit_path);
	free(a->rules_dir);
	free(a->codex_dir);
	free(a);
}

WARD_PUBLIC int ward_approver_set_mode(struct ward_approver *a, enum ward_approval_mode mode)
{
	if (!a || (unsigned)mode > WARD_APPROVAL_GRANULAR)
		return -EINVAL;
	a->mode = mode;
	return 0;
}

WARD_PUBLIC int ward_approver_set_granular(struct ward_approver *a,
					   const struct ward_approval_granular *g)
{
	if (!a || !g)
		return -EINVAL;
	a->granular = *g;
	return 0;
}

static void match_opts(const struct ward_approver *a, struct ward__match_opts *o, char *cwd)
{
	*o = (struct ward__match_opts){
		.resolve_host_executables = true, .cwd = cwd, .home = a->home};
}

static int load_dir(struct ward__rules *r, const struct ward_approver *a, const char *dir,
		    bool project, struct ward_error *err)
{
	_cleanup_free_ char *cwd = getcwd(NULL, 0);
	struct ward__match_opts o;

	match_opts(a, &o, cwd);
	return ward__rules_load_dir(r, dir, project, &o, err);
}

/* ward's user directory, then the project's directories, into r. */
static int load_defaults(struct ward__rules *r, const struct ward_approver *a, char **proj,
			 struct ward_error *err)
{
	int ret = 0;

	if (a->rules_dir)
		ret = load_dir(r, a, a->rules_dir, false, err);
	for (char **d = proj; ret >= 0 && *d; d++)
		ret = load_dir(r, a, *d, true, err);
	return ret;
}

WARD_PUBLIC int ward_approver_load_default_rules(struct ward_approver *a, const char *cwd,
						 struct ward_error *err)
{
	_cleanup_strv_free_ char **proj = NULL;
	struct ward__rules trial;
	int r;

	if (!a)
		return ward__error(err, -EINVAL, "rules", "no approver");
	r = ward__rules_project_dirs(cwd ? cwd : ".", &proj);
	if (r < 0)
		return ward__error(err, r, "rules", "cannot look for project rules in '%s': %m",
				   cwd ? cwd : ".");
	/*
	 * All the files or none: each file loads all or nothing on its own, so
	 * they are tried on a scratch set first and only then added.
	 */
	ward__rules_init(&trial);
	r = load_defaults(&trial, a, proj, err);
	ward__rules_release(&trial);
	if (r < 0)
		return r;
	return load_defaults(&a->rules, a, proj, err);
}

WARD_PUBLIC int ward_approver_load_codex_rules(struct ward_approver *a, struct ward_error *err)
{
	_cleanup_free_ char *dir = NULL;
	int r;

	if (!a)
		return ward__error(err, -EINVAL, "rules", "no approver");
	r = ward__rules_codex_dir(&dir);
	if (r < 0)
		return ward__error(err, r, "rules", "cannot find Codex's rules directory: %m");
	r = load_dir(&a->rules, a, dir, false, err);
	if (r < 0)
		return r;
	free(a->codex_dir);
	a->codex_dir = TAKE_PTR(dir);
	return 0;
}

WARD_PUBLIC int ward_approver_load_rules_file(struct ward_approver *a, const char *path,
					      struct ward_error *err)
{
	_cleanup_free_ char *cwd = getcwd(NULL, 0);
	struct ward__match_opts o;

	if (!a || !path)
		return ward__error(err, -EINVAL, "rules", "no rules file");
	match_opts(a, &o, cwd);
	return ward__rules_load_file(&a->rules, path, false, &o, err);
}

WARD_PUBLIC int ward_approver_load_rules_string(struct ward_approver *a, const char *text,
						size_t len, const char *origin,
						struct ward_error *err)
{
	_cleanup_free_ char *cwd = getcwd(NULL, 0);
	struct ward__match_opts o;

	if (!a || (!text && len))
		return ward__error(err, -EINVAL, "rules", "no rules");
	match_opts(a, &o, cwd);
	return ward__rules_parse(&a->rules, origin ? origin : "<string>", text ? text : "", len,
				 false, &o, err);
}

static int set_path(char **dst, const char *path)
{
	char *p = NULL;

	if (path) {
		p = ward__path_absolute(path);
		if (!p)
			return -errno;
	}
	free(*dst);
	*dst = p;
	return 0;
}

WARD_PUBLIC int ward_approver_set_amendment_file(struct ward_approver *a, const char *path)
{
	return a ? set_path(&a->amend_path, path) : -EINVAL;
}

WARD_PUBLIC int ward_approver_set_audit_log(struct ward_approver *a, const char *path)
{
	if (!a)
		return -EINVAL;
	a->audit_error[0] = '\0';
	return set_path(&a->audit_path, path);
}

/*
 * Protects path when it exists. A missing one is left alone: protecting it
 * would guard the creation of its first missing ancestor (~/.config for
 * ~/.config/ward/rules), killing every command that creates that ancestor
 * for its own files.
 */
static int protect_existing(struct ward_policy *p, const char *path)
{
	struct stat st;

	if (!path || stat(path, &st) < 0)
		return 0;
	return ward_policy_add_protect(p, path);
}

/*
 * Protects a directory of ward's own, made first (0700) when missing: a
 * command must not plant the first file in it either, since what is there
 * at the next start is trusted as the person's. Where it cannot be made
 * (a read-only home, a file in the way) nothing is protected, as before:
 * the run goes on.
 */
static int protect_own_dir(struct ward_policy *p, const char *dir)
{
	int r;

	if (!dir)
		return 0;
	r = ward__mkdir_parents(dir, 0700);
	if (r == -ENOMEM)
		return r;
	return protect_existing(p, dir);
}

static int protect_parent(struct ward_policy *p, const char *file, bool own)
{
	_cleanup_free_ char *dir = NULL;
	const char *slash = file ? strrchr(file, '/') : NULL;

	if (!slash || slash == file)
		return 0;
	dir = strndup(file, (size_t)(slash - file));
	if (!dir)
		return -ENOMEM;
	return own ? protect_own_dir(p, dir) : protect_existing(p, dir);
}

WARD_PUBLIC int ward_approver_protect(const struct ward_approver *a, struct ward_policy *policy)
{
	int r = 0;

	if (!a || !policy)
		return -EINVAL;
	/*
	 * Only a workspace-write sandbox has writable roots these could lie in
	 * ($HOME made writable, a root above ~/.config); danger-full-access
	 * refuses protected paths, and read-only has nothing to protect from.
	 */
	if (policy->mode != WARD_MODE_WORKSPACE_WRITE)
		return 0;
	r = protect_own_dir(policy, a->rules_dir);
	if (r >= 0)
		r = protect_existing(policy, a->codex_dir);
	if (r >= 0)
		r = protect_parent(policy, a->amend_path, false);
	if (r >= 0)
		r = protect_parent(policy, a->audit_path, true);
	return r;
}

/* ------------------------------------------------------------ requests */

WARD_PUBLIC int ward_approval_request_new(struct ward_approval_request **ret_request)
{
	struct ward_approval_request *q;

	if (!ret_request)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	*ret_request = q;
	return 0;
}

WARD_PUBLIC void ward_approval_request_free(struct ward_approval_request *q)
{
	if (!q)
		return;
	free(q->justification);
	strv_freep(&q->prefix_rule);
	strv_freep(&q->writable);
	free(q->cwd);
	free(q);
}

int ward__approval_request_set_cwd(struct ward_approval_request *q, const char *cwd)
{
	char *c;

	if (!q || !cwd || cwd[0] != '/')
		return -EINVAL;
	c = strdup(cwd);
	if (!c)
		return -ENOMEM;
	free(q->cwd);
	q->cwd = c;
	return 0;
}

WARD_PUBLIC int ward_approval_request_set_sandbox_permissions(struct ward_approval_request *q,
							      enum ward_sandbox_permissions p)
{
	if (!q || (unsigned)p > WARD_SANDBOX_PERMISSIONS_WITH_ADDITIONAL_PERMISSIONS)
		return -EINVAL;
	q->sandbox_permissions = p;
	return 0;
}

WARD_PUBLIC int ward_approval_request_set_justification(struct ward_approval_request *q,
							const char *justification)
{
	char *j = NULL;

	if (!q)
		return -EINVAL;
	if (justification) {
		if (strlen(justification) > WARD_RULES_MAX_STRING)
			return -E2BIG;
		j = strdup(justification);
		if (!j)
			return -ENOMEM;
	}
	free(q->justification);
	q->justification = j;
	return 0;
}

WARD_PUBLIC int ward_approval_request_set_prefix_rule(struct ward_approval_request *q,
						      const char *const *prefix)
{
	char **v;
	size_t n = 0;

	if (!q)
		return -EINVAL;
	if (!prefix) {
		strv_freep(&q->prefix_rule);
		q->prefix_rule = NULL;
		q->n_prefix_rule = 0;
		return 0;
	}
	while (prefix[n])
		if (++n > WARD_APPROVAL_MAX_PREFIX)
			return -E2BIG;
	v = calloc(n + 1, sizeof(char *));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (strlen(prefix[i]) > WARD_RULES_MAX_STRING || !(v[i] = strdup(prefix[i]))) {
			strv_freep(&v);
			return strlen(prefix[i]) > WARD_RULES_MAX_STRING ? -E2BIG : -ENOMEM;
		}
	}
	strv_freep(&q->prefix_rule);
	q->prefix_rule = v;
	q->n_prefix_rule = n;
	return 0;
}

WARD_PUBLIC int ward_approval_request_add_writable(struct ward_approval_request *q,
						   const char *path)
{
	char **v, *p;

	if (!q || !path)
		return -EINVAL;
	if (q->n_writable >= WARD_APPROVAL_MAX_WRITABLE)
		return -E2BIG;
	p = ward__path_absolute(path);
	if (!p)
		return -errno;
	v = reallocarray(q->writable, q->n_writable + 2, sizeof(char *));
	if (!v) {
		free(p);
		return -ENOMEM;
	}
	q->writable = v;
	v[q->n_writable++] = p;
	v[q->n_writable] = NULL;
	return 0;
}

WARD_PUBLIC int ward_approval_request_set_network(struct ward_approval_request *q, bool enabled)
{
	if (!q)
		return -EINVAL;
	q->network = enabled;
	return 0;
}

WARD_PUBLIC int ward_approval_request_set_tty(struct ward_approval_request *q, bool tty)
{
	if (!q)
		return -EINVAL;
	q->tty = tty;
	return 0;
}

/* ------------------------------------------------------------ the blocking driver */

WARD_PUBLIC int ward_run_with_approval(struct ward_approver *a, const struct ward_policy *policy,
				       const struct ward_run_options *opts,
				       const struct ward_approval_request *request,
				       ward_approval_fn ask, void *userdata,
				       struct ward_cancel *cancel, struct ward_result **ret_result,
				       enum ward_approval_status *ret_status,
				       struct ward_error *err)
{
	struct ward__approval_step *s = NULL;
	struct ward__approval_action act;
	struct ward_result *res = NULL;
	int r;

	if (!a || !policy || !opts || !opts->argv || !ask || !ret_result || !ret_status)
		return ward__error(err, -EINVAL, "approval", "missing argument");
	r = ward__approval_begin(a, policy, (const char *const *)opts->argv, request, &s, &act,
				 err);
	while (r >= 0) {
		if (act.kind == WARD__APPROVAL_ASK) {
			enum ward_review_decision d = WARD_REVIEW_DENIED;

			r = ask(userdata, act.question, &d);
			if (r < 0) {
				ward__error(err, r, "approval", "asking for approval failed: %m");
				break;
			}
			r = ward__approval_answer(s, d, &act, err);
		} else if (act.kind == WARD__APPROVAL_RUN) {
			ward_result_free(res);
			res = NULL;
			r = ward_run(act.policy, opts, cancel, &res, err);
			if (r >= 0)
				r = ward__approval_ran_result(s, res, &act, err);
		} else if (act.kind == WARD__APPROVAL_REJECT) {
			/* Not run, by decision: a result of its own, the reason in err. */
			ward__error(err, -EPERM, "approval", "%s", act.reason);
			*ret_status = act.status;
			*ret_result = NULL;
			r = 0;
			break;
		} else {
			*ret_status = act.status;
			*ret_result = TAKE_PTR(res);
			r = 0;
			break;
		}
	}
	ward_result_free(res);
	ward__approval_step_free(s);
	return r;
}
