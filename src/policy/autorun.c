/* SPDX-License-Identifier: MIT */
/*
 * Autorun names: the files and directories from which the person's own tools
 * run code later, outside the sandbox. A command that plants
 * .vscode/tasks.json, appends to .bashrc or writes .mcp.json has escaped the
 * sandbox the next time an editor opens the folder, a shell starts or an
 * agent begins (DESIGN.md, threat model).
 *
 * One table says which names, with the reason a person reads and what would
 * run them; one matcher says, for an entry of a directory, whether it is such
 * a name, a directory whose entries matter, or nothing. The launch scan here
 * (for what exists, bound read-only by the sandbox) and the guard (for what
 * the command creates while it runs) both use the matcher, so the two agree
 * on every name.
 *
 * Where: every directory down to WARD_AUTORUN_DEPTH levels beneath each
 * writable root (nested projects have their own .vscode and .mcp.json), and,
 * when a writable root is or holds the home directory, the home's autostart
 * and credential places there.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/util.h"
#include "policy/policy.h"
#include "policy/protect.h"
#include "policy/scan-cache.h"

enum autorun_class {
	C_SHELL,
	C_GIT,
	C_GITMODULES,
	C_EDITOR,
	C_AGENT,
	C_STARTUP,
	C_SSH,
	C_GPG,
	C_SESSION,
	C_SERVICES,
	C_ENVIRON,
	C_CREDENTIALS,
	C_CARGO,
	C_BUILD,
	C_HOOK_RUNNER,
	C_PATH,
	C_MAX,
};

/* The reason shown in `ward policy show` and denials, and what would run the file. */
static const struct {
	const char *reason, *runner;
} classes[C_MAX] = {
	[C_SHELL] =
		{"autorun: shell startup",
		 "every new shell (bash, zsh, fish) of a person whose home directory this is runs it, or what it names: aliases, oh-my-zsh's plugins, the prompt's commands, direnv's allowed .envrc files"},
	[C_GIT] =
		{"autorun: git config",
		 "git reads it: aliases, core.fsmonitor, core.hooksPath and credential helpers run commands"},
	[C_GITMODULES] =
		{"autorun: git submodules",
		 "git submodule update and clone --recurse-submodules fetch and check out what it names"},
	[C_EDITOR] =
		{"autorun: editor tasks",
		 "an editor opening this folder runs what it says: VS Code and Zed tasks, JetBrains run configurations, dev container commands, vim and neovim exrc files; VS Code's user settings and tasks, in every folder"},
	[C_AGENT] =
		{"autorun: agent config",
		 "a coding agent started here runs its hooks and starts the MCP servers it names, outside any sandbox"},
	[C_STARTUP] =
		{"autorun: program startup",
		 "vim, neovim, emacs, tmux, gdb, ipython and python read it at every start and run what it says"},
	[C_SSH] =
		{"autorun: ssh",
		 "sshd lets in every key in authorized_keys; ssh runs the ProxyCommand and LocalCommand of its config"},
	[C_GPG] =
		{"autorun: gpg",
		 "gpg and gpg-agent run the programs their configuration names (pinentry, scdaemon)"},
	[C_SESSION] =
		{"autorun: session start",
		 "the desktop session runs it at login (autostart entries, .xprofile, .xinitrc, .xsessionrc) or when a file or link is opened (applications)"},
	[C_SERVICES] =
		{"autorun: user services",
		 "systemd --user starts the services and timers defined there (and drop-ins change the ones it has); D-Bus starts the session services defined there when a program asks for them"},
	[C_ENVIRON] =
		{"autorun: session environment",
		 "the login session gives these variables (LD_PRELOAD, PATH) to every program of the person"},
	[C_CREDENTIALS] =
		{"autorun: tool credentials",
		 "npm, pip, docker, kubectl and aws read them: the credential helpers, exec plugins and scripts named there run, and the secrets in them are the person's"},
	[C_CARGO] =
		{"autorun: cargo config",
		 "cargo runs the runners, rustc wrappers and aliases it sets, for every crate beneath"},
	[C_BUILD] =
		{"autorun: build tool config",
		 "gradle runs its init scripts and JVM options at every build; maven, yarn and pip fetch and run the releases and packages of the servers it names"},
	[C_HOOK_RUNNER] =
		{"autorun: hook runner config",
		 "the git hooks that pre-commit, lefthook and husky install run the commands it lists, at the next commit, checkout or push"},
	[C_PATH] =
		{"autorun: on PATH",
		 "the person's shell runs a program planted there in place of the one they meant (git, ls, make)"},
};

const char ward__autorun_path_reason[] = "autorun: on PATH";

/*
 * A change of the components after the first of any entry changes what the
 * scan cache keeps of a directory: it takes a new VERSION in scan-cache.c.
 *
 * Components are separated by '/'; a component ending in '*' matches
 * every name it starts ("config*": config and config.toml). home: only in
 * the home directory itself, not in every directory.
 */
