/* SPDX-License-Identifier: MIT */
/*
 * Autorun names (src/policy/autorun.c and their resolution): what is
 * protected at a writable root and two levels beneath it, what is not looked
 * into, a home directory's places, the directories of PATH, --unprotect, the
 * scan's caps, the matcher the guard uses for what a command creates, and
 * the scan cache (a changed directory is read again; a forged or damaged
 * file changes nothing; its directory is kept read-only in a root). Works
 * as root and unprivileged: every tree is made under a fresh directory in
 * /var/tmp that main() removes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/keyctl.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/siphash.h"
#include "basic/util.h"
#include "policy/policy.h"
#include "policy/scan-cache.h"
#include "tap.h"

static char base[] = "/var/tmp/ward-autorun-XXXXXX";

/* ------------------------------------------------------------------ helpers */

/* base/<pid>/ws: one workspace per test (each runs in its own child). */
static void test_ws(char *out, size_t size)
{
	snprintf(out, size, "%s/%d", base, (int)getpid());
	ASSERT_EQ(mkdir(out, 0755), 0);
	strncat(out, "/ws", size - strlen(out) - 1);
	ASSERT_EQ(mkdir(out, 0755), 0);
	/* Nothing of the caller's environment decides what the tests see. */
	setenv("PATH", "/usr/bin:/bin", 1);
	setenv("HOME", "/nonexistent-ward-home", 1);
}

static void mkdir_p(const char *dir, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (char *s = path + strlen(dir) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			tap_fail(__FILE__, __LINE__, "mkdir %s: %s", path, strerror(errno));
		*s = '/';
	}
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		tap_fail(__FILE__, __LINE__, "mkdir %s: %s", path, strerror(errno));
}

static void touch(const char *dir, const char *rel)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		tap_fail(__FILE__, __LINE__, "open %s: %s", path, strerror(errno));
	close(fd);
}

static struct ward_policy *unresolved(const char *cwd)
{
	struct ward_policy *p;

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, cwd));
	ASSERT_OK(ward_policy_set_exclude_slash_tmp(p, true));
	ASSERT_OK(ward_policy_set_exclude_tmpdir_env_var(p, true));
	return p;
}

static void resolve_or_fail(struct ward_policy *p)
{
	struct ward_error err = {0};

	if (ward_policy_resolve(p, &err) < 0)
		tap_fail(__FILE__, __LINE__, "resolve: %s", err.message);
}

static struct ward_policy *resolved(const char *cwd)
{
	struct ward_policy *p = unresolved(cwd);

	resolve_or_fail(p);
	return p;
}

/* The entry for dir/rel (any kind but a pin), or NULL. */
static const struct ward__protected *entry(const struct ward_policy *p, const char *dir,
					   const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (size_t i = 0; i < p->n_protected; i++)
		if (p->protected[i].kind != WARD_PROTECT_PIN &&
		    strcmp(p->protected[i].path, path) == 0)
			return &p->protected[i];
	return NULL;
}

static bool pinned(const struct ward_policy *p, const char *dir, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (size_t i = 0; i < p->n_protected; i++)
		if (p->protected[i].kind == WARD_PROTECT_PIN &&
		    strcmp(p->protected[i].path, path) == 0)
			return true;
	return false;
}

static bool watched(const struct ward_policy *p, const char *dir, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s%s%s", dir, rel[0] ? "/" : "", rel);
	return ward__autorun_watched(p, path);
}

static bool noted(const struct ward_policy *p, const char *needle)
{
	for (size_t i = 0; i < p->notes.n; i++)
		if (strstr(p->notes.v[i], needle))
			return true;
	return false;
}

#define ASSERT_ENTRY(p, dir, rel, kind_, reason_)                                         \
	do {                                                                              \
		const struct ward__protected *_e = entry(p, dir, rel);                    \
		if (!_e)                                                                  \
			tap_fail(__FILE__, __LINE__, "%s/%s is not protected", dir, rel); \
		ASSERT_EQ(_e->kind, kind_);                                               \
		ASSERT_STREQ(_e->reason, reason_);                                        \
	} while (0)
#define ASSERT_NO_ENTRY(p, dir, rel)                                                      \
	do {                                                                              \
		if (entry(p, dir, rel))                                                   \
			tap_fail(__FILE__, __LINE__, "%s/%s is protected (%s)", dir, rel, \
				 entry(p, dir, rel)->reason);                             \
	} while (0)

/* ------------------------------------------------------------------ the names, where */

TEST(names_at_the_root_existing_and_missing)
{
	char ws[256];
	struct ward_policy *p;
	const struct ward__protected *e;

	test_ws(ws, sizeof(ws));
	mkdir_p(ws, ".vscode");
	touch(ws, ".bashrc");
	touch(ws, ".gitmodules");
	mkdir_p(ws, ".claude/commands");
	p = resolved(ws);
	ASSERT_ENTRY(p, ws, ".vscode", WARD_PROTECT_READONLY, "autorun: editor tasks");
	ASSERT_TRUE(entry(p, ws, ".vscode")->is_dir);
	ASSERT_ENTRY(p, ws, ".bashrc", WARD_PROTECT_READONLY, "autorun: shell startup");
	ASSERT_ENTRY(p, ws, ".gitmodules", WARD_PROTECT_READONLY, "autorun: git submodules");
	ASSERT_ENTRY(p, ws, ".claude", WARD_PROTECT_READONLY, "autorun: agent config");
	/* Missing ones: guarded on the root itself. */
	e = entry(p, ws, ".mcp.json");
	ASSERT_TRUE(e != NULL);
	ASSERT_EQ(e->kind, WARD_PROTECT_MISSING);
	ASSERT_STREQ(e->guard_dir, ws);
	ASSERT_STREQ(e->guard_name, ".mcp.json");
	ASSERT_STREQ(e->reason, "autorun: agent config");
	ASSERT_ENTRY(p, ws, ".codex", WARD_PROTECT_MISSING, "autorun: agent config");
	ASSERT_ENTRY(p, ws, ".idea", WARD_PROTECT_MISSING, "autorun: editor tasks");
	ASSERT_ENTRY(p, ws, ".zshenv", WARD_PROTECT_MISSING, "autorun: shell startup");
	ASSERT_ENTRY(p, ws, ".gitconfig", WARD_PROTECT_MISSING, "autorun: git config");
	/* A home directory's places are not a workspace's. */
	ASSERT_NO_ENTRY(p, ws, ".ssh");
	ASSERT_NO_ENTRY(p, ws, ".npmrc");
	/* Not a name with a missing first component: .config is watched, never refused. */
	ASSERT_NO_ENTRY(p, ws, ".config");
	ASSERT_NO_ENTRY(p, ws, ".config/fish");
	ASSERT_TRUE(watched(p, ws, ""));
	ASSERT_TRUE(ward__policy_reason_runner("autorun: editor tasks") != NULL);
	ASSERT_CONTAINS(ward__policy_reason_runner("autorun: editor tasks"), "editor");
	ward_policy_free(p);
}

