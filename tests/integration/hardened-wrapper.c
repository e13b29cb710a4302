/* SPDX-License-Identifier: MIT */
/*
 * hardened-wrapper: simulates a host that refuses what ward would like to use,
 * then execs its arguments:
 *
 *   hardened-wrapper [--userns-only] [--no-landlock] [--apparmor-restrict] COMMAND [ARG...]
 *
 * By default it installs a seccomp filter modelled on Docker's default profile:
 * unshare() and setns() fail with EPERM, clone() with any CLONE_NEW* flag fails
 * with EPERM, and clone3() fails with ENOSYS (its flags live in memory a filter
 * cannot read, so libc falls back to clone()). Blocking every namespace flag, not
 * only CLONE_NEWUSER, keeps the simulation honest when the tests run as root,
 * where ward could otherwise create the other namespaces without a user
 * namespace.
 *
 * --userns-only   refuse only user namespaces (CLONE_NEWUSER in clone() and
 *                 unshare(); clone3() ENOSYS): user.max_user_namespaces=0, or a
 *                 container given CAP_SYS_ADMIN whose profile refuses user
 *                 namespaces. Root can still create the other namespaces.
 * --no-landlock   also refuse Landlock (landlock_create_ruleset() ENOSYS, as on
 *                 a kernel built or booted without it).
 * --proc-masked   a container's /proc as Docker, podman and Kubernetes' default
 *                 procMount leave it: in a private mount namespace (and, when not
 *                 root, a user namespace of its own, uid mapped to itself) parts
 *                 of /proc are hidden under other mounts (/dev/null over kcore,
 *                 keys, timer_list...; /proc/sys read-only), so the kernel
 *                 refuses a fresh procfs in any user namespace made beneath. No
 *                 namespace is refused then (only Landlock, with --no-landlock).
 * --no-pidfd-thread
 *                 pidfd_open() without PIDFD_THREAD (EINVAL), as before Linux 6.9:
 *                 a thread other than its process's first gets no pidfd of its own.
 * --apparmor-restrict
 *                 Ubuntu 24.04's restriction as `ward doctor` sees it: in a
 *                 private mount namespace /proc/sys/kernel is replaced by a copy
 *                 in which kernel.apparmor_restrict_unprivileged_userns reads 1,
 *                 and the command runs as uid/gid 65534 without capabilities
 *                 (the restriction concerns unprivileged users only).
 *
 * The filter is inherited across exec and fork, so ward and everything it
 * starts live on such a "host".
 *
 * Started under the name "ward" (a symlink), it reads the real program and its
 * options from the file of the same path plus ".conf" (two lines: the program,
 * then the options separated by spaces) and execs the program with the same
 * arguments: a drop-in ward for tests, with no shell in between to change the
 * environment, the pid or the name, and nothing in the environment a test that
 * clears it could lose.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* The namespace flags of clone(); any one of them set makes the call fail. */
static const unsigned long ns_flags[] = {CLONE_NEWNS,	  CLONE_NEWUTS, CLONE_NEWIPC,
					 CLONE_NEWUSER,	  CLONE_NEWPID, CLONE_NEWNET,
					 CLONE_NEWCGROUP, CLONE_NEWTIME};

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -EIO;
}

/*
 * Replaces /proc/sys/kernel, in a mount namespace of our own, by a tmpfs holding
 * a copy of every readable file of the real one (ward reads pid_max there) plus
 * apparmor_restrict_unprivileged_userns = 1.
 */
