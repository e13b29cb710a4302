/* SPDX-License-Identifier: MIT */
#pragma once

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/macro.h"
#include "policy/policy.h"
#include "ward/ward.h"

/*
 * The limits layer of a sandbox, beside its namespaces: cgroups (v2, or v1
 * on hybrid and legacy hosts, as root) and rlimits, and how each limit a
 * policy asks for is enforced on this host. DESIGN.md, "The next layers":
 * a sandbox's cgroup exists before its first process (CLONE_INTO_CGROUP on
 * v2; the child joins the v1 ones before it does anything else), its end is
 * cgroup.kill, and a limit that cannot be enforced is reported per resource,
 * never implied.
 *
 *   cgroup-host.c  what the host has: v2, v1, hybrid; where this process is;
 *                  what it may write; whether systemd can delegate
 *   cgroup-base.c  ward's own subtree, acquired once per process: its own
 *                  cgroup when delegated to it, else a transient systemd
 *                  scope with Delegate=yes (the ward-scope helper, scope.c),
 *                  and on v1 its own cgroup of each hierarchy
 *   cgroup.c       one sandbox's cgroup: made, limited, entered, left,
 *                  killed, read (events, usage), removed
 *   rlimit.c       per-process rlimits, and RLIMIT_NPROC as a per-sandbox
 *                  count inside a user namespace
 *   enforce.c      per resource, which of the above a sandbox gets
 */

/* How one resource is limited. */
enum ward__enforce {
	WARD_ENFORCE_NONE = 0,
	WARD_ENFORCE_CGROUP2,
	WARD_ENFORCE_CGROUP1,
	WARD_ENFORCE_RLIMIT,
};
/* "none", "cgroup-v2", "cgroup-v1", "rlimit": the JSON's words. */
WARD_INTERNAL const char *ward__enforce_name(enum ward__enforce e);

/* The cgroup controllers a sandbox's limits use. */
enum ward__cg_ctrl {
	WARD_CG_MEMORY = 0,
	WARD_CG_PIDS,
	WARD_CG_CPU,
	WARD_CG_N,
};
WARD_INTERNAL const char *ward__cg_ctrl_name(enum ward__cg_ctrl c);

/* ------------------------------------------------------------ the host (cgroup-host.c) */

enum ward__cg_layout {
	WARD_CG_LAYOUT_NONE = 0, /* no cgroup file system mounted (or not visible) */
	WARD_CG_LAYOUT_UNIFIED, /* cgroup v2 only */
	WARD_CG_LAYOUT_HYBRID, /* cgroup v2 beside v1 hierarchies */
	WARD_CG_LAYOUT_LEGACY, /* cgroup v1 only */
};
WARD_INTERNAL const char *ward__cg_layout_name(enum ward__cg_layout l);

#define WARD_CG_PATH_MAX 512

struct ward__cg_host {
	enum ward__cg_layout layout;
	/* cgroup v2: where it is mounted, and this process's cgroup there ("" if unknown). */
	char v2_mount[WARD_CG_PATH_MAX];
	char v2_own[WARD_CG_PATH_MAX]; /* absolute directory */
	char v2_rel[WARD_CG_PATH_MAX]; /* as /proc/self/cgroup says it */
	unsigned
		v2_root_ctrls; /* bit per ward__cg_ctrl: in the hierarchy's root (the host has it) */
	unsigned v2_own_ctrls; /* ... in the own cgroup's cgroup.controllers (it may enable them) */
	bool v2_own_is_root; /* this process is in the hierarchy's root cgroup */
	bool v2_writable; /* the own cgroup, its cgroup.procs and cgroup.subtree_control */
	/* cgroup v1, per controller: its hierarchy's mount and this process's cgroup there. */
	char v1_mount[WARD_CG_N][WARD_CG_PATH_MAX];
	char v1_own[WARD_CG_N][WARD_CG_PATH_MAX];
	bool v1_writable[WARD_CG_N];
	bool systemd; /* systemd is the init system (/run/systemd/system) */
	bool user_manager; /* a systemd user manager of this user is reachable */
};

/*
 * The text parts of the probe, pure (tests feed them fixtures): from the
 * contents of /proc/self/cgroup and /proc/self/mountinfo, the mounts of
 * cgroup v2 and of each v1 controller, this process's cgroup in each (as an
 * absolute directory), and the layout. Touches no file. -EINVAL for text it
 * cannot read.
 */
