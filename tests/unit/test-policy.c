/* SPDX-License-Identifier: MIT */
/*
 * The policy model (src/policy): the JSON forms accepted and rejected, merging,
 * and resolution against real directory trees and real git repositories
 * (a plain repository, a linked worktree, a submodule-style gitdir file,
 * core.hooksPath). Works as root and unprivileged: every tree is made under a
 * fresh directory in /var/tmp that main() removes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/util.h"
#include "policy/policy.h"
#include "tap.h"

static char base[] = "/var/tmp/ward-policy-XXXXXX";

/* ------------------------------------------------------------------ helpers */

/* base/<pid>: one directory per test (each runs in its own child). */
static void test_dir(char *out, size_t size)
{
	snprintf(out, size, "%s/%d", base, (int)getpid());
	ASSERT_EQ(mkdir(out, 0755), 0);
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

static void write_file(const char *dir, const char *rel, const char *content)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		tap_fail(__FILE__, __LINE__, "open %s: %s", path, strerror(errno));
	ASSERT_EQ(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

/* Runs a program (no shell) with its output thrown away; returns its wait status. */
static int run_status(const char *const argv[])
{
	pid_t pid = fork();
	int st = -1;

	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	return st;
}

/* Runs a program; fails the test unless it exits 0. */
#define RUN(...)                                                                                  \
	do {                                                                                      \
		const char *const _argv[] = {__VA_ARGS__, NULL};                                  \
		int _st = run_status(_argv);                                                      \
		if (_st != 0)                                                                     \
			tap_fail(__FILE__, __LINE__, "%s %s: wait status %d", _argv[0], _argv[1], \
				 _st);                                                            \
	} while (0)

static void need_git(void)
{
	const char *const argv[] = {"git", "--version", NULL};

	if (run_status(argv) != 0)
		SKIP("git is not installed");
	/* Never the caller's identity or config: a test repository is its own world. */
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
	setenv("GIT_AUTHOR_NAME", "ward", 1);
	setenv("GIT_AUTHOR_EMAIL", "ward@example.invalid", 1);
	setenv("GIT_COMMITTER_NAME", "ward", 1);
	setenv("GIT_COMMITTER_EMAIL", "ward@example.invalid", 1);
}

static struct ward_policy *load(const char *json, int *ret, struct ward_error *err)
{
	struct ward_policy *p;

	ASSERT_OK(ward_policy_new(&p));
	memset(err, 0, sizeof(*err));
	*ret = ward_policy_load_json(p, json, strlen(json), "p.json", err);
	return p;
}

/* Loads json expecting rejection with a message holding every needle. */
static void rejects(const char *json, const char *needle1, const char *needle2)
{
	struct ward_error err;
	int r;
	struct ward_policy *p = load(json, &r, &err);

	if (r >= 0)
		tap_fail(__FILE__, __LINE__, "accepted: %s", json);
	ASSERT_TRUE(strncmp(err.message, "policy 'p.json': ", 17) == 0);
	ASSERT_TRUE(strchr(err.message, '\n') == NULL);
	ASSERT_CONTAINS(err.message, needle1);
	if (needle2)
		ASSERT_CONTAINS(err.message, needle2);
	ward_policy_free(p);
}

/* A workspace-write policy for cwd (and writable, when not NULL), /tmp and $TMPDIR left out. */
static struct ward_policy *unresolved(const char *cwd, const char *writable)
{
	struct ward_policy *p;

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, cwd));
	if (writable)
		ASSERT_OK(ward_policy_add_writable(p, writable));
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

/* The same, resolved. */
static struct ward_policy *resolved_with(const char *cwd, const char *writable)
{
	struct ward_policy *p = unresolved(cwd, writable);

	resolve_or_fail(p);
	return p;
}

static struct ward_policy *resolved(const char *cwd)
{
	return resolved_with(cwd, NULL);
}

static const struct ward__protected *find(const struct ward_policy *p, const char *dir,
					  const char *rel, enum ward__protect_kind kind)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (size_t i = 0; i < p->n_protected; i++)
		if (p->protected[i].kind == kind && strcmp(p->protected[i].path, path) == 0)
			return &p->protected[i];
	return NULL;
}