static int fake_apparmor_sysctl(void)
{
	char *names[512], *values[512];
	size_t n = 0;
	DIR *d;
	struct dirent *de;
	int fd;

	d = opendir("/proc/sys/kernel");
	if (!d)
		return -errno;
	while ((de = readdir(d)) && n < 512) {
		char path[512], buf[4096];
		ssize_t len;

		if (de->d_type != DT_REG)
			continue;
		snprintf(path, sizeof(path), "/proc/sys/kernel/%s", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len < 0)
			continue;
		buf[len] = '\0';
		names[n] = strdup(de->d_name);
		values[n] = strdup(buf);
		if (!names[n] || !values[n])
			return -ENOMEM;
		n++;
	}
	closedir(d);
	if (unshare(CLONE_NEWNS) < 0)
		return -errno;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/proc/sys/kernel", "tmpfs", 0, "mode=0755") < 0)
		return -errno;
	for (size_t i = 0; i < n; i++) {
		char path[512];

		if (strcmp(names[i], "apparmor_restrict_unprivileged_userns") == 0)
			continue;
		snprintf(path, sizeof(path), "/proc/sys/kernel/%s", names[i]);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
		if (fd < 0 || write(fd, values[i], strlen(values[i])) < 0)
			return -errno;
		close(fd);
	}
	fd = open("/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
		  O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (fd < 0 || write(fd, "1\n", 2) != 2)
		return -errno;
	close(fd);
	return 0;
}

/*
 * Gets a private mount namespace: as root directly, as anyone else in a user
 * namespace of its own (uid mapped to itself), where the first process has
 * every capability until it execs as a non-root uid.
 */
static int private_mounts(void)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	char map[64];
	int r;

	if (uid != 0) {
		if (unshare(CLONE_NEWUSER) < 0)
			return -errno;
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
		r = write_file("/proc/self/setgroups", "deny");
		if (r == 0)
			r = write_file("/proc/self/uid_map", map);
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
		if (r == 0)
			r = write_file("/proc/self/gid_map", map);
		if (r < 0)
			return r;
	}
	if (unshare(CLONE_NEWNS) < 0)
		return -errno;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	return 0;
}