static const struct entry {
	const char *path;
	uint8_t cls;
	bool home;
} table[] = {
	{".bashrc", C_SHELL, false},
	{".bash_profile", C_SHELL, false},
	{".bash_login", C_SHELL, false},
	{".bash_logout", C_SHELL, false},
	{".bash_aliases", C_SHELL, false},
	{".profile", C_SHELL, false},
	{".zshrc", C_SHELL, false},
	{".zprofile", C_SHELL, false},
	{".zshenv", C_SHELL, false},
	{".zlogin", C_SHELL, false},
	{".zlogout", C_SHELL, false},
	{".config/fish", C_SHELL, false},
	{".gitconfig", C_GIT, false},
	{".config/git", C_GIT, false},
	{".gitmodules", C_GITMODULES, false},
	{".vscode", C_EDITOR, false},
	{".idea", C_EDITOR, false},
	{".devcontainer", C_EDITOR, false},
	{".zed", C_EDITOR, false},
	{".exrc", C_EDITOR, false},
	{".nvim.lua", C_EDITOR, false},
	{".mcp.json", C_AGENT, false},
	{".claude", C_AGENT, false},
	{".cursor", C_AGENT, false},
	{".gemini", C_AGENT, false},
	{".codex", C_AGENT, false},
	{".agents", C_AGENT, false},
	{".ward", C_AGENT, false},
	/* The home directory's. */
	{".ssh", C_SSH, true},
	{".gnupg", C_GPG, true},
	{".config/autostart", C_SESSION, true},
	{".xprofile", C_SESSION, true},
	{".xinitrc", C_SESSION, true},
	{".local/share/applications", C_SESSION, true},
	/* user.control (systemctl --user set-property) and user.conf (the manager's environment). */
	{".config/systemd/user*", C_SERVICES, true},
	{".config/environment.d", C_ENVIRON, true},
	{".pam_environment", C_ENVIRON, true},
	{".npmrc", C_CREDENTIALS, true},
	{".pypirc", C_CREDENTIALS, true},
	{".docker", C_CREDENTIALS, true},
	{".kube", C_CREDENTIALS, true},
	{".aws", C_CREDENTIALS, true},
	{".cargo/config*", C_CARGO, true},
	{".vimrc", C_STARTUP, true},
	{".config/nvim", C_STARTUP, true},
	{".emacs", C_STARTUP, true},
	{".emacs.d", C_STARTUP, true},
	{".tmux.conf", C_STARTUP, true},
	{".local/lib/python*", C_STARTUP, true},
	{".bashrc.d", C_SHELL, true},
	{".config/zsh", C_SHELL, true},
	{".oh-my-zsh", C_SHELL, true},
	{".config/starship.toml", C_SHELL, true},
	{".config/direnv", C_SHELL, true},
	{".local/share/direnv", C_SHELL, true},
	{".xsessionrc", C_SESSION, true},
	{".xsession", C_SESSION, true},
	{".local/share/systemd", C_SERVICES, true},
	{".local/share/dbus-1", C_SERVICES, true},
	{".vim", C_STARTUP, true},
	{".config/vim", C_STARTUP, true},
	{".local/share/nvim", C_STARTUP, true},
	{".config/emacs", C_STARTUP, true},
	{".config/tmux", C_STARTUP, true},
	{".gdbinit", C_STARTUP, true},
	{".config/gdb", C_STARTUP, true},
	{".ipython", C_STARTUP, true},
	{".config/Code*/User", C_EDITOR, true},
	{".config/VSCodium/User", C_EDITOR, true},
	{".gradle/init*", C_BUILD, true},
	{".gradle/gradle.properties", C_BUILD, true},
	{".m2/settings.xml", C_BUILD, true},
	{".yarnrc", C_BUILD, true},
	{".yarnrc.yml", C_BUILD, true},
	{".config/pip", C_BUILD, true},
	{".pip", C_BUILD, true},
	{".config/husky", C_HOOK_RUNNER, true},
};

_Static_assert(ELEMENTSOF(table) <= 64 * WARD_AUTORUN_MASK_WORDS,
	       "the autorun table must fit a point's sets of entries");

static bool bit_get(const uint64_t *m, size_t i)
{
	return (m[i / 64] >> (i % 64)) & 1;
}

static void bit_set(uint64_t *m, size_t i)
{
	m[i / 64] |= UINT64_C(1) << (i % 64);
}

/* The entries protected everywhere ([0]) and in the home directory only ([1]): made once. */
static uint64_t masks[2][WARD_AUTORUN_MASK_WORDS];
static pthread_once_t masks_once = PTHREAD_ONCE_INIT;

static void masks_init(void)
{
	for (size_t i = 0; i < ELEMENTSOF(table); i++)
		bit_set(masks[table[i].home], i);
}

static const uint64_t *class_mask(bool home)
{
	pthread_once(&masks_once, masks_init);
	return masks[home];
}

struct ward__autorun_point ward__autorun_root_point(unsigned depth)
{
	return (struct ward__autorun_point){.depth = (int8_t)MIN(depth, 64u)};
}

struct ward__autorun_point ward__autorun_home_point(unsigned depth)
{
	struct ward__autorun_point at = {.depth = (int8_t)MIN(depth, 64u)};

	memcpy(at.m[0], class_mask(true), sizeof(at.m[0]));
	return at;
}

bool ward__autorun_point_empty(const struct ward__autorun_point *at)
{
	for (size_t k = 0; k < WARD_AUTORUN_MAX_COMPONENTS; k++)
		for (size_t w = 0; w < WARD_AUTORUN_MASK_WORDS; w++)
			if (at->m[k][w])
				return false;
	return at->depth < 0 && !at->paths;
}

/* Component k of an entry's path: its start and length, and whether it is the last. */
static bool component(const char *path, size_t k, const char **ret, size_t *ret_len, bool *ret_last)
{
	const char *s = path, *slash;

	for (; k > 0; k--) {
		slash = strchr(s, '/');
		if (!slash)
			return false;
		s = slash + 1;
	}
	slash = strchr(s, '/');
	*ret = s;
	*ret_len = slash ? (size_t)(slash - s) : strlen(s);
	*ret_last = !slash;
	return true;
}

static bool component_matches(const char *c, size_t len, const char *name)
{
	if (len > 0 && c[len - 1] == '*')
		return strncmp(name, c, len - 1) == 0;
	return strlen(name) == len && memcmp(name, c, len) == 0;
}

