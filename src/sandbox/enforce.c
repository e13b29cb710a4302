/* SPDX-License-Identifier: MIT */
/*
 * Per resource, how a sandbox's limits are enforced on this host, and the
 * setting up of what enforces them: the cgroup (cgroup.c) and the rlimits
 * (rlimit.c).
 *
 * DESIGN: "never claim a limit that is not enforced". Each limit asked for
 * gets exactly one answer, cgroup-v2, cgroup-v1, rlimit or none, and the
 * answer is what was set up, not what the host might allow: a cgroup
 * controller counts once the limit is written into the sandbox's cgroup.
 * The pids limit falls back to RLIMIT_NPROC inside the sandbox's user
 * namespace (rlimit.c says why that counts the sandbox alone); memory and
 * cpu have no per-sandbox rlimit and are "none" without a cgroup.
 * --require-limits turns any "none" into a refusal before anything runs.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "basic/error.h"
#include "sandbox/limits.h"

const char *ward__resource_name(enum ward__resource r)
{
	static const char *const names[WARD_RES_RLIMIT0] = {"memory", "pids", "cpu"};
	static char rl[WARD_RLIMIT_N][16];

	if ((unsigned)r < WARD_RES_RLIMIT0)
		return names[r];
	if ((unsigned)r < WARD_RES_N) {
		unsigned i = (unsigned)r - WARD_RES_RLIMIT0;

		if (!rl[i][0])
			snprintf(rl[i], sizeof(rl[i]), "rlimit-%s",
				 ward__rlimit_name((enum ward__rlimit)i));
		return rl[i];
	}
	return "?";
}

/* Whether resource r is asked for by l. */
static bool asked(const struct ward__limits *l, enum ward__resource r)
{
	if (r == WARD_RES_MEMORY)
		return l->memory != 0;
	if (r == WARD_RES_PIDS)
		return l->pids != 0;
	if (r == WARD_RES_CPU)
		return l->cpu_milli != 0;
	return (unsigned)r < WARD_RES_N && l->rlimit_set[r - WARD_RES_RLIMIT0];
}

int ward__sb_limits_setup(const struct ward__limits *l, bool userns,
			  const struct ward__cgroup *parent, struct ward__sb_limits *sl,
			  struct ward_error *err)
{
	static const struct ward__limits none;
	bool nproc = false;
	char missing[256];
	int r;

	*sl = (struct ward__sb_limits){.asked = *l};
	ward__cgroup_new(&none, NULL, &sl->cg, NULL); /* an inactive one: every descriptor -1 */
	sl->any = ward__limits_any(l);
	if (!sl->any && !(parent && parent->active))
		return 0;
	/* Beneath a budget (a server's, a connection's) a sandbox has a cgroup even without limits. */
	r = ward__cgroup_new(l, parent, &sl->cg, err);
	if (r < 0)
		return r;
	if (parent && parent->active && sl->cg.active) {
		sl->budget_memory = parent->memory_max;
		sl->budget_pids = parent->pids_max;
	}
	sl->how[WARD_RES_MEMORY] = l->memory ? sl->cg.how[WARD_CG_MEMORY] : WARD_ENFORCE_NONE;
	sl->how[WARD_RES_PIDS] = l->pids ? sl->cg.how[WARD_CG_PIDS] : WARD_ENFORCE_NONE;
	sl->how[WARD_RES_CPU] = l->cpu_milli ? sl->cg.how[WARD_CG_CPU] : WARD_ENFORCE_NONE;
	if (l->pids && sl->how[WARD_RES_PIDS] == WARD_ENFORCE_NONE && userns &&
	    ward__rlimits_nproc_per_userns()) {
		nproc = true;
		sl->how[WARD_RES_PIDS] = WARD_ENFORCE_RLIMIT;
	}
	for (int i = 0; i < WARD_RLIMIT_N; i++)
		if (l->rlimit_set[i])
			sl->how[WARD_RES_RLIMIT0 + i] = WARD_ENFORCE_RLIMIT;
	ward__rlimits_plan(l, nproc, &sl->rl);
	r = ward__rlimits_check(&sl->rl, err);
	if (r < 0)
		goto fail;
	if (l->require && ward__sb_limits_missing(sl, missing, sizeof(missing)) > 0) {
		r = ward__error(err, -EPERM, "limits", "%s, and --require-limits was given",
				missing);
		ward__error_hint(err, "run 'ward doctor' for how this host limits resources");
		goto fail;
	}
	return 0;
fail:
	ward__sb_limits_release(sl);
	return r;
}

void ward__sb_limits_release(struct ward__sb_limits *sl)
{
	ward__cgroup_release(&sl->cg);
}

