/* SPDX-License-Identifier: MIT */
/*
 * The limits layer: the values of --memory, --pids, --cpu and --rlimit (and
 * the policy JSON's "limits"), the cgroup layouts a host can have (parsed
 * from fixtures of a hybrid host, a systemd machine, a legacy one and a
 * container), the rlimits (RLIMIT_NPROC counting one user namespace alone),
 * and, where this process may make cgroups (root on this hybrid host, a
 * delegated user on cgroup v2), a real sandbox cgroup: made, entered,
 * limited, hit, read, killed, removed.
 *
 * Every load is bounded: the memory hog stops by itself at twice its limit,
 * the fork loops at a few hundred processes, so that a broken limit cannot
 * take the test machine down.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/util.h"
#include "policy/policy.h"
#include "sandbox/limits.h"
#include "tap.h"

/* ------------------------------------------------------------------ values */

TEST(memory_sizes)
{
	uint64_t v = 0;

	ASSERT_OK(ward__limits_parse_memory("2G", "--memory", &v, NULL));
	ASSERT_EQ(v, 2ULL << 30);
	ASSERT_OK(ward__limits_parse_memory("512M", "--memory", &v, NULL));
	ASSERT_EQ(v, 512ULL << 20);
	ASSERT_OK(ward__limits_parse_memory("1.5G", "--memory", &v, NULL));
	ASSERT_EQ(v, 3ULL << 29);
	ASSERT_OK(ward__limits_parse_memory("64MiB", "--memory", &v, NULL));
	ASSERT_EQ(v, 64ULL << 20);
	ASSERT_OK(ward__limits_parse_memory("3GB", "--memory", &v, NULL));
	ASSERT_EQ(v, 3ULL << 30);
	ASSERT_OK(ward__limits_parse_memory("2g", "--memory", &v, NULL));
	ASSERT_EQ(v, 2ULL << 30);
	ASSERT_OK(ward__limits_parse_memory("1048576", "--memory", &v, NULL));
	ASSERT_EQ(v, 1048576);
	ASSERT_OK(ward__limits_parse_memory("1T", "--memory", &v, NULL));
	ASSERT_EQ(v, 1ULL << 40);
}

TEST(memory_nonsense_refused)
{
	static const char *const bad[] = {"0",	   "-1",  "12XB", "1.5", "",	"G",	   "12iB",
					  "1023K", "2 G", "0x10", "1e9", "1G1", "1.0001G", "0M"};
	uint64_t v = 7;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ward_error e = {0};

		if (ward__limits_parse_memory(bad[i], "--memory", &v, &e) >= 0)
			tap_fail(__FILE__, __LINE__, "'%s' was accepted", bad[i]);
		ASSERT_CONTAINS(e.message, "--memory");
		ASSERT_CONTAINS(e.message, bad[i]);
	}
	ASSERT_EQ(v, 7); /* untouched */
}

TEST(pids_counts)
{
	struct ward_error e = {0};
	uint64_t v = 0;

	ASSERT_OK(ward__limits_parse_pids("512", "--pids", &v, NULL));
	ASSERT_EQ(v, 512);
	ASSERT_OK(ward__limits_parse_pids("1", "--pids", &v, NULL));
	ASSERT_EQ(v, 1);
	ASSERT_EQ(ward__limits_parse_pids("0", "--pids", &v, &e), -ERANGE);
	ASSERT_CONTAINS(e.message, "invalid --pids '0'");
	ASSERT_EQ(ward__limits_parse_pids("-3", "--pids", &v, NULL), -EINVAL);
	ASSERT_EQ(ward__limits_parse_pids("12k", "--pids", &v, NULL), -EINVAL);
	ASSERT_EQ(ward__limits_parse_pids("99999999", "--pids", &v, NULL), -ERANGE);
}

