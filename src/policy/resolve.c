/* SPDX-License-Identifier: MIT */
/*
 * Resolving a policy against the filesystem: canonical writable roots, the
 * protected paths inside them (git metadata, autorun names found by the
 * scan of autorun.c, the directories of PATH), deny-read paths and
 * allow-listed sockets. The sandbox mounts exactly what this computes, so
 * every path here is canonical (symlinks resolved) at resolve time.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "policy/protect.h"
#include "policy/scan-cache.h"

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

/* ------------------------------------------------------------ autorun names, home and PATH */

/* The reason of a home's missing .git: that of git's configuration, which it would be. */
static const char home_git_reason[] = "autorun: git config";

/* What the scan's findings go to: the policy, and how many repositories were protected. */
struct sink_ctx {
	struct ward_policy *p;
	unsigned repos;
};

/*
 * Repositories of their own beneath a root (not submodules: those the
 * root's .gitmodules names are protected with it) that the scan meets, at
 * most this many per policy; the ones past it are said in the notes.
 */
#define NESTED_REPOS_MAX 128

/* The scan's findings become protected paths (autorun.c reports, this file protects). */
static int sink_found(void *userdata, const char *path, const char *reason)
{
	struct sink_ctx *c = userdata;

	return ward__policy_protect(c->p, path, reason);
}

static int sink_missing(void *userdata, const char *dir, const char *name, const char *reason)
{
	struct sink_ctx *c = userdata;
	_cleanup_free_ char *path = ward__path_join(dir, name);

	return path
		? ward__policy_add_entry(c->p, path, WARD_PROTECT_MISSING, false, dir, name, reason)
		: -ENOMEM;
}

/*
 * A repository the person has in the workspace (each of ~/src with the home as
 * the workspace, a vendored checkout): git runs its hooks and reads its
 * config the next time the person works there, so it gets the protections
 * of a root's repository.
 */
static int sink_repo(void *userdata, const char *dir)
{
	struct sink_ctx *c = userdata;

	if (++c->repos > NESTED_REPOS_MAX)
		return c->repos == NESTED_REPOS_MAX + 1
			? ward__policy_note(
				  c->p, "nested repositories", dir,
				  ": more than 128 in the workspace; this one and the ones after it have writable hooks and config")
			: 0;
	return ward__policy_protect_git(c->p, dir);
}

/*
 * The directory a symlink where names go on leads to (~/.config ->
 * dotfiles/config): the guard watches it, not the link's path, so it stays
 * where the link leads while the command runs.
 */
static int sink_followed(void *userdata, const char *target)
{
	struct sink_ctx *c = userdata;

	return ward__policy_pin_ancestors(c->p, target, true);
}

/*
 * The home directory, canonical: $HOME (what shells and most tools go by),
 * or the password file's entry when $HOME is unset. NULL when neither names
 * an existing directory.
 */
static char *home_dir(void)
{
	_cleanup_free_ char *home = NULL;
	char canon[PATH_MAX];
	struct stat st;

	if (ward__home_dir(&home) < 0 || !ward__policy_canon(home, canon) || stat(canon, &st) < 0 ||
	    !S_ISDIR(st.st_mode))
		return NULL;
	return strdup(canon);
}

/*
 * A directory a package manager fills (installs write there): node_modules/.bin,
 * a virtualenv's bin. A virtualenv is known by pyvenv.cfg beside its bin AND
 * the activate script in it: pyvenv.cfg alone is a file any command can
 * write next to a protected bin, to have it unprotected at the next launch,
 * while the bin itself (read-only, or not there: guarded) it cannot fill.
 */
static bool tool_managed(const char *dir)
{
	_cleanup_free_ char *parent = strdup(dir), *cfg = NULL, *activate = NULL;
	const char *base = strrchr(dir, '/');
	char *slash;

	if (!parent || !base)
		return false;
	slash = strrchr(parent, '/');
	*slash = '\0';
	if (strcmp(base + 1, ".bin") == 0 && slash > parent &&
	    strcmp(strrchr(parent, '/') + 1, "node_modules") == 0)
		return true;
	cfg = ward__path_join(parent[0] ? parent : "/", "pyvenv.cfg");
	activate = ward__path_join(dir, "activate");
	return cfg && activate && access(cfg, F_OK) == 0 && access(activate, F_OK) == 0;
}