/*
 * The components of the table's entries after the first ("fish" of
 * .config/fish, "config*" of .cargo/config*), and the first bytes they
 * start with: made once, for may_matter().
 */
static struct {
	const char *c;
	size_t len;
} later[ELEMENTSOF(table) * (WARD_AUTORUN_MAX_COMPONENTS - 1)];
static size_t n_later;
static uint64_t later_first[4];
static pthread_once_t later_once = PTHREAD_ONCE_INIT;

static void later_init(void)
{
	for (size_t i = 0; i < ELEMENTSOF(table); i++)
		for (size_t k = 1; k < WARD_AUTORUN_MAX_COMPONENTS; k++) {
			const char *c;
			size_t len;
			bool last;

			if (!component(table[i].path, k, &c, &len, &last))
				break;
			later[n_later].c = c;
			later[n_later++].len = len;
			later_first[(unsigned char)c[0] / 64] |= UINT64_C(1)
				<< ((unsigned char)c[0] % 64);
		}
}

/*
 * Whether an entry could ever matter to the matcher, whatever the point and
 * the policy: a name starting with a dot (every entry's first component
 * does), anything but a regular file (a directory to look into or on the
 * way to a PATH directory; a dangling link where a PATH directory is
 * missing), or a later component of an entry. The scan cache keeps these of
 * a directory, and the matcher run over them finds what it finds over all
 * of them.
 */
static bool may_matter(const char *name, bool is_reg)
{
	unsigned char f = (unsigned char)name[0];

	if (f == '.' || !is_reg)
		return true;
	pthread_once(&later_once, later_init);
	if (!(later_first[f / 64] & (UINT64_C(1) << (f % 64))))
		return false;
	for (size_t i = 0; i < n_later; i++)
		if (component_matches(later[i].c, later[i].len, name))
			return true;
	return false;
}

/*
 * Directories never looked into: git's own directory (its hooks and config
 * have protections of their own, and objects/ alone holds 256 directories)
 * and package trees that installs write by the thousand and that no editor,
 * shell or agent opens as a project.
 */
static bool skipped(const char *name)
{
	return strcmp(name, ".git") == 0 || strcmp(name, "node_modules") == 0;
}

/*
 * Where dir/name stands to path: 2 it is path, 1 it is one of path's
 * ancestors, 0 neither. Compared in pieces, without joining.
 */
static int leads_to(const char *dir, const char *name, const char *path)
{
	size_t dl = strcmp(dir, "/") == 0 ? 0 : strlen(dir), nl = strlen(name);

	if (strncmp(path, dir, dl) != 0 || path[dl] != '/' || strncmp(path + dl + 1, name, nl) != 0)
		return 0;
	if (path[dl + 1 + nl] == '\0')
		return 2;
	return path[dl + 1 + nl] == '/' ? 1 : 0;
}

/* Is dir/name an --unprotect path or beneath one? Compared in pieces, without joining. */
static bool lifted(const struct ward_policy *p, const char *dir, const char *name)
{
	size_t dl = strlen(dir), nl = strlen(name);

	if (strcmp(dir, "/") == 0)
		dl = 0;
	for (size_t i = 0; i < p->unprotected.n; i++) {
		const char *u = p->unprotected.v[i];
		size_t ul = strlen(u);

		if (ul <= dl) {
			/* u is dir itself or one of its ancestors. */
			if (strncmp(dir, u, ul) == 0 && (ul == dl || dir[ul] == '/' || ul == 1))
				return true;
			continue;
		}
		/* u must be dir + "/" + name, or beneath that: it is as deep as name or deeper only then. */
		if (strncmp(u, dir, dl) == 0 && u[dl] == '/' &&
		    strncmp(u + dl + 1, name, nl) == 0 && u[dl + 1 + nl] == '\0')
			return true;
	}
	return false;
}

enum ward__autorun_kind ward__autorun_match(const struct ward_policy *p,
					    const struct ward__autorun_point *at, const char *dir,
					    const char *name, bool is_dir,
					    struct ward__autorun_point *ret_child,
					    const char **ret_reason)
{
	struct ward__autorun_point child = {.depth = -1};
	const char *reason = NULL;
	bool descend = false;

	for (size_t k = 0; k < WARD_AUTORUN_MAX_COMPONENTS; k++) {
		uint64_t mm[WARD_AUTORUN_MASK_WORDS];

		memcpy(mm, at->m[k], sizeof(mm));
		/* Every first component starts with a dot: most names are done here. */
		if (k == 0) {
			if (name[0] != '.')
				continue;
			if (at->depth >= 0)
				for (size_t w = 0; w < WARD_AUTORUN_MASK_WORDS; w++)
					mm[w] |= class_mask(false)[w];
		}
		for (size_t w = 0; w < WARD_AUTORUN_MASK_WORDS; w++)
			for (uint64_t b = mm[w]; b; b &= b - 1) {
				size_t i = w * 64 + (size_t)__builtin_ctzll(b);
				const char *c;
				size_t len;
				bool last;

				if (!component(table[i].path, k, &c, &len, &last) ||
				    !component_matches(c, len, name))
					continue;
				if (last) {
					if (!reason)
						reason = classes[table[i].cls].reason;
				} else if (is_dir && k + 1 < WARD_AUTORUN_MAX_COMPONENTS) {
					bit_set(child.m[k + 1], i);
					descend = true;
				}
			}
	}
	/* A PATH directory that does not exist yet, and the directories on the way to it. */
	for (size_t i = 0; !reason && at->paths && i < p->path_missing.n; i++) {
		int k = leads_to(dir, name, p->path_missing.v[i]);

		if (k == 2)
			reason = classes[C_PATH].reason;
		else if (k == 1 && is_dir)
			child.paths = descend = true;
	}
	if (!reason && is_dir && at->depth > 0 && !skipped(name)) {
		child.depth = (int8_t)(at->depth - 1);
		descend = true;
	}
	if (!reason && !descend)
		return WARD_AUTORUN_NONE;
	if (p->unprotected.n > 0 && lifted(p, dir, name))
		return WARD_AUTORUN_NONE;
	if (reason) {
		*ret_reason = reason;
		return WARD_AUTORUN_PROTECTED;
	}
	*ret_child = child;
	return WARD_AUTORUN_DESCEND;
}