TEST(cpu_fractions)
{
	unsigned cpus = ward__limits_host_cpus();
	struct ward_error e = {0};
	char too_many[32];
	uint32_t m = 0;

	ASSERT_GE(cpus, 1);
	ASSERT_OK(ward__limits_parse_cpu("0.5", "--cpu", &m, NULL));
	ASSERT_EQ(m, 500);
	ASSERT_OK(ward__limits_parse_cpu("1", "--cpu", &m, NULL));
	ASSERT_EQ(m, 1000);
	ASSERT_OK(ward__limits_parse_cpu("0.01", "--cpu", &m, NULL));
	ASSERT_EQ(m, 10);
	snprintf(too_many, sizeof(too_many), "%u", cpus + 1);
	ASSERT_EQ(ward__limits_parse_cpu(too_many, "--cpu", &m, &e), -ERANGE);
	ASSERT_CONTAINS(e.message, "this host has");
	snprintf(too_many, sizeof(too_many), "%u.001", cpus);
	ASSERT_EQ(ward__limits_parse_cpu(too_many, "--cpu", &m, NULL), -ERANGE);
	ASSERT_EQ(ward__limits_parse_cpu("0", "--cpu", &m, NULL), -ERANGE);
	ASSERT_EQ(ward__limits_parse_cpu("0.001", "--cpu", &m, NULL), -ERANGE);
	ASSERT_EQ(ward__limits_parse_cpu("-1", "--cpu", &m, NULL), -EINVAL);
	ASSERT_EQ(ward__limits_parse_cpu("1e0", "--cpu", &m, NULL), -EINVAL);
	ASSERT_EQ(ward__limits_parse_cpu("50%", "--cpu", &m, NULL), -EINVAL);
}

TEST(rlimit_values)
{
	struct ward__limits l = {0};
	struct ward_error e = {0};

	ASSERT_OK(ward__limits_parse_rlimit("nofile=1024", "--rlimit", &l, NULL));
	ASSERT_OK(ward__limits_parse_rlimit("core=0", "--rlimit", &l, NULL));
	ASSERT_OK(ward__limits_parse_rlimit("as=8G", "--rlimit", &l, NULL));
	ASSERT_OK(ward__limits_parse_rlimit("cpu=10", "--rlimit", &l, NULL));
	ASSERT_OK(ward__limits_parse_rlimit("fsize=1M", "--rlimit", &l, NULL));
	ASSERT_TRUE(l.rlimit_set[WARD_RLIMIT_NOFILE] && l.rlimit[WARD_RLIMIT_NOFILE] == 1024);
	ASSERT_TRUE(l.rlimit_set[WARD_RLIMIT_CORE] && l.rlimit[WARD_RLIMIT_CORE] == 0);
	ASSERT_EQ(l.rlimit[WARD_RLIMIT_AS], 8ULL << 30);
	ASSERT_EQ(l.rlimit[WARD_RLIMIT_CPU], 10);
	ASSERT_EQ(l.rlimit[WARD_RLIMIT_FSIZE], 1ULL << 20);
	ASSERT_EQ(ward__limits_parse_rlimit("bogus=1", "--rlimit", &l, &e), -EINVAL);
	ASSERT_CONTAINS(e.message, "as, core, cpu, fsize, nofile");
	ASSERT_EQ(ward__limits_parse_rlimit("nofile=0", "--rlimit", &l, NULL), -ERANGE);
	ASSERT_EQ(ward__limits_parse_rlimit("nofile=2", "--rlimit", &l, NULL), -ERANGE);
	ASSERT_EQ(ward__limits_parse_rlimit("cpu=0", "--rlimit", &l, NULL), -ERANGE);
	ASSERT_EQ(ward__limits_parse_rlimit("cpu=1.5", "--rlimit", &l, NULL), -EINVAL);
	ASSERT_EQ(ward__limits_parse_rlimit("nofile", "--rlimit", &l, NULL), -EINVAL);
	ASSERT_EQ(ward__limits_parse_rlimit("as=12XB", "--rlimit", &l, NULL), -EINVAL);
	ASSERT_TRUE(ward__limits_any(&l));
}

