/* SPDX-License-Identifier: MIT */
/*
 * rlimits: what a process can be limited in without a cgroup.
 *
 * DESIGN (getrlimit(2); the peers' findings in egress-limits-undo.md §2):
 *   - An rlimit binds one process (and what it forks inherits the same
 *     limit, each on its own): RLIMIT_AS, RLIMIT_CPU, RLIMIT_FSIZE,
 *     RLIMIT_NOFILE and RLIMIT_CORE are per process, never a sandbox's
 *     total. They are applied only when asked for (--rlimit), and
 *     RLIMIT_AS never by itself: runtimes that reserve large address
 *     ranges (Go, the JVM, V8, sanitizers) fail under it long before they
 *     use the memory.
 *   - RLIMIT_NPROC counts the processes of a user. Since Linux 5.14 the
 *     count is kept per user namespace (ucounts), and a fork is checked
 *     against the limit of the namespace the process is in: set inside the
 *     sandbox's own user namespace, it counts the sandbox's processes only.
 *     That makes it a per-sandbox pids limit where no cgroup can be had
 *     (an unprivileged user without delegation). A host root is exempt
 *     from it (copy_process() skips the check for INIT_USER), and without a
 *     user namespace it would count every process of the user on the host:
 *     not used then.
 *   - Soft and hard limits are set alike, so that the command cannot raise
 *     them back; RLIMIT_CPU's hard limit is a second above the soft one, so
 *     that SIGXCPU (which a program may catch to save its work) comes
 *     before SIGKILL.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "basic/error.h"
#include "sandbox/limits.h"

void ward__rlimits_plan(const struct ward__limits *l, bool nproc_pids, struct ward__rlimits *ret)
{
	*ret = (struct ward__rlimits){0};
	for (int i = 0; i < WARD_RLIMIT_N; i++) {
		if (!l->rlimit_set[i])
			continue;
		ret->v[ret->n].resource = ward__rlimit_resource((enum ward__rlimit)i);
		ret->v[ret->n].cur = l->rlimit[i];
		ret->v[ret->n].max = i == WARD_RLIMIT_CPU ? l->rlimit[i] + 1 : l->rlimit[i];
		ret->n++;
	}
	if (nproc_pids && l->pids) {
		/* The namespace's count holds ward's init as well. */
		uint64_t want = l->pids + 1;
		struct rlimit own;

		/*
		 * A hard limit cannot be raised without CAP_SYS_RESOURCE in the
		 * host's namespace. Where ward's own is lower (a container run with
		 * --ulimit nproc=4096), the command keeps ward's: that already bounds
		 * its processes tighter than asked, so it is no failure (unlike an
		 * --rlimit asked for by name, which ward__rlimits_check() refuses).
		 */
		if (getrlimit(RLIMIT_NPROC, &own) == 0 && own.rlim_max != RLIM_INFINITY &&
		    want > own.rlim_max)
			want = own.rlim_max;
		ret->v[ret->n].resource = RLIMIT_NPROC;
		ret->v[ret->n].cur = ret->v[ret->n].max = want;
		ret->n++;
	}
}

static const char *resource_name(int resource)
{
	switch (resource) {
	case RLIMIT_AS:
		return "as";
	case RLIMIT_CORE:
		return "core";
	case RLIMIT_CPU:
		return "cpu";
	case RLIMIT_FSIZE:
		return "fsize";
	case RLIMIT_NOFILE:
		return "nofile";
	case RLIMIT_NPROC:
		return "nproc";
	default:
		return "?";
	}
}

int ward__rlimits_check(const struct ward__rlimits *r, struct ward_error *err)
{
	for (unsigned i = 0; i < r->n; i++) {
		struct rlimit cur;

		if (getrlimit(r->v[i].resource, &cur) < 0)
			continue;
		/* Raising a hard limit takes CAP_SYS_RESOURCE. */
		if (cur.rlim_max != RLIM_INFINITY && r->v[i].max > cur.rlim_max && geteuid() != 0) {
			ward__error(
				err, -EPERM, "limits",
				"cannot give the command --rlimit %s=%llu: ward's own hard limit is %llu",
				resource_name(r->v[i].resource), (unsigned long long)r->v[i].cur,
				(unsigned long long)cur.rlim_max);
			return -EPERM;
		}
	}
	return 0;
}

int ward__rlimits_apply(const struct ward__rlimits *r, int *ret_resource)
{
	for (unsigned i = 0; i < r->n; i++) {
		struct rlimit lim = {.rlim_cur = r->v[i].cur, .rlim_max = r->v[i].max};

		/* The raw syscall: async-signal-safe after a fork of a threaded program. */
		if (syscall(SYS_prlimit64, 0, r->v[i].resource, &lim, NULL) < 0) {
			if (ret_resource)
				*ret_resource = r->v[i].resource;
			return -errno;
		}
	}
	return 0;
}

bool ward__rlimits_nproc_per_userns(void)
{
	static int known = -1;

	if (known < 0) {
		struct utsname u;
		unsigned major = 0, minor = 0;

		known = 0;
		if (geteuid() != 0 && uname(&u) == 0 &&
		    sscanf(u.release, "%u.%u", &major, &minor) == 2)
			known = major > 5 || (major == 5 && minor >= 14);
	}
	return known;
}