/*
 * The reason of the first entry whose later components a point holds (what
 * a name leads to), or that of PATH on the way to a missing PATH directory;
 * NULL when only the depth goes on.
 */
static const char *continued_reason(const struct ward__autorun_point *child)
{
	for (size_t k = 1; k < WARD_AUTORUN_MAX_COMPONENTS; k++)
		for (size_t w = 0; w < WARD_AUTORUN_MASK_WORDS; w++)
			if (child->m[k][w])
				return classes[table[w * 64 +
						     (size_t)__builtin_ctzll(child->m[k][w])]
						       .cls]
					.reason;
	return child->paths ? classes[C_PATH].reason : NULL;
}

/* Where the symlink at path leads: a directory (canon filled), or not. */
static bool link_leads(const char *path, char canon[PATH_MAX])
{
	struct stat st;

	return realpath(path, canon) && stat(canon, &st) == 0 && S_ISDIR(st.st_mode);
}

enum ward__autorun_kind ward__autorun_match_link(const struct ward_policy *p,
						 const struct ward__autorun_point *at,
						 const char *dir, const char *name,
						 unsigned *follows,
						 struct ward__autorun_point *ret_child,
						 char *ret_target, const char **ret_reason)
{
	struct ward__autorun_point child;
	const char *reason = NULL;
	_cleanup_free_ char *path = NULL;
	char canon[PATH_MAX];
	struct stat st;
	bool leads;

	if (ward__autorun_match(p, at, dir, name, true, &child, &reason) != WARD_AUTORUN_DESCEND)
		return WARD_AUTORUN_NONE;
	path = ward__path_join(dir, name);
	/* Without memory, as a link that leads elsewhere: refused where names go on. */
	if (path && (lstat(path, &st) < 0 || !S_ISLNK(st.st_mode)))
		return WARD_AUTORUN_NONE;
	reason = continued_reason(&child);
	if (!reason && follows) {
		/* Each resolution costs; a link to a file holds no names beneath. */
		if (*follows == 0 || stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			return WARD_AUTORUN_NONE;
		--*follows;
	}
	leads = path && link_leads(path, canon);
	for (size_t i = 0; path && i < p->n_watches; i++) {
		const struct ward__autorun_watch *w = &p->watches[i];

		if (!w->link || strcmp(w->path, path) != 0)
			continue;
		if (leads ? w->target && strcmp(w->target, canon) == 0 : !w->target)
			return WARD_AUTORUN_NONE;
		break;
	}
	if (reason) {
		*ret_reason = reason;
		return WARD_AUTORUN_PROTECTED;
	}
	/* Outside the writable roots the command cannot put anything beneath it. */
	if (!leads || !ward__policy_in_roots(p, canon))
		return WARD_AUTORUN_NONE;
	memcpy(ret_target, canon, strlen(canon) + 1);
	*ret_child = child;
	return WARD_AUTORUN_DESCEND;
}

const char *ward__policy_reason_runner(const char *reason)
{
	static const struct {
		const char *reason, *runner;
	} others[] = {
		{"git hooks", "git runs these hooks on commit, checkout, merge and push"},
		{"git config",
		 "git reads it: aliases, core.fsmonitor, core.hooksPath and other settings run commands"},
		{"git core.hooksPath", "the hooks git really runs"},
		{"git worktree link",
		 "it points git at a git directory, whose hooks and config git then runs"},
		{"git directory", "git's own directory, kept in its place"},
		{"holds a protected path", "it holds a protected path, kept in its place"},
		{"--protect", "protected on request"},
		{"ward's own",
		 "ward's own files (the autorun scan's cache), kept read-only like its rules and audit log"},
	};

	if (!reason)
		return NULL;
	for (size_t i = 0; i < C_MAX; i++)
		if (strcmp(classes[i].reason, reason) == 0)
			return classes[i].runner;
	for (size_t i = 0; i < ELEMENTSOF(others); i++)
		if (strcmp(others[i].reason, reason) == 0)
			return others[i].runner;
	return NULL;
}

/* ------------------------------------------------------------ the launch scan */

#define SCAN_BUF 32768

struct item {
	char *path;
	struct ward__autorun_point at;
	unsigned level;
	bool start;
	bool abs; /* a symlink's target or beneath one: opened by its path, never cached */
	size_t from; /* the start it was reached from (its directory is opened relative to it) */
};

struct scan {
	struct ward_policy *p;
	const struct ward__autorun_sink *sink;
	char *const *starts;
	size_t n_starts;
	struct item *q;
	size_t n, cap;
	size_t entries;
	int *start_fds; /* each start's directory, open while the scan runs, or -1 */
	struct ward__autorun_budget *budget;
	unsigned unread_level; /* the shallowest level of a directory watched unread */
	struct ward__scan_cache *cache; /* or NULL */
	char *buf, *lbuf; /* getdents64's, a listing's (for the cache) */
};

static int push(struct scan *s, char *path, const struct ward__autorun_point *at, unsigned level,
		bool start, bool abs, size_t from)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct item *nq = reallocarray(s->q, cap, sizeof(*nq));

		if (!nq) {
			free(path);
			return -ENOMEM;
		}
		s->q = nq;
		s->cap = cap;
	}
	s->q[s->n++] = (struct item){
		.path = path, .at = *at, .level = level, .start = start, .abs = abs, .from = from};
	return 0;
}