TEST(policy_json_limits)
{
	static const char doc[] =
		"{\"limits\": {\"memory\": \"2G\", \"pids\": 512, \"cpu\": 0.5,"
		" \"rlimits\": {\"core\": 0, \"nofile\": 4096}}, \"require_limits\": true}";
	struct ward_policy *p = NULL, *q = NULL;
	struct ward_error e = {0};
	json_t *j;
	char *s;

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_load_json(p, doc, strlen(doc), "t.json", &e));
	ASSERT_EQ(p->limits.memory, 2ULL << 30);
	ASSERT_EQ(p->limits.pids, 512);
	ASSERT_EQ(p->limits.cpu_milli, 500);
	ASSERT_TRUE(p->limits.require);
	ASSERT_TRUE(p->limits.rlimit_set[WARD_RLIMIT_CORE]);
	ASSERT_EQ(p->limits.rlimit[WARD_RLIMIT_NOFILE], 4096);
	/* A second document replaces what it names and keeps the rest. */
	ASSERT_OK(ward_policy_load_json(p, "{\"limits\": {\"pids\": \"64\"}}",
					strlen("{\"limits\": {\"pids\": \"64\"}}"), "u", &e));
	ASSERT_EQ(p->limits.pids, 64);
	ASSERT_EQ(p->limits.memory, 2ULL << 30);
	ASSERT_TRUE(p->limits.require);
	ASSERT_OK(ward_policy_copy(p, &q));
	ASSERT_TRUE(ward__limits_equal(&p->limits, &q->limits));
	j = ward__limits_to_json(&p->limits);
	s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
	ASSERT_STREQ(s,
		     "{\"cpu\":0.5,\"memory\":\"2G\",\"pids\":64,"
		     "\"rlimits\":{\"core\":\"0\",\"nofile\":4096}}");
	free(s);
	json_decref(j);

	/* Refused, with the field named, and nothing changed. */
	ASSERT_EQ(ward_policy_load_json(p, "{\"limits\": {\"memory\": 0}}",
					strlen("{\"limits\": {\"memory\": 0}}"), "v", &e),
		  -ERANGE);
	ASSERT_CONTAINS(e.message, "\"limits\".\"memory\"");
	ASSERT_EQ(ward_policy_load_json(p, "{\"limits\": {\"swap\": 1}}",
					strlen("{\"limits\": {\"swap\": 1}}"), "v", &e),
		  -EINVAL);
	ASSERT_CONTAINS(e.message, "unknown field");
	ASSERT_EQ(
		ward_policy_load_json(p, "{\"limits\": [1]}", strlen("{\"limits\": [1]}"), "v", &e),
		-EINVAL);
	ASSERT_EQ(ward_policy_load_json(p, "{\"limits\": {\"cpu\": \"1e3\"}}",
					strlen("{\"limits\": {\"cpu\": \"1e3\"}}"), "v", &e),
		  -EINVAL);
	ASSERT_EQ(p->limits.pids, 64);

	/* The public setter: the same words as the options. */
	ASSERT_OK(ward_policy_set_limit(p, "memory", "1G", NULL));
	ASSERT_EQ(p->limits.memory, 1ULL << 30);
	ASSERT_OK(ward_policy_set_limit(p, "rlimit-fsize", "10M", NULL));
	ASSERT_EQ(p->limits.rlimit[WARD_RLIMIT_FSIZE], 10ULL << 20);
	ASSERT_EQ(ward_policy_set_limit(p, "memory", "12XB", &e), -EINVAL);
	ASSERT_EQ(ward_policy_set_limit(p, "disk", "1G", &e), -EINVAL);
	ASSERT_OK(ward_policy_set_limit(p, "memory", NULL, NULL));
	ASSERT_EQ(p->limits.memory, 0);
	ward_policy_free(p);
	ward_policy_free(q);
}

/* ------------------------------------------------------------------ host layouts */