TEST(names_two_levels_down_and_not_three)
{
	char ws[256];
	struct ward_policy *p;

	test_ws(ws, sizeof(ws));
	mkdir_p(ws, "a/b/c/.vscode");
	mkdir_p(ws, "a/b/.claude");
	touch(ws, "a/.mcp.json");
	mkdir_p(ws, "a/b/.config/fish");
	mkdir_p(ws, "a/b/.config/other");
	touch(ws, "a/b/.config/git");
	p = resolved(ws);
	ASSERT_ENTRY(p, ws, "a/.mcp.json", WARD_PROTECT_READONLY, "autorun: agent config");
	ASSERT_ENTRY(p, ws, "a/b/.claude", WARD_PROTECT_READONLY, "autorun: agent config");
	ASSERT_ENTRY(p, ws, "a/b/.config/fish", WARD_PROTECT_READONLY, "autorun: shell startup");
	ASSERT_ENTRY(p, ws, "a/b/.config/git", WARD_PROTECT_READONLY, "autorun: git config");
	ASSERT_NO_ENTRY(p, ws, "a/b/.config/other");
	ASSERT_NO_ENTRY(p, ws, "a/b/c/.vscode");
	/* What holds them stays where it is. */
	ASSERT_TRUE(pinned(p, ws, "a"));
	ASSERT_TRUE(pinned(p, ws, "a/b"));
	/* Watched for names appearing: the root and two levels; deeper, no. */
	ASSERT_TRUE(watched(p, ws, ""));
	ASSERT_TRUE(watched(p, ws, "a"));
	ASSERT_TRUE(watched(p, ws, "a/b"));
	ASSERT_TRUE(watched(p, ws, "a/b/.config"));
	ASSERT_FALSE(watched(p, ws, "a/b/c"));
	/* Missing names beneath the root are the guard's (watches), not entries. */
	ASSERT_NO_ENTRY(p, ws, "a/.vscode");
	ASSERT_EQ(p->scan_depth, 2);
	ASSERT_FALSE(p->scan_cut);
	ward_policy_free(p);
}

TEST(git_and_node_modules_are_not_looked_into)
{
	char ws[256];
	struct ward_policy *p;

	test_ws(ws, sizeof(ws));
	mkdir_p(ws, "node_modules/pkg/.vscode");
	mkdir_p(ws, ".git/.vscode");
	mkdir_p(ws, "src/node_modules/.idea");
	p = resolved(ws);
	ASSERT_NO_ENTRY(p, ws, "node_modules/pkg/.vscode");
	ASSERT_NO_ENTRY(p, ws, ".git/.vscode");
	ASSERT_NO_ENTRY(p, ws, "src/node_modules/.idea");
	ASSERT_FALSE(watched(p, ws, "node_modules"));
	ASSERT_FALSE(watched(p, ws, ".git"));
	ASSERT_TRUE(watched(p, ws, "src"));
	ward_policy_free(p);
}

TEST(a_symlinked_name_protects_its_target_and_guards_the_link)
{
	char ws[256], link[300];
	struct ward_policy *p;

	test_ws(ws, sizeof(ws));
	mkdir_p(ws, "real-vscode");
	snprintf(link, sizeof(link), "%s/.vscode", ws);
	ASSERT_EQ(symlink("real-vscode", link), 0);
	p = resolved(ws);
	ASSERT_ENTRY(p, ws, "real-vscode", WARD_PROTECT_READONLY, "autorun: editor tasks");
	ASSERT_ENTRY(p, ws, ".vscode", WARD_PROTECT_MISSING, "autorun: editor tasks");
	ward_policy_free(p);

	/* Dangling: what it names is guarded (made, it would be .mcp.json). A loop ends. */
	snprintf(link, sizeof(link), "%s/.mcp.json", ws);
	ASSERT_EQ(symlink("cfg/mcp.json", link), 0);
	snprintf(link, sizeof(link), "%s/.claude", ws);
	ASSERT_EQ(symlink(".claude", link), 0);
	p = resolved(ws);
	ASSERT_ENTRY(p, ws, ".mcp.json", WARD_PROTECT_MISSING, "autorun: agent config");
	ASSERT_ENTRY(p, ws, "cfg/mcp.json", WARD_PROTECT_MISSING, "autorun: agent config");
	ASSERT_ENTRY(p, ws, ".claude", WARD_PROTECT_MISSING, "autorun: agent config");
	ward_policy_free(p);
}

/* Repositories of their own one and two levels down are protected like the root's. */
TEST(nested_repositories_within_the_depth_keep_hooks_and_config)
{
	char ws[256];
	struct ward_policy *p;

	test_ws(ws, sizeof(ws));
	mkdir_p(ws, ".git/hooks");
	mkdir_p(ws, "tools/.git/hooks");
	touch(ws, "tools/.git/config");
	mkdir_p(ws, "a/b/.git/hooks");
	touch(ws, "a/b/.git/config");
	mkdir_p(ws, "vendor/lib/dep/.git/hooks");
	mkdir_p(ws, "node_modules/x/.git/hooks");
	p = resolved(ws);
	ASSERT_ENTRY(p, ws, "tools/.git/hooks", WARD_PROTECT_READONLY, "git hooks");
	ASSERT_ENTRY(p, ws, "tools/.git/config", WARD_PROTECT_READONLY, "git config");
	ASSERT_TRUE(pinned(p, ws, "tools/.git"));
	ASSERT_ENTRY(p, ws, "a/b/.git/hooks", WARD_PROTECT_READONLY, "git hooks");
	ASSERT_ENTRY(p, ws, "a/b/.git/config", WARD_PROTECT_READONLY, "git config");
	/* Deeper than the scan, and in package trees: not (docs/policy.md). */
	ASSERT_NO_ENTRY(p, ws, "vendor/lib/dep/.git/hooks");
	ASSERT_NO_ENTRY(p, ws, "node_modules/x/.git/hooks");
	ward_policy_free(p);
}