WARD_INTERNAL int ward__cg_host_parse(const char *self_cgroup, const char *mountinfo,
				      struct ward__cg_host *ret);
/* Parses a cgroup.controllers line into a mask of ward__cg_ctrl bits. */
WARD_INTERNAL unsigned ward__cg_ctrl_mask(const char *line);
/*
 * The host as this process sees it, probed once (parse + what the files
 * say: controllers, write access, systemd). Never fails: what cannot be
 * probed is absent. ward__cg_host_reprobe() forgets the cache (after this
 * process moved to another cgroup).
 */
WARD_INTERNAL const struct ward__cg_host *ward__cg_host_get(void);
WARD_INTERNAL void ward__cg_host_reprobe(void);

/* ------------------------------------------------------------ ward's subtree (cgroup-base.c) */

/*
 * Where a process's sandboxes get their cgroups, per controller: a v2
 * directory with the controller enabled in its cgroup.subtree_control, or a
 * v1 directory (this process's own cgroup of that hierarchy). Sandboxes'
 * cgroups are made beneath; their init goes back to leave_fd's cgroup once
 * the command is over, so that the sandbox's cgroup can be removed at once.
 */
struct ward__cg_base {
	enum ward__enforce how[WARD_CG_N]; /* CGROUP2, CGROUP1, or NONE */
	int v2_fd; /* the parent of the sandboxes' v2 cgroups (O_DIRECTORY), or -1 */
	char v2_path[WARD_CG_PATH_MAX];
	int v2_leave_fd; /* cgroup.procs of ward's own leaf (v2), O_WRONLY, or -1 */
	int v1_fd[WARD_CG_N]; /* the parents of the v1 cgroups, or -1 */
	char v1_path[WARD_CG_N][WARD_CG_PATH_MAX];
	int v1_leave_fd[WARD_CG_N]; /* cgroup.procs of ward's own v1 cgroups, or -1 */
	bool has_kill; /* the v2 cgroups have cgroup.kill (Linux 5.14) */
	char scope[128]; /* the systemd scope unit made for it, or "" */
	char why[256]; /* why a controller is not there (for warnings and ward doctor) */
};

/*
 * The subtree, acquired on the first call in this process and kept until
 * it exits (*ret is never NULL; controllers that could not be had are
 * WARD_ENFORCE_NONE with the reason in why). Acquiring may move the calling
 * process into a cgroup of its own: into a "supervisor" leaf beside its
 * sandboxes when its own cgroup is delegated to it and holds nothing else
 * (cgroup v2's no-internal-process rule), or through systemd into a new
 * transient scope with Delegate=yes (as a user, through the user manager).
 * So it is called before the process starts anything that should stay
 * where it was: the first sandbox with a limit, or a server's start.
 */
WARD_INTERNAL const struct ward__cg_base *ward__cg_base_get(void);
/* Whether ward__cg_base_get() was called already (ward doctor reports without acquiring). */
WARD_INTERNAL bool ward__cg_base_acquired(void);
/*
 * What the first call would do here, without doing it: per controller the
 * enforcement and in why the way (for ward doctor). *ret is filled.
 */
WARD_INTERNAL void ward__cg_base_preview(struct ward__cg_base *ret);
/*
 * The ward-scope helper (scope.c): run as `ward-scope PID`, asks systemd
 * (the user's manager, or the system's as root) over D-Bus for a transient
 * scope with Delegate=yes holding PID and prints the unit's name. Its exit
 * status is 0, or 1 with the reason on stderr.
 */
WARD_INTERNAL int ward__scope_main(int argc, char **argv);

/* ------------------------------------------------------------ a sandbox's cgroup (cgroup.c) */

/* What a sandbox's cgroup counted. Fields without have_* are 0 when unknown. */
struct ward__cg_stats {
	bool have_memory;
	uint64_t memory_peak; /* bytes, the most the processes used at once */
	uint64_t oom_kills; /* processes the kernel killed at the memory limit */
	uint64_t memory_high_events; /* times reclaim was forced at memory.high */
	bool have_pids_peak;
	uint64_t pids_peak; /* the most processes and threads at once, init included */
	uint64_t pids_refused; /* forks refused at pids.max */
	bool have_cpu;
	uint64_t cpu_user_us, cpu_system_us;
	uint64_t cpu_throttled_us; /* time held back by cpu.max */
};