TEST(host_hybrid)
{
	/* This machine class: memory, pids, cpu on v1; v2 at /sys/fs/cgroup/unified, no controller. */
	static const char self[] = "9:name=systemd:/\n"
				   "8:pids:/\n"
				   "4:memory:/process_api/4ef6\n"
				   "2:cpuacct:/\n"
				   "1:cpu:/\n"
				   "0::/\n";
	static const char mounts[] =
		"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
		"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
		"33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
		"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
		"39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
		"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
		"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
	struct ward__cg_host h;

	ASSERT_OK(ward__cg_host_parse(self, mounts, &h));
	ASSERT_EQ(h.layout, WARD_CG_LAYOUT_HYBRID);
	ASSERT_STREQ(h.v2_mount, "/sys/fs/cgroup/unified");
	ASSERT_STREQ(h.v2_own, "/sys/fs/cgroup/unified");
	ASSERT_TRUE(h.v2_own_is_root);
	ASSERT_STREQ(h.v1_own[WARD_CG_MEMORY], "/sys/fs/cgroup/memory/process_api/4ef6");
	ASSERT_STREQ(h.v1_own[WARD_CG_PIDS], "/sys/fs/cgroup/pids");
	ASSERT_STREQ(h.v1_own[WARD_CG_CPU], "/sys/fs/cgroup/cpu");
	/* "cpuacct" is not "cpu": the list is matched item by item. */
	ASSERT_STREQ(h.v1_mount[WARD_CG_CPU], "/sys/fs/cgroup/cpu");
}

TEST(host_unified_systemd)
{
	static const char self[] = "0::/user.slice/user-1000.slice/session-2.scope\n";
	static const char mounts[] =
		"22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
		"26 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 "
		"cgroup2 rw,nsdelegate,memory_recursiveprot\n";
	struct ward__cg_host h;

	ASSERT_OK(ward__cg_host_parse(self, mounts, &h));
	ASSERT_EQ(h.layout, WARD_CG_LAYOUT_UNIFIED);
	ASSERT_STREQ(h.v2_own, "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope");
	ASSERT_FALSE(h.v2_own_is_root);
	ASSERT_STREQ(h.v1_mount[WARD_CG_MEMORY], "");
}

TEST(host_legacy_combined)
{
	/* cgroup v1 only, cpu and cpuacct on one hierarchy (older distributions). */
	static const char self[] = "7:cpu,cpuacct:/user.slice\n"
				   "5:memory:/user.slice/user-0.slice\n"
				   "3:pids:/user.slice/user-0.slice/session-1.scope\n"
				   "1:name=systemd:/user.slice/user-0.slice/session-1.scope\n";
	static const char mounts[] =
		"30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
		"31 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
		"32 25 0:28 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n";
	struct ward__cg_host h;

	ASSERT_OK(ward__cg_host_parse(self, mounts, &h));
	ASSERT_EQ(h.layout, WARD_CG_LAYOUT_LEGACY);
	ASSERT_STREQ(h.v1_own[WARD_CG_CPU], "/sys/fs/cgroup/cpu,cpuacct/user.slice");
	ASSERT_STREQ(h.v1_own[WARD_CG_PIDS],
		     "/sys/fs/cgroup/pids/user.slice/user-0.slice/session-1.scope");
	ASSERT_STREQ(h.v2_mount, "");
}

TEST(host_container)
{
	/*
	 * A container with a cgroup namespace: /proc/self/cgroup says "/", the
	 * mount's root is the namespace's root. A second bind of a subtree that
	 * does not hold the process is not taken.
	 */
	static const char self[] = "0::/\n";
	static const char mounts[] =
		"600 500 0:30 /other /mnt/elsewhere ro - cgroup2 cgroup2 rw\n"
		"601 500 0:30 / /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n";
	struct ward__cg_host h;

	ASSERT_OK(ward__cg_host_parse(self, mounts, &h));
	ASSERT_EQ(h.layout, WARD_CG_LAYOUT_UNIFIED);
	ASSERT_STREQ(h.v2_mount, "/sys/fs/cgroup");
	ASSERT_STREQ(h.v2_own, "/sys/fs/cgroup");
	ASSERT_EQ(ward__cg_ctrl_mask("cpuset cpu io memory hugetlb pids rdma misc\n"),
		  (1 << WARD_CG_MEMORY) | (1 << WARD_CG_PIDS) | (1 << WARD_CG_CPU));
	ASSERT_EQ(ward__cg_ctrl_mask("cpuset io\n"), 0);
	/* Nothing usable, but no failure either. */
	ASSERT_OK(ward__cg_host_parse("", "", &h));
	ASSERT_EQ(h.layout, WARD_CG_LAYOUT_NONE);
}