/* ------------------------------------------------------------------ the home directory */

TEST(a_home_inside_a_root_protects_its_places)
{
	char ws[256], home[300];
	struct ward_policy *p;

	test_ws(ws, sizeof(ws));
	snprintf(home, sizeof(home), "%s/h", ws);
	mkdir_p(ws, "h/.ssh");
	mkdir_p(ws, "h/.config/systemd/user");
	mkdir_p(ws, "h/.config/autostart");
	mkdir_p(ws, "h/.cargo");
	touch(ws, "h/.cargo/config.toml");
	touch(ws, "h/.cargo/credentials.toml");
	touch(ws, "h/.profile");
	mkdir_p(ws, "h/.local/share/applications");
	mkdir_p(ws, "h/.local/share/other");
	mkdir_p(ws, "h/.local/lib/python3.11");
	mkdir_p(ws, "other/.ssh");
	setenv("HOME", home, 1);
	p = resolved(ws);
	ASSERT_STREQ(p->home, home);
	ASSERT_ENTRY(p, home, ".ssh", WARD_PROTECT_READONLY, "autorun: ssh");
	ASSERT_ENTRY(p, home, ".config/systemd/user", WARD_PROTECT_READONLY,
		     "autorun: user services");
	ASSERT_ENTRY(p, home, ".config/autostart", WARD_PROTECT_READONLY, "autorun: session start");
	ASSERT_ENTRY(p, home, ".cargo/config.toml", WARD_PROTECT_READONLY, "autorun: cargo config");
	ASSERT_NO_ENTRY(p, home, ".cargo/credentials.toml");
	ASSERT_ENTRY(p, home, ".profile", WARD_PROTECT_READONLY, "autorun: shell startup");
	ASSERT_ENTRY(p, home, ".local/share/applications", WARD_PROTECT_READONLY,
		     "autorun: session start");
	ASSERT_NO_ENTRY(p, home, ".local/share/other");
	ASSERT_ENTRY(p, home, ".local/lib/python3.11", WARD_PROTECT_READONLY,
		     "autorun: program startup");
	ASSERT_ENTRY(p, home, ".gnupg", WARD_PROTECT_MISSING, "autorun: gpg");
	ASSERT_ENTRY(p, home, ".npmrc", WARD_PROTECT_MISSING, "autorun: tool credentials");
	/* Only the home's own: another directory's .ssh is nobody's. */
	ASSERT_NO_ENTRY(p, ws, "other/.ssh");
	/* The home stays where it is. */
	ASSERT_TRUE(pinned(p, ws, "h"));
	ward_policy_free(p);
}

TEST(a_home_deep_in_a_root_and_a_root_that_is_the_home)
{
	char ws[256], home[300];
	struct ward_policy *p;

	test_ws(ws, sizeof(ws));
	snprintf(home, sizeof(home), "%s/a/b/c/d", ws);
	mkdir_p(ws, "a/b/c/d/.aws");
	mkdir_p(ws, "a/b/c/d/x/y/.vscode");
	setenv("HOME", home, 1);
	p = resolved(ws);
	ASSERT_ENTRY(p, home, ".aws", WARD_PROTECT_READONLY, "autorun: tool credentials");
	/* Two levels beneath the home too, though five beneath the root. */
	ASSERT_ENTRY(p, home, "x/y/.vscode", WARD_PROTECT_READONLY, "autorun: editor tasks");
	/*
	 * A .git there or above (up to the root) would be the repository of
	 * every directory of the home: guarded.
	 */
	ASSERT_ENTRY(p, home, ".git", WARD_PROTECT_MISSING, "autorun: git config");
	ASSERT_ENTRY(p, ws, "a/b/.git", WARD_PROTECT_MISSING, "autorun: git config");
	ASSERT_ENTRY(p, ws, ".git", WARD_PROTECT_MISSING, "autorun: git config");
	ASSERT_TRUE(pinned(p, ws, "a"));
	ASSERT_TRUE(pinned(p, ws, "a/b/c/d"));
	ward_policy_free(p);

	/* The workspace is the home. */
	setenv("HOME", ws, 1);
	mkdir_p(ws, ".kube");
	p = resolved(ws);
	ASSERT_ENTRY(p, ws, ".kube", WARD_PROTECT_READONLY, "autorun: tool credentials");
	ASSERT_ENTRY(p, ws, ".xinitrc", WARD_PROTECT_MISSING, "autorun: session start");
	ASSERT_ENTRY(p, ws, ".bashrc", WARD_PROTECT_MISSING, "autorun: shell startup");
	ASSERT_ENTRY(p, ws, ".git", WARD_PROTECT_MISSING, "autorun: git config");
	ward_policy_free(p);
}

/*
 * More of a home's places (the review's finding 9): each was left writable
 * and each runs code when its tool starts. Existing ones are read-only,
 * missing ones guarded, and the ways to them looked into.
 */
