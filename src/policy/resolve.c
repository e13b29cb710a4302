/* SPDX-License-Identifier: MIT */
/*
 * Resolving a policy against the filesystem: canonical writable roots, the
 * protected paths inside them (git metadata, agent configuration), deny-read
 * paths and allow-listed sockets. The sandbox mounts exactly what this
 * computes, so every path here is canonical (symlinks resolved) at resolve
 * time.
 */
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "policy/policy.h"

#define GIT_CONFIG_MAX (1 << 20)

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

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

static char *canon_path(const char *path, char *out)
{
	struct canon_cache *c = canon_cache;

	if (c && c->in[0] && strcmp(c->in, path) == 0) {
		memcpy(out, c->out, strlen(c->out) + 1);
		return out;
	}
	if (!realpath(path, out))
		return NULL;
	if (c && strlen(path) < sizeof(c->in)) {
		memcpy(c->in, path, strlen(path) + 1);
		memcpy(c->out, out, strlen(out) + 1);
	}
	return out;
}

/* Records "<what> '<path>'<why>" for `ward policy show`. */
static int note(struct ward_policy *p, const char *what, const char *path, const char *why)
{
	char buf[PATH_MAX + 160];

	snprintf(buf, sizeof(buf), "%s '%s'%s", what, path, why);
	return ward__strv_push(&p->notes, buf);
}

static bool in_roots(const struct ward_policy *p, const char *path)
{
	for (size_t i = 0; i < p->roots.n; i++)
		if (ward__path_under(path, p->roots.v[i]))
			return true;
	return false;
}

static bool is_root(const struct ward_policy *p, const char *path)
{
	return ward__strv_contains(&p->roots, path);
}