#define ASSERT_PROTECTED(p, dir, rel, kind)                                                    \
	do {                                                                                   \
		if (!find(p, dir, rel, kind))                                                  \
			tap_fail(__FILE__, __LINE__, "%s/%s is not protected as %s", dir, rel, \
				 #kind);                                                       \
	} while (0)

/* ------------------------------------------------------------------ JSON accepted */

TEST(own_form_sets_every_field)
{
	struct ward_error err;
	int r;
	struct ward_policy *p = load(
		"{\"version\":1,\"mode\":\"read-only\",\"cwd\":\"/srv\",\"writable\":[\"/a\",\"/b\"],"
		"\"protect\":[\"/a/p\"],\"deny_read\":[\"/etc/shadow\"],\"allow_unix_sockets\":[\"/run/s\"],"
		"\"network\":\"on\",\"exclude_slash_tmp\":true,\"exclude_tmpdir_env_var\":true,"
		"\"require_isolation\":true}",
		&r, &err);

	ASSERT_EQ(r, 0);
	ASSERT_EQ(p->mode, WARD_MODE_READ_ONLY);
	ASSERT_STREQ(p->cwd, "/srv");
	ASSERT_EQ(p->writable.n, 2);
	ASSERT_STREQ(p->writable.v[1], "/b");
	ASSERT_STREQ(p->protect.v[0], "/a/p");
	ASSERT_STREQ(p->deny_read.v[0], "/etc/shadow");
	ASSERT_STREQ(p->unix_sockets.v[0], "/run/s");
	ASSERT_TRUE(p->network);
	ASSERT_TRUE(p->exclude_slash_tmp && p->exclude_tmpdir_env_var && p->require_isolation);
	ward_policy_free(p);

	p = load("{\"network\":false}", &r, &err);
	ASSERT_EQ(r, 0);
	ASSERT_FALSE(p->network);
	ASSERT_EQ(p->mode, WARD_MODE_WORKSPACE_WRITE);
	ward_policy_free(p);
}

TEST(codex_legacy_forms_are_accepted_unchanged)
{
	struct ward_error err;
	int r;
	struct ward_policy *p;

	p = load(
		"{\"type\":\"workspace-write\",\"writable_roots\":[\"/w\"],\"network_access\":false,"
		"\"exclude_tmpdir_env_var\":true,\"exclude_slash_tmp\":false}",
		&r, &err);
	ASSERT_EQ(r, 0);
	ASSERT_EQ(p->mode, WARD_MODE_WORKSPACE_WRITE);
	ASSERT_STREQ(p->writable.v[0], "/w");
	ASSERT_FALSE(p->network);
	ASSERT_TRUE(p->exclude_tmpdir_env_var);
	ASSERT_FALSE(p->exclude_slash_tmp);
	ward_policy_free(p);

	p = load("{\"type\":\"workspace-write\",\"network_access\":true}", &r, &err);
	ASSERT_EQ(r, 0);
	ASSERT_TRUE(p->network);
	ward_policy_free(p);

	p = load("{\"type\":\"read-only\"}", &r, &err);
	ASSERT_EQ(r, 0);
	ASSERT_EQ(p->mode, WARD_MODE_READ_ONLY);
	ASSERT_FALSE(p->network);
	ward_policy_free(p);

	/* Codex's danger-full-access has the network on. */
	p = load("{\"type\":\"danger-full-access\"}", &r, &err);
	ASSERT_EQ(r, 0);
	ASSERT_EQ(p->mode, WARD_MODE_DANGER_FULL_ACCESS);
	ASSERT_TRUE(p->network);
	ward_policy_free(p);
}

TEST(loading_twice_merges_without_duplicates)
{
	struct ward_policy *p;
	struct ward_error err = {0};
	const char *a = "{\"writable\":[\"/a\",\"/b\"],\"network\":\"on\"}";
	const char *b = "{\"writable\":[\"/b\",\"/c\"],\"mode\":\"read-only\"}";

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_add_writable(p, "/a"));
	ASSERT_OK(ward_policy_load_json(p, a, strlen(a), "a", &err));
	ASSERT_OK(ward_policy_load_json(p, b, strlen(b), "b", &err));
	ASSERT_EQ(p->writable.n, 3);
	ASSERT_STREQ(p->writable.v[2], "/c");
	/* Later documents override scalars, earlier ones not mentioned stay. */
	ASSERT_EQ(p->mode, WARD_MODE_READ_ONLY);
	ASSERT_TRUE(p->network);
	ward_policy_free(p);
}

/* ------------------------------------------------------------------ JSON rejected */

TEST(bad_documents_name_the_field_and_the_reason)
{
	rejects("{\"mode\":\"workspace-write\",\"frobnicate\":1}", "\"frobnicate\"",
		"unknown field");
	rejects("{\"writable\":[\"relative/dir\"]}", "\"writable\"[0]", "must be absolute");
	rejects("{\"writable\":[\"/ok\",7]}", "\"writable\"[1]", "expected a string");
	rejects("{\"writable\":\"/tmp\"}", "\"writable\"", "array");
	rejects("{\"cwd\":\"x\"}", "\"cwd\"", "must be absolute");
	rejects("{\"cwd\":\"\"}", "\"cwd\"", "empty");
	rejects("{\"cwd\":\"/a\\u0000b\"}", "invalid JSON", "\\u0000");
	rejects("{\"mode\":\"sandboxed\"}", "\"mode\"", "read-only");
	rejects("{\"mode\":1}", "\"mode\"", NULL);
	rejects("{\"network\":\"maybe\"}", "\"network\"", NULL);
	rejects("{\"exclude_slash_tmp\":\"yes\"}", "\"exclude_slash_tmp\"", "true or false");
	rejects("{\"version\":2}", "\"version\"", NULL);
	rejects("{\"mode\":\"read-only\",\"mode\":\"read-only\"}", "invalid JSON", "duplicate");
	rejects("{\"mode\":\"read-only\"", "invalid JSON", "line 1");
	rejects("[]", "object", NULL);
	rejects("", "invalid JSON", NULL);
	/* Codex's form: only the fields its type has. */
	rejects("{\"type\":\"read-only\",\"writable_roots\":[\"/tmp\"]}", "\"writable_roots\"",
		"read-only");
	rejects("{\"type\":\"danger-full-access\",\"network_access\":false}", "\"network_access\"",
		NULL);
	rejects("{\"type\":\"external-sandbox\"}", "\"type\"", "danger-full-access");
	rejects("{\"type\":\"sandbox\"}", "\"type\"", "\"sandbox\"");
	rejects("{\"type\":[]}", "\"type\"", "string");
	/* A field name with a newline is quoted on one line. */
	rejects("{\"a\\nb\":1}", "a\\x0ab", "unknown field");
}

TEST(a_rejected_document_changes_nothing)
{
	struct ward_policy *p;
	struct ward_error err = {0};
	/* Valid up to the last field: nothing of it may be merged. */
	const char *bad =
		"{\"mode\":\"read-only\",\"writable\":[\"/x\"],\"network\":true,\"oops\":1}";

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_add_writable(p, "/a"));
	ASSERT_EQ(ward_policy_load_json(p, bad, strlen(bad), "bad", &err), -EINVAL);
	ASSERT_EQ(p->mode, WARD_MODE_WORKSPACE_WRITE);
	ASSERT_EQ(p->writable.n, 1);
	ASSERT_FALSE(p->network);
	ward_policy_free(p);
}