size_t ward__sb_limits_missing(const struct ward__sb_limits *sl, char *buf, size_t size)
{
	const char *names[WARD_RES_N];
	size_t n = 0, len;

	for (int r = 0; r < WARD_RES_N; r++)
		if (asked(&sl->asked, (enum ward__resource)r) && sl->how[r] == WARD_ENFORCE_NONE)
			names[n++] = ward__resource_name((enum ward__resource)r);
	if (n == 0) {
		if (size)
			buf[0] = '\0';
		return 0;
	}
	len = (size_t)snprintf(buf, size, "the ");
	for (size_t i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s", names[i],
					i + 2 == n	    ? " and "
						: i + 1 < n ? ", "
							    : "");
	if (len < size) {
		const struct ward__cg_base *b = ward__cg_base_get();

		len += (size_t)snprintf(buf + len, size - len,
					" limit%s %s not enforced on this host (%s)",
					n > 1 ? "s" : "", n > 1 ? "are" : "is",
					b->why[0] ? b->why : "no cgroup for this sandbox");
	}
	return len < size ? len : size - 1;
}

void ward__sb_limits_describe(const struct ward__sb_limits *sl, struct ward__limits_report *rep)
{
	*rep = (struct ward__limits_report){.any = sl->any, .asked = sl->asked};
	memcpy(rep->how, sl->how, sizeof(rep->how));
	if (sl->any)
		ward__sb_limits_missing(sl, rep->missing, sizeof(rep->missing));
}

void ward__sb_limits_collect(struct ward__sb_limits *sl, const struct ward__init_usage *iu,
			     struct ward__limits_report *rep)
{
	struct ward__cg_stats s;

	if (sl->collected)
		return;
	sl->collected = true;
	if (iu) {
		rep->have_usage = true;
		rep->cpu_user_us = iu->utime_us;
		rep->cpu_system_us = iu->stime_us;
		rep->max_rss = iu->maxrss_kb * 1024;
	}
	if (iu && iu->have_cg)
		s = iu->cg;
	else
		ward__cgroup_stats(&sl->cg, &s);
	if (s.have_cpu) {
		/* The cgroup's count has what init could not reap itself (a group kill). */
		rep->have_usage = true;
		rep->cpu_user_us = s.cpu_user_us;
		rep->cpu_system_us = s.cpu_system_us;
	}
	rep->cpu_throttled_us = s.cpu_throttled_us;
	if (s.have_memory) {
		rep->have_memory_peak = true;
		rep->memory_peak = s.memory_peak;
	}
	if (s.have_pids_peak) {
		rep->have_pids_peak = true;
		rep->pids_peak = s.pids_peak > 0 ? s.pids_peak - 1 : 0;
	}
	/*
	 * Read from the kernel's own counts, never guessed from an exit status;
	 * on v1 also from init, which killed the rest on the kernel's OOM
	 * notification (and may have taken the kernel's victim with it first).
	 */
	if (iu && iu->oom && s.oom_kills == 0)
		s.oom_kills = 1;
	if (s.oom_kills > 0 && sl->how[WARD_RES_MEMORY] != WARD_ENFORCE_NONE) {
		rep->hit = true;
		rep->hit_resource = WARD_RES_MEMORY;
		rep->hit_max = sl->asked.memory;
		rep->hit_peak = s.memory_peak;
		rep->hit_count = s.oom_kills;
	} else if (s.oom_kills > 0 && sl->budget_memory) {
		rep->hit = rep->hit_budget = true;
		rep->hit_resource = WARD_RES_MEMORY;
		rep->hit_max = sl->budget_memory;
		rep->hit_peak = s.memory_peak;
		rep->hit_count = s.oom_kills;
	} else if (s.pids_refused > 0 && sl->how[WARD_RES_PIDS] != WARD_ENFORCE_NONE) {
		rep->hit = true;
		rep->hit_resource = WARD_RES_PIDS;
		rep->hit_max = sl->asked.pids;
		rep->hit_peak = rep->have_pids_peak ? rep->pids_peak : sl->asked.pids;
		rep->hit_count = s.pids_refused;
		/* Refused below its own limit: the budget's total was what was hit. */
		if (sl->budget_pids && rep->hit_peak < sl->asked.pids) {
			rep->hit_budget = true;
			rep->hit_max = sl->budget_pids;
		}
	} else if (s.pids_refused > 0 && sl->budget_pids) {
		rep->hit = rep->hit_budget = true;
		rep->hit_resource = WARD_RES_PIDS;
		rep->hit_max = sl->budget_pids;
		rep->hit_peak = rep->have_pids_peak ? rep->pids_peak : 0;
		rep->hit_count = s.pids_refused;
	}
	if (iu && iu->have_cg) {
		/* init removes it, once out of it: ward lets go of its descriptors only. */
		sl->cg.active = false;
		ward__cgroup_release(&sl->cg);
		return;
	}
	/* init died inside (a group OOM kill): its processes die with it; the cgroup goes after. */
	ward__cgroup_bury(&sl->cg);
}
