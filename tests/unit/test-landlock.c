/* SPDX-License-Identifier: MIT */
/*
 * Landlock ruleset (src/sandbox/landlock.c) and host features: each test
 * enforces a ruleset in its own forked child and asserts what that process can
 * then do, not what the ruleset says.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "policy/policy.h"
#include "sandbox/sandbox.h"
#include "tap.h"

static char base[] = "/var/tmp/ward-landlock-XXXXXX";

/* Each test (one forked child) gets base/<pid>/{root,outside}; main() removes base. */
static void make_tree(char *root, size_t rootsz, char *outside, size_t outsz)
{
	char dir[128];

	snprintf(dir, sizeof(dir), "%s/%d", base, (int)getpid());
	ASSERT_EQ(mkdir(dir, 0755), 0);
	snprintf(root, rootsz, "%s/root", dir);
	snprintf(outside, outsz, "%s/outside", dir);
	ASSERT_EQ(mkdir(root, 0755), 0);
	ASSERT_EQ(mkdir(outside, 0755), 0);
}

/* A workspace-write policy whose only writable root is root (no /tmp, no $TMPDIR). */
static struct ward_policy *policy_for(const char *root)
{
	struct ward_policy *p;
	struct ward_error err = {0};

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, root));
	ASSERT_OK(ward_policy_set_exclude_slash_tmp(p, true));
	ASSERT_OK(ward_policy_set_exclude_tmpdir_env_var(p, true));
	if (ward_policy_resolve(p, &err) < 0)
		tap_fail(__FILE__, __LINE__, "resolve: %s", err.message);
	return p;
}

static int abi_or_skip(void)
{
	const struct ward__features *f = ward__features_get();

	if (f->landlock_abi < 1)
		SKIP("Landlock is unavailable on this kernel");
	return f->landlock_abi;
}

static void enforce(const struct ward_policy *p, int abi, bool restrict_net)
{
	struct ward_error err = {0};
	int fd = -1;

	if (ward__landlock_build(p, abi, restrict_net, &fd, &err) < 0)
		tap_fail(__FILE__, __LINE__, "build: %s", err.message);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	if (ward__landlock_enforce(fd, &err) < 0)
		tap_fail(__FILE__, __LINE__, "enforce: %s", err.message);
	close(fd);
}

static int try_create(const char *dir, const char *name)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

TEST(writes_only_inside_the_root)
{
	char root[256], outside[256], path[512];
	struct ward_policy *p;
	int abi = abi_or_skip(), fd;

	make_tree(root, sizeof(root), outside, sizeof(outside));
	snprintf(path, sizeof(path), "%s/existing", outside);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	ASSERT_GE(fd, 0);
	close(fd);
	p = policy_for(root);
	enforce(p, abi, false);

	ASSERT_EQ(try_create(root, "inside"), 0);
	ASSERT_EQ(try_create(outside, "new"), -EACCES);
	/* An existing file outside: readable, not writable. */
	ASSERT_EQ(open(path, O_WRONLY | O_CLOEXEC), -1);
	ASSERT_EQ(errno, EACCES);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	close(fd);
	/* Renaming a file out of the root is refused too (REFER). */
	snprintf(path, sizeof(path), "%s/inside", root);
	{
		char dst[512];

		snprintf(dst, sizeof(dst), "%s/moved", outside);
		ASSERT_EQ(rename(path, dst), -1);
		ASSERT_TRUE(errno == EACCES || errno == EXDEV);
	}
	ward_policy_free(p);
}

TEST(read_only_mode_writes_nothing)
{
	char root[256], outside[256];
	struct ward_policy *p;
	struct ward_error err = {0};
	int abi = abi_or_skip();

	make_tree(root, sizeof(root), outside, sizeof(outside));
	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, root));
	ASSERT_OK(ward_policy_set_mode(p, WARD_MODE_READ_ONLY));
	ASSERT_OK(ward_policy_resolve(p, &err));
	enforce(p, abi, false);
	ASSERT_EQ(try_create(root, "x"), -EACCES);
	ward_policy_free(p);
}