struct ward__cgroup {
	bool active;
	char name[64]; /* the directory's name under each parent */
	int v2_fd; /* the sandbox's v2 directory (for CLONE_INTO_CGROUP), or -1 */
	int v1_fd[WARD_CG_N]; /* its v1 directories, or -1 */
	int v1_join_fd[WARD_CG_N]; /* their cgroup.procs, which the child writes itself into */
	enum ward__enforce how[WARD_CG_N]; /* per controller: the limit is set (or NONE) */
	uint64_t memory_max, pids_max; /* as written (pids_max counts init) */
	uint32_t cpu_milli;
	bool killed;
	bool group; /* a budget (ward__cgroup_group_new) */
	/*
	 * cgroup v1 has no memory.oom.group: the kernel kills one process at the
	 * limit. This eventfd, registered on memory.oom_control, tells the
	 * sandbox's init, which then kills the rest (ward__cgroup_oom_fd).
	 */
	int v1_oom_fd;
	/* Not owned: ward's subtree's descriptors (the parents, where init goes back to). */
	int v2_parent_fd, v2_leave_fd;
	int v1_parent_fd[WARD_CG_N], v1_leave_fd[WARD_CG_N];
};

/*
 * Makes a sandbox's cgroup beneath ward's subtree and writes the limits of
 * l into it: memory.max with memory.high 1/32 below it (reclaim, and the
 * memory.events "high" count, before the kill; cgroup.c says why not lower), memory.swap.max (v2) or
 * memory.memsw.limit_in_bytes (v1) so that swap is no way around it,
 * memory.oom.group (the whole sandbox dies together, never one process of
 * it at random), pids.max, cpu.max. A controller is used only for a limit
 * asked for, but a v2 cgroup is made whenever a subtree exists (usage and
 * cgroup.kill come with it). *ret is inactive (and 0 returned) when nothing
 * needs a cgroup or none can be had; -errno with err when one could not be
 * made or limited.
 */
WARD_INTERNAL int ward__cgroup_new(const struct ward__limits *l, const struct ward__cgroup *parent,
				   struct ward__cgroup *ret, struct ward_error *err);
/*
 * A budget: a cgroup that holds sandboxes' cgroups, never processes (a
 * server's total, a connection's), beneath parent (another group) or
 * ward's subtree, named ward-PID-NAME, with memory.max (and no swap) and
 * pids.max over everything beneath (0: that total is not limited). Sandboxes
 * are made beneath it by passing it as ward__cgroup_new()'s parent: each is
 * then in a cgroup, with or without limits of its own. The kernel enforces
 * the totals: an OOM beneath a group kills within the group only. *ret is
 * inactive (and 0 returned) where no cgroup can be had.
 */
WARD_INTERNAL int ward__cgroup_group_new(const struct ward__cgroup *parent, const char *name,
					 uint64_t memory, uint64_t pids, struct ward__cgroup *ret,
					 struct ward_error *err);
/*
 * Admission beneath a budget group: -EDQUOT, with err saying which total is
 * spent and how much is in use ("the connection's memory budget is spent:
 * ..."; whose is "the connection's", "the server's"), when what is in use
 * leaves no room for that many more sandboxes. Processes of sandboxes being
 * built are not all counted yet (a sandbox prepared ahead forks its command
 * process after its clone; a start's init forks the command after the
 * start), so a start asks for room for two (itself and one being built
 * meanwhile), and a sandbox prepared ahead for three (itself, a start, and
 * that start's). The kernel enforces the totals in any case; this refuses
 * the start instead of letting it fail inside.
 */
WARD_INTERNAL int ward__cgroup_admit(const struct ward__cgroup *g, unsigned sandboxes,
				     const char *whose, struct ward_error *err);
/* What is in use beneath cg now: bytes of memory, processes and threads. */
WARD_INTERNAL int ward__cgroup_current(const struct ward__cgroup *cg, uint64_t *ret_memory,
				       uint64_t *ret_pids);
/*
 * The descriptors the sandbox's first process must keep across its start
 * (the v1 join files, the cgroup's directories and their parents, the
 * leave files of the subtree); returns how many were written to fds (at
 * most max, WARD_CGROUP_CHILD_FDS is enough).
 */
#define WARD_CGROUP_CHILD_FDS (4 * WARD_CG_N + 4)
WARD_INTERNAL size_t ward__cgroup_child_fds(const struct ward__cgroup *cg, int *fds, size_t max);
/*
 * In the sandbox's first process, before anything else: joins the v1
 * cgroups (a v2 one was entered by the clone) and closes the join files.
 * Async-signal-safe. -errno when a join failed.
 */
