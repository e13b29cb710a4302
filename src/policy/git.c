/* SPDX-License-Identifier: MIT */
/*
 * What git runs, protected in every writable root: hooks, config, the links
 * that point git at another git directory (a worktree's .git file,
 * commondir, gitdir), core.hooksPath, and the same in every submodule and
 * linked worktree a repository has.
 */
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/util.h"
#include "policy/protect.h"

#define GIT_CONFIG_MAX (1 << 20)

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

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
	char *base;
	int r;

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
	r = ward__policy_protect(p, full, "git core.hooksPath");
	/*
	 * A hooks directory named "_" (husky 9: .husky/_) holds only
	 * dispatchers that run the scripts of its parent (.husky/pre-commit):
	 * those are the hooks git really runs, so the parent is protected too.
	 */
	for (size_t n = strlen(full); n > 1 && full[n - 1] == '/'; n--)
		full[n - 1] = '\0';
	base = strrchr(full, '/');
	if (r >= 0 && base && base != full && strcmp(base, "/_") == 0) {
		*base = '\0';
		r = ward__policy_protect(p, full, "git core.hooksPath");
	}
	return r;
}

/*
 * Hook runners keep what their hooks run in the work tree, outside the
 * hooks directory: pre-commit's .pre-commit-config.yaml, lefthook's
 * lefthook.yml and its variants (the -local ones are read on top). Their
 * existing files are protected at the top of every repository ward protects:
 * configuration of code that git hooks run, now or once the person installs
 * them. A missing one is guarded only where that runner's hooks are
 * installed, since only there would a new file run anything (and an
 * ordinary repository's guarded names stay few).
 */
#define HOOK_FILES_MAX 32 /* hook scripts looked into per repository */
#define HOOK_FILE_MAX 16384 /* bytes read of each */

enum { RUNNER_PRE_COMMIT = 1, RUNNER_LEFTHOOK = 2 };

/* Which runners' hooks the hooks directory holds (their scripts name them). */
static unsigned hook_runners(const char *hooks)
{
	_cleanup_(closedirp) DIR *d = opendir(hooks);
	unsigned found = 0, n = 0;
	struct dirent *de;

	if (!d)
		return 0;
	while ((de = readdir(d)) && n < HOOK_FILES_MAX) {
		_cleanup_free_ char *path = NULL, *buf = NULL;
		size_t len = strlen(de->d_name);

		if (de->d_name[0] == '.' ||
		    (len > 7 && strcmp(de->d_name + len - 7, ".sample") == 0))
			continue;
		n++;
		path = ward__path_join(hooks, de->d_name);
		if (!path || ward__read_regular_file(path, HOOK_FILE_MAX, &buf, NULL) < 0)
			continue;
		if (strstr(buf, "pre-commit"))
			found |= RUNNER_PRE_COMMIT;
		if (strstr(buf, "lefthook"))
			found |= RUNNER_LEFTHOOK;
	}
	return found;
}

static int protect_runner_file(struct ward_policy *p, const char *root, const char *name,
			       bool guard)
{
	_cleanup_free_ char *path = ward__path_join(root, name);
	struct stat st;

	if (!path)
		return -ENOMEM;
	if (!guard && lstat(path, &st) < 0)
		return 0;
	return ward__policy_protect(p, path, "autorun: hook runner config");
}

static int protect_hook_runners(struct ward_policy *p, const char *root, const char *gitdir)
{
	static const char *const bases[] = {"lefthook",		".lefthook",
					    "lefthook-local",	".lefthook-local",
					    ".config/lefthook", ".config/lefthook-local"};
	static const char *const exts[] = {"yml", "yaml", "toml", "json", "jsonc"};
	_cleanup_free_ char *config = ward__path_join(gitdir, "config");
	_cleanup_free_ char *hp = config ? git_hooks_path(config) : NULL;
	_cleanup_free_ char *hooks = NULL, *dotconfig = ward__path_join(root, ".config");
	unsigned runners;
	struct stat st;
	bool has_config;
	int r;

	if (!config || !dotconfig)
		return -ENOMEM;
	if (hp && hp[0] == '~' && hp[1] == '/')
		hooks = getenv("HOME") ? ward__path_join(getenv("HOME"), hp + 2) : NULL;
	else if (hp)
		hooks = hp[0] == '/' ? strdup(hp) : ward__path_join(root, hp);
	else
		hooks = ward__path_join(gitdir, "hooks");
	runners = hooks ? hook_runners(hooks) : 0;
	/* A missing .config is not guarded for them: that would refuse every new .config. */
	has_config = lstat(dotconfig, &st) == 0 && S_ISDIR(st.st_mode);
	r = protect_runner_file(p, root, ".pre-commit-config.yaml", runners & RUNNER_PRE_COMMIT);
	for (size_t b = 0; r >= 0 && b < ELEMENTSOF(bases); b++)
		for (size_t e = 0; r >= 0 && e < ELEMENTSOF(exts); e++) {
			_cleanup_free_ char *name = NULL;

			if (asprintf(&name, "%s.%s", bases[b], exts[e]) < 0)
				return -ENOMEM;
			r = protect_runner_file(
				p, root, name,
				(runners & RUNNER_LEFTHOOK) &&
					(name[0] != '.' || name[1] != 'c' || has_config));
		}
	return r;
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

		r = path ? ward__policy_protect(p, path, files[i].reason) : -ENOMEM;
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
		int r = f ? ward__policy_protect(w->p, f, "git worktree link") : -ENOMEM;

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

int ward__policy_protect_git(struct ward_policy *p, const char *root)
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
		r = ward__policy_pin(p, dotgit, "git directory");
		if (r >= 0)
			r = protect_git_dir(p, root, dotgit);
		if (r >= 0)
			r = protect_hook_runners(p, root, dotgit);
		return r;
	}
	if (S_ISREG(st.st_mode)) {
		_cleanup_free_ char *gitdir = read_gitdir_file(root, dotgit);
		_cleanup_free_ char *commonfile = NULL, *common = NULL, *cbuf = NULL,
				    *wtconfig = NULL;
		char canon[PATH_MAX];

		/* Rewriting the gitdir: line would point git at a planted repository. */
		r = ward__policy_protect(p, dotgit, "git worktree link");
		if (r < 0 || !gitdir || !realpath(gitdir, canon))
			return r;
		r = ward__policy_pin(p, canon, "git directory");
		if (r < 0)
			return r;
		wtconfig = ward__path_join(canon, "config.worktree");
		commonfile = ward__path_join(canon, "commondir");
		if (!wtconfig || !commonfile)
			return -ENOMEM;
		r = ward__policy_protect(p, wtconfig, "git config");
		if (r < 0)
			return r;
		if (ward__read_regular_file(commonfile, PATH_MAX, &cbuf, NULL) == 0) {
			char rc[PATH_MAX];

			cbuf[strcspn(cbuf, "\r\n")] = '\0';
			common = cbuf[0] == '/' ? strdup(cbuf) : ward__path_join(canon, cbuf);
			if (!common)
				return -ENOMEM;
			if (realpath(common, rc)) {
				r = ward__policy_pin(p, rc, "git directory");
				if (r >= 0)
					r = ward__policy_protect(p, commonfile,
								 "git worktree link");
				if (r >= 0)
					r = protect_git_dir(p, root, rc);
				if (r >= 0)
					r = protect_hook_runners(p, root, rc);
				return r;
			}
		}
		/* A submodule: hooks and config live in its own git directory. */
		r = protect_git_dir(p, root, canon);
		return r < 0 ? r : protect_hook_runners(p, root, canon);
	}
	return 0;
}