TEST(lists_and_files_are_capped)
{
	struct ward_policy *p;
	struct ward_error err = {0};
	char *json, *big;
	size_t o = 0, cap = 64 * (WARD_POLICY_MAX_PATHS + 2);
	int r;

	json = malloc(cap);
	ASSERT_TRUE(json != NULL);
	o += (size_t)snprintf(json + o, cap - o, "{\"protect\":[");
	for (int i = 0; i <= WARD_POLICY_MAX_PATHS; i++)
		o += (size_t)snprintf(json + o, cap - o, "%s\"/p/%d\"", i ? "," : "", i);
	snprintf(json + o, cap - o, "]}");
	ASSERT_OK(ward_policy_new(&p));
	r = ward_policy_load_json(p, json, strlen(json), "many", &err);
	ASSERT_EQ(r, -EINVAL);
	ASSERT_CONTAINS(err.message, "more than 256 paths");
	ASSERT_EQ(p->protect.n, 0);

	/* Two documents that are each under the cap but not together. */
	snprintf(json, cap, "{\"deny_read\":[");
	o = strlen(json);
	for (int i = 0; i < WARD_POLICY_MAX_PATHS; i++)
		o += (size_t)snprintf(json + o, cap - o, "%s\"/d/%d\"", i ? "," : "", i);
	snprintf(json + o, cap - o, "]}");
	ASSERT_OK(ward_policy_load_json(p, json, strlen(json), "first", &err));
	ASSERT_OK(ward_policy_add_writable(p, "/w"));
	ASSERT_EQ(ward_policy_load_json(p, "{\"deny_read\":[\"/x\"]}", 20, "second", &err), -E2BIG);
	ASSERT_EQ(p->deny_read.n, WARD_POLICY_MAX_PATHS);
	free(json);

	big = malloc(WARD_POLICY_MAX_FILE + 2);
	ASSERT_TRUE(big != NULL);
	memset(big, ' ', WARD_POLICY_MAX_FILE + 1);
	big[0] = '{';
	big[WARD_POLICY_MAX_FILE] = '}';
	ASSERT_EQ(ward_policy_load_json(p, big, WARD_POLICY_MAX_FILE + 1, "big", &err), -EFBIG);
	ASSERT_CONTAINS(err.message, "larger than");
	free(big);
	ward_policy_free(p);
}

TEST(policy_files_are_read_with_their_name_in_errors)
{
	char dir[256], path[PATH_MAX];
	struct ward_policy *p;
	struct ward_error err = {0};

	test_dir(dir, sizeof(dir));
	write_file(dir, "ok.json", "{\"type\":\"read-only\"}\n");
	write_file(dir, "bad.json", "{\n  \"mode\": \"read-only\",\n  \"x\": 1\n}\n");
	ASSERT_OK(ward_policy_new(&p));
	snprintf(path, sizeof(path), "%s/ok.json", dir);
	ASSERT_OK(ward_policy_load_file(p, path, &err));
	ASSERT_EQ(p->mode, WARD_MODE_READ_ONLY);
	snprintf(path, sizeof(path), "%s/bad.json", dir);
	ASSERT_EQ(ward_policy_load_file(p, path, &err), -EINVAL);
	ASSERT_CONTAINS(err.message, path);
	ASSERT_CONTAINS(err.message, "\"x\"");
	snprintf(path, sizeof(path), "%s/missing.json", dir);
	ASSERT_EQ(ward_policy_load_file(p, path, &err), -ENOENT);
	ASSERT_CONTAINS(err.message, "cannot read policy");
	ward_policy_free(p);
}

/* ------------------------------------------------------------------ resolution */

TEST(roots_are_canonical_and_tmp_is_optional)
{
	char dir[256], link[PATH_MAX], real[PATH_MAX], tmp[PATH_MAX];
	struct ward_policy *p;
	struct ward_error err = {0};

	test_dir(dir, sizeof(dir));
	mkdir_p(dir, "real/work");
	mkdir_p(dir, "mytmp");
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(real, sizeof(real), "%s/real", dir);
	ASSERT_EQ(symlink(real, link), 0);
	snprintf(link, sizeof(link), "%s/link/work", dir);
	snprintf(tmp, sizeof(tmp), "%s/mytmp", dir);
	setenv("TMPDIR", tmp, 1);

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, link));
	ASSERT_OK(ward_policy_resolve(p, &err));
	/* The symlink is resolved; /tmp and $TMPDIR are roots by default. */
	snprintf(real, sizeof(real), "%s/real/work", dir);
	ASSERT_STREQ(p->resolved_cwd, real);
	ASSERT_TRUE(ward__strv_contains(&p->roots, real));
	ASSERT_TRUE(ward__strv_contains(&p->roots, tmp));
	ASSERT_TRUE(ward__policy_path_writable(p, "/tmp/anything"));
	ASSERT_FALSE(ward__policy_path_writable(p, "/etc/passwd"));
	/* Sorted so that parents come before children. */
	for (size_t i = 1; i < p->roots.n; i++)
		ASSERT_LE(ward__path_depth(p->roots.v[i - 1]), ward__path_depth(p->roots.v[i]));

	ASSERT_OK(ward_policy_set_exclude_slash_tmp(p, true));
	ASSERT_OK(ward_policy_set_exclude_tmpdir_env_var(p, true));
	ASSERT_OK(ward_policy_resolve(p, &err));
	ASSERT_EQ(p->roots.n, 1);
	ASSERT_FALSE(ward__policy_path_writable(p, tmp));
	ward_policy_free(p);
}