WARD_INTERNAL int ward__cgroup_enter(const struct ward__cgroup *cg);
/*
 * In the sandbox's init, once every other process of it is dead and reaped
 * and it has reported (with ward__cgroup_stats() read first): moves init
 * back to ward's own cgroups and removes the sandbox's. Off ward's way: a
 * migration waits for an RCU grace period (the cgroup threadgroup lock),
 * milliseconds that ward, returning the status, need not wait for. Failures
 * are ignored (ward's handle buries what is left).
 */
WARD_INTERNAL void ward__cgroup_leave(const struct ward__cgroup *cg);
/*
 * The descriptor init polls for a v1 memory cgroup's OOM (readable once the
 * kernel killed a process at the limit: init kills the rest), or -1.
 */
WARD_INTERNAL int ward__cgroup_oom_fd(const struct ward__cgroup *cg);
/* Kills every process in the cgroup (cgroup.kill; on v1, each pid listed). Idempotent. */
WARD_INTERNAL void ward__cgroup_kill(struct ward__cgroup *cg);
/* Reads the cgroup's events and usage. Missing files leave their fields unknown. */
WARD_INTERNAL void ward__cgroup_stats(const struct ward__cgroup *cg, struct ward__cg_stats *ret);
/* Whether a process is still in it (v2 cgroup.events "populated", v1 cgroup.procs). */
WARD_INTERNAL bool ward__cgroup_populated(const struct ward__cgroup *cg);
/*
 * Removes the cgroup's directories, waiting up to timeout_ms for its last
 * processes to leave; -EBUSY when they did not. Closes nothing.
 */
WARD_INTERNAL int ward__cgroup_remove(struct ward__cgroup *cg, int timeout_ms);
/* Kills what is left, removes the directories (briefly waiting) and closes everything. */
WARD_INTERNAL void ward__cgroup_release(struct ward__cgroup *cg);
/*
 * For a sandbox whose last processes may still be exiting (a server must
 * not wait for them): kills what is left, closes the descriptors and keeps
 * the directories' names to be removed by a later ward__cgroup_sweep() (each
 * new cgroup sweeps; so does this process's exit, briefly waiting). cg is
 * reset.
 */
WARD_INTERNAL void ward__cgroup_bury(struct ward__cgroup *cg);
WARD_INTERNAL void ward__cgroup_sweep(void);
/*
 * clone() with fork semantics (a NULL stack) and a pidfd: with a v2 cgroup
 * through clone3(CLONE_INTO_CGROUP), so that the child is in its cgroup
 * from its first instruction (Linux 5.7); else the plain clone(). flags are
 * clone flags without the exit signal (SIGCHLD is used). Returns the pid
 * (0 in the child) or -errno.
 */
WARD_INTERNAL long ward__cgroup_clone(const struct ward__cgroup *cg, unsigned long flags,
				      int *ret_pidfd);

/* ------------------------------------------------------------ rlimits (rlimit.c) */

struct ward__rlimits {
	unsigned n;
	struct {
		int resource;
		uint64_t cur, max;
	} v[WARD_RLIMIT_N + 1];
};

/*
 * The rlimits a command gets: those l asks for (soft and hard alike, so
 * that it cannot raise them; RLIMIT_CPU's hard one a second later, SIGXCPU
 * before SIGKILL), and with nproc_pids RLIMIT_NPROC as the pids limit
 * (counting init).
 */
WARD_INTERNAL void ward__rlimits_plan(const struct ward__limits *l, bool nproc_pids,
				      struct ward__rlimits *ret);
/* Refuses (-EPERM, err) what exceeds this process's hard limits: the command could not get it. */
WARD_INTERNAL int ward__rlimits_check(const struct ward__rlimits *r, struct ward_error *err);
/* Sets them on the calling process (the command, before exec). Async-signal-safe. */
WARD_INTERNAL int ward__rlimits_apply(const struct ward__rlimits *r, int *ret_resource);
/*
 * Whether RLIMIT_NPROC set inside a new user namespace counts that
 * namespace's processes only (Linux 5.14's ucounts) for this user: then it
 * is a per-sandbox process limit where no cgroup can be had. Never for a
 * host root, whom the kernel exempts from RLIMIT_NPROC.
 */
WARD_INTERNAL bool ward__rlimits_nproc_per_userns(void);