/* The masks of a container runtime's default /proc (what podman 4 and Docker hide). */
static int mask_proc(void)
{
	static const char *const masked[] = {"/proc/kcore",	    "/proc/keys",
					     "/proc/latency_stats", "/proc/timer_list",
					     "/proc/timer_stats",   "/proc/sched_debug"};
	int r = private_mounts(), n = 0;

	if (r < 0)
		return r;
	for (size_t k = 0; k < sizeof(masked) / sizeof(masked[0]); k++) {
		if (access(masked[k], F_OK) < 0)
			continue;
		if (mount("/dev/null", masked[k], NULL, MS_BIND, NULL) < 0)
			return -errno;
		n++;
	}
	if (mount("/proc/sys", "/proc/sys", NULL, MS_BIND | MS_REC, NULL) < 0 ||
	    mount(NULL, "/proc/sys", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
		return -errno;
	return n > 0 ? 0 : -ENOENT;
}

static int apparmor_restrict(void)
{
	uid_t uid = getuid();
	int r = getuid() == 0 ? 0 : private_mounts();

	if (r < 0)
		return r;
	r = fake_apparmor_sysctl();
	if (r < 0)
		return r;
	if (uid == 0) {
		/* An unprivileged user: the restriction does not concern root. */
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			return -errno;
	}
	return 0;
}

static bool no_pidfd_thread;

static bool option(const char *o, bool *userns_only, bool *no_landlock, bool *aa, bool *proc)
{
	if (strcmp(o, "--proc-masked") == 0)
		*proc = true;
	else if (strcmp(o, "--no-pidfd-thread") == 0)
		no_pidfd_thread = true;
	else if (strcmp(o, "--userns-only") == 0)
		*userns_only = true;
	else if (strcmp(o, "--no-landlock") == 0)
		*no_landlock = true;
	else if (strcmp(o, "--apparmor-restrict") == 0)
		*aa = true;
	else
		return false;
	return true;
}

int main(int argc, char **argv)
{
	bool userns_only = false, no_landlock = false, aa = false, proc = false;
	const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	char *exec_path = NULL;
	scmp_filter_ctx ctx;
	int i = 1, r;

	if (strcmp(base, "ward") == 0) {
		char conf[4096], buf[8192], *save = NULL, *nl;
		FILE *f;
		size_t len;

		snprintf(conf, sizeof(conf), "%s.conf", argv[0]);
		f = fopen(conf, "re");
		if (!f) {
			fprintf(stderr, "hardened-wrapper: started as ward without '%s': %s\n",
				conf, strerror(errno));
			return 125;
		}
		len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[len] = '\0';
		nl = strchr(buf, '\n');
		if (!nl) {
			fprintf(stderr, "hardened-wrapper: '%s' needs two lines\n", conf);
			return 125;
		}
		*nl = '\0';
		exec_path = strdup(buf);
		if (!exec_path)
			return 125;
		nl[1 + strcspn(nl + 1, "\n")] = '\0';
		for (char *t = strtok_r(nl + 1, " ", &save); t; t = strtok_r(NULL, " ", &save))
			if (!option(t, &userns_only, &no_landlock, &aa, &proc)) {
				fprintf(stderr, "hardened-wrapper: unknown option '%s'\n", t);
				return 125;
			}
		i = 0;
	} else {
		for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++)
			if (!option(argv[i], &userns_only, &no_landlock, &aa, &proc))
				break;
	}
	if (i >= argc) {
		fprintf(stderr,
			"usage: hardened-wrapper [--userns-only] [--no-landlock] "
			"[--apparmor-restrict] [--proc-masked] [--no-pidfd-thread] COMMAND [ARG...]\n");
		return 2;
	}
	if (aa) {
		r = apparmor_restrict();
		if (r < 0) {
			fprintf(stderr,
				"hardened-wrapper: cannot simulate the AppArmor restriction: %s\n",
				strerror(-r));
			return 125;
		}
	}
	if (proc) {
		r = mask_proc();
		if (r < 0) {
			fprintf(stderr, "hardened-wrapper: cannot mask parts of /proc: %s\n",
				strerror(-r));
			return 125;
		}
	}
	/* No filter at all: a runtime's profile that allows namespaces (and no_new_privs stays off). */
	if (proc && !no_landlock && !no_pidfd_thread)
		goto exec;
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx) {
		fprintf(stderr, "hardened-wrapper: seccomp_init failed\n");
		return 125;
	}
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (proc) {
		/* Only Landlock is refused (--no-landlock): namespaces are the runtime's to allow. */
	} else if (userns_only) {
		if (r == 0)
			r = seccomp_rule_add(
				ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
				SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
		if (r == 0)
			r = seccomp_rule_add(
				ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
	} else {
		if (r == 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0);
		if (r == 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setns), 0);
		/*
		 * One rule per flag, because "any of these bits set" is an OR of masked
		 * compares. clone()'s flags are its first argument on x86-64 and arm64
		 * (the second on s390x, which these tests do not target).
		 */
		for (size_t k = 0; r == 0 && k < sizeof(ns_flags) / sizeof(ns_flags[0]); k++)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
					     SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[k], ns_flags[k]));
	}
	/* PIDFD_THREAD is O_EXCL: any flag set is refused, as a kernel before 6.9 does. */
	if (r == 0 && no_pidfd_thread)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(pidfd_open), 1,
				     SCMP_A1(SCMP_CMP_MASKED_EQ, O_EXCL, O_EXCL));
	if (r == 0 && no_landlock) {
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(landlock_create_ruleset),
				     0);
		if (r == 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
					     SCMP_SYS(landlock_add_rule), 0);
		if (r == 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
					     SCMP_SYS(landlock_restrict_self), 0);
	}
	/*
	 * Unprivileged callers need no_new_privs to install a filter; root does
	 * not, and keeps setuid working (libseccomp would set it by default).
	 */
	if (r == 0 && geteuid() == 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (r == 0 && geteuid() != 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		r = -errno;
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	if (r < 0) {
		fprintf(stderr, "hardened-wrapper: cannot install the filter: %s\n", strerror(-r));
		return 125;
	}
exec:
	if (exec_path)
		execv(exec_path, argv);
	else
		execvp(argv[i], argv + i);
	fprintf(stderr, "hardened-wrapper: cannot execute '%s': %s\n",
		exec_path ? exec_path : argv[i], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