TEST(a_missing_or_wrong_root_fails_resolution)
{
	char dir[256], path[PATH_MAX];
	struct ward_policy *p;
	struct ward_error err = {0};

	test_dir(dir, sizeof(dir));
	write_file(dir, "file", "x");
	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, dir));
	snprintf(path, sizeof(path), "%s/nope", dir);
	ASSERT_OK(ward_policy_add_writable(p, path));
	ASSERT_EQ(ward_policy_resolve(p, &err), -ENOENT);
	ASSERT_CONTAINS(err.message, "writable root");
	ASSERT_CONTAINS(err.message, path);
	ASSERT_FALSE(p->resolved);
	ward_policy_free(p);

	ASSERT_OK(ward_policy_new(&p));
	snprintf(path, sizeof(path), "%s/file", dir);
	ASSERT_OK(ward_policy_set_cwd(p, path));
	ASSERT_EQ(ward_policy_resolve(p, &err), -ENOTDIR);
	ward_policy_free(p);
}

TEST(read_only_and_full_access_protect_nothing)
{
	char dir[256];
	struct ward_policy *p;
	struct ward_error err = {0};

	test_dir(dir, sizeof(dir));
	mkdir_p(dir, ".git/hooks");
	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, dir));
	ASSERT_OK(ward_policy_set_mode(p, WARD_MODE_READ_ONLY));
	ASSERT_OK(ward_policy_resolve(p, &err));
	ASSERT_EQ(p->roots.n, 0);
	ASSERT_EQ(p->n_protected, 0);
	ASSERT_OK(ward_policy_set_mode(p, WARD_MODE_DANGER_FULL_ACCESS));
	ASSERT_OK(ward_policy_resolve(p, &err));
	ASSERT_EQ(p->roots.n, 1);
	ASSERT_STREQ(p->roots.v[0], "/");
	ASSERT_EQ(p->n_protected, 0);
	ward_policy_free(p);
}

TEST(a_git_repository_keeps_hooks_and_config_read_only)
{
	char dir[256], repo[512];
	struct ward_policy *p;
	const struct ward__protected *e;

	need_git();
	test_dir(dir, sizeof(dir));
	snprintf(repo, sizeof(repo), "%s/repo", dir);
	RUN("git", "init", "-q", repo);
	p = resolved(repo);
	ASSERT_PROTECTED(p, repo, ".git", WARD_PROTECT_PIN);
	ASSERT_PROTECTED(p, repo, ".git/hooks", WARD_PROTECT_READONLY);
	ASSERT_PROTECTED(p, repo, ".git/config", WARD_PROTECT_READONLY);
	/* The agent directories do not exist: guarded on the root, named. */
	e = find(p, repo, ".codex", WARD_PROTECT_MISSING);
	ASSERT_TRUE(e != NULL);
	ASSERT_STREQ(e->guard_dir, repo);
	ASSERT_STREQ(e->guard_name, ".codex");
	ASSERT_PROTECTED(p, repo, ".agents", WARD_PROTECT_MISSING);
	ASSERT_PROTECTED(p, repo, ".ward", WARD_PROTECT_MISSING);
	/* .git itself and objects stay writable: commits work. */
	ASSERT_TRUE(find(p, repo, ".git", WARD_PROTECT_READONLY) == NULL);
	ASSERT_TRUE(ward__policy_protected_for(p, "/nonexistent") == NULL);
	ward_policy_free(p);
}

TEST(a_missing_hooks_directory_is_guarded)
{
	char dir[256], repo[512], hooks[PATH_MAX];
	struct ward_policy *p;
	const struct ward__protected *e;

	need_git();
	test_dir(dir, sizeof(dir));
	snprintf(repo, sizeof(repo), "%s/repo", dir);
	RUN("git", "init", "-q", repo);
	snprintf(hooks, sizeof(hooks), "%s/.git/hooks", repo);
	RUN("rm", "-rf", hooks);
	p = resolved(repo);
	e = find(p, repo, ".git/hooks", WARD_PROTECT_MISSING);
	ASSERT_TRUE(e != NULL);
	snprintf(hooks, sizeof(hooks), "%s/.git", repo);
	ASSERT_STREQ(e->guard_dir, hooks);
	ASSERT_STREQ(e->guard_name, "hooks");
	ward_policy_free(p);
}

TEST(a_linked_worktree_protects_the_real_git_directory)
{
	char dir[256], repo[512], wt[512], gitdir[PATH_MAX];
	struct ward_policy *p;

	need_git();
	test_dir(dir, sizeof(dir));
	snprintf(repo, sizeof(repo), "%s/repo", dir);
	snprintf(wt, sizeof(wt), "%s/wt", dir);
	RUN("git", "init", "-q", repo);
	RUN("git", "-C", repo, "commit", "-q", "--allow-empty", "-m", "init");
	RUN("git", "-C", repo, "worktree", "add", "-q", wt);

	/* Only the worktree writable: the repository is outside every root, read-only anyway. */
	p = resolved(wt);
	ASSERT_PROTECTED(p, wt, ".git", WARD_PROTECT_READONLY);
	ASSERT_TRUE(find(p, repo, ".git/hooks", WARD_PROTECT_READONLY) == NULL);
	ward_policy_free(p);

	/* Worktree and repository writable: the repository's hooks and config are protected. */
	p = resolved_with(wt, repo);
	ASSERT_PROTECTED(p, wt, ".git", WARD_PROTECT_READONLY);
	ASSERT_PROTECTED(p, repo, ".git/hooks", WARD_PROTECT_READONLY);
	ASSERT_PROTECTED(p, repo, ".git/config", WARD_PROTECT_READONLY);
	ASSERT_PROTECTED(p, repo, ".git", WARD_PROTECT_PIN);
	snprintf(gitdir, sizeof(gitdir), "%s/.git/worktrees", repo);
	ASSERT_PROTECTED(p, gitdir, "wt", WARD_PROTECT_PIN);
	ASSERT_PROTECTED(p, gitdir, "wt/commondir", WARD_PROTECT_READONLY);
	ward_policy_free(p);

	/* Working in the repository: its linked worktrees' links are protected too. */
	p = resolved(repo);
	ASSERT_PROTECTED(p, gitdir, "wt/commondir", WARD_PROTECT_READONLY);
	ASSERT_PROTECTED(p, gitdir, "wt/gitdir", WARD_PROTECT_READONLY);
	ASSERT_PROTECTED(p, gitdir, "wt/config.worktree", WARD_PROTECT_MISSING);
	ASSERT_PROTECTED(p, gitdir, "wt", WARD_PROTECT_PIN);
	ward_policy_free(p);
}