TEST(a_home_protects_the_startup_places_of_its_tools)
{
	static const struct {
		const char *rel, *reason;
		bool file;
	} existing[] = {
		{".bash_aliases", "autorun: shell startup", true},
		{".bashrc.d", "autorun: shell startup"},
		{".oh-my-zsh", "autorun: shell startup"},
		{".config/starship.toml", "autorun: shell startup", true},
		{".config/direnv", "autorun: shell startup"},
		{".vim", "autorun: program startup"},
		{".config/vim", "autorun: program startup"},
		{".config/tmux", "autorun: program startup"},
		{".gdbinit", "autorun: program startup", true},
		{".config/emacs", "autorun: program startup"},
		{".local/share/nvim", "autorun: program startup"},
		{".ipython", "autorun: program startup"},
		{".local/share/systemd", "autorun: user services"},
		{".config/systemd/user.control", "autorun: user services"},
		{".xsessionrc", "autorun: session start", true},
		{".config/Code/User", "autorun: editor tasks"},
		{".gradle/init.d", "autorun: build tool config"},
		{".yarnrc.yml", "autorun: build tool config", true},
		{".config/pip", "autorun: build tool config"},
		{".config/husky", "autorun: hook runner config"},
	};
	char ws[256];
	struct ward_policy *p;

	test_ws(ws, sizeof(ws));
	mkdir_p(ws, ".config");
	for (size_t i = 0; i < sizeof(existing) / sizeof(existing[0]); i++) {
		if (existing[i].file)
			touch(ws, existing[i].rel);
		else
			mkdir_p(ws, existing[i].rel);
	}
	mkdir_p(ws, ".gradle/caches");
	mkdir_p(ws, ".config/Code/CachedData");
	setenv("HOME", ws, 1);
	p = resolved(ws);
	for (size_t i = 0; i < sizeof(existing) / sizeof(existing[0]); i++)
		ASSERT_ENTRY(p, ws, existing[i].rel, WARD_PROTECT_READONLY, existing[i].reason);
	/* Their neighbours are the tools' own to write. */
	ASSERT_NO_ENTRY(p, ws, ".gradle/caches");
	ASSERT_NO_ENTRY(p, ws, ".config/Code/CachedData");
	/* Missing: guarded (the single names), looked for (the deeper ones, see the matcher). */
	ASSERT_ENTRY(p, ws, ".xsession", WARD_PROTECT_MISSING, "autorun: session start");
	ASSERT_ENTRY(p, ws, ".pip", WARD_PROTECT_MISSING, "autorun: build tool config");
	ward_policy_free(p);
}

/* A workspace inside the home's places (ward run -C ~/.config): those in it are the home's. */
TEST(a_root_inside_the_home_keeps_the_homes_places)
{
	char ws[256], home[300], root[400];
	struct ward_error err = {0};
	struct ward_policy *p;

	test_ws(ws, sizeof(ws));
	snprintf(home, sizeof(home), "%s/h", ws);
	mkdir_p(ws, "h/.config/systemd/user");
	mkdir_p(ws, "h/.config/fish");
	mkdir_p(ws, "h/.config/other");
	mkdir_p(ws, "h/.ssh");
	mkdir_p(ws, "h/.local/share/applications");
	setenv("HOME", home, 1);
	snprintf(root, sizeof(root), "%s/.config", home);
	p = resolved(root);
	ASSERT_ENTRY(p, root, "systemd/user", WARD_PROTECT_READONLY, "autorun: user services");
	ASSERT_ENTRY(p, root, "fish", WARD_PROTECT_READONLY, "autorun: shell startup");
	ASSERT_NO_ENTRY(p, root, "other");
	/* Missing ones: looked for by the guard where they would appear (the root is watched). */
	ASSERT_TRUE(ward__autorun_watched(p, root));
	ASSERT_NO_ENTRY(p, root, "autostart");
	ward_policy_free(p);

	/* Two levels in: the way to .local/share/applications. */
	snprintf(root, sizeof(root), "%s/.local", home);
	p = resolved(root);
	ASSERT_ENTRY(p, root, "share/applications", WARD_PROTECT_READONLY,
		     "autorun: session start");
	ward_policy_free(p);

	/* A root that is a place itself cannot be writable: refused, unless lifted. */
	snprintf(root, sizeof(root), "%s/.ssh", home);
	p = unresolved(root);
	ASSERT_TRUE(ward_policy_resolve(p, &err) < 0);
	ASSERT_TRUE(strstr(err.message, "protected place of the home") != NULL);
	ASSERT_TRUE(strstr(err.message, "autorun: ssh") != NULL);
	ward_policy_free(p);
	p = unresolved(root);
	ASSERT_OK(ward_policy_add_unprotect(p, root));
	resolve_or_fail(p);
	ward_policy_free(p);
}

/* ------------------------------------------------------------------ PATH */

TEST(path_directories_inside_a_root)
{
	char ws[256], path[2048];
	struct ward_policy *p;
	bool found = false;

	test_ws(ws, sizeof(ws));
	mkdir_p(ws, "bin");
	mkdir_p(ws, "a/b/bin");
	mkdir_p(ws, "node_modules/.bin");
	mkdir_p(ws, "venv/bin");
	touch(ws, "venv/pyvenv.cfg");
	touch(ws, "venv/bin/activate");
	/* pyvenv.cfg is any command's to write: without activate in the bin, no virtualenv. */
	mkdir_p(ws, "fake/bin");
	touch(ws, "fake/pyvenv.cfg");
	mkdir_p(ws, "tools");
	snprintf(
		path, sizeof(path),
		"%s/bin:%s/a/b/bin:%s/missing/bin:tools:.:%s/node_modules/.bin:%s/venv/bin:%s/fake/bin:/usr/bin",
		ws, ws, ws, ws, ws, ws);
	setenv("PATH", path, 1);
	p = resolved(ws);
	ASSERT_ENTRY(p, ws, "bin", WARD_PROTECT_READONLY, "autorun: on PATH");
	ASSERT_ENTRY(p, ws, "a/b/bin", WARD_PROTECT_READONLY, "autorun: on PATH");
	ASSERT_ENTRY(p, ws, "fake/bin", WARD_PROTECT_READONLY, "autorun: on PATH");
	/* A relative entry, from the working directory. */
	ASSERT_ENTRY(p, ws, "tools", WARD_PROTECT_READONLY, "autorun: on PATH");
	/* Missing: followed as it is created, not refused at its first directory. */
	ASSERT_NO_ENTRY(p, ws, "missing");
	for (size_t i = 0; i < p->path_missing.n; i++)
		if (strstr(p->path_missing.v[i], "/missing/bin"))
			found = true;
	ASSERT_TRUE(found);
	/* What installs write, and the workspace itself, are not protected but said. */
	ASSERT_NO_ENTRY(p, ws, "node_modules/.bin");
	ASSERT_NO_ENTRY(p, ws, "venv/bin");
	ASSERT_TRUE(noted(p, "filled by a package manager"));
	ASSERT_TRUE(noted(p, "is a writable root"));
	ward_policy_free(p);
}

