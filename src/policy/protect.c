/* SPDX-License-Identifier: MIT */
/*
 * Adding protected paths to a policy being resolved: a path made canonical
 * and bound read-only, pinned, or guarded where it does not exist yet, with
 * the parents that keep it in place; --unprotect applied on the way. The
 * git walk (git.c) and the resolution (resolve.c) both add through here.
 */
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/util.h"
#include "policy/protect.h"

/*
 * The last realpath() of one resolution: the working directory comes up
 * again for every protected name beneath it that does not exist (.codex,
 * .agents, .ward), and glibc's realpath() reads every component's link. A
 * server resolves a policy per process, so one resolution asks once. Only
 * within one ward_policy_resolve() call (per thread): a later one sees the
 * filesystem as it is then.
 */
struct canon_cache {
	char in[PATH_MAX];
	char out[PATH_MAX];
};
static _Thread_local struct canon_cache *canon_cache;

/*
 * Whether path, absolute and normal (no ".", "..", "//" or trailing '/'),
 * names something without a symlink on the way: then it is its own
 * canonical form. One openat2() and a close, where realpath() reads the
 * link of every component (a PATH entry has five or six).
 */
static bool no_openat2;

static bool canonical_already(const char *path)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
	size_t depth = 0;
	long fd;

	if (path[0] != '/' || !path[1])
		return false;
	for (const char *s = path; *s; s++) {
		if (*s != '/')
			continue;
		depth++;
		if (s[1] == '/' || s[1] == '\0' ||
		    (s[1] == '.' &&
		     (s[2] == '/' || !s[2] || (s[2] == '.' && (s[3] == '/' || !s[3])))))
			return false;
	}
	if (depth < 3)
		return false;
	if (no_openat2)
		return false;
	fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	if (fd < 0) {
		/* Before Linux 5.6 (or a filter that refuses it): realpath() every time. */
		if (errno == ENOSYS || errno == EPERM)
			no_openat2 = true;
		return false;
	}
	close((int)fd);
	return true;
}

char *ward__policy_canon(const char *path, char *out)
{
	struct canon_cache *c = canon_cache;

	if (c && c->in[0] && strcmp(c->in, path) == 0) {
		memcpy(out, c->out, strlen(c->out) + 1);
		return out;
	}
	if (strlen(path) < PATH_MAX && canonical_already(path))
		memcpy(out, path, strlen(path) + 1);
	else if (!realpath(path, out))
		return NULL;
	if (c && strlen(path) < sizeof(c->in)) {
		memcpy(c->in, path, strlen(path) + 1);
		memcpy(c->out, out, strlen(out) + 1);
	}
	return out;
}

/* Records "<what> '<path>'<why>" for `ward policy show`. */
int ward__policy_note(struct ward_policy *p, const char *what, const char *path, const char *why)
{
	char buf[PATH_MAX + 160];

	snprintf(buf, sizeof(buf), "%s '%s'%s", what, path, why);
	return ward__strv_push(&p->notes, buf);
}

bool ward__policy_in_roots(const struct ward_policy *p, const char *path)
{
	for (size_t i = 0; i < p->roots.n; i++)
		if (ward__path_under(path, p->roots.v[i]))
			return true;
	return false;
}

bool ward__policy_is_root(const struct ward_policy *p, const char *path)
{
	return ward__strv_contains(&p->roots, path);
}