/* ------------------------------------------------------------------ rlimits */

TEST(rlimits_plan_and_apply)
{
	struct ward__limits l = {.pids = 9};
	struct ward__rlimits rl;
	struct rlimit got;
	pid_t pid;
	int st;

	ward__limits_parse_rlimit("nofile=64", "--rlimit", &l, NULL);
	ward__limits_parse_rlimit("core=0", "--rlimit", &l, NULL);
	ward__limits_parse_rlimit("cpu=30", "--rlimit", &l, NULL);
	ward__rlimits_plan(&l, false, &rl);
	ASSERT_EQ(rl.n, 3);
	ward__rlimits_plan(&l, true, &rl);
	ASSERT_EQ(rl.n, 4);
	ASSERT_EQ(rl.v[3].resource, RLIMIT_NPROC);
	ASSERT_EQ(rl.v[3].cur, 10); /* init counts */
	ASSERT_OK(ward__rlimits_check(&rl, NULL));
	ward__rlimits_plan(&l, false, &rl);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		if (ward__rlimits_apply(&rl, NULL) < 0)
			_exit(2);
		if (getrlimit(RLIMIT_NOFILE, &got) < 0 || got.rlim_cur != 64 || got.rlim_max != 64)
			_exit(3);
		if (getrlimit(RLIMIT_CORE, &got) < 0 || got.rlim_cur != 0 || got.rlim_max != 0)
			_exit(4);
		if (getrlimit(RLIMIT_CPU, &got) < 0 || got.rlim_cur != 30 || got.rlim_max != 31)
			_exit(5);
		/* The hard limit holds: the command cannot raise it back (unprivileged). */
		got.rlim_cur = got.rlim_max = 1000;
		if (geteuid() != 0 && setrlimit(RLIMIT_NOFILE, &got) == 0)
			_exit(6);
		_exit(0);
	}
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(WEXITSTATUS(st), 0);
}

/*
 * The pids limit's RLIMIT_NPROC never asks more than ward's own hard limit
 * (a container's --ulimit nproc): the command keeps that lower one, and the
 * start is not refused for a limit nobody asked for by name.
 */
TEST(nproc_pids_within_wards_own_hard_limit)
{
	struct ward__limits l = {.pids = 4096};
	struct ward__rlimits rl;
	struct rlimit low = {.rlim_cur = 100, .rlim_max = 100};
	pid_t pid;
	int st;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		if (setrlimit(RLIMIT_NPROC, &low) < 0)
			_exit(2);
		ward__rlimits_plan(&l, true, &rl);
		if (rl.n != 1 || rl.v[0].resource != RLIMIT_NPROC || rl.v[0].cur != 100 ||
		    rl.v[0].max != 100)
			_exit(3);
		if (ward__rlimits_check(&rl, NULL) < 0)
			_exit(4);
		/* Below ward's own, the limit asked for is the one given. */
		l.pids = 9;
		ward__rlimits_plan(&l, true, &rl);
		if (rl.v[0].cur != 10)
			_exit(5);
		_exit(0);
	}
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(WEXITSTATUS(st), 0);
}

/*
 * RLIMIT_NPROC set in a new user namespace counts that namespace's
 * processes: with the limit at 8, at most 7 children of the first process
 * exist at once, however many processes the user has elsewhere. As root the
 * child becomes uid 65534 first (root is exempt from RLIMIT_NPROC).
 */
