/* SPDX-License-Identifier: MIT */
/*
 * The limits of the servers (`ward mcp`, `ward serve`): the defaults every
 * command gets unless the operator says otherwise, the budgets (a server's
 * total, a connection's), and the start-up that acquires ward's cgroup
 * subtree before anything is forked.
 *
 * DESIGN: one server hosts many agents' commands, and one runaway command
 * must neither take the host down nor starve the others. So a server limits
 * by default, where `ward run` (one command the person watches) limits only
 * when asked:
 *   - each command: half of the host's memory (with swap: none beyond it)
 *     and 4096 processes: a fork bomb stops there, `make -j64` does not, and
 *     a single command may still use most of a big machine;
 *   - the server's total: three quarters of the memory and 16384
 *     processes, so that the host keeps a quarter whatever the agents do;
 *   - each connection of `ward serve`: half of the memory and 8192
 *     processes, so that one client cannot spend what the others need.
 * The budgets are cgroups above the sandboxes' (src/sandbox/cgroup.c): the
 * kernel enforces the totals (an OOM kills within the budget only), and a
 * start is refused with a clear error while a budget is spent. Without a
 * cgroup none of that can be enforced: the server says so once at its start,
 * and --require-limits makes it refuse to start instead.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "policy/policy.h"
#include "sandbox/limits.h"

#define DEFAULT_PIDS 4096
#define DEFAULT_TOTAL_PIDS 16384
#define DEFAULT_CONNECTION_PIDS 8192

static uint64_t host_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);

	return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : (uint64_t)4 << 30;
}

/* A fraction of the host's memory, in whole MiB (as the options would say it). */
static uint64_t memory_share(unsigned num, unsigned den)
{
	return host_memory() / den * num & ~(((uint64_t)1 << 20) - 1);
}

int cli_budget_option(struct cli_budget *b, const char *verb, const char *opt, const char *arg)
{
	struct ward_error err = {0};
	bool memory = strstr(opt, "memory") != NULL;
	int r;

	if (strcmp(arg, "none") == 0) {
		if (memory)
			b->memory = 0, b->memory_given = true;
		else
			b->pids = 0, b->pids_given = true;
		return 0;
	}
	r = memory ? ward__limits_parse_memory(arg, opt, &b->memory, &err)
		   : ward__limits_parse_pids(arg, opt, &b->pids, &err);
	if (r < 0) {
		cli_errorf("%s: %s", verb, err.message);
		return -1;
	}
	if (memory)
		b->memory_given = true;
	else
		b->pids_given = true;
	return 0;
}

void cli_budget_defaults(struct cli_budget *b, bool connection)
{
	if (!b->memory_given)
		b->memory = connection ? memory_share(1, 2) : memory_share(3, 4);
	if (!b->pids_given)
		b->pids = connection ? DEFAULT_CONNECTION_PIDS : DEFAULT_TOTAL_PIDS;
}

void cli_server_limit_defaults(struct cli_run_args *a)
{
	struct ward__limits *l = &a->policy->limits;

	if (!l->memory && !a->limit_none[0])
		l->memory = memory_share(1, 2);
	if (!l->pids && !a->limit_none[1])
		l->pids = DEFAULT_PIDS;
}

int cli_server_limits_start(struct cli_run_args *a, const char *verb,
			    const struct cli_budget *total, struct ward__cgroup *ret_group)
{
	const struct ward__limits *l = &a->policy->limits;
	const struct ward__cg_base *b;
	struct ward_error err = {0};
	char missing[256] = "";
	size_t n = 0;
	int r;

	/*
	 * Before anything is forked: acquiring the subtree may move this process
	 * into a cgroup of its own (a delegated systemd scope, its supervisor leaf).
	 */
	b = ward__cg_base_get();
	r = ward__cgroup_group_new(NULL, "total", total->memory, total->pids, ret_group, &err);
	if (r < 0) {
		cli_report_error(&err);
		return -1;
	}
	/* What will not be enforced, said once: per command, and the budgets. */
	if (l->memory && b->how[WARD_CG_MEMORY] == WARD_ENFORCE_NONE)
		n += (size_t)snprintf(missing + n, sizeof(missing) - n, "%smemory per command",
				      n ? ", " : "");
	if (l->pids && b->how[WARD_CG_PIDS] == WARD_ENFORCE_NONE &&
	    !ward__rlimits_nproc_per_userns() && n < sizeof(missing))
		n += (size_t)snprintf(missing + n, sizeof(missing) - n, "%sprocesses per command",
				      n ? ", " : "");
	if (l->cpu_milli && b->how[WARD_CG_CPU] == WARD_ENFORCE_NONE && n < sizeof(missing))
		n += (size_t)snprintf(missing + n, sizeof(missing) - n, "%scpu per command",
				      n ? ", " : "");
	if ((total->memory || total->pids) && !ret_group->active && n < sizeof(missing))
		n += (size_t)snprintf(missing + n, sizeof(missing) - n, "%sthe budgets",
				      n ? ", " : "");
	if (n == 0)
		return 0;
	if (l->require) {
		cli_errorf(
			"%s: limits cannot be enforced on this host (%s: %s), and --require-limits "
			"was given",
			verb, missing, b->why[0] ? b->why : "no cgroup");
		return -1;
	}
	fprintf(stderr, "ward: warning: %s: not enforced on this host: %s (%s)\n", verb, missing,
		b->why[0] ? b->why : "no cgroup");
	return 0;
}