int ward__policy_add_entry(struct ward_policy *p, const char *path, enum ward__protect_kind kind,
			   bool is_dir, const char *guard_dir, const char *guard_name,
			   const char *reason)
{
	struct ward__protected *n, *e;

	for (size_t i = 0; i < p->n_protected; i++)
		if (p->protected[i].kind == kind && strcmp(p->protected[i].path, path) == 0)
			return 0;
	if (p->n_protected >= WARD_POLICY_MAX_PROTECTED)
		return -E2BIG;
	if (p->n_protected == p->cap_protected) {
		size_t cap = p->cap_protected ? 2 * p->cap_protected : 32;

		n = reallocarray(p->protected, cap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		p->protected = n;
		p->cap_protected = cap;
	}
	n = p->protected;
	e = &n[p->n_protected];
	*e = (struct ward__protected){.kind = kind, .is_dir = is_dir, .reason = reason};
	e->path = strdup(path);
	e->guard_dir = guard_dir ? strdup(guard_dir) : NULL;
	e->guard_name = guard_name ? strdup(guard_name) : NULL;
	if (!e->path || (guard_dir && !e->guard_dir) || (guard_name && !e->guard_name)) {
		free(e->path);
		free(e->guard_dir);
		free(e->guard_name);
		return -ENOMEM;
	}
	p->n_protected++;
	return 0;
}

const char ward__policy_reason_explicit[] = "--protect";
const char ward__policy_reason_own[] = "ward's own";
static const char reason_holds[] = "holds a protected path";

/*
 * Whether a protection of path (canonical) with reason was lifted by
 * --unprotect: every default one can be; the caller's own (--protect, and
 * what ward's approvals protect through it) and the pins that keep them in
 * place cannot.
 */
static bool lifted(const struct ward_policy *p, const char *path, const char *reason)
{
	return reason != ward__policy_reason_explicit && reason != ward__policy_reason_own &&
		reason != reason_holds && ward__policy_unprotected(p, path);
}

/* Pins a directory inside a writable root (not a root itself: roots are mount points already). */
int ward__policy_pin(struct ward_policy *p, const char *path, const char *reason)
{
	char canon[PATH_MAX];
	struct stat st;

	/* A root is a mount point already (and the names of a root are many). */
	if (ward__policy_is_root(p, path))
		return 0;
	if (!ward__policy_canon(path, canon) || stat(canon, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	if (!ward__policy_in_roots(p, canon) || ward__policy_is_root(p, canon) ||
	    lifted(p, canon, reason))
		return 0;
	return ward__policy_add_entry(p, canon, WARD_PROTECT_PIN, true, NULL, NULL, reason);
}

/* How many dangling links in a row are followed to the path they name. */
#define PROTECT_MAX_LINKS 8

static int protect_at(struct ward_policy *p, const char *path, const char *reason, unsigned links);

/*
 * A dangling link at a protected name (.vscode -> vs, with no vs yet): the
 * path it names is protected as a missing one, or creating vs/tasks.json
 * would plant .vscode/tasks.json through the link. dir is the link's
 * directory (canonical), abs the link.
 */
static int protect_link_target(struct ward_policy *p, const char *abs, const char *dir,
			       const char *reason, unsigned links)
{
	char target[PATH_MAX];
	_cleanup_free_ char *full = NULL;
	ssize_t k;

	if (links >= PROTECT_MAX_LINKS)
		return 0;
	k = readlink(abs, target, sizeof(target) - 1);
	if (k <= 0)
		return 0;
	target[k] = '\0';
	full = target[0] == '/' ? strdup(target) : ward__path_join(dir, target);
	if (!full)
		return -ENOMEM;
	return protect_at(p, full, reason, links + 1);
}

/*
 * Protects path (absolute, maybe not canonical, maybe missing): an existing
 * path inside a writable root is bound read-only; a missing one is guarded on
 * its deepest existing ancestor; a symlink protects its target (existing or
 * not) and guards its own name, so that replacing the link is caught too.
 */
int ward__policy_protect(struct ward_policy *p, const char *path, const char *reason)
{
	return protect_at(p, path, reason, 0);
}

static int protect_at(struct ward_policy *p, const char *path, const char *reason, unsigned links)
{
	_cleanup_free_ char *abs = ward__path_absolute(path);
	char canon[PATH_MAX], dir[PATH_MAX];
	struct stat st;
	int r;

	if (!abs)
		return -errno;
	if (lstat(abs, &st) == 0) {
		bool link_dir = false;

		if (S_ISLNK(st.st_mode)) {
			_cleanup_free_ char *parent = strdup(abs);
			char *slash;

			if (!parent)
				return -ENOMEM;
			slash = strrchr(parent, '/');
			*slash = '\0';
			link_dir = ward__policy_canon(parent[0] ? parent : "/", dir) != NULL;
			if (link_dir && ward__policy_in_roots(p, dir)) {
				_cleanup_free_ char *name = ward__path_join(dir, slash + 1);

				if (!name)
					return -ENOMEM;
				r = lifted(p, name, reason)
					? 0
					: ward__policy_add_entry(p, abs, WARD_PROTECT_MISSING,
								 false, dir, slash + 1, reason);
				if (r < 0)
					return r;
			}
		}
		if (!ward__policy_canon(abs, canon)) {
			/* A dangling link: its name is guarded above, where it leads here. */
			if (!link_dir)
				return 0;
			return protect_link_target(p, abs, dir, reason, links);
		}
		if (!ward__policy_in_roots(p, canon) || ward__policy_is_root(p, canon) ||
		    lifted(p, canon, reason))
			return 0;
		if (stat(canon, &st) < 0)
			return 0;
		return ward__policy_add_entry(p, canon, WARD_PROTECT_READONLY, S_ISDIR(st.st_mode),
					      NULL, NULL, reason);
	}

	/* Missing: walk up to the deepest existing ancestor. */
	{
		_cleanup_free_ char *anc = strdup(abs);
		char *first = NULL;

		if (!anc)
			return -ENOMEM;
		for (;;) {
			char *slash = strrchr(anc, '/');

			if (!slash)
				return 0;
			free(first);
			if (slash == anc) {
				first = anc[1] ? strdup(anc + 1) : NULL;
				anc[1] = '\0';
			} else {
				first = strdup(slash + 1);
				*slash = '\0';
			}
			if (!first)
				return -ENOMEM;
			if (lstat(anc, &st) == 0)
				break;
		}
		if (!ward__policy_canon(anc, dir) || !S_ISDIR(st.st_mode)) {
			free(first);
			return 0;
		}
		/* Outside every writable root nothing can be created there anyway. */
		if (!ward__policy_in_roots(p, dir)) {
			free(first);
			return 0;
		}
		{
			_cleanup_free_ char *full = NULL;

			/* The path as it would be: the canonical ancestor and what is missing. */
			if (asprintf(&full, "%s%s", strcmp(dir, "/") == 0 ? "" : dir,
				     strcmp(anc, "/") == 0 ? abs : abs + strlen(anc)) < 0) {
				free(first);
				return -ENOMEM;
			}
			r = lifted(p, full, reason)
				? 0
				: ward__policy_add_entry(p, abs, WARD_PROTECT_MISSING, false, dir,
							 first, reason);
		}
		free(first);
		return r;
	}
}

int ward__policy_canon_cache(bool on)
{
	free(canon_cache);
	canon_cache = on ? calloc(1, sizeof(*canon_cache)) : NULL;
	return !on || canon_cache ? 0 : -ENOMEM;
}

/* The deepest writable root strictly above path, or NULL. */
static const char *enclosing_root(const struct ward_policy *p, const char *path)
{
	const char *best = NULL;

	for (size_t i = 0; i < p->roots.n; i++)
		if (strcmp(p->roots.v[i], path) != 0 && ward__path_under(path, p->roots.v[i]) &&
		    (!best || strlen(p->roots.v[i]) > strlen(best)))
			best = p->roots.v[i];
	return best;
}

/*
 * A read-only bind or a guard holds on to its directory entry, not to the
 * path: if the command could rename a parent away and build a new one in its
 * place ("mv sub sub2; mkdir sub; echo x > sub/file"), the host would see the
 * new, unprotected entry at the protected path. So every directory between
 * the enclosing writable root and a protected path (or a nested writable
 * root) is pinned, and with inclusive the path itself too (the directory a
 * guard watches). canonical must be canonical (symlinks resolved).
 */
int ward__policy_pin_ancestors(struct ward_policy *p, const char *canonical, bool inclusive)
{
	const char *root = enclosing_root(p, canonical);
	char buf[PATH_MAX];
	size_t start;
	int r;

	if (!root || strlen(canonical) >= sizeof(buf))
		return 0;
	memcpy(buf, canonical, strlen(canonical) + 1);
	start = strcmp(root, "/") == 0 ? 0 : strlen(root);
	for (char *s = buf + start + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		r = ward__policy_pin(p, buf, reason_holds);
		*s = '/';
		if (r < 0)
			return r;
	}
	return inclusive ? ward__policy_pin(p, buf, reason_holds) : 0;
}

int ward__policy_pin_all_ancestors(struct ward_policy *p)
{
	size_t n = p->n_protected;
	int r;

	for (size_t i = 0; i < p->roots.n; i++) {
		r = ward__policy_pin_ancestors(p, p->roots.v[i], false);
		if (r < 0)
			return r;
	}
	/*
	 * ward__policy_add_entry() reallocates the array (not the strings): the entries that
	 * were there before, by index, each read before the call.
	 */
	for (size_t i = 0; i < n; i++) {
		bool missing = p->protected[i].kind == WARD_PROTECT_MISSING;
		const char *at = missing ? p->protected[i].guard_dir : p->protected[i].path;

		/* The missing names of one directory come in a row: its ancestors once. */
		if (i > 0 && missing && p->protected[i - 1].kind == WARD_PROTECT_MISSING &&
		    strcmp(p->protected[i - 1].guard_dir, at) == 0)
			continue;
		r = ward__policy_pin_ancestors(p, at, missing);
		if (r < 0)
			return r;
	}
	return 0;
}