TEST(a_submodule_gitdir_file_protects_its_module_directory)
{
	char dir[256], sub[PATH_MAX], mod[PATH_MAX];
	struct ward_policy *p;

	test_dir(dir, sizeof(dir));
	/* The layout git uses for a submodule: sub/.git names ../.git/modules/sub. */
	mkdir_p(dir, ".git/modules/sub/hooks");
	write_file(dir, ".git/modules/sub/config", "[core]\n");
	mkdir_p(dir, "sub");
	write_file(dir, "sub/.git", "gitdir: ../.git/modules/sub\n");
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	snprintf(mod, sizeof(mod), "%s/.git/modules/sub", dir);

	p = resolved_with(sub, dir);
	ASSERT_PROTECTED(p, sub, ".git", WARD_PROTECT_READONLY);
	ASSERT_PROTECTED(p, mod, "hooks", WARD_PROTECT_READONLY);
	ASSERT_PROTECTED(p, mod, "config", WARD_PROTECT_READONLY);
	ward_policy_free(p);

	/* Working in the superproject: the submodules .gitmodules names keep their .git. */
	write_file(dir, ".gitmodules",
		   "[submodule \"sub\"]\n\tpath = sub\n\turl = ../elsewhere\n"
		   "[submodule \"escape\"]\n\tpath = ../../etc\n");
	p = resolved(dir);
	ASSERT_PROTECTED(p, sub, ".git", WARD_PROTECT_READONLY);
	ASSERT_PROTECTED(p, dir, "sub", WARD_PROTECT_PIN);
	ASSERT_PROTECTED(p, mod, "config", WARD_PROTECT_READONLY);
	ASSERT_TRUE(ward__policy_protected_for(p, "/etc/.git") == NULL);
	ward_policy_free(p);
}

TEST(core_hooks_path_is_protected)
{
	char dir[256];
	struct ward_policy *p;
	const struct ward__protected *e;

	test_dir(dir, sizeof(dir));
	mkdir_p(dir, ".git/hooks");
	mkdir_p(dir, "tools/hooks");
	write_file(
		dir, ".git/config",
		"[user]\n\thooksPath = not-this\n[Core]\n\tbare = false\n\thooksPath = \"tools/hooks\"\n");
	p = resolved(dir);
	e = find(p, dir, "tools/hooks", WARD_PROTECT_READONLY);
	ASSERT_TRUE(e != NULL);
	ASSERT_STREQ(e->reason, "git core.hooksPath");
	ASSERT_TRUE(find(p, dir, "not-this", WARD_PROTECT_MISSING) == NULL);
	ward_policy_free(p);

	/* A hooks path that does not exist yet is guarded. */
	write_file(dir, ".git/config", "[core]\nhookspath=later/hooks\n");
	p = resolved(dir);
	e = find(p, dir, "later/hooks", WARD_PROTECT_MISSING);
	ASSERT_TRUE(e != NULL);
	ASSERT_STREQ(e->guard_dir, dir);
	ASSERT_STREQ(e->guard_name, "later");
	ward_policy_free(p);

	/* husky 9: .husky/_ only dispatches to the scripts of .husky, protected too. */
	mkdir_p(dir, ".husky/_");
	write_file(dir, ".git/config", "[core]\n\thooksPath = .husky/_/\n");
	p = resolved(dir);
	ASSERT_TRUE(find(p, dir, ".husky/_", WARD_PROTECT_READONLY) != NULL);
	e = find(p, dir, ".husky", WARD_PROTECT_READONLY);
	ASSERT_TRUE(e != NULL);
	ASSERT_STREQ(e->reason, "git core.hooksPath");
	ward_policy_free(p);
}

/*
 * Hook runners' configuration at a repository's top: read-only where it
 * exists; where missing, guarded only when that runner's hooks are installed.
 */