TEST(the_matcher_follows_a_missing_path_directory)
{
	char ws[256], path[512], missing[512];
	struct ward__autorun_point root, child;
	struct ward_policy *p;
	const char *reason = NULL;

	test_ws(ws, sizeof(ws));
	snprintf(path, sizeof(path), "%s/x/bin:/usr/bin", ws);
	setenv("PATH", path, 1);
	p = resolved(ws);
	ASSERT_EQ(p->path_missing.n, 1);
	snprintf(missing, sizeof(missing), "%s/x", ws);
	root = p->watches[0].at;
	ASSERT_STREQ(p->watches[0].path, ws);
	ASSERT_TRUE(root.paths);
	ASSERT_EQ(ward__autorun_match(p, &root, ws, "x", true, &child, &reason),
		  WARD_AUTORUN_DESCEND);
	ASSERT_TRUE(child.paths);
	ASSERT_EQ(ward__autorun_match(p, &child, missing, "bin", true, &child, &reason),
		  WARD_AUTORUN_PROTECTED);
	ASSERT_STREQ(reason, "autorun: on PATH");
	ward_policy_free(p);
}

/* ------------------------------------------------------------------ --unprotect */

TEST(unprotect_lifts_defaults_at_and_beneath_a_path)
{
	char ws[256], path[512];
	struct ward_policy *p;

	test_ws(ws, sizeof(ws));
	mkdir_p(ws, ".vscode");
	mkdir_p(ws, ".idea");
	mkdir_p(ws, "sub/.claude");
	mkdir_p(ws, "sub/x/.vscode");
	mkdir_p(ws, "bin");
	snprintf(path, sizeof(path), "%s/bin:/usr/bin", ws);
	setenv("PATH", path, 1);
	p = unresolved(ws);
	snprintf(path, sizeof(path), "%s/.vscode", ws);
	ASSERT_OK(ward_policy_add_unprotect(p, path));
	snprintf(path, sizeof(path), "%s/sub", ws);
	ASSERT_OK(ward_policy_add_unprotect(p, path));
	snprintf(path, sizeof(path), "%s/.mcp.json", ws);
	ASSERT_OK(ward_policy_add_unprotect(p, path));
	snprintf(path, sizeof(path), "%s/bin", ws);
	ASSERT_OK(ward_policy_add_unprotect(p, path));
	/* The caller's own protection stays: --protect wins over --unprotect. */
	snprintf(path, sizeof(path), "%s/.idea", ws);
	ASSERT_OK(ward_policy_add_unprotect(p, path));
	ASSERT_OK(ward_policy_add_protect(p, path));
	resolve_or_fail(p);
	ASSERT_NO_ENTRY(p, ws, ".vscode");
	ASSERT_NO_ENTRY(p, ws, ".mcp.json");
	ASSERT_NO_ENTRY(p, ws, "sub/.claude");
	ASSERT_NO_ENTRY(p, ws, "sub/x/.vscode");
	ASSERT_NO_ENTRY(p, ws, "bin");
	ASSERT_FALSE(watched(p, ws, "sub"));
	ASSERT_ENTRY(p, ws, ".idea", WARD_PROTECT_READONLY, "--protect");
	ASSERT_ENTRY(p, ws, ".codex", WARD_PROTECT_MISSING, "autorun: agent config");
	ASSERT_EQ(p->unprotected.n, 5);
	ASSERT_TRUE(noted(p, "unprotected"));
	ward_policy_free(p);
}

TEST(unprotect_lifts_git_protections_and_goes_into_copies_and_json)
{
	char ws[256], path[512], json[1024];
	struct ward_policy *p, *q;
	struct ward_error err = {0};

	test_ws(ws, sizeof(ws));
	mkdir_p(ws, ".git/hooks");
	touch(ws, ".git/config");
	touch(ws, ".git/HEAD");
	p = unresolved(ws);
	snprintf(json, sizeof(json), "{\"unprotect\": [\"%s/.git/hooks\"]}", ws);
	ASSERT_OK(ward_policy_load_json(p, json, strlen(json), "p.json", &err));
	ASSERT_OK(ward_policy_copy(p, &q));
	resolve_or_fail(q);
	ASSERT_NO_ENTRY(q, ws, ".git/hooks");
	ASSERT_ENTRY(q, ws, ".git/config", WARD_PROTECT_READONLY, "git config");
	ward_policy_free(q);
	/* Relative paths are refused in JSON, as for every list. */
	snprintf(path, sizeof(path), "{\"unprotect\": [\"rel\"]}");
	ASSERT_TRUE(ward_policy_load_json(p, path, strlen(path), "p.json", &err) < 0);
	ASSERT_CONTAINS(err.message, "\"unprotect\"[0]");
	ward_policy_free(p);
}

/* ------------------------------------------------------------------ temporary roots, caps */

TEST(temporary_roots_get_the_names_at_their_top_only)
{
	char ws[256], tmp[512];
	struct ward_policy *p;
	struct ward_error err = {0};

	test_ws(ws, sizeof(ws));
	snprintf(tmp, sizeof(tmp), "%s/../tmp", ws);
	ASSERT_EQ(mkdir(tmp, 0700), 0);
	mkdir_p(tmp, "a/.vscode");
	setenv("TMPDIR", tmp, 1);
	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, ws));
	ASSERT_OK(ward_policy_set_exclude_slash_tmp(p, true));
	ASSERT_OK(ward_policy_resolve(p, &err));
	ASSERT_TRUE(p->roots.n == 2);
	snprintf(tmp, sizeof(tmp), "%s", p->roots.v[0]);
	if (strcmp(tmp, ws) == 0)
		snprintf(tmp, sizeof(tmp), "%s", p->roots.v[1]);
	ASSERT_ENTRY(p, tmp, ".mcp.json", WARD_PROTECT_MISSING, "autorun: agent config");
	ASSERT_NO_ENTRY(p, tmp, "a/.vscode");
	ASSERT_FALSE(watched(p, tmp, "a"));
	ward_policy_free(p);
}

