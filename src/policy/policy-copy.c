/* SPDX-License-Identifier: MIT */
/*
 * Copying a policy: what a session or a server request starts from before it
 * sets its own cwd. And its fingerprint: what a prepared sandbox is matched
 * by.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/buf.h"
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
	p->limits = src->limits;
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
		r = strv_copy(&p->unprotect, &src->unprotect);
	if (r >= 0)
		r = strv_copy(&p->deny_read, &src->deny_read);
	if (r >= 0)
		r = strv_copy(&p->unix_sockets, &src->unix_sockets);
	if (r >= 0)
		r = ward__policy_copy_net(p, src);
	if (r < 0) {
		ward_policy_free(p);
		return r;
	}
	*ret_policy = p;
	return 0;
}

static char *dup_or_null(const char *s, bool *failed)
{
	char *c = s ? strdup(s) : NULL;

	if (s && !c)
		*failed = true;
	return c;
}

int ward__policy_dup_resolved(const struct ward_policy *src, struct ward_policy **ret_policy)
{
	struct ward_policy *p;
	bool failed = false;
	int r;

	if (!src || !src->resolved)
		return -EINVAL;
	r = ward_policy_new(&p);
	if (r < 0)
		return r;
	p->mode = src->mode;
	p->network = src->network;
	p->resolved_cwd = dup_or_null(src->resolved_cwd, &failed);
	p->home = dup_or_null(src->home, &failed);
	p->journal = dup_or_null(src->journal, &failed);
	r = strv_copy(&p->roots, &src->roots);
	if (r >= 0)
		r = strv_copy(&p->unprotected, &src->unprotected);
	if (r >= 0)
		r = strv_copy(&p->path_missing, &src->path_missing);
	p->protected = calloc(src->n_protected + 1, sizeof(*p->protected));
	p->cap_protected = src->n_protected + 1;
	p->deny = calloc(src->n_deny + 1, sizeof(*p->deny));
	p->watches = calloc(src->n_watches + 1, sizeof(*p->watches));
	if (r < 0 || failed || !p->protected || !p->deny || !p->watches) {
		ward_policy_free(p);
		return r < 0 ? r : -ENOMEM;
	}
	for (size_t i = 0; i < src->n_protected; i++) {
		const struct ward__protected *e = &src->protected[i];

		p->protected[i] = (struct ward__protected){
			.path = dup_or_null(e->path, &failed),
			.kind = e->kind,
			.is_dir = e->is_dir,
			.guard_dir = dup_or_null(e->guard_dir, &failed),
			.guard_name = dup_or_null(e->guard_name, &failed),
			.reason = e->reason,
		};
		p->n_protected++;
	}
	for (size_t i = 0; i < src->n_deny; i++) {
		p->deny[i] = (struct ward__deny){.path = dup_or_null(src->deny[i].path, &failed),
						 .is_dir = src->deny[i].is_dir};
		p->n_deny++;
	}
	for (size_t i = 0; i < src->n_watches; i++) {
		p->watches[i] = (struct ward__autorun_watch){
			.path = dup_or_null(src->watches[i].path, &failed),
			.target = dup_or_null(src->watches[i].target, &failed),
			.link = src->watches[i].link,
			.at = src->watches[i].at,
			.unread = src->watches[i].unread};
		p->n_watches++;
	}
	if (failed) {
		ward_policy_free(p);
		return -ENOMEM;
	}
	p->scan_depth = src->scan_depth;
	p->scan_cut = src->scan_cut;
	p->scan_unread = src->scan_unread;
	p->scan_cached = src->scan_cached;
	p->resolved = true;
	*ret_policy = p;
	return 0;
}

/* ------------------------------------------------------------ fingerprint */

static int fp_bytes(struct ward__buf *b, const void *p, size_t n)
{
	uint64_t len = n;
	int r = ward__buf_append(b, &len, sizeof(len));

	return r < 0 ? r : ward__buf_append(b, p, n);
}

static int fp_str(struct ward__buf *b, const char *s)
{
	return fp_bytes(b, s ? s : "", s ? strlen(s) + 1 : 0);
}

