/* SPDX-License-Identifier: MIT */
/*
 * One sandbox's cgroup: made beneath ward's subtree (cgroup-base.c) before
 * the sandbox's first process exists, limited, entered by that process
 * (CLONE_INTO_CGROUP on v2; on v1 the child writes itself into cgroup.procs
 * before it does anything else), left by init once the command is over,
 * killed as a whole, read, removed.
 *
 * DESIGN:
 *   - --memory caps memory and swap together: memory.max with
 *     memory.swap.max 0 on v2, memory.limit_in_bytes with
 *     memory.memsw.limit_in_bytes at the same value on v1. A sandbox at its
 *     limit dies quickly instead of driving the host into swap.
 *   - memory.high a thirty-second below memory.max: the kernel starts
 *     reclaiming (page cache first) before the wall, and memory.events
 *     counts the pressure. Not lower: above memory.high the kernel also
 *     holds each allocation back by a penalty that grows with the square of
 *     the overage (mm/memcontrol.c, calculate_high_delay), which at E2B's 90%
 *     reaches most of a second per batch of pages; a hog between 90% and the
 *     limit was held there for tens of seconds before the kill. A 1/32 margin
 *     keeps the penalty under the kernel's 10 ms threshold nearly all the way.
 *   - memory.oom.group: at the limit the whole sandbox dies together (a
 *     half-killed build is worse than a dead one). v1 has no such knob: an
 *     eventfd on memory.oom_control wakes the sandbox's init, which kills
 *     the rest.
 *   - --pids N counts the command's processes and threads; the cgroup
 *     holds ward's init too, so pids.max is N + 1.
 *   - What the run hit is read from memory.events, pids.events and
 *     memory.oom_control, never guessed from an exit status.
 *   - init leaves for ward's own cgroup once everything else is dead, so the
 *     directory can be removed the moment init reports, not after init's
 *     own exit (which waits for the namespaces to be torn down).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sched.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/util.h"
#include "sandbox/limits.h"

static size_t n_graves;

static void cgroup_reset(struct ward__cgroup *cg)
{
	*cg = (struct ward__cgroup){
		.v2_fd = -1, .v1_oom_fd = -1, .v2_parent_fd = -1, .v2_leave_fd = -1};
	for (int c = 0; c < WARD_CG_N; c++)
		cg->v1_fd[c] = cg->v1_join_fd[c] = cg->v1_parent_fd[c] = cg->v1_leave_fd[c] = -1;
}

static int write_fd_at(int dfd, const char *file, const char *s)
{
	int fd = openat(dfd, file, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int r = 0;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	if (n < 0)
		r = -errno;
	else if ((size_t)n != strlen(s))
		r = -EIO;
	close(fd);
	return r;
}

static ssize_t read_fd_at(int dfd, const char *file, char *buf, size_t size)
{
	int fd = openat(dfd, file, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

/* The value of "key N" in a flat-keyed file (memory.events, cpu.stat...). */
static bool keyed(const char *text, const char *key, uint64_t *ret)
{
	size_t kl = strlen(key);

	for (const char *p = text; *p;) {
		if (strncmp(p, key, kl) == 0 && p[kl] == ' ') {
			*ret = strtoull(p + kl + 1, NULL, 10);
			return true;
		}
		p = strchrnul(p, '\n');
		if (*p)
			p++;
	}
	return false;
}

static bool read_u64_at(int dfd, const char *file, uint64_t *ret)
{
	char buf[64];

	if (read_fd_at(dfd, file, buf, sizeof(buf)) <= 0 || buf[0] < '0' || buf[0] > '9')
		return false;
	*ret = strtoull(buf, NULL, 10);
	return true;
}

/*
 * mkdir, once more after removing an empty directory of the same name: what
 * a ward that died with the same pid left behind.
 */
static int make_dir(int parent, const char *name)
{
	if (mkdirat(parent, name, 0755) == 0)
		return 0;
	if (errno != EEXIST || unlinkat(parent, name, AT_REMOVEDIR) < 0)
		return -errno;
	return mkdirat(parent, name, 0755) < 0 ? -errno : 0;
}