TEST_TIMEOUT(the_scan_stops_at_its_cap_and_says_so, 120)
{
	char ws[256], name[64];
	struct ward_policy *p;
	struct ward_error err = {0};
	size_t unread = 0;

	test_ws(ws, sizeof(ws));
	/* More directories two levels down than the scan reads: the rest are watched unread. */
	for (int i = 0; i < WARD_AUTORUN_MAX_DIRS + 8; i++) {
		snprintf(name, sizeof(name), "wide/d%05d", i);
		mkdir_p(ws, name);
	}
	mkdir_p(ws, ".vscode");
	p = resolved(ws);
	ASSERT_TRUE(p->scan_cut);
	/* Levels 0 and 1 were read whole (the note said "0 levels" here once). */
	ASSERT_EQ(p->scan_depth, 1);
	for (size_t i = 0; i < p->n_watches; i++)
		unread += p->watches[i].unread;
	ASSERT_GE(unread, 8);
	ASSERT_EQ(unread, p->scan_unread);
	ASSERT_EQ(p->n_watches, WARD_AUTORUN_MAX_DIRS + 8 + 2);
	ASSERT_TRUE(noted(p, "autorun scan stopped"));
	/* The root's own names are complete. */
	ASSERT_ENTRY(p, ws, ".vscode", WARD_PROTECT_READONLY, "autorun: editor tasks");
	ASSERT_ENTRY(p, ws, ".mcp.json", WARD_PROTECT_MISSING, "autorun: agent config");
	ward_policy_free(p);

	/*
	 * One level up, the directories left unread have subdirectories that
	 * matter, which a watch does not cover: the policy is refused.
	 */
	for (int i = 0; i < WARD_AUTORUN_MAX_DIRS + 8; i++) {
		snprintf(name, sizeof(name), "d%05d", i);
		mkdir_p(ws, name);
	}
	p = unresolved(ws);
	ASSERT_EQ(ward_policy_resolve(p, &err), -ERANGE);
	ASSERT_TRUE(strstr(err.message, "autorun scan reached its bounds") != NULL);
	ward_policy_free(p);
}

TEST_TIMEOUT(more_unread_directories_than_may_be_watched_are_refused, 120)
{
	char ws[256], name[64], want[320];
	struct ward_policy *p;
	struct ward_error err = {0};

	test_ws(ws, sizeof(ws));
	for (int i = 0; i < WARD_AUTORUN_MAX_DIRS + WARD_AUTORUN_MAX_UNREAD + 8; i++) {
		snprintf(name, sizeof(name), "data/d%05d", i);
		mkdir_p(ws, name);
	}
	p = unresolved(ws);
	ASSERT_EQ(ward_policy_resolve(p, &err), -ERANGE);
	ASSERT_TRUE(strstr(err.message, "would have to be watched unread") != NULL);
	/* The hint names the directory that holds them. */
	snprintf(want, sizeof(want), "--unprotect '%s/data'", ws);
	ASSERT_TRUE(strstr(err.hint, want) != NULL);
	ward_policy_free(p);
}

/* ------------------------------------------------------------------ the matcher */

TEST(the_matcher_says_what_a_new_entry_is)
{
	struct ward__autorun_point root = ward__autorun_root_point(2), home, child, c2;
	struct ward_policy *p;
	const char *reason = NULL;

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_EQ(ward__autorun_match(p, &root, "/w", ".vscode", true, &child, &reason),
		  WARD_AUTORUN_PROTECTED);
	ASSERT_STREQ(reason, "autorun: editor tasks");
	/* As a file too: a name is a name. */
	ASSERT_EQ(ward__autorun_match(p, &root, "/w", ".mcp.json", false, &child, &reason),
		  WARD_AUTORUN_PROTECTED);
	ASSERT_EQ(ward__autorun_match(p, &root, "/w", "main.c", false, &child, &reason),
		  WARD_AUTORUN_NONE);
	/* Not a home: .ssh is a directory like any other. */
	ASSERT_EQ(ward__autorun_match(p, &root, "/w", ".ssh", true, &child, &reason),
		  WARD_AUTORUN_DESCEND);
	/* A new directory: looked into one level less. */
	ASSERT_EQ(ward__autorun_match(p, &root, "/w", "src", true, &child, &reason),
		  WARD_AUTORUN_DESCEND);
	ASSERT_EQ(child.depth, 1);
	ASSERT_EQ(ward__autorun_match(p, &child, "/w/src", "lib", true, &c2, &reason),
		  WARD_AUTORUN_DESCEND);
	ASSERT_EQ(c2.depth, 0);
	ASSERT_EQ(ward__autorun_match(p, &c2, "/w/src/lib", ".idea", true, &child, &reason),
		  WARD_AUTORUN_PROTECTED);
	ASSERT_EQ(ward__autorun_match(p, &c2, "/w/src/lib", "deeper", true, &child, &reason),
		  WARD_AUTORUN_NONE);
	/* .config is a way to .config/fish and .config/git, not a name of its own. */
	ASSERT_EQ(ward__autorun_match(p, &c2, "/w/src/lib", ".config", false, &child, &reason),
		  WARD_AUTORUN_NONE);
	ASSERT_EQ(ward__autorun_match(p, &c2, "/w/src/lib", ".config", true, &child, &reason),
		  WARD_AUTORUN_DESCEND);
	ASSERT_EQ(ward__autorun_match(p, &child, "/w/src/lib/.config", "fish", true, &c2, &reason),
		  WARD_AUTORUN_PROTECTED);
	ASSERT_EQ(
		ward__autorun_match(p, &child, "/w/src/lib/.config", "systemd", true, &c2, &reason),
		WARD_AUTORUN_NONE);
	ASSERT_EQ(ward__autorun_match(p, &root, "/w", "node_modules", true, &child, &reason),
		  WARD_AUTORUN_NONE);
	ASSERT_EQ(ward__autorun_match(p, &root, "/w", ".git", true, &child, &reason),
		  WARD_AUTORUN_NONE);

	/* A home: its own places, to three components, and a glob. */
	home = ward__autorun_home_point(2);
	ASSERT_EQ(ward__autorun_match(p, &home, "/h", ".config", true, &child, &reason),
		  WARD_AUTORUN_DESCEND);
	ASSERT_EQ(ward__autorun_match(p, &child, "/h/.config", "systemd", true, &c2, &reason),
		  WARD_AUTORUN_DESCEND);
	ASSERT_EQ(ward__autorun_match(p, &c2, "/h/.config/systemd", "user", true, &child, &reason),
		  WARD_AUTORUN_PROTECTED);
	ASSERT_STREQ(reason, "autorun: user services");
	ASSERT_EQ(ward__autorun_match(p, &home, "/h", ".cargo", true, &child, &reason),
		  WARD_AUTORUN_DESCEND);
	ASSERT_EQ(ward__autorun_match(p, &child, "/h/.cargo", "config", false, &c2, &reason),
		  WARD_AUTORUN_PROTECTED);
	ASSERT_EQ(ward__autorun_match(p, &child, "/h/.cargo", "config.toml", false, &c2, &reason),
		  WARD_AUTORUN_PROTECTED);
	ASSERT_EQ(ward__autorun_match(p, &child, "/h/.cargo", "registry", true, &c2, &reason),
		  WARD_AUTORUN_DESCEND);
	ASSERT_EQ(ward__autorun_match(p, &home, "/h", ".ssh", true, &child, &reason),
		  WARD_AUTORUN_PROTECTED);
	ward_policy_free(p);
}