TEST(nproc_counts_one_user_namespace)
{
	pid_t pid;
	int st, pfd[2];
	char buf[64] = "";

	ASSERT_EQ(pipe(pfd), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct rlimit lim = {8, 8};
		int made = 0, refused = 0;
		pid_t kids[64];

		close(pfd[0]);
		if (geteuid() == 0 &&
		    (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		     setresuid(65534, 65534, 65534) < 0))
			_exit(10);
		if (unshare(CLONE_NEWUSER) < 0)
			_exit(11); /* user namespaces refused here */
		if (setrlimit(RLIMIT_NPROC, &lim) < 0)
			_exit(12);
		for (int i = 0; i < 64; i++) {
			pid_t k = fork();

			if (k == 0) {
				pause();
				_exit(0);
			}
			if (k < 0) {
				refused++;
				break;
			}
			kids[made++] = k;
		}
		for (int i = 0; i < made; i++)
			kill(kids[i], SIGKILL);
		while (wait(NULL) > 0)
			;
		dprintf(pfd[1], "%d %d", made, refused);
		_exit(0);
	}
	close(pfd[1]);
	ASSERT_GE(read(pfd[0], buf, sizeof(buf) - 1), 0);
	close(pfd[0]);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT_TRUE(WIFEXITED(st));
	if (WEXITSTATUS(st) == 11)
		SKIP("user namespaces are refused here");
	ASSERT_EQ(WEXITSTATUS(st), 0);
	/* The first process and 7 children: the 8th fork is refused. */
	ASSERT_STREQ(buf, "7 1");
}

/* ------------------------------------------------------------------ a real cgroup */

/* Whether any cgroup filesystem (v1 or v2) is mounted where this process looks. */
static bool cgroupfs_mounted(void)
{
	_cleanup_free_ char *mi = NULL;

	if (ward__read_file("/proc/self/mountinfo", 1 << 20, &mi, NULL) < 0)
		return true;
	return strstr(mi, " - cgroup ") || strstr(mi, " - cgroup2 ");
}

/*
 * Skips unless this process can make sandbox cgroups with all three
 * controllers. A machine with no cgroup filesystem mounted at all (a plain
 * container) is the test machine's lack, not the kernel's: never a failure.
 */
static const struct ward__cg_base *need_cgroups(void)
{
	const struct ward__cg_base *b = ward__cg_base_get();

	if (!cgroupfs_mounted())
		SKIP_ENV("no cgroup filesystem is mounted here (a container without "
			 "/sys/fs/cgroup): the cgroup paths cannot be tried");

	for (int c = 0; c < WARD_CG_N; c++)
		if (b->how[c] == WARD_ENFORCE_NONE)
			SKIP("no %s cgroup for this user here: %s", ward__cg_ctrl_name(c), b->why);
	return b;
}

/*
 * A child made as a sandbox's first process is: cloned into the v2 cgroup,
 * entering the v1 ones itself.
 */
static pid_t fork_into(struct ward__cgroup *cg)
{
	long pid = ward__cgroup_clone(cg, 0, NULL);

	if (pid == 0 && ward__cgroup_enter(cg) < 0)
		_exit(100);
	return (pid_t)pid;
}

/* Forks a child into cg that runs fn; returns its wait status. */
static int run_in(struct ward__cgroup *cg, int (*fn)(void))
{
	pid_t pid = fork_into(cg);
	int st = 0;

	if (pid == 0)
		_exit(fn());
	if (pid < 0)
		return -1;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

/* Allocates and touches up to 128 MiB, 1 MiB at a time: stops by itself. */
static int hog(void)
{
	for (int i = 0; i < 128; i++) {
		char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);

		if (p == MAP_FAILED)
			return 3;
		memset(p, 1, 1 << 20);
	}
	return 0;
}

/* Forks children that wait, until a fork fails or 200 exist; exits with how many were made. */
static int forker(void)
{
	pid_t kids[200];
	int n = 0;

	for (; n < 200; n++) {
		kids[n] = fork();
		if (kids[n] == 0) {
			pause();
			_exit(0);
		}
		if (kids[n] < 0)
			break;
	}
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	return n;
}

static int in_cgroup(void)
{
	char buf[4096];

	return ward__read_small("/proc/self/cgroup", buf, sizeof(buf)) > 0 && strstr(buf, "/ward-")
		? 0
		: 4;
}