/*
 * A PATH directory that does not exist: where it would appear is recorded
 * (p->path_missing), and its deepest existing ancestor is returned in
 * ret_start (canonical) when it lies inside a writable root. The guard then
 * follows the directories on the way as they are created, rather than
 * refusing the first of them (a missing ~/.local/bin must not stop every
 * command that creates ~/.local/share).
 */
static int path_missing(struct ward_policy *p, const char *abs, char **ret_start)
{
	_cleanup_free_ char *anc = strdup(abs);
	char canon[PATH_MAX], full[PATH_MAX + 1];
	size_t cut = 0;

	*ret_start = NULL;
	if (!anc)
		return -ENOMEM;
	for (;;) {
		char *slash = strrchr(anc, '/');

		if (!slash || slash == anc)
			return 0;
		*slash = '\0';
		cut = (size_t)(slash - anc);
		if (ward__policy_canon(anc, canon))
			break;
	}
	if (!ward__policy_in_roots(p, canon))
		return 0;
	if ((size_t)snprintf(full, sizeof(full), "%s%s", strcmp(canon, "/") == 0 ? "" : canon,
			     abs + cut) >= sizeof(full) ||
	    ward__policy_unprotected(p, full) || ward__strv_contains(&p->path_missing, full))
		return 0;
	*ret_start = strdup(canon);
	if (!*ret_start)
		return -ENOMEM;
	return ward__strv_push(&p->path_missing, full);
}

/*
 * Every directory of the caller's PATH inside a writable root: a program
 * planted there runs in place of the one the person meant, the next time
 * their shell looks it up. A relative entry (".", "", "bin") is taken from
 * the working directory, where the person's shell most likely is. What
 * cannot be protected is said in the notes: an entry that is a writable root
 * itself (the whole workspace would be read-only) or holds one, and the
 * directories package managers fill (node_modules/.bin, a virtualenv's bin),
 * which installs must write. Missing ones go to starts (see path_missing()).
 */