TEST(the_matcher_honours_unprotect)
{
	struct ward__autorun_point root = ward__autorun_root_point(2), child;
	struct ward_policy *p;
	const char *reason = NULL;

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward__strv_push(&p->unprotected, "/w/.vscode"));
	ASSERT_OK(ward__strv_push(&p->unprotected, "/w/gen"));
	ASSERT_EQ(ward__autorun_match(p, &root, "/w", ".vscode", true, &child, &reason),
		  WARD_AUTORUN_NONE);
	ASSERT_EQ(ward__autorun_match(p, &root, "/w", ".vscodex", true, &child, &reason),
		  WARD_AUTORUN_DESCEND);
	ASSERT_EQ(ward__autorun_match(p, &root, "/w", "gen", true, &child, &reason),
		  WARD_AUTORUN_NONE);
	ASSERT_EQ(ward__autorun_match(p, &root, "/w/gen/x", ".idea", true, &child, &reason),
		  WARD_AUTORUN_NONE);
	ASSERT_EQ(ward__autorun_match(p, &root, "/w/generated", ".idea", true, &child, &reason),
		  WARD_AUTORUN_PROTECTED);
	ward_policy_free(p);
}

TEST(show_lists_reasons_what_runs_them_and_the_scan)
{
	char ws[256];
	struct ward_policy *p;
	char *json = NULL;

	test_ws(ws, sizeof(ws));
	mkdir_p(ws, "a/.vscode");
	p = resolved(ws);
	ASSERT_OK(ward_policy_describe_json(p, &json));
	ASSERT_CONTAINS(json, "\"reason\": \"autorun: editor tasks\"");
	ASSERT_CONTAINS(json, "\"runs\": \"an editor opening this folder");
	ASSERT_CONTAINS(json, "\"autorun\": {");
	ASSERT_CONTAINS(json, "\"watched\": [");
	ASSERT_CONTAINS(json, "\"unprotected\": []");
	free(json);
	ward_policy_free(p);
}

/* ------------------------------------------------------------------ the scan cache */