static bool is_start(const struct scan *s, const char *path)
{
	for (size_t i = 0; i < s->n_starts; i++)
		if (strcmp(s->starts[i], path) == 0)
			return true;
	return false;
}

static int record_watch(struct ward_policy *p, const char *path, const char *target, bool link,
			const struct ward__autorun_point *at, bool unread)
{
	struct ward__autorun_watch *w;

	if (p->n_watches % 64 == 0) {
		w = reallocarray(p->watches, p->n_watches + 64, sizeof(*w));
		if (!w)
			return -ENOMEM;
		p->watches = w;
	}
	w = &p->watches[p->n_watches];
	*w = (struct ward__autorun_watch){.path = strdup(path),
					  .target = target ? strdup(target) : NULL,
					  .link = link,
					  .at = *at,
					  .unread = unread};
	if (!w->path || (target && !w->target)) {
		free(w->path);
		free(w->target);
		return -ENOMEM;
	}
	p->n_watches++;
	p->scan_unread += unread;
	return 0;
}

/*
 * A directory past the scan's bounds (finding 2 of the autorun review: a
 * command can make the next launch's scan stop early, and a directory
 * neither read nor watched hid what it planted there). Reading it is what
 * the bound forbids; watching it costs one inotify watch and catches every
 * name created or renamed into it, which is what a command plants. That
 * covers the names of the directory itself, not what lies in
 * subdirectories that already exist: so a directory whose subdirectories
 * matter (more levels to go, or the way to a missing PATH directory) is
 * refused (-ERANGE: the caller fails the run), and for the rest the few
 * subdirectories a table entry goes through (.config of .config/fish) are
 * looked up by name, one fstatat each, and watched unread in turn.
 */