static int fail(struct ward_error *err, int r, const char *what, const char *dir, const char *name)
{
	return ward__error(err, r, "limits", "cannot %s the sandbox's cgroup '%s/%s': %m", what,
			   dir, name);
}

static int limit_v2(struct ward__cgroup *cg, const struct ward__cg_base *b, bool group,
		    struct ward_error *err)
{
	char v[64];
	int r;

	if (cg->how[WARD_CG_MEMORY] == WARD_ENFORCE_CGROUP2) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)cg->memory_max);
		r = write_fd_at(cg->v2_fd, "memory.max", v);
		if (r < 0)
			return fail(err, r, "set memory.max in", b->v2_path, cg->name);
		/* A group's total is a wall only: throttling is each sandbox's own business. */
		snprintf(v, sizeof(v), "%llu",
			 (unsigned long long)(cg->memory_max - cg->memory_max / 32));
		r = group ? 0 : write_fd_at(cg->v2_fd, "memory.high", v);
		if (r < 0)
			return fail(err, r, "set memory.high in", b->v2_path, cg->name);
		/* No swap file on the host, or no swap accounting: nothing to cap. */
		r = write_fd_at(cg->v2_fd, "memory.swap.max", "0");
		if (r < 0 && r != -ENOENT)
			return fail(err, r, "set memory.swap.max in", b->v2_path, cg->name);
		/*
		 * A group's OOM kills within it; memory.oom.group of the victim's own
		 * sandbox then takes that sandbox whole, and no other.
		 */
		r = group ? 0 : write_fd_at(cg->v2_fd, "memory.oom.group", "1");
		if (r < 0)
			return fail(err, r, "set memory.oom.group in", b->v2_path, cg->name);
	}
	if (cg->how[WARD_CG_PIDS] == WARD_ENFORCE_CGROUP2) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)cg->pids_max);
		r = write_fd_at(cg->v2_fd, "pids.max", v);
		if (r < 0)
			return fail(err, r, "set pids.max in", b->v2_path, cg->name);
	}
	if (cg->how[WARD_CG_CPU] == WARD_ENFORCE_CGROUP2) {
		/* A quota per 100 ms period: 0.5 CPU is 50 ms of each 100. */
		snprintf(v, sizeof(v), "%u 100000", cg->cpu_milli * 100);
		r = write_fd_at(cg->v2_fd, "cpu.max", v);
		if (r < 0)
			return fail(err, r, "set cpu.max in", b->v2_path, cg->name);
	}
	return 0;
}

static int limit_v1(struct ward__cgroup *cg, enum ward__cg_ctrl c, const struct ward__cg_base *b,
		    bool group, struct ward_error *err)
{
	int dfd = cg->v1_fd[c];
	char v[64];
	int r = 0;

	switch (c) {
	case WARD_CG_MEMORY:
		snprintf(v, sizeof(v), "%llu", (unsigned long long)cg->memory_max);
		r = write_fd_at(dfd, "memory.limit_in_bytes", v);
		if (r < 0)
			return fail(err, r, "set memory.limit_in_bytes in", b->v1_path[c],
				    cg->name);
		/* memory+swap: only where the kernel accounts swap (swapaccount=1). */
		r = write_fd_at(dfd, "memory.memsw.limit_in_bytes", v);
		if (r < 0 && r != -ENOENT)
			return fail(err, r, "set memory.memsw.limit_in_bytes in", b->v1_path[c],
				    cg->name);
		if (!group) {
			/* cgroup.event_control: "<eventfd> <fd of memory.oom_control>". */
			int ofd = openat(dfd, "memory.oom_control", O_RDONLY | O_CLOEXEC);
			int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

			r = 0;
			if (ofd >= 0 && efd >= 0) {
				snprintf(v, sizeof(v), "%d %d", efd, ofd);
				r = write_fd_at(dfd, "cgroup.event_control", v);
			}
			if (ofd >= 0)
				close(ofd);
			if (r < 0 || efd < 0 || ofd < 0) {
				if (efd >= 0)
					close(efd);
				return fail(err, r < 0 ? r : -errno, "watch memory.oom_control in",
					    b->v1_path[c], cg->name);
			}
			cg->v1_oom_fd = efd;
		}
		return 0;
	case WARD_CG_PIDS:
		snprintf(v, sizeof(v), "%llu", (unsigned long long)cg->pids_max);
		r = write_fd_at(dfd, "pids.max", v);
		if (r < 0)
			return fail(err, r, "set pids.max in", b->v1_path[c], cg->name);
		return 0;
	case WARD_CG_CPU:
		r = write_fd_at(dfd, "cpu.cfs_period_us", "100000");
		if (r >= 0) {
			snprintf(v, sizeof(v), "%u", cg->cpu_milli * 100);
			r = write_fd_at(dfd, "cpu.cfs_quota_us", v);
		}
		if (r < 0)
			return fail(err, r, "set cpu.cfs_quota_us in", b->v1_path[c], cg->name);
		return 0;
	case WARD_CG_N:
		break;
	}
	return 0;
}