/* ------------------------------------------------------------ per resource (enforce.c) */

/* What the sandbox's init measured of the processes it reaped (getrusage RUSAGE_CHILDREN). */
struct ward__init_usage {
	uint64_t utime_us, stime_us;
	uint64_t maxrss_kb; /* the largest single process */
	bool oom; /* init killed the sandbox on its v1 OOM notification */
	/* What the cgroup counted, read by init before it removed it (have_cg). */
	bool have_cg;
	struct ward__cg_stats cg;
};

/* The resources a sandbox reports on: the cgroup ones, then the rlimits. */
enum ward__resource {
	WARD_RES_MEMORY = 0,
	WARD_RES_PIDS,
	WARD_RES_CPU,
	WARD_RES_RLIMIT0, /* + enum ward__rlimit */
	WARD_RES_N = WARD_RES_RLIMIT0 + WARD_RLIMIT_N,
};
/* "memory", "pids", "cpu", "rlimit-as", ... */
WARD_INTERNAL const char *ward__resource_name(enum ward__resource r);

/*
 * What a finished sandbox tells about its limits and its use of resources;
 * kept in the sandbox handle after its kernel resources are gone.
 */
struct ward__limits_report {
	bool any; /* limits were asked for */
	struct ward__limits asked;
	enum ward__enforce how[WARD_RES_N];
	char missing[320]; /* the limits not enforced, and why ("" when all are) */
	/* Usage: always with init's measure, finer with a cgroup. */
	bool have_usage;
	uint64_t cpu_user_us, cpu_system_us;
	uint64_t max_rss; /* bytes, the largest single process (rusage) */
	bool have_memory_peak;
	uint64_t memory_peak; /* bytes, all processes at once (cgroup) */
	bool have_pids_peak;
	uint64_t pids_peak; /* the command's processes and threads at once, init not counted */
	uint64_t cpu_throttled_us;
	/* The limit the run hit, if one: memory (processes killed) or pids (forks refused). */
	bool hit;
	enum ward__resource hit_resource;
	uint64_t hit_max, hit_peak, hit_count;
	bool hit_budget; /* the total of its budget (a server's, a connection's), not its own limit */
};

/* A sandbox's limits as enforced: what was asked, how each is, the cgroup and the rlimits. */
struct ward__sb_limits {
	struct ward__limits asked;
	bool any; /* something was asked */
	enum ward__enforce how[WARD_RES_N]; /* for each asked: how; NONE also for not asked */
	struct ward__cgroup cg;
	struct ward__rlimits rl;
	bool collected;
	/* The totals of the budget group it is in (0: none). */
	uint64_t budget_memory, budget_pids;
};

/*
 * Decides and sets up the limits of one sandbox: a cgroup where one can be
 * had (beneath parent, a budget group, when given), the rlimits, RLIMIT_NPROC for pids inside a user namespace (userns)
 * where no pids controller is. With l->require, a limit that would not be
 * enforced fails the call (-EPERM, err naming it and why). *ret is always
 * initialised (release it).
 */
WARD_INTERNAL int ward__sb_limits_setup(const struct ward__limits *l, bool userns,
					const struct ward__cgroup *parent,
					struct ward__sb_limits *ret, struct ward_error *err);
WARD_INTERNAL void ward__sb_limits_release(struct ward__sb_limits *sl);
/*
 * Writes into buf the asked limits that are not enforced, as one sentence
 * ("the memory and cpu limits are not enforced on this host (why)"), ""
 * when all are.
 */
WARD_INTERNAL size_t ward__sb_limits_missing(const struct ward__sb_limits *sl, char *buf,
					     size_t size);
/* Fills rep with what was asked and how each is enforced (at the sandbox's start). */
WARD_INTERNAL void ward__sb_limits_describe(const struct ward__sb_limits *sl,
					    struct ward__limits_report *rep);
/*
 * Once the command is over (init reported, or died): the cgroup's events and
 * usage and init's measure (iu, NULL when init did not report) into rep,
 * and which limit was hit. When init reported, it read the cgroup's counts
 * itself and removes the cgroup (ward__cgroup_leave): ward only forgets it.
 * When init died first (a group OOM kill), ward reads the counts and buries
 * the cgroup (ward__cgroup_bury). Idempotent.
 */
WARD_INTERNAL void ward__sb_limits_collect(struct ward__sb_limits *sl,
					   const struct ward__init_usage *iu,
					   struct ward__limits_report *rep);