TEST(hook_runner_configs_are_protected)
{
	char dir[256], path[300];
	struct ward_policy *p;
	const struct ward__protected *e;

	test_dir(dir, sizeof(dir));
	mkdir_p(dir, ".git/hooks");
	write_file(dir, ".git/hooks/pre-commit.sample", "pre-commit lefthook\n");
	write_file(dir, ".pre-commit-config.yaml", "repos: []\n");
	write_file(dir, "lefthook.yml", "pre-commit: {}\n");
	p = resolved(dir);
	e = find(p, dir, ".pre-commit-config.yaml", WARD_PROTECT_READONLY);
	ASSERT_TRUE(e != NULL);
	ASSERT_STREQ(e->reason, "autorun: hook runner config");
	ASSERT_TRUE(find(p, dir, "lefthook.yml", WARD_PROTECT_READONLY) != NULL);
	/* No runner's hooks installed (samples only): nothing new would run. */
	ASSERT_TRUE(find(p, dir, "lefthook-local.yml", WARD_PROTECT_MISSING) == NULL);
	ward_policy_free(p);

	/* lefthook's hooks installed: its other names are guarded, .config's only if it exists. */
	write_file(dir, ".git/hooks/pre-push", "#!/bin/sh\ncall_lefthook run pre-push\n");
	p = resolved(dir);
	e = find(p, dir, "lefthook-local.yml", WARD_PROTECT_MISSING);
	ASSERT_TRUE(e != NULL);
	ASSERT_STREQ(e->reason, "autorun: hook runner config");
	ASSERT_TRUE(find(p, dir, ".lefthook.toml", WARD_PROTECT_MISSING) != NULL);
	ASSERT_TRUE(find(p, dir, ".config/lefthook.yml", WARD_PROTECT_MISSING) == NULL);
	ward_policy_free(p);
	mkdir_p(dir, ".config");
	p = resolved(dir);
	ASSERT_TRUE(find(p, dir, ".config/lefthook.yml", WARD_PROTECT_MISSING) != NULL);
	ward_policy_free(p);

	/* pre-commit's, through core.hooksPath: its configuration is guarded where missing. */
	snprintf(path, sizeof(path), "%s/.pre-commit-config.yaml", dir);
	ASSERT_EQ(unlink(path), 0);
	mkdir_p(dir, "hooks");
	write_file(dir, "hooks/pre-commit", "#!/bin/sh\n# File generated by pre-commit\n");
	write_file(dir, ".git/config", "[core]\n\thooksPath = hooks\n");
	p = resolved(dir);
	ASSERT_TRUE(find(p, dir, ".pre-commit-config.yaml", WARD_PROTECT_MISSING) != NULL);
	ward_policy_free(p);
}

TEST(protect_follows_symlinks_and_guards_the_link)
{
	char dir[256], target[PATH_MAX], link[PATH_MAX], path[PATH_MAX];
	struct ward_policy *p;
	struct ward_error err = {0};
	const struct ward__protected *e;

	test_dir(dir, sizeof(dir));
	write_file(dir, "secret.txt", "x");
	snprintf(target, sizeof(target), "%s/secret.txt", dir);
	snprintf(link, sizeof(link), "%s/alias", dir);
	ASSERT_EQ(symlink(target, link), 0);

	p = unresolved(dir, NULL);
	ASSERT_OK(ward_policy_add_protect(p, link));
	/* Outside every writable root: nothing to protect, nothing mounted. */
	ASSERT_OK(ward_policy_add_protect(p, "/etc/passwd"));
	/* Missing, several levels deep: guarded at the deepest existing ancestor. */
	snprintf(path, sizeof(path), "%s/a/b/c", dir);
	ASSERT_OK(ward_policy_add_protect(p, path));
	ASSERT_OK(ward_policy_resolve(p, &err));

	ASSERT_PROTECTED(p, dir, "secret.txt", WARD_PROTECT_READONLY);
	e = find(p, dir, "alias", WARD_PROTECT_MISSING);
	ASSERT_TRUE(e != NULL);
	ASSERT_STREQ(e->guard_name, "alias");
	ASSERT_TRUE(ward__policy_protected_for(p, "/etc/passwd") == NULL);
	e = find(p, dir, "a/b/c", WARD_PROTECT_MISSING);
	ASSERT_TRUE(e != NULL);
	ASSERT_STREQ(e->guard_dir, dir);
	ASSERT_STREQ(e->guard_name, "a");
	ward_policy_free(p);
}

TEST(deny_read_and_sockets_resolve_or_explain)
{
	char dir[256], path[PATH_MAX];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct ward_policy *p;
	struct ward_error err = {0};
	int s;

	test_dir(dir, sizeof(dir));
	mkdir_p(dir, "private");
	write_file(dir, "key", "k");
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", dir) >=
	    sizeof(sa.sun_path))
		tap_fail(__FILE__, __LINE__, "socket path too long");
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_GE(s, 0);
	ASSERT_EQ(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, dir));
	snprintf(path, sizeof(path), "%s/private", dir);
	ASSERT_OK(ward_policy_add_deny_read(p, path));
	snprintf(path, sizeof(path), "%s/key", dir);
	ASSERT_OK(ward_policy_add_deny_read(p, path));
	snprintf(path, sizeof(path), "%s/gone", dir);
	ASSERT_OK(ward_policy_add_deny_read(p, path));
	ASSERT_OK(ward_policy_add_unix_socket(p, sa.sun_path));
	ASSERT_OK(ward_policy_resolve(p, &err));
	ASSERT_EQ(p->n_deny, 2);
	ASSERT_TRUE(p->deny[0].is_dir);
	ASSERT_FALSE(p->deny[1].is_dir);
	snprintf(path, sizeof(path), "%s/private/sub/file", dir);
	ASSERT_TRUE(ward__policy_deny_for(p, path) != NULL);
	/* A missing deny-read path is not an error, but it is said. */
	ASSERT_EQ(p->notes.n, 1);
	ASSERT_CONTAINS(p->notes.v[0], "gone");
	ASSERT_EQ(p->n_sockets, 1);
	ASSERT_STREQ(p->sockets[0].path, sa.sun_path);
	ward_policy_free(p);

	/* Denying "/" or allowing something that is not a socket is refused. */
	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, dir));
	ASSERT_OK(ward_policy_add_deny_read(p, "/"));
	ASSERT_EQ(ward_policy_resolve(p, &err), -EINVAL);
	ward_policy_free(p);
	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, dir));
	snprintf(path, sizeof(path), "%s/key", dir);
	ASSERT_OK(ward_policy_add_unix_socket(p, path));
	ASSERT_EQ(ward_policy_resolve(p, &err), -EINVAL);
	ASSERT_CONTAINS(err.message, "not a unix socket");
	ward_policy_free(p);
	close(s);
}