static int protect_path_dirs(struct ward_policy *p, struct ward__strv *starts)
{
	const char *path = getenv("PATH");
	_cleanup_free_ char *copy = path ? strdup(path) : NULL;
	char *next = NULL, *e, canon[PATH_MAX];
	const char *seen[WARD_POLICY_MAX_PATHS];
	unsigned count = 0;
	int r;

	if (!path)
		return 0;
	if (!copy)
		return -ENOMEM;
	/* Not strtok: an empty entry means the working directory. */
	for (e = copy; e && count < WARD_POLICY_MAX_PATHS; e = next) {
		_cleanup_free_ char *abs = NULL, *start = NULL;
		const char *why = NULL;
		bool again = false;

		next = strchr(e, ':');
		if (next)
			*next++ = '\0';
		/* Shell startup files that add to PATH every time leave it with copies. */
		for (unsigned i = 0; i < count && !again; i++)
			again = strcmp(seen[i], e) == 0;
		seen[count++] = e;
		if (again)
			continue;
		abs = e[0] == '/' ? ward__path_absolute(e)
				  : ward__path_join(p->resolved_cwd, e[0] ? e : ".");
		if (!abs)
			return -ENOMEM;
		if (!ward__policy_canon(abs, canon)) {
			r = tool_managed(abs) ? 0 : path_missing(p, abs, &start);
			if (r >= 0 && start && !ward__strv_contains(starts, start))
				r = ward__strv_push(starts, start);
			if (r < 0)
				return r;
			continue;
		}
		if (!ward__policy_in_roots(p, canon))
			continue;
		if (ward__policy_is_root(p, canon))
			why = " is a writable root: a program planted there is not stopped (take it out of PATH)";
		for (size_t i = 0; !why && i < p->roots.n; i++)
			if (ward__path_under(p->roots.v[i], canon))
				why = " holds a writable root: not protected";
		if (!why && tool_managed(canon))
			why = " is filled by a package manager: not protected (--protect it to keep it read-only)";
		r = why ? ward__policy_note(p, "PATH entry", e, why)
			: ward__policy_protect(p, abs, ward__autorun_path_reason);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * The .git of the home directory and of every directory above it in its
 * writable root: git looks for a repository from where it runs upwards, so
 * a ~/.git (or /home/.git with /home writable) the command makes would be
 * the repository of every directory of the home that has none of its own,
 * and its hooks and core.fsmonitor would run at the next `git status` there
 * (shell prompts run one at every prompt). A missing one is guarded, an
 * existing one gets the protections of a root's.
 */
static int protect_home_git(struct ward_policy *p)
{
	_cleanup_free_ char *dir = strdup(p->home);
	int r = 0;

	if (!dir)
		return -ENOMEM;
	while (r >= 0 && ward__policy_in_roots(p, dir)) {
		_cleanup_free_ char *dotgit = ward__path_join(dir, ".git");
		struct stat st;
		char *slash;

		if (!dotgit)
			return -ENOMEM;
		if (lstat(dotgit, &st) < 0)
			r = ward__policy_protect(p, dotgit, home_git_reason);
		else if (!ward__policy_is_root(p, dir))
			r = ward__policy_protect_git(p, dir);
		if (ward__policy_is_root(p, dir))
			break;
		slash = strrchr(dir, '/');
		if (!slash || slash == dir)
			break;
		*slash = '\0';
	}
	return r;
}

/*
 * A writable root inside the home directory (`ward run -C ~/.config`): the
 * home's places in it are protected as the scan of the home would have
 * found them, so its point is the one that scan would reach it with (the
 * matcher, from the home down to the root). 1 with *ret_reason when the
 * root is one of the places or lies inside one (`-C ~/.ssh`): a directory
 * cannot be both a writable root and read-only.
 */
static int home_point_at(const struct ward_policy *p, const char *home, const char *root,
			 struct ward__autorun_point *ret, const char **ret_reason)
{
	struct ward__autorun_point at = ward__autorun_home_point(WARD_AUTORUN_DEPTH), child;
	const char *rest = root + (strcmp(home, "/") == 0 ? 1 : strlen(home) + 1);
	char dir[PATH_MAX];

	*ret = (struct ward__autorun_point){.depth = -1};
	if ((size_t)snprintf(dir, sizeof(dir), "%s", home) >= sizeof(dir))
		return 0;
	while (*rest) {
		size_t len = strcspn(rest, "/"), dl = strlen(dir);
		char name[NAME_MAX + 1];
		enum ward__autorun_kind k;

		if (len > NAME_MAX || dl + len + 2 > sizeof(dir))
			return 0;
		memcpy(name, rest, len);
		name[len] = '\0';
		k = ward__autorun_match(p, &at, dir, name, true, &child, ret_reason);
		if (k == WARD_AUTORUN_PROTECTED)
			return 1;
		if (k == WARD_AUTORUN_NONE)
			return 0;
		at = child;
		snprintf(dir + dl, sizeof(dir) - dl, "%s%s", dl == 1 ? "" : "/", name);
		rest += len + (rest[len] == '/');
	}
	*ret = at;
	return 0;
}

static void merge_point(struct ward__autorun_point *into, const struct ward__autorun_point *from)
{
	for (size_t k = 0; k < WARD_AUTORUN_MAX_COMPONENTS; k++)
		for (size_t w = 0; w < WARD_AUTORUN_MASK_WORDS; w++)
			into->m[k][w] |= from->m[k][w];
	into->depth = MAX(into->depth, from->depth);
}

/*
 * The starts of the scan: every writable root with every name to
 * WARD_AUTORUN_DEPTH levels, except /tmp and $TMPDIR when the caller did not
 * name them: a world-writable sticky one is shared with every other user (a
 * .codex another user makes there is none of ours to guard, let alone
 * remove), any other gets the names at its top only (nothing opens a
 * temporary directory as a project; a deep scan of one would cost every
 * launch). The home directory when a writable root is or holds it, with its
 * own autostart and credential places. Last, the way to PATH directories
 * that do not exist yet, where the first scan did not pass.
 */
static int protect_roots(struct ward_policy *p, const struct ward__strv *named,
			 struct ward_error *err)
{
	/* The roots and the home directory; later the PATH starts (the arrays grow for them). */
	_cleanup_free_ struct ward__autorun_point *points = calloc(p->roots.n + 1, sizeof(*points));
	_cleanup_free_ char **starts = calloc(p->roots.n + 1, sizeof(char *));
	_cleanup_(ward__strv_release) struct ward__strv path_starts = {0};
	struct sink_ctx ctx = {p, 0};
	struct ward__autorun_sink sink = {.found = sink_found,
					  .missing = sink_missing,
					  .repo = sink_repo,
					  .followed = sink_followed,
					  .userdata = &ctx};
	struct ward__autorun_budget budget = {.deadline_ms = ward__now_ms() + WARD_AUTORUN_SCAN_MS};
	size_t n = 0, home_at = SIZE_MAX;
	struct stat st;
	int r;

	if (!points || !starts)
		return -ENOMEM;
	for (size_t i = 0; i < p->roots.n; i++) {
		const char *root = p->roots.v[i];
		bool temp = !ward__strv_contains(named, root);

		if (temp && stat(root, &st) == 0 &&
		    (st.st_mode & (S_ISVTX | S_IWOTH)) == (S_ISVTX | S_IWOTH))
			continue;
		r = ward__policy_protect_git(p, root);
		if (r < 0)
			return ward__error(err, r, "policy",
					   "cannot resolve the protected paths of '%s': %m", root);
		starts[n] = p->roots.v[i];
		points[n++] = ward__autorun_root_point(temp ? 0 : WARD_AUTORUN_DEPTH);
	}
	p->home = home_dir();
	/* Roots inside the home get the home's places that lie in them. */
	for (size_t i = 0; p->home && i < n; i++) {
		struct ward__autorun_point hp;
		const char *reason = NULL;

		if (strcmp(starts[i], p->home) == 0 || !ward__path_under(starts[i], p->home))
			continue;
		if (home_point_at(p, p->home, starts[i], &hp, &reason) > 0) {
			ward__error(
				err, -EPERM, "policy",
				"the writable root '%s' is, or is in, a protected place of the home directory (%s): it cannot be writable",
				starts[i], reason);
			ward__error_hint(err, "--unprotect '%s' to let the command write it",
					 starts[i]);
			return -EPERM;
		}
		merge_point(&points[i], &hp);
	}
	if (p->home && !ward__policy_in_roots(p, p->home)) {
		free(p->home);
		p->home = NULL;
	}
	if (p->home && !ward__policy_unprotected(p, p->home)) {
		struct ward__autorun_point hp = ward__autorun_home_point(WARD_AUTORUN_DEPTH);

		for (size_t i = 0; i < n; i++)
			if (strcmp(starts[i], p->home) == 0)
				home_at = i;
		if (home_at == SIZE_MAX) {
			starts[n] = p->home;
			points[n++] = hp;
		} else {
			merge_point(&points[home_at], &hp);
		}
		/* Its parents (and itself) stay where they are: the scan's findings are in it. */
		r = ward__policy_pin_ancestors(p, p->home, true);
		if (r >= 0)
			r = protect_home_git(p);
		if (r < 0)
			return ward__error(err, r, "policy", "cannot pin the home directory: %m");
	}
	r = protect_path_dirs(p, &path_starts);
	if (r < 0)
		return ward__error(err, r, "policy", "cannot resolve the directories of PATH: %m");
	/* Every directory looked into watches for missing PATH directories too. */
	for (size_t i = 0; i < n; i++)
		points[i].paths = p->path_missing.n > 0;

	p->scan_depth = WARD_AUTORUN_DEPTH;
	p->scan_cut = false;
	r = ward__autorun_scan(p, starts, points, n, &sink, &budget);
	n = 0;
	if (r >= 0 && path_starts.n > p->roots.n + 1) {
		struct ward__autorun_point *np = reallocarray(points, path_starts.n, sizeof(*np));
		char **ns;

		if (np)
			points = np;
		ns = np ? reallocarray(starts, path_starts.n, sizeof(*ns)) : NULL;
		if (ns)
			starts = ns;
		r = np && ns ? 0 : -ENOMEM;
	}
	for (size_t i = 0; r >= 0 && i < path_starts.n; i++) {
		/* Kept in place: the guard watches this directory, not its path. */
		r = ward__policy_pin_ancestors(p, path_starts.v[i], true);
		if (r >= 0 && !ward__autorun_watched(p, path_starts.v[i])) {
			starts[n] = path_starts.v[i];
			points[n++] = (struct ward__autorun_point){.depth = -1, .paths = true};
		}
	}
	if (r >= 0)
		r = ward__autorun_scan(p, starts, points, n, &sink, &budget);
	if (r == -E2BIG) {
		ward__error(
			err, r, "policy",
			"more than %d protected paths in the writable roots (autorun names, git)",
			WARD_POLICY_MAX_PROTECTED);
		ward__error_hint(err, "--unprotect the directories that hold most of them");
		return r;
	}
	if (r == -ERANGE && budget.too_many && budget.refused) {
		/* The guard could not watch them all: fails closed, naming the big one. */
		char *slash = strrchr(budget.refused, '/');

		if (slash && slash != budget.refused)
			*slash = '\0';
		ward__error(
			err, r, "policy",
			"more than %d directories past the autorun scan's bounds (%d directories, %d entries) would have to be watched unread, in '%s' and others",
			WARD_AUTORUN_MAX_UNREAD, WARD_AUTORUN_MAX_DIRS, WARD_AUTORUN_MAX_ENTRIES,
			budget.refused);
		ward__error_hint(
			err,
			"--unprotect '%s' (the scan does not go into it), or another large subtree",
			budget.refused);
		free(budget.refused);
		return r;
	}
	if (r == -ERANGE) {
		/* Fails closed: an unread directory with subdirectories that matter is not guarded. */
		ward__error(
			err, r, "policy",
			"the autorun scan reached its bounds (%d directories, %d entries) before '%s', where autorun names in existing subdirectories matter",
			WARD_AUTORUN_MAX_DIRS, WARD_AUTORUN_MAX_ENTRIES,
			budget.refused ? budget.refused : "?");
		ward__error_hint(
			err,
			"--unprotect the subtree that holds most of these directories, or remove them");
		free(budget.refused);
		return r;
	}
	if (r == -EACCES && budget.refused) {
		ward__error(
			err, r, "policy",
			"cannot read '%s' for autorun names: ward's user may write in it but not read it, nor change its mode",
			budget.refused);
		ward__error_hint(err, "make it readable, or --unprotect it");
		free(budget.refused);
		return r;
	}
	free(budget.refused);
	if (r < 0)
		return ward__error(err, r, "policy", "cannot look for autorun names: %m");
	if (p->scan_cut) {
		char why[300];

		snprintf(
			why, sizeof(why),
			": a limit (%d directories, %d entries, %d ms) was reached; %zu directories deeper than %u levels were not read: they are watched (names created in them are refused) but the autorun names already in them are not read-only",
			WARD_AUTORUN_MAX_DIRS, WARD_AUTORUN_MAX_ENTRIES, WARD_AUTORUN_SCAN_MS,
			p->scan_unread, p->scan_depth);
		r = ward__policy_note(p, "the autorun scan stopped in", p->resolved_cwd, why);
	}
	return r;
}

/*
 * --unprotect paths as the protected ones are written: canonical, a missing
 * tail kept as given (lifting a name that does not exist yet stops the guard
 * from watching for it).
 */
static int resolve_unprotect(struct ward_policy *p)
{
	for (size_t i = 0; i < p->unprotect.n; i++) {
		_cleanup_free_ char *anc = strdup(p->unprotect.v[i]);
		char canon[PATH_MAX], full[PATH_MAX + 1];
		size_t cut;
		int r;

		if (!anc)
			return -ENOMEM;
		cut = strlen(anc);
		while (!ward__policy_canon(anc, canon)) {
			char *slash = strrchr(anc, '/');

			if (!slash || slash == anc) {
				snprintf(canon, sizeof(canon), "/");
				cut = 0;
				break;
			}
			*slash = '\0';
			cut = (size_t)(slash - anc);
		}
		if ((size_t)snprintf(full, sizeof(full), "%s%s",
				     strcmp(canon, "/") == 0 ? "" : canon,
				     p->unprotect.v[i] + cut) >= sizeof(full))
			return -ENAMETOOLONG;
		r = ward__strv_push(&p->unprotected, full[0] ? full : "/");
		if (r < 0)
			return r;
		r = ward__policy_note(p, "unprotected", full[0] ? full : "/",
				      ": the default protections there and beneath are lifted");
		if (r < 0)
			return r;
	}
	return 0;
}

/* Adds a writable root; its canonical path also goes to record (when not NULL). */
static int add_root(struct ward_policy *p, const char *path, bool must_exist, const char *what,
		    struct ward__strv *record, struct ward_error *err)
{
	char canon[PATH_MAX];
	struct stat st;

	if (!ward__policy_canon(path, canon) || stat(canon, &st) < 0) {
		if (!must_exist)
			return ward__policy_note(p, "skipped missing writable root", path, "");
		return ward__error(err, -errno, "policy", "%s '%s' does not exist: %m", what, path);
	}
	if (!S_ISDIR(st.st_mode)) {
		if (!must_exist)
			return ward__policy_note(p, "skipped writable root", path,
						 ": not a directory");
		return ward__error(err, -ENOTDIR, "policy", "%s '%s' is not a directory", what,
				   path);
	}
	if (record && !ward__strv_contains(record, canon) && ward__strv_push(record, canon) < 0)
		return -ENOMEM;
	if (ward__strv_contains(&p->roots, canon))
		return 0;
	return ward__strv_push(&p->roots, canon);
}

/*
 * ward's journal of changes (src/changes) keeps the files runs replaced and
 * the records that undo acts on: no sandbox may read or write it. Where it
 * exists it is masked; where it does not yet but a writable root holds its
 * place, make_journal() made it (0700) before the scan, so that a command
 * cannot plant one there for a later `ward undo` to act on.
 */
static void make_journal(const struct ward_policy *p)
{
	_cleanup_free_ char *path = ward__changes_dir_path();
	char canon[PATH_MAX];
	struct stat st;
	bool inside = false;

	if (!path)
		return;
	for (size_t i = 0; i < p->roots.n && !inside; i++)
		inside = ward__path_under(path, p->roots.v[i]) ||
			(realpath(p->roots.v[i], canon) && ward__path_under(path, canon));
	if (stat(path, &st) < 0 && inside)
		(void)ward__mkdir_parents(path, 0700);
}

static int hide_journal(struct ward_policy *p)
{
	_cleanup_free_ char *path = ward__changes_dir_path();
	char canon[PATH_MAX];
	struct stat st;

	if (!path)
		return 0;
	if (!realpath(path, canon) || stat(canon, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    strcmp(canon, "/") == 0)
		return 0;
	/* A journal that holds a writable root (a misconfiguration) would hide the root. */
	for (size_t i = 0; i < p->roots.n; i++)
		if (ward__path_under(p->roots.v[i], canon))
			return 0;
	p->journal = strdup(canon);
	return p->journal ? 0 : -ENOMEM;
}

static int resolve(struct ward_policy *p, struct ward_error *err)
{
	_cleanup_(ward__strv_release) struct ward__strv named = {0};
	char canon[PATH_MAX];
	struct stat st;
	int r;

	if (!ward__policy_canon(p->cwd ? p->cwd : ".", canon))
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

		r = resolve_unprotect(p);
		if (r < 0)
			return ward__error(err, r, "policy",
					   "cannot resolve --unprotect paths: %m");
		/*
		 * ward's journal is made before the scan: the directories it
		 * makes (a first ~/.local, ~/.local/state) must be read and
		 * watched like the rest, or a first run could plant beneath
		 * them (~/.local/share/applications) unseen.
		 */
		if (p->mode != WARD_MODE_DANGER_FULL_ACCESS)
			make_journal(p);
		r = protect_roots(p, &named, err);
		if (r < 0)
			return r;
		for (size_t i = 0; i < p->protect.n; i++) {
			r = ward__policy_protect(p, p->protect.v[i], ward__policy_reason_explicit);
			if (r < 0)
				return ward__error(err, r, "policy",
						   "cannot resolve protected path '%s': %m",
						   p->protect.v[i]);
		}
		/*
		 * The scan cache's directory, when a writable root holds it:
		 * ward's own, read-only like its rules (scan-cache.c says why
		 * its files are trusted even where this cannot hold). Not
		 * before it exists: guarding a missing one would refuse the
		 * first missing directory on the way (~/.cache) to every
		 * command.
		 */
		if (ward__scan_cache_dir() && stat(ward__scan_cache_dir(), &st) == 0 &&
		    S_ISDIR(st.st_mode)) {
			r = ward__policy_protect(p, ward__scan_cache_dir(),
						 ward__policy_reason_own);
			if (r < 0)
				return ward__error(err, r, "policy",
						   "cannot protect ward's directory '%s': %m",
						   ward__scan_cache_dir());
		}
		r = ward__policy_pin_all_ancestors(p);
		if (r < 0)
			return ward__error(err, r, "policy",
					   "cannot pin the parents of the protected paths: %m");
		if (p->n_protected > 1)
			qsort(p->protected, p->n_protected, sizeof(*p->protected), cmp_protected);
	}

	p->deny = calloc(p->deny_read.n + 1, sizeof(*p->deny));
	if (!p->deny)
		return -ENOMEM;
	for (size_t i = 0; i < p->deny_read.n; i++) {
		if (!realpath(p->deny_read.v[i], canon) || stat(canon, &st) < 0) {
			r = ward__policy_note(p, "deny-read path", p->deny_read.v[i],
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

	if (p->mode != WARD_MODE_DANGER_FULL_ACCESS) {
		r = hide_journal(p);
		if (r < 0)
			return r;
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
	/* Without it, realpath() every time. */
	r = ward__policy_canon_cache(true);
	if (r >= 0)
		r = resolve(p, err);
	ward__policy_canon_cache(false);
	if (r < 0) {
		if (err && !err->message[0])
			ward__error(err, r, "policy", "cannot resolve the policy: %m");
		ward__policy_clear_resolved(p);
	}
	return r;
}
