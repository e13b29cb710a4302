/* SPDX-License-Identifier: MIT */
/*
 * hardened-wrapper: simulates a host where namespaces are refused, then execs
 * its arguments:
 *
 *   hardened-wrapper COMMAND [ARG...]
 *
 * It installs a seccomp filter modelled on Docker's default profile (which is
 * also what Ubuntu 24.04's AppArmor userns restriction amounts to for an
 * unprivileged sandbox): unshare() and setns() fail with EPERM, clone() with any
 * CLONE_NEW* flag fails with EPERM, and clone3() fails with ENOSYS (its flags
 * live in memory a filter cannot read, so libc falls back to clone()). The
 * filter is inherited across exec and fork, so ward and everything it starts
 * live on such a "host". Blocking every namespace flag, not only CLONE_NEWUSER,
 * keeps the simulation honest when the tests run as root, where ward could
 * otherwise create the other namespaces without a user namespace.
 */
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* The namespace flags of clone(); any one of them set makes the call fail. */
static const unsigned long ns_flags[] = {CLONE_NEWNS,	  CLONE_NEWUTS, CLONE_NEWIPC,
					 CLONE_NEWUSER,	  CLONE_NEWPID, CLONE_NEWNET,
					 CLONE_NEWCGROUP, CLONE_NEWTIME};

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx;
	int r;

	if (argc < 2) {
		fprintf(stderr, "usage: hardened-wrapper COMMAND [ARG...]\n");
		return 2;
	}
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx) {
		fprintf(stderr, "hardened-wrapper: seccomp_init failed\n");
		return 125;
	}
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0);
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setns), 0);
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	/*
	 * One rule per flag, because "any of these bits set" is an OR of masked
	 * compares. clone()'s flags are its first argument on x86-64 and arm64 (the
	 * second on s390x, which these tests do not target).
	 */
	for (size_t i = 0; r == 0 && i < sizeof(ns_flags) / sizeof(ns_flags[0]); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
	/* Unprivileged callers need no_new_privs to install a filter; root does not, and keeps setuid working. */
	if (r == 0 && geteuid() != 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		r = -errno;
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	if (r < 0) {
		fprintf(stderr, "hardened-wrapper: cannot install the filter: %s\n", strerror(-r));
		return 125;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "hardened-wrapper: cannot execute '%s': %s\n", argv[1], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