TEST(describe_json_reports_the_resolved_policy)
{
	char dir[256];
	struct ward_policy *p;
	char *text = NULL;
	json_t *o, *prot;
	json_error_t je;

	test_dir(dir, sizeof(dir));
	mkdir_p(dir, ".git/hooks");
	p = resolved(dir);
	ASSERT_OK(ward_policy_describe_json(p, &text));
	o = json_loads(text, 0, &je);
	ASSERT_TRUE(o != NULL);
	ASSERT_STREQ(json_string_value(json_object_get(o, "mode")), "workspace-write");
	ASSERT_STREQ(json_string_value(json_object_get(o, "cwd")), dir);
	ASSERT_STREQ(json_string_value(json_object_get(o, "network")), "off");
	ASSERT_EQ(json_array_size(json_object_get(o, "writable_roots")), 1);
	prot = json_object_get(o, "protected");
	ASSERT_GE(json_array_size(prot), 4);
	ASSERT_TRUE(json_is_object(json_object_get(o, "enforcement")));
	json_decref(o);
	free(text);
	ward_policy_free(p);
}

TEST(parents_of_protected_paths_are_pinned)
{
	char dir[256], inner[512];
	struct ward_policy *p;
	struct ward_error err = {0};
	char path[PATH_MAX];

	test_dir(dir, sizeof(dir));
	mkdir_p(dir, "a/b");
	write_file(dir, "a/b/file", "x");
	mkdir_p(dir, "m/n");
	mkdir_p(dir, "outer/inner");
	snprintf(inner, sizeof(inner), "%s/outer/inner", dir);
	p = unresolved(inner, dir);
	snprintf(path, sizeof(path), "%s/a/b/file", dir);
	ASSERT_OK(ward_policy_add_protect(p, path));
	snprintf(path, sizeof(path), "%s/m/n/missing/deeper", dir);
	ASSERT_OK(ward_policy_add_protect(p, path));
	ASSERT_OK(ward_policy_resolve(p, &err));
	/* Every directory between the root and the protected file. */
	ASSERT_PROTECTED(p, dir, "a", WARD_PROTECT_PIN);
	ASSERT_PROTECTED(p, dir, "a/b", WARD_PROTECT_PIN);
	ASSERT_PROTECTED(p, dir, "a/b/file", WARD_PROTECT_READONLY);
	/* A guarded path: its parents and the watched directory itself. */
	ASSERT_PROTECTED(p, dir, "m", WARD_PROTECT_PIN);
	ASSERT_PROTECTED(p, dir, "m/n", WARD_PROTECT_PIN);
	ASSERT_PROTECTED(p, dir, "m/n/missing/deeper", WARD_PROTECT_MISSING);
	/* A root inside a root: the directories between them, not the roots. */
	ASSERT_PROTECTED(p, dir, "outer", WARD_PROTECT_PIN);
	ASSERT_TRUE(find(p, dir, "outer/inner", WARD_PROTECT_PIN) == NULL);
	ASSERT_TRUE(ward__policy_protected_for(p, dir) == NULL);
	/* Parents come before children, pins before read-only binds of the same path. */
	for (size_t i = 1; i < p->n_protected; i++)
		ASSERT_LE(ward__path_depth(p->protected[i - 1].path),
			  ward__path_depth(p->protected[i].path));
	ward_policy_free(p);
}

TEST(commondir_and_submodules_are_protected)
{
	char dir[256], git[512];
	struct ward_policy *p;
	const struct ward__protected *e;

	test_dir(dir, sizeof(dir));
	mkdir_p(dir, ".git/hooks");
	write_file(dir, ".git/config", "[core]\n");
	mkdir_p(dir, ".git/modules/lib/one/hooks");
	write_file(dir, ".git/modules/lib/one/HEAD", "ref: refs/heads/main\n");
	mkdir_p(dir, ".git/modules/lib/one/modules/two");
	write_file(dir, ".git/modules/lib/one/modules/two/HEAD", "ref: refs/heads/main\n");
	p = resolved(dir);
	snprintf(git, sizeof(git), "%s/.git", dir);
	e = find(p, dir, ".git/commondir", WARD_PROTECT_MISSING);
	ASSERT_TRUE(e != NULL);
	ASSERT_STREQ(e->guard_dir, git);
	ASSERT_PROTECTED(p, dir, ".git/config.worktree", WARD_PROTECT_MISSING);
	ASSERT_PROTECTED(p, dir, ".git/modules/lib/one/hooks", WARD_PROTECT_READONLY);
	ASSERT_PROTECTED(p, dir, ".git/modules/lib/one/config", WARD_PROTECT_MISSING);
	ASSERT_PROTECTED(p, dir, ".git/modules/lib/one/modules/two/hooks", WARD_PROTECT_MISSING);
	ward_policy_free(p);
}

TEST(shared_tmp_roots_get_no_implicit_protections)
{
	char dir[256], tmp[512], path[512];
	struct ward_policy *p;
	struct ward_error err = {0};

	test_dir(dir, sizeof(dir));
	mkdir_p(dir, "ws");
	mkdir_p(dir, "shared");
	mkdir_p(dir, "private");
	snprintf(tmp, sizeof(tmp), "%s/shared", dir);
	/* Shared like /tmp: world-writable and sticky. */
	ASSERT_EQ(chmod(tmp, 01777), 0);
	setenv("TMPDIR", tmp, 1);
	snprintf(tmp, sizeof(tmp), "%s/ws", dir);
	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, tmp));
	ASSERT_OK(ward_policy_set_exclude_slash_tmp(p, true));
	ASSERT_OK(ward_policy_resolve(p, &err));
	ASSERT_EQ(p->roots.n, 2);
	ASSERT_PROTECTED(p, tmp, ".codex", WARD_PROTECT_MISSING);
	snprintf(tmp, sizeof(tmp), "%s/shared", dir);
	ASSERT_TRUE(find(p, tmp, ".codex", WARD_PROTECT_MISSING) == NULL);
	/* Named explicitly, the same directory is protected. */
	ASSERT_OK(ward_policy_add_writable(p, tmp));
	ASSERT_OK(ward_policy_resolve(p, &err));
	ASSERT_PROTECTED(p, tmp, ".codex", WARD_PROTECT_MISSING);
	ward_policy_free(p);

	/* A $TMPDIR that is not shared (the user's own) keeps the protections. */
	snprintf(tmp, sizeof(tmp), "%s/private", dir);
	setenv("TMPDIR", tmp, 1);
	snprintf(path, sizeof(path), "%s/ws", dir);
	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, path));
	ASSERT_OK(ward_policy_set_exclude_slash_tmp(p, true));
	ASSERT_OK(ward_policy_resolve(p, &err));
	ASSERT_PROTECTED(p, tmp, ".codex", WARD_PROTECT_MISSING);
	ward_policy_free(p);
}