static int fp_u64(struct ward__buf *b, uint64_t v)
{
	return ward__buf_append(b, &v, sizeof(v));
}

/*
 * What is at path now: device, inode and type (lstat: a path the sandbox
 * mounts by name must be the same entry, not a symlink put in its place),
 * or the error.
 */
static int fp_identity(struct ward__buf *b, const char *path)
{
	struct stat st;
	int r;

	if (!path || lstat(path, &st) < 0) {
		r = fp_u64(b, (uint64_t)(path ? errno : 0));
		return r < 0 ? r : fp_u64(b, UINT64_MAX);
	}
	r = fp_u64(b, (uint64_t)st.st_dev);
	if (r >= 0)
		r = fp_u64(b, (uint64_t)st.st_ino);
	return r < 0 ? r : fp_u64(b, (uint64_t)(st.st_mode & S_IFMT));
}

int ward__policy_fingerprint(const struct ward_policy *p, struct ward__buf *b)
{
	int r;

	if (!p->resolved)
		return -EINVAL;
	r = fp_str(b, "ward-policy-1");
	if (r >= 0)
		r = fp_u64(b,
			   (uint64_t)p->mode | (uint64_t)p->network << 8 |
				   (uint64_t)p->require_isolation << 9 |
				   (uint64_t)p->exclude_slash_tmp << 10 |
				   (uint64_t)p->exclude_tmpdir_env_var << 11 |
				   (uint64_t)ward__policy_net_by_domain(p) << 12);
	if (r >= 0)
		r = fp_str(b, p->resolved_cwd);
	if (r >= 0)
		r = fp_identity(b, p->resolved_cwd);
	if (r >= 0)
		r = fp_u64(b, p->roots.n);
	for (size_t i = 0; r >= 0 && i < p->roots.n; i++) {
		r = fp_str(b, p->roots.v[i]);
		if (r >= 0)
			r = fp_identity(b, p->roots.v[i]);
	}
	if (r >= 0)
		r = fp_u64(b, p->n_protected);
	for (size_t i = 0; r >= 0 && i < p->n_protected; i++) {
		const struct ward__protected *e = &p->protected[i];

		r = fp_u64(b, (uint64_t)e->kind | (uint64_t)e->is_dir << 8);
		if (r >= 0)
			r = fp_str(b, e->path);
		if (r >= 0)
			r = fp_str(b, e->guard_dir);
		if (r >= 0)
			r = fp_str(b, e->guard_name);
		/* What is bound over itself must still be the entry that was bound. */
		if (r >= 0 && e->kind != WARD_PROTECT_MISSING)
			r = fp_identity(b, e->path);
	}
	if (r >= 0)
		r = fp_u64(b, p->n_deny);
	for (size_t i = 0; r >= 0 && i < p->n_deny; i++) {
		r = fp_u64(b, p->deny[i].is_dir);
		if (r >= 0)
			r = fp_str(b, p->deny[i].path);
		if (r >= 0)
			r = fp_identity(b, p->deny[i].path);
	}
	if (r >= 0)
		r = fp_str(b, p->journal);
	if (r >= 0)
		r = fp_u64(b, p->n_sockets);
	for (size_t i = 0; r >= 0 && i < p->n_sockets; i++) {
		r = fp_str(b, p->sockets[i].path);
		if (r >= 0)
			r = fp_u64(b, (uint64_t)p->sockets[i].dev);
		if (r >= 0)
			r = fp_u64(b, (uint64_t)p->sockets[i].ino);
	}
	/* A prepared sandbox is built in a cgroup with its limits, and its init holds the rlimits. */
	if (r >= 0)
		r = fp_u64(b, p->limits.memory);
	if (r >= 0)
		r = fp_u64(b, p->limits.pids);
	if (r >= 0)
		r = fp_u64(b, (uint64_t)p->limits.cpu_milli | (uint64_t)p->limits.require << 32);
	for (int i = 0; r >= 0 && i < WARD_RLIMIT_N; i++)
		r = fp_u64(b, p->limits.rlimit_set[i] ? p->limits.rlimit[i] : UINT64_MAX);
	return r;
}