static int add_entry(struct ward_policy *p, const char *path, enum ward__protect_kind kind,
		     bool is_dir, const char *guard_dir, const char *guard_name, const char *reason)
{
	struct ward__protected *n, *e;

	for (size_t i = 0; i < p->n_protected; i++)
		if (p->protected[i].kind == kind && strcmp(p->protected[i].path, path) == 0)
			return 0;
	if (p->n_protected >= 4 * WARD_POLICY_MAX_PATHS)
		return -E2BIG;
	n = realloc(p->protected, (p->n_protected + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	p->protected = n;
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

/* Pins a directory inside a writable root (not a root itself: roots are mount points already). */
static int pin(struct ward_policy *p, const char *path, const char *reason)
{
	char canon[PATH_MAX];
	struct stat st;

	if (!canon_path(path, canon) || stat(canon, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	if (!in_roots(p, canon) || is_root(p, canon))
		return 0;
	return add_entry(p, canon, WARD_PROTECT_PIN, true, NULL, NULL, reason);
}

/*
 * Protects path (absolute, maybe not canonical, maybe missing): an existing
 * path inside a writable root is bound read-only; a missing one is guarded on
 * its deepest existing ancestor; a symlink protects its target and guards its
 * own name, so that replacing the link is caught too.
 */
static int protect(struct ward_policy *p, const char *path, const char *reason)
{
	_cleanup_free_ char *abs = ward__path_absolute(path);
	char canon[PATH_MAX], dir[PATH_MAX];
	struct stat st;
	int r;

	if (!abs)
		return -errno;
	if (lstat(abs, &st) == 0) {
		if (S_ISLNK(st.st_mode)) {
			_cleanup_free_ char *parent = strdup(abs);
			char *slash;

			if (!parent)
				return -ENOMEM;
			slash = strrchr(parent, '/');
			*slash = '\0';
			if (canon_path(parent[0] ? parent : "/", dir) && in_roots(p, dir)) {
				r = add_entry(p, abs, WARD_PROTECT_MISSING, false, dir, slash + 1,
					      reason);
				if (r < 0)
					return r;
			}
		}
		if (!canon_path(abs, canon))
			return 0; /* A dangling link: its name is guarded above. */
		if (!in_roots(p, canon) || is_root(p, canon))
			return 0;
		if (stat(canon, &st) < 0)
			return 0;
		return add_entry(p, canon, WARD_PROTECT_READONLY, S_ISDIR(st.st_mode), NULL, NULL,
				 reason);
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
		if (!canon_path(anc, dir) || !S_ISDIR(st.st_mode)) {
			free(first);
			return 0;
		}
		/* Outside every writable root nothing can be created there anyway. */
		if (!in_roots(p, dir)) {
			free(first);
			return 0;
		}
		r = add_entry(p, abs, WARD_PROTECT_MISSING, false, dir, first, reason);
		free(first);
		return r;
	}
}

/*
 * A minimal git config reader: calls fn for every "key = value" in sections
 * named section ("[core]", '[submodule "name"]'; case-insensitive, as git),
 * with surrounding blanks and one pair of double quotes removed. Only a
 * regular file is read (see ward__read_regular_file).
 */
static int git_config_each(const char *file, const char *section, const char *key,
			   int (*fn)(const char *value, void *ctx), void *ctx)
{
	_cleanup_free_ char *buf = NULL;
	size_t sl = strlen(section), kl = strlen(key);
	bool in = false;
	char *line, *save = NULL;

	if (ward__read_regular_file(file, GIT_CONFIG_MAX, &buf, NULL) < 0)
		return 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *s = line, *eq, *v, *end;
		int r;

		while (isspace((unsigned char)*s))
			s++;
		if (*s == '[') {
			in = strncasecmp(s + 1, section, sl) == 0 &&
				(s[1 + sl] == ']' || isspace((unsigned char)s[1 + sl]));
			continue;
		}
		if (!in || *s == '#' || *s == ';')
			continue;
		eq = strchr(s, '=');
		if (!eq)
			continue;
		end = eq;
		while (end > s && isspace((unsigned char)end[-1]))
			end--;
		if ((size_t)(end - s) != kl || strncasecmp(s, key, kl) != 0)
			continue;
		v = eq + 1;
		while (isspace((unsigned char)*v))
			v++;
		end = v + strlen(v);
		while (end > v && isspace((unsigned char)end[-1]))
			*--end = '\0';
		if (*v == '"' && end > v + 1 && end[-1] == '"') {
			end[-1] = '\0';
			v++;
		}
		r = fn(v, ctx);
		if (r < 0)
			return r;
	}
	return 0;
}

static int keep_last(const char *value, void *ctx)
{
	char **last = ctx;

	free(*last);
	*last = *value ? strdup(value) : NULL;
	return *value && !*last ? -ENOMEM : 0;
}

/* core.hooksPath from a git config file (the last one wins), or NULL. */
static char *git_hooks_path(const char *config)
{
	char *result = NULL;

	if (git_config_each(config, "core", "hookspath", keep_last, &result) < 0) {
		free(result);
		return NULL;
	}
	return result;
}

static int protect_hooks_path(struct ward_policy *p, const char *root, const char *config)
{
	_cleanup_free_ char *hp = git_hooks_path(config);
	_cleanup_free_ char *full = NULL;

	if (!hp)
		return 0;
	if (hp[0] == '~' && hp[1] == '/') {
		const char *home = getenv("HOME");

		if (!home)
			return 0;
		full = ward__path_join(home, hp + 2);
	} else {
		full = hp[0] == '/' ? strdup(hp) : ward__path_join(root, hp);
	}
	if (!full)
		return -ENOMEM;
	return protect(p, full, "git core.hooksPath");
}

/* Reads "gitdir: X" from a .git file; X relative to the file's directory. */
static char *read_gitdir_file(const char *root, const char *file)
{
	_cleanup_free_ char *buf = NULL;
	char *v, *end;

	if (ward__read_regular_file(file, PATH_MAX, &buf, NULL) < 0)
		return NULL;
	if (strncmp(buf, "gitdir:", 7) != 0)
		return NULL;
	v = buf + 7;
	while (*v == ' ' || *v == '\t')
		v++;
	end = v + strcspn(v, "\r\n");
	*end = '\0';
	if (!*v)
		return NULL;
	return v[0] == '/' ? strdup(v) : ward__path_join(root, v);
}

/*
 * Everything in a git directory that decides which code git runs or which
 * git directory it really uses: hooks, config, config.worktree (read once
 * extensions.worktreeConfig is set) and commondir (which git follows in any
 * git directory, and which would point it at planted hooks and config). The
 * ones that do not exist are guarded.
 */
static int protect_git_dir_contents(struct ward_policy *p, const char *root, const char *gitdir)
{
	static const struct {
		const char *name, *reason;
	} files[] = {
		{"hooks", "git hooks"},
		{"config", "git config"},
		{"config.worktree", "git config"},
		{"commondir", "git worktree link"},
	};
	_cleanup_free_ char *config = ward__path_join(gitdir, "config");
	int r;

	if (!config)
		return -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		_cleanup_free_ char *path = ward__path_join(gitdir, files[i].name);

		r = path ? protect(p, path, files[i].reason) : -ENOMEM;
		if (r < 0)
			return r;
	}
	return protect_hooks_path(p, root, config);
}

#define GIT_MODULES_MAX_DEPTH 8
#define GIT_MODULES_MAX 64

/* Calls fn for every directory (not followed through a symlink) directly in dir. */
static int each_subdir(const char *dir, int (*fn)(const char *sub, void *ctx), void *ctx)
{
	_cleanup_(closedirp) DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		_cleanup_free_ char *sub = NULL;
		struct stat st;
		int r;

		if (de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, "..")))
			continue;
		sub = ward__path_join(dir, de->d_name);
		if (!sub)
			return -ENOMEM;
		if (lstat(sub, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		r = fn(sub, ctx);
		if (r != 0)
			return r < 0 ? r : 0; /* > 0: stop */
	}
	return 0;
}

struct modules_walk {
	struct ward_policy *p;
	const char *root;
	unsigned depth, count;
};

static int protect_git_modules(const char *dir, struct modules_walk *w);

/*
 * One entry of <gitdir>/modules: a submodule's git directory (it has a HEAD;
 * its own modules nest below it), or a component of a name with slashes.
 */
static int protect_git_module(const char *sub, void *ctx)
{
	struct modules_walk *w = ctx;
	_cleanup_free_ char *head = ward__path_join(sub, "HEAD");
	_cleanup_free_ char *modules = ward__path_join(sub, "modules");
	int r;

	if (!head || !modules)
		return -ENOMEM;
	if (access(head, F_OK) != 0)
		return protect_git_modules(sub, w);
	if (++w->count > GIT_MODULES_MAX)
		return 1;
	r = protect_git_dir_contents(w->p, w->root, sub);
	return r < 0 ? r : protect_git_modules(modules, w);
}

/*
 * The git directories of submodules (<gitdir>/modules/<name>, names may hold
 * slashes, modules nest): git runs their hooks and reads their config when it
 * recurses into a submodule, so they are protected like the top one.
 */
static int protect_git_modules(const char *dir, struct modules_walk *w)
{
	int r;

	if (w->depth > GIT_MODULES_MAX_DEPTH)
		return 0;
	w->depth++;
	r = each_subdir(dir, protect_git_module, w);
	w->depth--;
	return r;
}

/*
 * One per-worktree directory of a git directory (<gitdir>/worktrees/<name>):
 * git follows its commondir and reads its config.worktree when it works in
 * that linked worktree, wherever that is.
 */
static int protect_git_worktree(const char *wt, void *ctx)
{
	static const char *const files[] = {"commondir", "config.worktree", "gitdir"};
	struct modules_walk *w = ctx;

	if (++w->count > GIT_MODULES_MAX)
		return 1;
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		_cleanup_free_ char *f = ward__path_join(wt, files[i]);
		int r = f ? protect(w->p, f, "git worktree link") : -ENOMEM;

		if (r < 0)
			return r;
	}
	return 0;
}

/* A git directory of a worktree root: its contents, its linked worktrees', its submodules'. */
static int protect_git_dir(struct ward_policy *p, const char *root, const char *gitdir)
{
	_cleanup_free_ char *modules = ward__path_join(gitdir, "modules");
	_cleanup_free_ char *worktrees = ward__path_join(gitdir, "worktrees");
	struct modules_walk wt = {p, root, 0, 0}, mod = {p, root, 0, 0};
	int r;

	if (!modules || !worktrees)
		return -ENOMEM;
	r = protect_git_dir_contents(p, root, gitdir);
	if (r >= 0)
		r = each_subdir(worktrees, protect_git_worktree, &wt);
	if (r >= 0)
		r = protect_git_modules(modules, &mod);
	return r;
}

/* The submodule walk of one root: each submodule once, and a budget for all of them. */
struct git_walk {
	struct ward__strv seen;
	unsigned budget;
};

#define GIT_SUBMODULES_MAX 256 /* submodule entries looked at per writable root */

static int protect_git_at(struct ward_policy *p, const char *root, unsigned depth,
			  struct git_walk *w);

struct submodule_ctx {
	struct ward_policy *p;
	const char *root;
	unsigned depth;
	struct git_walk *walk;
};

/*
 * One "path = X" of .gitmodules: the submodule's worktree inside root. When it
 * has a .git (a gitdir: file, or a directory), that is protected like the top
 * one: rewriting the file would point git, recursing into the submodule from
 * the host, at a planted git directory.
 */
static int protect_submodule(const char *value, void *ctx)
{
	struct submodule_ctx *c = ctx;
	_cleanup_free_ char *sub = NULL;
	char canon[PATH_MAX];

	/* A hostile .gitmodules cannot make resolution slow: a fixed budget for the whole walk. */
	if (!*value || value[0] == '/' || c->walk->budget == 0)
		return 0;
	c->walk->budget--;
	sub = ward__path_join(c->root, value);
	if (!sub)
		return -ENOMEM;
	if (!realpath(sub, canon) || !ward__path_under(canon, c->root) ||
	    strcmp(canon, c->root) == 0 || ward__strv_contains(&c->walk->seen, canon))
		return 0;
	return protect_git_at(c->p, canon, c->depth + 1, c->walk);
}

static int protect_git(struct ward_policy *p, const char *root)
{
	struct git_walk w = {.budget = GIT_SUBMODULES_MAX};
	int r = protect_git_at(p, root, 0, &w);

	ward__strv_release(&w.seen);
	return r;
}

static int protect_dotgit(struct ward_policy *p, const char *root);

static int protect_git_at(struct ward_policy *p, const char *root, unsigned depth,
			  struct git_walk *w)
{
	_cleanup_free_ char *gitmodules = ward__path_join(root, ".gitmodules");
	struct submodule_ctx c = {p, root, depth, w};
	int r;

	/* Each submodule root once (the set is capped like every policy list). */
	if (ward__strv_push(&w->seen, root) < 0)
		return 0;

	if (!gitmodules)
		return -ENOMEM;
	r = protect_dotgit(p, root);
	if (r < 0 || depth >= GIT_MODULES_MAX_DEPTH)
		return r;
	return git_config_each(gitmodules, "submodule", "path", protect_submodule, &c);
}

static int protect_dotgit(struct ward_policy *p, const char *root)
{
	_cleanup_free_ char *dotgit = ward__path_join(root, ".git");
	struct stat st;
	int r;

	if (!dotgit)
		return -ENOMEM;
	if (lstat(dotgit, &st) < 0)
		return 0;
	if (S_ISDIR(st.st_mode)) {
		/* .git stays writable (commits work) but cannot be renamed away and replaced. */
		r = pin(p, dotgit, "git directory");
		if (r >= 0)
			r = protect_git_dir(p, root, dotgit);
		return r;
	}
	if (S_ISREG(st.st_mode)) {
		_cleanup_free_ char *gitdir = read_gitdir_file(root, dotgit);
		_cleanup_free_ char *commonfile = NULL, *common = NULL, *cbuf = NULL,
				    *wtconfig = NULL;
		char canon[PATH_MAX];

		/* Rewriting the gitdir: line would point git at a planted repository. */
		r = protect(p, dotgit, "git worktree link");
		if (r < 0 || !gitdir || !realpath(gitdir, canon))
			return r;
		r = pin(p, canon, "git directory");
		if (r < 0)
			return r;
		wtconfig = ward__path_join(canon, "config.worktree");
		commonfile = ward__path_join(canon, "commondir");
		if (!wtconfig || !commonfile)
			return -ENOMEM;
		r = protect(p, wtconfig, "git config");
		if (r < 0)
			return r;
		if (ward__read_regular_file(commonfile, PATH_MAX, &cbuf, NULL) == 0) {
			char rc[PATH_MAX];

			cbuf[strcspn(cbuf, "\r\n")] = '\0';
			common = cbuf[0] == '/' ? strdup(cbuf) : ward__path_join(canon, cbuf);
			if (!common)
				return -ENOMEM;
			if (realpath(common, rc)) {
				r = pin(p, rc, "git directory");
				if (r >= 0)
					r = protect(p, commonfile, "git worktree link");
				if (r >= 0)
					r = protect_git_dir(p, root, rc);
				return r;
			}
		}
		/* A submodule: hooks and config live in its own git directory. */
		return protect_git_dir(p, root, canon);
	}
	return 0;
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
static int pin_ancestors(struct ward_policy *p, const char *canonical, bool inclusive)
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
		r = pin(p, buf, "holds a protected path");
		*s = '/';
		if (r < 0)
			return r;
	}
	return inclusive ? pin(p, buf, "holds a protected path") : 0;
}