static int record_unread(struct scan *s, const struct item *it)
{
	struct {
		const char *c;
		size_t len;
	} names[ELEMENTSOF(table)];
	size_t n_names = 0;
	int r;

	if (it->at.depth > 0 || it->at.paths || s->p->scan_unread >= WARD_AUTORUN_MAX_UNREAD) {
		if (!s->budget->refused) {
			s->budget->refused = strdup(it->path);
			s->budget->too_many = it->at.depth <= 0 && !it->at.paths;
		}
		return -ERANGE;
	}
	r = record_watch(s->p, it->path, NULL, false, &it->at, true);
	s->unread_level = MIN(s->unread_level, it->level);
	for (size_t k = 0; r >= 0 && k < WARD_AUTORUN_MAX_COMPONENTS; k++) {
		uint64_t mm[WARD_AUTORUN_MASK_WORDS];

		memcpy(mm, it->at.m[k], sizeof(mm));
		if (k == 0 && it->at.depth >= 0)
			for (size_t w = 0; w < WARD_AUTORUN_MASK_WORDS; w++)
				mm[w] |= class_mask(false)[w];
		for (size_t i = 0; r >= 0 && i < ELEMENTSOF(table); i++) {
			struct ward__autorun_point child;
			const char *c, *reason = NULL;
			char name[NAME_MAX + 1];
			struct item sub = {.level = it->level + 1, .from = it->from};
			struct stat st;
			size_t len;
			bool last, seen = false;

			if (!(mm[i / 64] & (UINT64_C(1) << (i % 64))) ||
			    !component(table[i].path, k, &c, &len, &last) || last || len > NAME_MAX)
				continue;
			memcpy(name, c, len);
			name[len] = '\0';
			/* .config is on the way to .config/fish and .config/git: once. */
			for (size_t j = 0; j < n_names && !seen; j++)
				seen = names[j].len == len && memcmp(names[j].c, c, len) == 0;
			if (seen || n_names == ELEMENTSOF(names))
				continue;
			names[n_names].c = c;
			names[n_names++].len = len;
			sub.path = ward__path_join(it->path, name);
			if (!sub.path)
				return -ENOMEM;
			if (fstatat(AT_FDCWD, sub.path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISDIR(st.st_mode) &&
			    ward__autorun_match(s->p, &it->at, it->path, name, true, &child,
						&reason) == WARD_AUTORUN_DESCEND) {
				sub.at = child;
				r = record_unread(s, &sub);
			}
			free(sub.path);
		}
	}
	return r;
}

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* An entry of a directory that matters: an autorun name, or a directory to look into. */
struct hit {
	char *name;
	enum ward__autorun_kind kind; /* NONE: a .git (repo) */
	const char *reason;
	struct ward__autorun_point child;
	bool link; /* a symlink where names go on beneath: followed */
};

/* What reading one directory found (read_dir), applied afterwards in order (apply_dir). */
struct result {
	bool opened;
	bool skipped; /* not read: the time ran out (watched unread) */
	bool cached; /* its listing came from the scan cache */
	struct hit *hits;
	size_t n_hits, cap_hits;
	uint64_t found[WARD_AUTORUN_MASK_WORDS]; /* a start's single-component names seen */
	size_t entries;
};

static void result_release(struct result *res)
{
	for (size_t i = 0; i < res->n_hits; i++)
		free(res->hits[i].name);
	free(res->hits);
	*res = (struct result){0};
}

static int add_hit(struct result *res, const char *name, enum ward__autorun_kind kind,
		   const char *reason, const struct ward__autorun_point *child)
{
	if (res->n_hits == res->cap_hits) {
		size_t cap = res->cap_hits ? res->cap_hits * 2 : 8;
		struct hit *nh = reallocarray(res->hits, cap, sizeof(*nh));

		if (!nh)
			return -ENOMEM;
		res->hits = nh;
		res->cap_hits = cap;
	}
	res->hits[res->n_hits] = (struct hit){.name = strdup(name), .kind = kind, .reason = reason};
	if (child)
		res->hits[res->n_hits].child = *child;
	if (!res->hits[res->n_hits].name)
		return -ENOMEM;
	res->n_hits++;
	return 0;
}

/* Whether nothing but first components of the table's entries can match at a point. */
static bool only_first_components(const struct ward__autorun_point *at)
{
	for (size_t k = 1; k < WARD_AUTORUN_MAX_COMPONENTS; k++)
		for (size_t w = 0; w < WARD_AUTORUN_MASK_WORDS; w++)
			if (at->m[k][w])
				return false;
	return at->depth <= 0 && !at->paths;
}

/* One entry of a directory: kept in res when it matters at it. */
static int consider(const struct scan *s, const struct item *it, struct result *res,
		    const char *name, bool is_dir, bool is_link)
{
	struct ward__autorun_point child;
	const char *reason = NULL;
	enum ward__autorun_kind k;

	/*
	 * The deepest level (most directories) holds nothing but first
	 * components, which all start with a dot: the matcher would say so
	 * for every other name.
	 */
	if (name[0] != '.' && only_first_components(&it->at))
		return 0;
	/* A repository of its own within the depth: the sink protects it as it does a root's. */
	if (s->sink->repo && !it->start && it->at.depth >= 0 && strcmp(name, ".git") == 0)
		return add_hit(res, name, WARD_AUTORUN_NONE, NULL, NULL);
	k = ward__autorun_match(s->p, &it->at, it->path, name, is_dir, &child, &reason);
	/* A symlink where a directory's names would matter: where it leads is looked into. */
	if (k == WARD_AUTORUN_NONE && is_link &&
	    ward__autorun_match(s->p, &it->at, it->path, name, true, &child, &reason) ==
		    WARD_AUTORUN_DESCEND) {
		int r = add_hit(res, name, WARD_AUTORUN_DESCEND, NULL, &child);

		if (r >= 0)
			res->hits[res->n_hits - 1].link = true;
		return r;
	}
	if (k == WARD_AUTORUN_NONE)
		return 0;
	if (k == WARD_AUTORUN_PROTECTED && it->start)
		for (size_t i = 0; i < ELEMENTSOF(table); i++)
			if (!strchr(table[i].path, '/') && strcmp(table[i].path, name) == 0)
				bit_set(res->found, i);
	return add_hit(res, name, k, reason, k == WARD_AUTORUN_DESCEND ? &child : NULL);
}

/* The entries a directory's listing in the scan cache holds, as if they had been read. */
static int consider_listing(const struct scan *s, const struct item *it, struct result *res,
			    const struct ward__scan_listing *l)
{
	const char *p = l->names;
	int r = 0;

	res->entries += l->entries;
	for (uint32_t i = 0; r >= 0 && i < l->n; i++) {
		bool is_dir = p[0] == 1, is_link = p[0] == 2;
		size_t len = strlen(p + 1);

		r = consider(s, it, res, p + 1, is_dir, is_link);
		p += len + 2;
	}
	return r;
}

/* Appends an entry to a listing being made; past the cache's bounds the listing is not kept. */
static void listing_add(struct ward__scan_listing *l, char *buf, bool *full, const char *name,
			char flag)
{
	size_t len = strlen(name);

	if (*full || l->n >= WARD_SCAN_CACHE_MAX_NAMES ||
	    l->len + len + 2 > WARD_SCAN_CACHE_MAX_LEN) {
		*full = true;
		return;
	}
	buf[l->len] = flag;
	memcpy(buf + l->len + 1, name, len + 1);
	l->len += (uint32_t)len + 2;
	l->n++;
}

/*
 * Looks into one directory: its listing from the scan cache when the
 * directory is unchanged since (one statx), else read (getdents64 into one
 * buffer: no DIR and its 32 KiB per directory) and given to the cache. Keeps
 * the entries that matter; nothing is changed until the whole level is read
 * (apply_dir).
 */
static int read_dir(const struct scan *s, const struct item *it, char *buf, size_t size, char *lbuf,
		    struct result *res)
{
	const char *start = s->starts[it->from];
	int sfd = s->start_fds[it->from], dfd = AT_FDCWD, rfd;
	const char *where = it->path;
	struct ward__scan_listing l = {.names = lbuf};
	const struct statx *st = NULL;
	_cleanup_close_ int fd = -1;
	bool full = false, local;
	struct statx stx;

	/*
	 * Relative to the start's directory, open for the whole scan: a shorter
	 * walk than the whole path, for every directory (the scan's cost is
	 * per directory). Every component was a directory, not a link, when
	 * its parent was read. A start is read through that descriptor itself.
	 */
	if (sfd >= 0 && !it->abs) {
		dfd = sfd;
		where = it->start ? "."
				  : it->path + (strcmp(start, "/") == 0 ? 1 : strlen(start) + 1);
	}
	if (it->start) {
		st = ward__scan_cache_start_stat(s->cache, it->from);
	} else if (!it->abs && ward__scan_cache_worth(s->cache, it->from)) {
		if (statx(dfd, where, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
			  STATX_TYPE | STATX_INO | STATX_CTIME, &stx) < 0 ||
		    !S_ISDIR(stx.stx_mode))
			return 0;
		st = &stx;
	}
	if (st && ward__scan_cache_get(s->cache, it->from, st, &l)) {
		res->opened = res->cached = true;
		return consider_listing(s, it, res, &l);
	}
	if (it->start && sfd >= 0) {
		rfd = sfd;
	} else {
		/*
		 * A directory of ward's user that refuses it (mode 0300: writable
		 * and searchable, not readable) is opened up: skipped, it would hide
		 * what a command planted in it, and the guard could not watch it
		 * (inotify needs read permission). One that is not ours but that
		 * ward's user can write into cannot be opened up: refused.
		 */
		fd = ward__open_dir_readable(dfd, where);
		if ((fd == -EACCES || fd == -EPERM) &&
		    faccessat(dfd, where, W_OK | X_OK, AT_EACCESS) == 0) {
			if (!s->budget->refused)
				s->budget->refused = strdup(it->path);
			return -EACCES;
		}
		/* Gone, or not ours to read nor write: nothing the command could do to it is left to protect. */
		if (fd < 0)
			return 0;
		rfd = fd;
		/* A record is of the directory opened, with its ctime before the reading. */
		st = s->cache && !it->abs &&
				statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_INO | STATX_CTIME,
				      &stx) == 0
			? &stx
			: NULL;
	}
	res->opened = true;
	local = st && ward__scan_cache_local(s->cache, it->from, st);
	for (;;) {
		long n = syscall(SYS_getdents64, rfd, buf, size);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return 0;
		if (n == 0)
			break;
		for (long off = 0; off < n;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			const char *name = d->d_name;
			bool is_dir = d->d_type == DT_DIR, is_reg = d->d_type == DT_REG,
			     is_link = d->d_type == DT_LNK;
			int r;

			off += d->d_reclen;
			if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
				continue;
			/* Counted here, bounded by the caller between levels. */
			res->entries++;
			l.entries++;
			if (d->d_type == DT_UNKNOWN) {
				struct stat sst;
				bool ok = fstatat(rfd, name, &sst, AT_SYMLINK_NOFOLLOW) == 0;

				is_dir = ok && S_ISDIR(sst.st_mode);
				is_reg = ok && S_ISREG(sst.st_mode);
				is_link = ok && S_ISLNK(sst.st_mode);
			}
			if (may_matter(name, is_reg))
				listing_add(&l, lbuf, &full, name, is_dir ? 1 : is_link ? 2 : 0);
			r = consider(s, it, res, name, is_dir, is_link);
			if (r < 0)
				return r;
		}
		/*
		 * Room left for the longest entry means the directory ended: on
		 * the local filesystems the cache trusts, getdents64 fills the
		 * buffer until the next entry does not fit or none is left, so
		 * the call that would return 0 is saved.
		 */
		if (local && (size_t)n + sizeof(struct linux_dirent64) + 256 + 8 <= size)
			break;
	}
	if (!full && st)
		ward__scan_cache_put(s->cache, it->from, st, &l);
	return 0;
}