TEST(danger_full_access_refuses_what_it_cannot_enforce)
{
	struct ward_policy *p;
	struct ward_error err = {0};

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_mode(p, WARD_MODE_DANGER_FULL_ACCESS));
	ASSERT_OK(ward_policy_resolve(p, &err));
	ASSERT_OK(ward_policy_add_deny_read(p, "/etc/shadow"));
	ASSERT_EQ(ward_policy_resolve(p, &err), -EINVAL);
	ASSERT_CONTAINS(err.message, "--deny-read");
	ward_policy_free(p);

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_mode(p, WARD_MODE_DANGER_FULL_ACCESS));
	ASSERT_OK(ward_policy_set_network(p, false));
	ASSERT_EQ(ward_policy_resolve(p, &err), -EINVAL);
	ASSERT_CONTAINS(err.message, "--network off");
	ward_policy_free(p);
}

/* A hostile .gitmodules (fan-out at every level) cannot make resolution slow. */
TEST(gitmodules_fan_out_is_bounded)
{
	static const char *const levels[] = {"", "a/", "a/a/", "a/a/a/", "a/a/a/a/"};
	char dir[256], file[64], *text;
	size_t o = 0, cap = 8192;
	struct timespec t0, t1;
	struct ward_policy *p;

	test_dir(dir, sizeof(dir));
	mkdir_p(dir, "a/a/a/a");
	text = malloc(cap);
	ASSERT_TRUE(text != NULL);
	o += (size_t)snprintf(text + o, cap - o, "[submodule \"x\"]\n");
	for (int i = 0; i < 300; i++)
		o += (size_t)snprintf(text + o, cap - o, "path=a\n");
	for (size_t i = 0; i < ELEMENTSOF(levels); i++) {
		snprintf(file, sizeof(file), "%s.gitmodules", levels[i]);
		write_file(dir, file, text);
	}
	free(text);
	mkdir_p(dir, "a/.git/hooks");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	p = resolved(dir);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ASSERT_LE(t1.tv_sec - t0.tv_sec, 2);
	/* The submodule at a is still protected. */
	ASSERT_PROTECTED(p, dir, "a/.git/hooks", WARD_PROTECT_READONLY);
	ward_policy_free(p);
}

/* ------------------------------------------------------------------ main */

/* ------------------------------------------------------------------ fingerprint */

static struct ward__buf fingerprint_of(const char *cwd)
{
	struct ward_policy *p;
	struct ward__buf b;

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, cwd));
	ASSERT_OK(ward_policy_resolve(p, NULL));
	ward__buf_init(&b, 1 << 20);
	ASSERT_OK(ward__policy_fingerprint(p, &b));
	ward_policy_free(p);
	return b;
}

static bool same_buf(const struct ward__buf *a, const struct ward__buf *b)
{
	return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}

TEST(fingerprint_changes_with_the_resolution_and_the_entries)
{
	char dir[PATH_MAX], other[PATH_MAX + 8], cfg[PATH_MAX + 32], tmp[PATH_MAX + 32];
	struct ward__buf a, b, c, d, e;
	struct ward_policy *unresolved;

	test_dir(dir, sizeof(dir));
	mkdir_p(dir, ".git");
	write_file(dir, ".git/config", "[core]\n");
	snprintf(other, sizeof(other), "%s/sub", dir);
	mkdir_p(dir, "sub");
	a = fingerprint_of(dir);
	b = fingerprint_of(dir);
	ASSERT_TRUE(same_buf(&a, &b));
	/* Another working directory: another sandbox. */
	c = fingerprint_of(other);
	ASSERT_FALSE(same_buf(&a, &c));
	/* The same paths, but git replaced its config by a rename: another entry to mount. */
	snprintf(cfg, sizeof(cfg), "%s/.git/config", dir);
	snprintf(tmp, sizeof(tmp), "%s/.git/config.lock", dir);
	write_file(dir, ".git/config.lock", "[core]\n");
	ASSERT_OK(rename(tmp, cfg));
	d = fingerprint_of(dir);
	ASSERT_FALSE(same_buf(&a, &d));
	/* A protected name that appeared (a git hooks directory): another resolution. */
	mkdir_p(dir, ".git/hooks");
	e = fingerprint_of(dir);
	ASSERT_FALSE(same_buf(&d, &e));
	/* Only a resolved policy has one. */
	ASSERT_OK(ward_policy_new(&unresolved));
	ASSERT_EQ(ward__policy_fingerprint(unresolved, &a), -EINVAL);
	ward_policy_free(unresolved);
	ward__buf_release(&a);
	ward__buf_release(&b);
	ward__buf_release(&c);
	ward__buf_release(&d);
	ward__buf_release(&e);
}

int main(void)
{
	return tap_main_in_scratch(base);
}