TEST(siphash_gives_the_reference_values)
{
	uint8_t key[16], msg[15];

	for (unsigned i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (unsigned i = 0; i < 15; i++)
		msg[i] = (uint8_t)i;
	/* The values of the algorithm's paper and reference implementation. */
	ASSERT_EQ(ward__siphash24(key, msg, 0), UINT64_C(0x726fdb47dd0e0e31));
	ASSERT_EQ(ward__siphash24(key, msg, 8), UINT64_C(0x93f5f5799a932462));
	ASSERT_EQ(ward__siphash24(key, msg, 15), UINT64_C(0xa129ca6149be45e5));
}

/*
 * A tree of nine directories within two levels (a file of its own in the
 * cache), and the cache's directory beside the workspace. The cache trusts a
 * directory only once its ctime is in the past (a whole second on a
 * filesystem of whole seconds): wait that long.
 */
static void cache_tree(char *ws, size_t size, char *cache, size_t csize)
{
	struct statfs sf;
	struct stat st;

	test_ws(ws, size);
	/* The cache believes only filesystems whose ctime it can trust (scan-cache.c). */
	ASSERT_OK(statfs(ws, &sf));
	if (sf.f_type != EXT4_SUPER_MAGIC && sf.f_type != XFS_SUPER_MAGIC &&
	    sf.f_type != BTRFS_SUPER_MAGIC && sf.f_type != TMPFS_MAGIC)
		SKIP_ENV(
			"the test directory's filesystem (0x%lx: a container's overlay?) is not one "
			"the scan cache trusts",
			(unsigned long)sf.f_type);
	snprintf(cache, csize, "%.*s/cache", (int)(strlen(ws) - 3), ws);
	for (const char *d = "abcd"; *d; d++) {
		char rel[8] = {*d, '/', 'x', '\0'};

		mkdir_p(ws, rel);
		touch(ws, (char[]){*d, '/', 'f', '\0'});
	}
	ASSERT_OK(ward__scan_cache_set_dir(cache));
	ASSERT_OK(stat(ws, &st));
	usleep(st.st_ctim.tv_nsec ? 50000 : 1100000);
}

static unsigned scan_cached(const char *ws)
{
	struct ward_policy *p = resolved(ws);
	unsigned n = p->scan_cached;

	ward_policy_free(p);
	return n;
}

/* The cache's one file (a start of its own), whole. */
static char *cache_file(const char *cache, size_t *ret_len)
{
	char path[PATH_MAX];
	char *data = NULL;
	DIR *d = opendir(cache);
	struct dirent *de;

	ASSERT_TRUE(d != NULL);
	path[0] = '\0';
	while ((de = readdir(d)))
		if (strncmp(de->d_name, "scan-", 5) == 0) {
			ASSERT_EQ(path[0], '\0');
			snprintf(path, sizeof(path), "%s/%s", cache, de->d_name);
		}
	closedir(d);
	ASSERT_TRUE(path[0] != '\0');
	ASSERT_OK(ward__read_file(path, 1 << 20, &data, ret_len));
	return data;
}

static void cache_file_write(const char *cache, const char *data, size_t len)
{
	char path[PATH_MAX];
	DIR *d = opendir(cache);
	struct dirent *de;
	int fd;

	ASSERT_TRUE(d != NULL);
	while ((de = readdir(d)))
		if (strncmp(de->d_name, "scan-", 5) == 0)
			snprintf(path, sizeof(path), "%s/%s", cache, de->d_name);
	closedir(d);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	ASSERT_OK(ward__write_all(fd, data, len));
	close(fd);
}

/*
 * What a command that can write the file would do (the Landlock fallback,
 * where nothing inside a writable root is read-only): the record of the
 * directory at rel made to carry its ctime of now, with the listing of
 * before. With key, the file's code made right too (which only what can
 * read ward's keyring can do).
 */
static void forge(const char *cache, const char *ws, const char *rel, const uint8_t *key)
{
	char path[PATH_MAX];
	size_t len, off = 40;
	char *data = cache_file(cache, &len);
	struct stat st;
	uint64_t mac = 0;
	bool found = false;

	snprintf(path, sizeof(path), "%s/%s", ws, rel);
	ASSERT_OK(stat(path, &st));
	while (off + 40 <= len) {
		uint64_t ino;
		int64_t sec = st.st_ctim.tv_sec;
		uint32_t nsec = (uint32_t)st.st_ctim.tv_nsec, rlen;

		memcpy(&ino, data + off + 8, 8);
		memcpy(&rlen, data + off + 36, 4);
		if (ino == st.st_ino) {
			memcpy(data + off + 16, &sec, 8);
			memcpy(data + off + 24, &nsec, 4);
			found = true;
		}
		off += 40 + ((rlen + 7) & ~7u);
	}
	ASSERT_TRUE(found);
	if (key) {
		memcpy(data + 32, &mac, 8);
		mac = ward__siphash24(key, data, len);
		memcpy(data + 32, &mac, 8);
	}
	cache_file_write(cache, data, len);
	free(data);
}

TEST(scan_cache_answers_for_unchanged_directories_and_reads_changed_ones)
{
	char ws[256], cache[256];
	struct ward_policy *p;

	cache_tree(ws, sizeof(ws), cache, sizeof(cache));
	ASSERT_EQ(scan_cached(ws), 0);
	/* In memory (a server), then from the file (the next ward run). */
	ASSERT_EQ(scan_cached(ws), 9);
	ward__scan_cache_clear();
	ASSERT_EQ(scan_cached(ws), 9);
	/* Planted two levels down after a cached run: that directory is read again. */
	mkdir_p(ws, "a/x/.vscode");
	touch(ws, "b/.mcp.json");
	ward__scan_cache_clear();
	p = resolved(ws);
	ASSERT_ENTRY(p, ws, "a/x/.vscode", WARD_PROTECT_READONLY, "autorun: editor tasks");
	ASSERT_ENTRY(p, ws, "b/.mcp.json", WARD_PROTECT_READONLY, "autorun: agent config");
	ASSERT_EQ(p->scan_cached, 7);
	ASSERT_TRUE(watched(p, ws, "c/x"));
	ward_policy_free(p);
	/* A directory made since is found, read and watched. */
	mkdir_p(ws, "d/y/.idea");
	ward__scan_cache_clear();
	p = resolved(ws);
	ASSERT_ENTRY(p, ws, "d/y/.idea", WARD_PROTECT_READONLY, "autorun: editor tasks");
	ASSERT_TRUE(watched(p, ws, "d/y"));
	ward_policy_free(p);
}

TEST(scan_cache_file_forged_or_damaged_changes_nothing)
{
	char ws[256], cache[256];
	uint8_t key[WARD_SIPHASH_KEY_SIZE];
	struct ward_policy *p;
	size_t len;
	char *good;
	long id;

	cache_tree(ws, sizeof(ws), cache, sizeof(cache));
	ASSERT_EQ(scan_cached(ws), 0);
	good = cache_file(cache, &len);
	mkdir_p(ws, "a/x/.vscode");

	/* The record of a/x claims its new ctime with its old listing: the code does not check out. */
	forge(cache, ws, "a/x", NULL);
	ward__scan_cache_clear();
	p = resolved(ws);
	ASSERT_ENTRY(p, ws, "a/x/.vscode", WARD_PROTECT_READONLY, "autorun: editor tasks");
	ASSERT_EQ(p->scan_cached, 0);
	ward_policy_free(p);

	/* Damaged: cut short, bytes changed, garbage. Read again, nothing else. */
	for (int i = 0; i < 3; i++) {
		char *bad = malloc(len);

		ASSERT_TRUE(bad != NULL);
		memcpy(bad, good, len);
		if (i == 1)
			bad[len / 2] ^= 0x20;
		if (i == 2)
			memset(bad + 40, 0xff, len - 40);
		cache_file_write(cache, bad, i == 0 ? len / 2 : len);
		free(bad);
		ward__scan_cache_clear();
		p = resolved(ws);
		ASSERT_ENTRY(p, ws, "a/x/.vscode", WARD_PROTECT_READONLY, "autorun: editor tasks");
		ward_policy_free(p);
	}

	/*
	 * The same forgery under the right key is believed: the key, which no
	 * sandbox can read, is what stands between a writable file and a skipped
	 * directory.
	 */
	id = syscall(SYS_keyctl, KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, "user", "ward:scan-cache",
		     0);
	if (id < 0)
		SKIP("no key in the user keyring: %s", strerror(errno));
	ASSERT_EQ(syscall(SYS_keyctl, KEYCTL_READ, id, key, sizeof(key)), (long)sizeof(key));
	cache_file_write(cache, good, len);
	forge(cache, ws, "a/x", key);
	ward__scan_cache_clear();
	p = resolved(ws);
	ASSERT_NO_ENTRY(p, ws, "a/x/.vscode");
	ward_policy_free(p);
	free(good);
}

TEST(scan_cache_directory_is_read_only_inside_a_root)
{
	char ws[256], cache[300];
	struct ward_policy *p;

	test_ws(ws, sizeof(ws));
	snprintf(cache, sizeof(cache), "%s/.cache/ward", ws);
	mkdir_p(ws, ".cache/ward");
	ASSERT_OK(ward__scan_cache_set_dir(cache));
	p = unresolved(ws);
	/* ward's own, like its rules: not lifted. */
	ASSERT_OK(ward_policy_add_unprotect(p, cache));
	resolve_or_fail(p);
	ASSERT_ENTRY(p, ws, ".cache/ward", WARD_PROTECT_READONLY, "ward's own");
	ward_policy_free(p);
}

int main(void)
{
	return tap_main_in_scratch(base);
}