/*
 * A symlink where names go on beneath it (~/.config -> dotfiles/config, a
 * stow-style home; W/proj -> d/d/d/p): the directory it leads to is looked
 * into with the point of the link's name, as if it stood there, and, where
 * table names go on, kept in place (sink->followed), when it lies in the
 * writable roots (elsewhere the
 * command cannot write). One leading nowhere where a name of the table goes
 * on is protected as that name: what it names cannot be made. Recorded
 * either way, for the guard to tell the person's links from the command's.
 */
static int follow(struct scan *s, const struct item *it, const struct hit *h, char *path)
{
	const char *reason = continued_reason(&h->child);
	char canon[PATH_MAX];
	bool leads = link_leads(path, canon);
	int r;

	r = record_watch(s->p, path, leads ? canon : NULL, true, &h->child, false);
	if (r >= 0 && !leads && reason)
		r = s->sink->found(s->sink->userdata, path, reason);
	free(path);
	if (r < 0 || !leads || !ward__policy_in_roots(s->p, canon))
		return r;
	/*
	 * Kept in place only where table names go on (a stow-style ~/.config):
	 * pinning where only the depth goes on would make every directory a
	 * link leads to (current -> releases/v2) impossible to remove or
	 * rename; the guard follows such a directory by its watch instead.
	 */
	if (s->sink->followed && reason)
		r = s->sink->followed(s->sink->userdata, canon);
	path = r >= 0 ? strdup(canon) : NULL;
	if (r >= 0 && !path)
		r = -ENOMEM;
	return r < 0 ? r : push(s, path, &h->child, it->level + 1, false, true, it->from);
}