TEST(danger_full_access_builds_no_ruleset)
{
	struct ward_policy *p;
	struct ward_error err = {0};
	int abi = abi_or_skip(), fd = 7;

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_mode(p, WARD_MODE_DANGER_FULL_ACCESS));
	ASSERT_OK(ward_policy_resolve(p, &err));
	ASSERT_OK(ward__landlock_build(p, abi, false, &fd, &err));
	ASSERT_EQ(fd, -1);
	ward_policy_free(p);
}

TEST(signals_to_processes_outside_are_refused)
{
	char root[256], outside[256];
	struct ward_policy *p;
	int abi = abi_or_skip();
	pid_t outsider;

	if (abi < 6)
		SKIP("signal scoping needs Landlock ABI 6, this kernel has %d", abi);
	make_tree(root, sizeof(root), outside, sizeof(outside));
	outsider = fork();
	if (outsider == 0) {
		pause();
		_exit(0);
	}
	p = policy_for(root);
	enforce(p, abi, false);
	ASSERT_EQ(kill(outsider, 0), -1);
	ASSERT_EQ(errno, EPERM);
	/* A process started inside the domain can still be signalled. */
	{
		pid_t insider = fork();
		int st;

		if (insider == 0) {
			pause();
			_exit(0);
		}
		ASSERT_EQ(kill(insider, SIGKILL), 0);
		waitpid(insider, &st, 0);
		ASSERT_TRUE(WIFSIGNALED(st));
	}
	ward_policy_free(p);
}

TEST(abstract_sockets_outside_are_refused)
{
	char root[256], outside[256], name[64];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct ward_policy *p;
	int abi = abi_or_skip(), srv, cli;
	socklen_t len;

	if (abi < 6)
		SKIP("abstract socket scoping needs Landlock ABI 6, this kernel has %d", abi);
	make_tree(root, sizeof(root), outside, sizeof(outside));
	snprintf(name, sizeof(name), "ward-landlock-test-%d", (int)getpid());
	memcpy(sa.sun_path + 1, name, strlen(name));
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
	srv = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_GE(srv, 0);
	ASSERT_EQ(bind(srv, (struct sockaddr *)&sa, len), 0);
	ASSERT_EQ(listen(srv, 1), 0);
	p = policy_for(root);
	enforce(p, abi, false);
	cli = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_GE(cli, 0);
	ASSERT_EQ(connect(cli, (struct sockaddr *)&sa, len), -1);
	ASSERT_EQ(errno, EPERM);
	ward_policy_free(p);
}

TEST(tcp_refused_when_restricting_the_network)
{
	char root[256], outside[256];
	struct ward_policy *p;
	int abi = abi_or_skip(), s;
	struct sockaddr_in sin = {.sin_family = AF_INET};

	if (abi < 4)
		SKIP("TCP rules need Landlock ABI 4, this kernel has %d", abi);
	make_tree(root, sizeof(root), outside, sizeof(outside));
	p = policy_for(root);
	enforce(p, abi, true);
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_GE(s, 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(0);
	ASSERT_EQ(bind(s, (struct sockaddr *)&sin, sizeof(sin)), -1);
	ASSERT_EQ(errno, EACCES);
	ward_policy_free(p);
}

TEST(features_on_this_host)
{
	const struct ward__features *f = ward__features_get();

	if (f->landlock_abi < 1)
		SKIP("Landlock is unavailable");
	if (!f->userns)
		SKIP("user namespaces are unavailable: %s", f->userns_why);
	ASSERT_TRUE(f->seccomp);
	ASSERT_TRUE(f->mount_api);
	ASSERT_TRUE(f->pidfd);
	/* Asking twice gives the same cached answer. */
	ASSERT_TRUE(ward__features_get() == f);
}

int main(void)
{
	return tap_main_in_scratch(base);
}