static int pin_all_ancestors(struct ward_policy *p)
{
	size_t n = p->n_protected;
	int r;

	for (size_t i = 0; i < p->roots.n; i++) {
		r = pin_ancestors(p, p->roots.v[i], false);
		if (r < 0)
			return r;
	}
	/*
	 * add_entry() reallocates the array (not the strings): the entries that
	 * were there before, by index, each read before the call.
	 */
	for (size_t i = 0; i < n; i++) {
		bool missing = p->protected[i].kind == WARD_PROTECT_MISSING;

		r = pin_ancestors(p, missing ? p->protected[i].guard_dir : p->protected[i].path,
				  missing);
		if (r < 0)
			return r;
	}
	return 0;
}

static int cmp_depth(const char *a, const char *b)
{
	size_t da = ward__path_depth(a), db = ward__path_depth(b);

	if (da != db)
		return da < db ? -1 : 1;
	return strcmp(a, b);
}

static int cmp_str(const void *a, const void *b)
{
	return cmp_depth(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_protected(const void *a, const void *b)
{
	const struct ward__protected *x = a, *y = b;
	int c = cmp_depth(x->path, y->path);

	/* A pin must be mounted before the read-only binds beneath it. */
	return c ? c : (int)x->kind - (int)y->kind;
}

/* Adds a writable root; its canonical path also goes to record (when not NULL). */
static int add_root(struct ward_policy *p, const char *path, bool must_exist, const char *what,
		    struct ward__strv *record, struct ward_error *err)
{
	char canon[PATH_MAX];
	struct stat st;

	if (!canon_path(path, canon) || stat(canon, &st) < 0) {
		if (!must_exist)
			return note(p, "skipped missing writable root", path, "");
		return ward__error(err, -errno, "policy", "%s '%s' does not exist: %m", what, path);
	}
	if (!S_ISDIR(st.st_mode)) {
		if (!must_exist)
			return note(p, "skipped writable root", path, ": not a directory");
		return ward__error(err, -ENOTDIR, "policy", "%s '%s' is not a directory", what,
				   path);
	}
	if (record && !ward__strv_contains(record, canon) && ward__strv_push(record, canon) < 0)
		return -ENOMEM;
	if (ward__strv_contains(&p->roots, canon))
		return 0;
	return ward__strv_push(&p->roots, canon);
}

static int resolve(struct ward_policy *p, struct ward_error *err)
{
	static const char *const agent_dirs[] = {".codex", ".agents", ".ward"};
	_cleanup_(ward__strv_release) struct ward__strv named = {0};
	char canon[PATH_MAX];
	struct stat st;
	int r;

	if (!canon_path(p->cwd ? p->cwd : ".", canon))
		return ward__error(err, -errno, "policy",
				   "cannot resolve the working directory '%s': %m",
				   p->cwd ? p->cwd : ".");
	if (stat(canon, &st) < 0 || !S_ISDIR(st.st_mode))
		return ward__error(err, -ENOTDIR, "policy",
				   "the working directory '%s' is not a directory", canon);
	p->resolved_cwd = strdup(canon);
	if (!p->resolved_cwd)
		return -ENOMEM;

	/* The network by domain is the proxy's: the sandbox's own network must stay off. */
	if (ward__policy_net_by_domain(p) && p->mode == WARD_MODE_DANGER_FULL_ACCESS)
		return ward__error(
			err, -EINVAL, "policy",
			"danger-full-access runs without a sandbox: --allow-domain and --deny-domain cannot be enforced");
	if (ward__policy_net_by_domain(p) && p->network_set && p->network)
		return ward__error(
			err, -EINVAL, "policy",
			"--network on gives the whole network: it cannot go with --allow-domain or --deny-domain (which keep the network off but for the hosts they allow)");
	if (p->mode == WARD_MODE_DANGER_FULL_ACCESS) {
		/* No sandbox at all: refuse what the user asked for and would not get. */
		if (p->deny_read.n > 0 || p->protect.n > 0)
			return ward__error(
				err, -EINVAL, "policy",
				"danger-full-access runs without a sandbox: %s cannot be enforced",
				p->deny_read.n > 0 ? "--deny-read" : "--protect");
		if (p->network_set && !p->network)
			return ward__error(
				err, -EINVAL, "policy",
				"danger-full-access runs without a sandbox: --network off cannot be enforced");
		r = ward__strv_push(&p->roots, "/");
		if (r < 0)
			return r;
	} else if (p->mode == WARD_MODE_WORKSPACE_WRITE) {
		const char *tmpdir = getenv("TMPDIR");

		r = add_root(p, p->resolved_cwd, true, "working directory", &named, err);
		for (size_t i = 0; r >= 0 && i < p->writable.n; i++)
			r = add_root(p, p->writable.v[i], true, "writable root", &named, err);
		if (r >= 0 && !p->exclude_slash_tmp)
			r = add_root(p, "/tmp", false, NULL, NULL, err);
		if (r >= 0 && !p->exclude_tmpdir_env_var && tmpdir && tmpdir[0] == '/')
			r = add_root(p, tmpdir, false, NULL, NULL, err);
		if (r < 0)
			return r;
		qsort(p->roots.v, p->roots.n, sizeof(char *), cmp_str);

		for (size_t i = 0; i < p->roots.n; i++) {
			const char *root = p->roots.v[i];

			/*
			 * /tmp (or a $TMPDIR like it: world-writable and sticky) is shared
			 * with every other user: a .codex another user makes there is none
			 * of ours to guard, let alone remove. Every other root, and every
			 * root the user named, keeps the git and agent protections.
			 */
			if (!ward__strv_contains(&named, root) && stat(root, &st) == 0 &&
			    (st.st_mode & (S_ISVTX | S_IWOTH)) == (S_ISVTX | S_IWOTH))
				continue;
			r = protect_git(p, root);
			for (size_t j = 0; r >= 0 && j < ELEMENTSOF(agent_dirs); j++) {
				_cleanup_free_ char *d = ward__path_join(root, agent_dirs[j]);

				r = d ? protect(p, d, "agent configuration") : -ENOMEM;
			}
			if (r < 0)
				return ward__error(err, r, "policy",
						   "cannot resolve the protected paths of '%s': %m",
						   root);
		}
		for (size_t i = 0; i < p->protect.n; i++) {
			r = protect(p, p->protect.v[i], "--protect");
			if (r < 0)
				return ward__error(err, r, "policy",
						   "cannot resolve protected path '%s': %m",
						   p->protect.v[i]);
		}
		r = pin_all_ancestors(p);
		if (r < 0)
			return ward__error(err, r, "policy",
					   "cannot pin the parents of the protected paths: %m");
		qsort(p->protected, p->n_protected, sizeof(*p->protected), cmp_protected);
	}

	p->deny = calloc(p->deny_read.n + 1, sizeof(*p->deny));
	if (!p->deny)
		return -ENOMEM;
	for (size_t i = 0; i < p->deny_read.n; i++) {
		if (!realpath(p->deny_read.v[i], canon) || stat(canon, &st) < 0) {
			r = note(p, "deny-read path", p->deny_read.v[i],
				 " does not exist: nothing to hide");
			if (r < 0)
				return r;
			continue;
		}
		if (strcmp(canon, "/") == 0)
			return ward__error(err, -EINVAL, "policy", "cannot deny reading '/'");
		p->deny[p->n_deny].path = strdup(canon);
		if (!p->deny[p->n_deny].path)
			return -ENOMEM;
		p->deny[p->n_deny++].is_dir = S_ISDIR(st.st_mode);
	}

	p->sockets = calloc(p->unix_sockets.n + 1, sizeof(*p->sockets));
	if (!p->sockets)
		return -ENOMEM;
	for (size_t i = 0; i < p->unix_sockets.n; i++) {
		const char *s = p->unix_sockets.v[i];

		if (!realpath(s, canon) || stat(canon, &st) < 0)
			return ward__error(err, -errno, "policy",
					   "unix socket '%s' cannot be allowed: %m", s);
		if (!S_ISSOCK(st.st_mode))
			return ward__error(err, -EINVAL, "policy", "'%s' is not a unix socket", s);
		p->sockets[p->n_sockets].path = strdup(canon);
		if (!p->sockets[p->n_sockets].path)
			return -ENOMEM;
		p->sockets[p->n_sockets].dev = st.st_dev;
		p->sockets[p->n_sockets++].ino = st.st_ino;
	}
	p->resolved = true;
	return 0;
}

WARD_PUBLIC int ward_policy_resolve(struct ward_policy *p, struct ward_error *err)
{
	int r;

	if (!p)
		return -EINVAL;
	ward__error_clear(err);
	ward__policy_clear_resolved(p);
	canon_cache = calloc(1, sizeof(*canon_cache)); /* without it, realpath() every time */
	r = resolve(p, err);
	free(canon_cache);
	canon_cache = NULL;
	if (r < 0) {
		if (err && !err->message[0])
			ward__error(err, r, "policy", "cannot resolve the policy: %m");
		ward__policy_clear_resolved(p);
	}
	return r;
}