/* What one directory's reading found, in the order of the queue: watched, reported, queued. */
static int apply_dir(struct scan *s, const struct item *it, const struct result *res)
{
	int r;

	if (res->skipped)
		return record_unread(s, it);
	if (!res->opened)
		return 0;
	r = record_watch(s->p, it->path, NULL, false, &it->at, false);
	for (size_t i = 0; r >= 0 && i < res->n_hits; i++) {
		const struct hit *h = &res->hits[i];
		char *path = ward__path_join(it->path, h->name);

		if (!path)
			return -ENOMEM;
		if (h->kind == WARD_AUTORUN_PROTECTED) {
			r = s->sink->found(s->sink->userdata, path, h->reason);
			free(path);
		} else if (h->kind == WARD_AUTORUN_NONE) {
			r = s->sink->repo(s->sink->userdata, it->path);
			free(path);
		} else if (h->link) {
			r = follow(s, it, h, path);
		} else if (is_start(s, path)) {
			/* A nested root or the home directory is looked into as a start of its own. */
			free(path);
		} else {
			r = push(s, path, &h->child, it->level + 1, false, it->abs, it->from);
		}
	}
	if (r < 0 || !it->start || !s->sink->missing)
		return r;
	/* The names a start lacks: reported one by one (`ward policy show`). */
	for (size_t i = 0; i < ELEMENTSOF(table); i++) {
		bool generic = !table[i].home && it->at.depth >= 0;

		if (strchr(table[i].path, '/') || bit_get(res->found, i) ||
		    !(generic || bit_get(it->at.m[0], i)) || lifted(s->p, it->path, table[i].path))
			continue;
		r = s->sink->missing(s->sink->userdata, it->path, table[i].path,
				     classes[table[i].cls].reason);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Reads the n directories of one level. Once the time has run out (*late,
 * kept across levels) a directory whose names alone matter is skipped, to
 * be watched unread; one whose subdirectories matter is still read (a watch
 * cannot stand in for it), bounded by the directories and entries bounds,
 * which do not depend on the machine's load: the time alone never refuses a
 * run.
 */
static int read_level(const struct scan *s, const struct item *items, size_t n, struct result *res,
		      uint64_t deadline_ms, bool *late)
{
	int r = 0;

	for (size_t i = 0; i < n && r >= 0; i++) {
		if (!*late && i % 16 == 15 && ward__now_ms() > deadline_ms)
			*late = true;
		if (*late && items[i].at.depth <= 0 && !items[i].at.paths) {
			res[i].skipped = true;
			continue;
		}
		r = read_dir(s, &items[i], s->buf, SCAN_BUF, s->lbuf, &res[i]);
	}
	return r;
}

bool ward__autorun_watched(const struct ward_policy *p, const char *path)
{
	for (size_t i = 0; i < p->n_watches; i++)
		if (!p->watches[i].link && strcmp(p->watches[i].path, path) == 0)
			return true;
	return false;
}

int ward__autorun_scan(struct ward_policy *p, char *const *starts,
		       const struct ward__autorun_point *points, size_t n,
		       const struct ward__autorun_sink *sink, struct ward__autorun_budget *budget)
{
	struct scan s = {.p = p,
			 .sink = sink,
			 .starts = starts,
			 .n_starts = n,
			 .budget = budget,
			 .unread_level = UINT_MAX};
	size_t ls = 0;
	bool capped = false, late = ward__now_ms() > budget->deadline_ms;
	int r = 0;

	if (n == 0)
		return 0;
	s.entries = budget->entries;
	s.start_fds = malloc(n * sizeof(int));
	s.buf = malloc(SCAN_BUF);
	s.lbuf = malloc(WARD_SCAN_CACHE_MAX_LEN);
	if (!s.start_fds || !s.buf || !s.lbuf) {
		free(s.start_fds);
		free(s.buf);
		free(s.lbuf);
		return -ENOMEM;
	}
	s.cache = ward__scan_cache_begin(n);
	/* Each start's directory stays open: the directories beneath are opened relative to it. */
	for (size_t i = 0; i < n; i++) {
		s.start_fds[i] = open(starts[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (s.cache)
			ward__scan_cache_start(s.cache, i, s.start_fds[i]);
	}
	for (size_t i = 0; r >= 0 && i < n; i++) {
		char *path = strdup(starts[i]);

		r = path ? push(&s, path, &points[i], 0, true, false, i) : -ENOMEM;
	}
	/*
	 * Breadth first, a level at a time: when a bound stops the scan, every
	 * shallower level is complete. The directories of a level are read
	 * first, then what they hold is applied in the queue's order. (Reading
	 * a level with two threads was tried: no faster here, the kernel's
	 * readdir of small directories dominates and the second thread rarely
	 * finds a free core.)
	 */
	while (r >= 0 && ls < s.n && !capped) {
		size_t le = s.n,
		       room = budget->read < WARD_AUTORUN_MAX_DIRS
			? WARD_AUTORUN_MAX_DIRS - budget->read
			: 0;
		_cleanup_free_ struct item *items = NULL;
		struct result *res;

		if (le - ls > room) {
			le = ls + room;
			capped = true;
		}
		if (le == ls)
			break;
		/* A copy: applying pushes, which may move the queue. */
		items = malloc((le - ls) * sizeof(*items));
		res = calloc(le - ls, sizeof(*res));
		if (!items || !res) {
			free(res);
			r = -ENOMEM;
			break;
		}
		memcpy(items, &s.q[ls], (le - ls) * sizeof(*items));
		r = read_level(&s, items, le - ls, res, budget->deadline_ms, &late);
		for (size_t i = 0; i < le - ls; i++) {
			s.entries += res[i].entries;
			p->scan_cached += res[i].cached;
			budget->read += res[i].opened;
		}
		for (size_t i = 0; r >= 0 && i < le - ls; i++)
			r = apply_dir(&s, &items[i], &res[i]);
		for (size_t i = 0; i < le - ls; i++)
			result_release(&res[i]);
		free(res);
		if (s.entries > WARD_AUTORUN_MAX_ENTRIES)
			capped = true;
		ls = le;
	}
	/* What the bounds left in the queue is watched unread, or refused. */
	for (size_t i = ls; r >= 0 && i < s.n; i++)
		r = record_unread(&s, &s.q[i]);
	ward__scan_cache_end(s.cache);
	budget->entries = s.entries;
	if (s.unread_level != UINT_MAX) {
		/* Every level above the shallowest directory left unread was read whole. */
		p->scan_cut = true;
		p->scan_depth = MIN(p->scan_depth, s.unread_level > 0 ? s.unread_level - 1 : 0);
	}
	for (size_t i = 0; i < s.n; i++)
		free(s.q[i].path);
	for (size_t i = 0; i < n; i++)
		if (s.start_fds[i] >= 0)
			close(s.start_fds[i]);
	free(s.start_fds);
	free(s.buf);
	free(s.lbuf);
	free(s.q);
	return r;
}