TEST_TIMEOUT(cgroup_memory_hog_killed, 60)
{
	struct ward__limits l = {.memory = 48ULL << 20};
	struct ward__cg_stats s;
	struct ward__cgroup cg;
	int st, efd;

	need_cgroups();
	ASSERT_OK(ward__cgroup_new(&l, NULL, &cg, NULL));
	ASSERT_TRUE(cg.active);
	ASSERT_NE(cg.how[WARD_CG_MEMORY], WARD_ENFORCE_NONE);
	ASSERT_EQ(cg.how[WARD_CG_PIDS], WARD_ENFORCE_NONE);
	st = run_in(&cg, in_cgroup);
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	st = run_in(&cg, hog);
	/* Killed by the kernel at the limit, never allowed to reach 128 MiB. */
	ASSERT_TRUE(WIFSIGNALED(st));
	ASSERT_EQ(WTERMSIG(st), SIGKILL);
	ward__cgroup_stats(&cg, &s);
	ASSERT_TRUE(s.have_memory);
	ASSERT_GE(s.oom_kills, 1);
	/* The kernel charges in per-CPU batches: the peak may pass the limit by a few pages. */
	ASSERT_LE(s.memory_peak, l.memory + (1 << 20));
	ASSERT_GE(s.memory_peak, l.memory / 2);
	efd = ward__cgroup_oom_fd(&cg);
	if (cg.how[WARD_CG_MEMORY] == WARD_ENFORCE_CGROUP1) {
		/* v1: the eventfd init polls was signalled. */
		struct pollfd p = {.fd = efd, .events = POLLIN};

		ASSERT_EQ(poll(&p, 1, 1000), 1);
	} else {
		ASSERT_EQ(efd, -1);
	}
	ASSERT_FALSE(ward__cgroup_populated(&cg));
	ASSERT_OK(ward__cgroup_remove(&cg, 1000));
	ward__cgroup_release(&cg);
}

TEST_TIMEOUT(cgroup_pids_refused, 60)
{
	struct ward__limits l = {.pids = 20};
	struct ward__cg_stats s;
	struct ward__cgroup cg;
	int st;

	need_cgroups();
	ASSERT_OK(ward__cgroup_new(&l, NULL, &cg, NULL));
	ASSERT_EQ(cg.pids_max, 21);
	st = run_in(&cg, forker);
	ASSERT_TRUE(WIFEXITED(st));
	/* The forker and its children: 21 in all (the limit counts init, which is absent here). */
	ASSERT_EQ(WEXITSTATUS(st), 20);
	ward__cgroup_stats(&cg, &s);
	ASSERT_GE(s.pids_refused, 1);
	if (s.have_pids_peak)
		ASSERT_EQ(s.pids_peak, 21);
	ward__cgroup_release(&cg);
}

static int sleeper_tree(void)
{
	/*
	 * A process that leaves a daemon behind (double fork), then waits; each
	 * ends by itself after a while should the test fail before the kill.
	 */
	alarm(60);
	if (fork() == 0) {
		setsid();
		if (fork() == 0) {
			alarm(60);
			for (;;)
				pause();
		}
		_exit(0);
	}
	for (;;)
		pause();
}

TEST_TIMEOUT(cgroup_kill_takes_daemons, 60)
{
	struct ward__limits l = {.pids = 64, .cpu_milli = 500};
	struct ward__cgroup cg;
	char buf[64];
	pid_t pid;
	int st = 0;

	need_cgroups();
	ASSERT_OK(ward__cgroup_new(&l, NULL, &cg, NULL));
	pid = fork_into(&cg);
	ASSERT_GE(pid, 0);
	if (pid == 0)
		sleeper_tree();
	/* Wait until the daemon exists (3 processes), bounded. */
	for (int i = 0; i < 200; i++) {
		struct ward__cg_stats s;

		ward__cgroup_stats(&cg, &s);
		if (s.have_pids_peak && s.pids_peak >= 3)
			break;
		usleep(10000);
	}
	ASSERT_TRUE(ward__cgroup_populated(&cg));
	ward__cgroup_kill(&cg);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT_TRUE(WIFSIGNALED(st));
	/* The cpu limit was written as asked: half of each 100 ms. */
	if (cg.v1_fd[WARD_CG_CPU] >= 0) {
		int fd = openat(cg.v1_fd[WARD_CG_CPU], "cpu.cfs_quota_us", O_RDONLY);

		ASSERT_GE(fd, 0);
		ASSERT_GE(read(fd, buf, sizeof(buf)), 1);
		ASSERT_EQ(strtol(buf, NULL, 10), 50000);
		close(fd);
	} else {
		int fd = openat(cg.v2_fd, "cpu.max", O_RDONLY);

		ASSERT_GE(fd, 0);
		ASSERT_GE(read(fd, buf, sizeof(buf)), 1);
		ASSERT_EQ(strncmp(buf, "50000 100000", 12), 0);
		close(fd);
	}
	/* The daemon, reparented away from us, is gone too. */
	ASSERT_OK(ward__cgroup_remove(&cg, 2000));
	ward__cgroup_release(&cg);
}