/* The first controller before c on the same v1 hierarchy directory (one mkdir, one join), or -1. */
static int same_v1_dir(const struct ward__cg_base *b, const struct ward__cgroup *cg,
		       enum ward__cg_ctrl c)
{
	for (int d = 0; d < (int)c; d++)
		if (cg->v1_fd[d] >= 0 && strcmp(b->v1_path[d], b->v1_path[c]) == 0)
			return d;
	return -1;
}

/*
 * Makes a cgroup named cg->name beneath parent (a budget group) or ward's
 * subtree: in v2 where the subtree is v2, in each v1 hierarchy it uses for
 * a controller of mask (a sandbox beneath a group joins all the group's, so
 * that the group counts its processes). limit(cg, c) writes the limit of
 * controller c when its bit is in set.
 */
static int make_cgroup(const struct ward__cgroup *parent, unsigned mask, unsigned set, bool group,
		       struct ward__cgroup *cg, struct ward_error *err)
{
	const struct ward__cg_base *b = ward__cg_base_get();
	int v2_parent = parent && parent->active ? parent->v2_fd : b->v2_fd;
	int r;

	cg->v2_parent_fd = v2_parent;
	cg->v2_leave_fd = b->v2_leave_fd;
	if (v2_parent >= 0) {
		r = make_dir(v2_parent, cg->name);
		if (r < 0)
			return fail(err, r, "make", b->v2_path, cg->name);
		cg->active = true;
		cg->v2_fd = openat(v2_parent, cg->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (cg->v2_fd < 0)
			return fail(err, -errno, "open", b->v2_path, cg->name);
		for (int c = 0; c < WARD_CG_N; c++)
			if ((set & (1u << c)) && b->how[c] == WARD_ENFORCE_CGROUP2)
				cg->how[c] = WARD_ENFORCE_CGROUP2;
		if (group) {
			/* A group holds cgroups, never processes: its children get the controllers. */
			for (int c = 0; c < WARD_CG_N; c++) {
				char cmd[16];

				if (b->how[c] != WARD_ENFORCE_CGROUP2)
					continue;
				snprintf(cmd, sizeof(cmd), "+%s", ward__cg_ctrl_name(c));
				r = write_fd_at(cg->v2_fd, "cgroup.subtree_control", cmd);
				if (r < 0)
					return fail(err, r, "enable controllers in", b->v2_path,
						    cg->name);
			}
		}
		r = limit_v2(cg, b, group, err);
		if (r < 0)
			return r;
	}
	for (int c = 0; c < WARD_CG_N; c++) {
		int pfd = parent && parent->active ? parent->v1_fd[c] : b->v1_fd[c];
		int same;

		if (!(mask & (1u << c)) || b->how[c] != WARD_ENFORCE_CGROUP1 || pfd < 0)
			continue;
		cg->v1_parent_fd[c] = pfd;
		same = same_v1_dir(b, cg, c);
		if (same >= 0) {
			cg->v1_fd[c] = fcntl(cg->v1_fd[same], F_DUPFD_CLOEXEC, 3);
		} else {
			r = make_dir(pfd, cg->name);
			if (r < 0)
				return fail(err, r, "make", b->v1_path[c], cg->name);
			cg->active = true;
			cg->v1_fd[c] = openat(pfd, cg->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (cg->v1_fd[c] >= 0 && !group) {
				cg->v1_leave_fd[c] = b->v1_leave_fd[c];
				cg->v1_join_fd[c] =
					openat(cg->v1_fd[c], "cgroup.procs", O_WRONLY | O_CLOEXEC);
			}
		}
		if (cg->v1_fd[c] < 0 || (same < 0 && !group && cg->v1_join_fd[c] < 0))
			return fail(err, -errno, "open", b->v1_path[c], cg->name);
		if (set & (1u << c)) {
			cg->how[c] = WARD_ENFORCE_CGROUP1;
			r = limit_v1(cg, c, b, group, err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static unsigned limits_mask(const struct ward__limits *l)
{
	return (l->memory ? 1u << WARD_CG_MEMORY : 0) | (l->pids ? 1u << WARD_CG_PIDS : 0) |
		(l->cpu_milli ? 1u << WARD_CG_CPU : 0);
}

int ward__cgroup_new(const struct ward__limits *l, const struct ward__cgroup *parent,
		     struct ward__cgroup *cg, struct ward_error *err)
{
	static unsigned counter;
	bool in_group = parent && parent->active;
	unsigned set = limits_mask(l);
	int r;

	cgroup_reset(cg);
	/* Nothing to limit, and no budget to count it in: no cgroup at all (ward run's default). */
	if (!set && !in_group)
		return 0;
	if (n_graves > 0)
		ward__cgroup_sweep();
	snprintf(cg->name, sizeof(cg->name), "ward-%d-%u", (int)getpid(), ++counter);
	cg->memory_max = l->memory;
	cg->pids_max = l->pids + 1;
	cg->cpu_milli = l->cpu_milli;
	r = make_cgroup(parent, in_group ? (1u << WARD_CG_N) - 1 : set, set, false, cg, err);
	if (r < 0)
		ward__cgroup_release(cg);
	return r;
}

int ward__cgroup_group_new(const struct ward__cgroup *parent, const char *name, uint64_t memory,
			   uint64_t pids, struct ward__cgroup *cg, struct ward_error *err)
{
	unsigned set = (memory ? 1u << WARD_CG_MEMORY : 0) | (pids ? 1u << WARD_CG_PIDS : 0);
	int r;

	cgroup_reset(cg);
	snprintf(cg->name, sizeof(cg->name), "ward-%d-%s", (int)getpid(), name);
	cg->memory_max = memory;
	cg->pids_max = pids;
	r = make_cgroup(parent, (1u << WARD_CG_N) - 1, set, true, cg, err);
	if (r < 0)
		ward__cgroup_release(cg);
	else
		cg->group = true;
	return r;
}

/* What a new sandbox needs at least to start beneath a group: its init and its command. */
#define ADMIT_MEMORY ((uint64_t)16 << 20)
#define ADMIT_PIDS 2

int ward__cgroup_admit(const struct ward__cgroup *g, unsigned sandboxes, const char *whose,
		       struct ward_error *err)
{
	uint64_t mem = 0, pids = 0;
	char a[32], b[32];

	if (!g || !g->active || ward__cgroup_current(g, &mem, &pids) < 0)
		return 0;
	if (g->memory_max && mem + ADMIT_MEMORY * sandboxes > g->memory_max) {
		ward__error(err, -EDQUOT, "limits",
			    "%s memory budget is spent: %s of %s in use by its processes", whose,
			    ward__limits_format_size(mem, a, sizeof(a)),
			    ward__limits_format_size(g->memory_max, b, sizeof(b)));
		ward__error_hint(err, "wait for a process to end, or end one");
		return -EDQUOT;
	}
	if (g->pids_max && pids + ADMIT_PIDS * sandboxes > g->pids_max) {
		ward__error(err, -EDQUOT, "limits",
			    "%s process budget is spent: %llu of %llu processes and threads in use",
			    whose, (unsigned long long)pids, (unsigned long long)g->pids_max);
		ward__error_hint(err, "wait for a process to end, or end one");
		return -EDQUOT;
	}
	return 0;
}

int ward__cgroup_current(const struct ward__cgroup *cg, uint64_t *ret_memory, uint64_t *ret_pids)
{
	*ret_memory = *ret_pids = 0;
	if (!cg->active)
		return -ENOENT;
	if (cg->v2_fd >= 0) {
		read_u64_at(cg->v2_fd, "memory.current", ret_memory);
		read_u64_at(cg->v2_fd, "pids.current", ret_pids);
	}
	if (cg->v1_fd[WARD_CG_MEMORY] >= 0)
		read_u64_at(cg->v1_fd[WARD_CG_MEMORY], "memory.usage_in_bytes", ret_memory);
	if (cg->v1_fd[WARD_CG_PIDS] >= 0)
		read_u64_at(cg->v1_fd[WARD_CG_PIDS], "pids.current", ret_pids);
	return 0;
}

size_t ward__cgroup_child_fds(const struct ward__cgroup *cg, int *fds, size_t max)
{
	size_t n = 0;

	if (!cg->active)
		return 0;
	if (cg->v2_fd >= 0 && n + 3 <= max) {
		fds[n++] = cg->v2_fd;
		if (cg->v2_leave_fd >= 0)
			fds[n++] = cg->v2_leave_fd;
		if (cg->v2_parent_fd >= 0)
			fds[n++] = cg->v2_parent_fd;
	}
	for (int c = 0; c < WARD_CG_N && n + 4 <= max; c++) {
		if (cg->v1_fd[c] < 0)
			continue;
		fds[n++] = cg->v1_fd[c];
		if (cg->v1_parent_fd[c] >= 0)
			fds[n++] = cg->v1_parent_fd[c];
		if (cg->v1_join_fd[c] >= 0)
			fds[n++] = cg->v1_join_fd[c];
		if (cg->v1_join_fd[c] >= 0 && cg->v1_leave_fd[c] >= 0)
			fds[n++] = cg->v1_leave_fd[c];
	}
	if (cg->v1_oom_fd >= 0 && n < max)
		fds[n++] = cg->v1_oom_fd;
	return n;
}

int ward__cgroup_enter(const struct ward__cgroup *cg)
{
	int r = 0;

	for (int c = 0; c < WARD_CG_N; c++) {
		if (cg->v1_join_fd[c] < 0)
			continue;
		/* "0" is the writer itself (cgroup.procs: the whole thread group). */
		if (write(cg->v1_join_fd[c], "0", 1) != 1 && r == 0)
			r = -errno;
		close(cg->v1_join_fd[c]);
	}
	return r;
}

void ward__cgroup_leave(const struct ward__cgroup *cg)
{
	if (cg->v2_fd >= 0 && cg->v2_leave_fd >= 0)
		(void)!write(cg->v2_leave_fd, "0", 1);
	for (int c = 0; c < WARD_CG_N; c++)
		if (cg->v1_leave_fd[c] >= 0)
			(void)!write(cg->v1_leave_fd[c], "0", 1);
	/* Empty now: the directories go (through the host's mount, which the fds lead to). */
	if (cg->v2_fd >= 0 && cg->v2_parent_fd >= 0)
		unlinkat(cg->v2_parent_fd, cg->name, AT_REMOVEDIR);
	for (int c = 0; c < WARD_CG_N; c++)
		if (cg->v1_parent_fd[c] >= 0)
			unlinkat(cg->v1_parent_fd[c], cg->name, AT_REMOVEDIR);
}

int ward__cgroup_oom_fd(const struct ward__cgroup *cg)
{
	return cg->v1_oom_fd;
}

/* Sends SIGKILL to every process cgroup.procs of dfd lists; returns how many were listed. */
static size_t kill_listed(int dfd)
{
	char buf[8192];
	size_t n = 0;
	int fd = openat(dfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	ssize_t len;
	size_t keep = 0;

	if (fd < 0)
		return 0;
	while ((len = read(fd, buf + keep, sizeof(buf) - 1 - keep)) > 0) {
		char *p = buf, *end = buf + keep + len, *nl;

		*end = '\0';
		while ((nl = memchr(p, '\n', (size_t)(end - p)))) {
			long pid = strtol(p, NULL, 10);

			if (pid > 0) {
				kill((pid_t)pid, SIGKILL);
				n++;
			}
			p = nl + 1;
		}
		keep = (size_t)(end - p);
		memmove(buf, p, keep);
	}
	close(fd);
	return n;
}

void ward__cgroup_kill(struct ward__cgroup *cg)
{
	if (!cg->active || cg->killed)
		return;
	cg->killed = true;
	/* cgroup.kill (5.14): one write, race-free against forks and migrations. */
	if (cg->v2_fd >= 0 && write_fd_at(cg->v2_fd, "cgroup.kill", "1") >= 0)
		return;
	/*
	 * Without it, every process listed, a few rounds for the ones forked
	 * meanwhile (the pids limit bounds them; the pid namespace's end takes
	 * what is left).
	 */
	for (int round = 0; round < 16; round++) {
		size_t n = 0;

		if (cg->v2_fd >= 0)
			n += kill_listed(cg->v2_fd);
		for (int c = 0; c < WARD_CG_N; c++)
			if (cg->v1_fd[c] >= 0)
				n += kill_listed(cg->v1_fd[c]);
		if (n == 0)
			break;
	}
}

void ward__cgroup_stats(const struct ward__cgroup *cg, struct ward__cg_stats *s)
{
	char buf[1024];
	uint64_t v;

	*s = (struct ward__cg_stats){0};
	if (!cg->active)
		return;
	if (cg->v2_fd >= 0) {
		if (read_u64_at(cg->v2_fd, "memory.peak", &s->memory_peak))
			s->have_memory = true;
		if (read_fd_at(cg->v2_fd, "memory.events", buf, sizeof(buf)) > 0) {
			if (keyed(buf, "oom_kill", &v))
				s->oom_kills = v;
			if (keyed(buf, "oom_group_kill", &v) && v > 0 && s->oom_kills == 0)
				s->oom_kills = v;
			if (keyed(buf, "high", &v))
				s->memory_high_events = v;
		}
		if (read_u64_at(cg->v2_fd, "pids.peak", &s->pids_peak))
			s->have_pids_peak = true;
		if (read_fd_at(cg->v2_fd, "pids.events", buf, sizeof(buf)) > 0 &&
		    keyed(buf, "max", &v))
			s->pids_refused = v;
		if (read_fd_at(cg->v2_fd, "cpu.stat", buf, sizeof(buf)) > 0) {
			if (keyed(buf, "user_usec", &s->cpu_user_us) &&
			    keyed(buf, "system_usec", &s->cpu_system_us))
				s->have_cpu = true;
			if (keyed(buf, "throttled_usec", &v))
				s->cpu_throttled_us = v;
		}
	}
	if (cg->v1_fd[WARD_CG_MEMORY] >= 0) {
		int dfd = cg->v1_fd[WARD_CG_MEMORY];

		if (read_u64_at(dfd, "memory.max_usage_in_bytes", &s->memory_peak))
			s->have_memory = true;
		if (read_fd_at(dfd, "memory.oom_control", buf, sizeof(buf)) > 0 &&
		    keyed(buf, "oom_kill", &v))
			s->oom_kills = v;
	}
	if (cg->v1_fd[WARD_CG_PIDS] >= 0) {
		int dfd = cg->v1_fd[WARD_CG_PIDS];

		if (read_u64_at(dfd, "pids.peak", &s->pids_peak))
			s->have_pids_peak = true;
		if (read_fd_at(dfd, "pids.events", buf, sizeof(buf)) > 0 && keyed(buf, "max", &v))
			s->pids_refused = v;
	}
	if (cg->v1_fd[WARD_CG_CPU] >= 0 &&
	    read_fd_at(cg->v1_fd[WARD_CG_CPU], "cpu.stat", buf, sizeof(buf)) > 0 &&
	    keyed(buf, "throttled_time", &v))
		s->cpu_throttled_us = v / 1000;
}

bool ward__cgroup_populated(const struct ward__cgroup *cg)
{
	char buf[256];

	if (!cg->active)
		return false;
	if (cg->v2_fd >= 0 && read_fd_at(cg->v2_fd, "cgroup.events", buf, sizeof(buf)) > 0) {
		uint64_t v = 0;

		return keyed(buf, "populated", &v) && v != 0;
	}
	for (int c = 0; c < WARD_CG_N; c++)
		if (cg->v1_fd[c] >= 0 &&
		    read_fd_at(cg->v1_fd[c], "cgroup.procs", buf, sizeof(buf)) > 0)
			return true;
	return false;
}

/* Waits until the cgroup is empty or the deadline (ms, monotonic) passes. */
static void wait_empty(const struct ward__cgroup *cg, uint64_t deadline)
{
	int efd = cg->v2_fd >= 0 ? openat(cg->v2_fd, "cgroup.events", O_RDONLY | O_CLOEXEC) : -1;

	while (ward__cgroup_populated(cg)) {
		uint64_t now = ward__now_ms();

		if (now >= deadline)
			break;
		if (efd >= 0) {
			/* cgroup.events is modified (POLLPRI) when "populated" flips. */
			struct pollfd p = {.fd = efd, .events = POLLPRI};
			char buf[128];

			if (pread(efd, buf, sizeof(buf), 0) < 0)
				break;
			poll(&p, 1, (int)MIN(deadline - now, 50));
		} else {
			usleep(1000);
		}
	}
	if (efd >= 0)
		close(efd);
}

int ward__cgroup_remove(struct ward__cgroup *cg, int timeout_ms)
{
	uint64_t deadline = ward__now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	int r = 0;

	if (!cg->active)
		return 0;
	if (timeout_ms > 0)
		wait_empty(cg, deadline);
	if (cg->v2_fd >= 0 && cg->v2_parent_fd >= 0 &&
	    unlinkat(cg->v2_parent_fd, cg->name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		r = -errno;
	for (int c = 0; c < WARD_CG_N; c++)
		if (cg->v1_parent_fd[c] >= 0 &&
		    unlinkat(cg->v1_parent_fd[c], cg->name, AT_REMOVEDIR) < 0 && errno != ENOENT &&
		    r == 0)
			r = -errno;
	if (r == 0)
		cg->active = false;
	return r;
}

void ward__cgroup_release(struct ward__cgroup *cg)
{
	if (cg->active && !cg->group && ward__cgroup_populated(cg))
		ward__cgroup_kill(cg);
	ward__cgroup_remove(cg, 1000);
	if (cg->v2_fd >= 0)
		close(cg->v2_fd);
	for (int c = 0; c < WARD_CG_N; c++) {
		if (cg->v1_fd[c] >= 0)
			close(cg->v1_fd[c]);
		if (cg->v1_join_fd[c] >= 0)
			close(cg->v1_join_fd[c]);
	}
	if (cg->v1_oom_fd >= 0)
		close(cg->v1_oom_fd);
	cgroup_reset(cg);
}

/* ------------------------------------------------------------ the clone */

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

long ward__cgroup_clone(const struct ward__cgroup *cg, unsigned long flags, int *ret_pidfd)
{
	long pid;

	if (cg && cg->v2_fd >= 0) {
		/*
		 * clone3 with a NULL stack is fork(): the child runs on a copy of
		 * this stack. The exit signal is a field of its own here.
		 */
		struct clone_args args = {
			.flags = (uint64_t)flags | CLONE_INTO_CGROUP,
			.pidfd = (uint64_t)(uintptr_t)ret_pidfd,
			.exit_signal = SIGCHLD,
			.cgroup = (uint64_t)cg->v2_fd,
		};

		pid = syscall(SYS_clone3, &args, sizeof(args));
		if (pid >= 0 || errno != ENOSYS)
			return pid < 0 ? -errno : pid;
		/*
		 * A seccomp filter that cannot read clone3's arguments in memory
		 * refuses it with ENOSYS, so that callers fall back to clone:
		 * systemd's RestrictNamespaces= does (ward serve's units use it).
		 * Then the child waits on a pipe until ward has moved it in, so
		 * that nothing it starts runs outside: only what its first steps
		 * allocated is charged to ward's own cgroup.
		 */
		int sync[2], r = 0;
		char b = 0;

		if (pipe2(sync, O_CLOEXEC) < 0)
			return -errno;
		pid = syscall(SYS_clone, flags | SIGCHLD, NULL, ret_pidfd, NULL, 0);
		if (pid == 0) {
			close(sync[1]);
			while (read(sync[0], &b, 1) < 0 && errno == EINTR)
				;
			close(sync[0]);
			return 0;
		}
		r = pid < 0 ? -errno : 0;
		close(sync[0]);
		if (pid > 0) {
			int fd = openat(cg->v2_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC);

			r = fd < 0 || dprintf(fd, "%ld\n", pid) < 0 ? -errno : 0;
			if (fd >= 0)
				close(fd);
			if (r < 0) {
				kill((pid_t)pid, SIGKILL);
				close(sync[1]);
				while (waitpid((pid_t)pid, NULL, 0) < 0 && errno == EINTR)
					;
				if (ret_pidfd && *ret_pidfd >= 0)
					close(*ret_pidfd);
				return r;
			}
			(void)!write(sync[1], &b, 1);
		}
		close(sync[1]);
		return pid < 0 ? r : pid;
	} else {
		pid = syscall(SYS_clone, flags | SIGCHLD, NULL, ret_pidfd, NULL, 0);
	}
	return pid < 0 ? -errno : pid;
}

/* ------------------------------------------------------------ burial */

/*
 * Cgroups whose last processes were still exiting when their sandbox was
 * let go: their directories, removed by a later sweep. Bounded: past it a
 * burial waits for its own removal instead.
 */
#define GRAVES_MAX 1024

struct grave {
	int parent_fd[WARD_CG_N + 1]; /* not owned: the subtree's (v2 first, then v1) */
	char name[64];
};

static struct grave *graves;
static bool sweep_at_exit;

static bool grave_remove(struct grave *g)
{
	bool gone = true;

	for (int i = 0; i < WARD_CG_N + 1; i++) {
		if (g->parent_fd[i] < 0)
			continue;
		if (unlinkat(g->parent_fd[i], g->name, AT_REMOVEDIR) == 0 || errno == ENOENT)
			g->parent_fd[i] = -1;
		else
			gone = false;
	}
	return gone;
}

void ward__cgroup_sweep(void)
{
	size_t w = 0;

	for (size_t i = 0; i < n_graves; i++)
		if (!grave_remove(&graves[i]))
			graves[w++] = graves[i];
	n_graves = w;
}

static void sweep_exit(void)
{
	uint64_t deadline = ward__now_ms() + 1000;

	ward__cgroup_sweep();
	while (n_graves > 0 && ward__now_ms() < deadline) {
		usleep(2000);
		ward__cgroup_sweep();
	}
}

void ward__cgroup_bury(struct ward__cgroup *cg)
{
	struct grave g = {0};
	int n = 0;

	if (!cg->active) {
		ward__cgroup_release(cg);
		return;
	}
	/* A group's processes are its sandboxes', each ended by its own handle: never killed here. */
	if (!cg->group)
		ward__cgroup_kill(cg);
	if (ward__cgroup_remove(cg, 0) == 0) {
		ward__cgroup_release(cg);
		return;
	}
	if (!graves)
		graves = calloc(GRAVES_MAX, sizeof(*graves));
	if (!graves || n_graves >= GRAVES_MAX) {
		ward__cgroup_release(cg); /* waits a little for its own removal */
		return;
	}
	for (int i = 0; i < WARD_CG_N + 1; i++)
		g.parent_fd[i] = -1;
	if (cg->v2_fd >= 0)
		g.parent_fd[n++] = cg->v2_parent_fd;
	for (int c = 0; c < WARD_CG_N; c++)
		if (cg->v1_fd[c] >= 0)
			g.parent_fd[n++] = cg->v1_parent_fd[c];
	snprintf(g.name, sizeof(g.name), "%s", cg->name);
	graves[n_graves++] = g;
	if (!sweep_at_exit) {
		sweep_at_exit = true;
		atexit(sweep_exit);
	}
	cg->active = false; /* the directories are the grave's now */
	ward__cgroup_release(cg);
}