TEST_TIMEOUT(group_budget, 60)
{
	struct ward__limits l = {.memory = 64ULL << 20}, none = {0};
	struct ward__cgroup g, a, b;
	struct ward_error e = {0};
	struct ward__cg_stats s;
	int st;

	need_cgroups();
	ASSERT_OK(ward__cgroup_group_new(NULL, "test", 40ULL << 20, 16, &g, NULL));
	ASSERT_TRUE(g.active);
	ASSERT_TRUE(g.group);
	/* A sandbox with a limit of its own above the budget's: the budget wins. */
	ASSERT_OK(ward__cgroup_new(&l, &g, &a, NULL));
	st = run_in(&a, hog);
	ASSERT_TRUE(WIFSIGNALED(st));
	ward__cgroup_stats(&a, &s);
	ASSERT_GE(s.oom_kills, 1);
	ASSERT_LE(s.memory_peak, (40ULL << 20) + (1 << 20));
	ward__cgroup_bury(&a);
	/* One without limits of its own is counted in the budget all the same. */
	ASSERT_OK(ward__cgroup_new(&none, &g, &b, NULL));
	ASSERT_TRUE(b.active);
	st = run_in(&b, forker);
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(WEXITSTATUS(st), 15); /* the forker and 15 children: the budget's 16 */
	ASSERT_OK(ward__cgroup_admit(&g, 1, "the test's", &e));
	ward__cgroup_bury(&b);
	ward__cgroup_bury(&g);
	ward__cgroup_sweep();
}

TEST(sb_limits_report)
{
	struct ward__limits l = {.memory = 64ULL << 20, .pids = 32};
	struct ward__sb_limits sl;
	struct ward_error e = {0};
	const struct ward__cg_base *b = ward__cg_base_get();
	char missing[256];
	int r;

	ward__limits_parse_rlimit("nofile=256", "--rlimit", &l, NULL);
	ASSERT_OK(ward__sb_limits_setup(&l, true, NULL, &sl, &e));
	ASSERT_EQ(sl.how[WARD_RES_MEMORY], b->how[WARD_CG_MEMORY]);
	ASSERT_EQ(sl.how[WARD_RES_CPU], WARD_ENFORCE_NONE);
	ASSERT_EQ(sl.how[WARD_RES_RLIMIT0 + WARD_RLIMIT_NOFILE], WARD_ENFORCE_RLIMIT);
	if (b->how[WARD_CG_PIDS] != WARD_ENFORCE_NONE)
		ASSERT_EQ(sl.how[WARD_RES_PIDS], b->how[WARD_CG_PIDS]);
	else if (ward__rlimits_nproc_per_userns())
		ASSERT_EQ(sl.how[WARD_RES_PIDS], WARD_ENFORCE_RLIMIT);
	ward__sb_limits_missing(&sl, missing, sizeof(missing));
	if (b->how[WARD_CG_MEMORY] == WARD_ENFORCE_NONE)
		ASSERT_CONTAINS(missing, "the memory");
	else
		ASSERT_STREQ(missing, "");
	ward__sb_limits_release(&sl);

	/* --require-limits: refused when one is not enforced, with the reason. */
	l.require = true;
	r = ward__sb_limits_setup(&l, true, NULL, &sl, &e);
	if (b->how[WARD_CG_MEMORY] == WARD_ENFORCE_NONE) {
		ASSERT_EQ(r, -EPERM);
		ASSERT_CONTAINS(e.message, "the memory");
		ASSERT_CONTAINS(e.message, "--require-limits");
	} else {
		ASSERT_OK(r);
		ward__sb_limits_release(&sl);
	}
}

int main(void)
{
	return tap_main();
}
