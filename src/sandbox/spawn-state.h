/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the files that start a sandbox and hold it share: the parent's side
 * of a cold start (spawn.c), of a prepared one (prepare.c), the clone's child
 * before it becomes init (child.c), and the handle's life afterwards
 * (handle.c). Not for use outside them.
 */
#include <limits.h>

#include "sandbox/sandbox.h"

/* ------------------------------------------------------------ the handle (handle.c) */

/* A started sandbox's state beyond struct ward__sandbox (sb->priv). */
struct ward__sandbox_priv {
	struct ward__guard *guard;
	/*
	 * The policy the sandbox runs (a copy: the caller's may be gone first),
	 * which the guard watches by and the denials' reasons come from. Freed
	 * after the guard.
	 */
	struct ward_policy *policy;
	bool guard_pending; /* init reported a broken lease: trip once the reports are read */
	bool in_trip; /* guard_trip() is waiting for the sandbox to die */
	char rbuf[2 * PIPE_BUF];
	size_t rlen;
	bool killed;
	bool reaped;
	int init_status;
	/* The limits set up for it (cgroup, rlimits), or NULL when none was asked for. */
	struct ward__sb_limits *limits;
	bool have_usage; /* init reported usage with the status */
	struct ward__init_usage usage;
};

/* A sandbox with nothing in it yet (no descriptor, no process). */
WARD_INTERNAL void ward__sandbox_reset(struct ward__sandbox *sb);
/*
 * Sets up the policy's limits for a sandbox about to be cloned (its cgroup,
 * its rlimits; userns: the clone makes a user namespace) into
 * priv->limits, and says in sb->limits how each is enforced. Nothing is
 * set up, and 0 returned, when the policy asks for none. -errno with err
 * (--require-limits, a cgroup that could not be made).
 */
WARD_INTERNAL int ward__sandbox_limits_setup(struct ward__sandbox *sb,
					     struct ward__sandbox_priv *priv,
					     const struct ward__spawn_opts *o, bool userns,
					     struct ward_error *err);
/* Lets go of priv->limits (the cgroup killed and removed, or buried). */
WARD_INTERNAL void ward__sandbox_limits_release(struct ward__sandbox_priv *priv);

/* ------------------------------------------------------------ the host (spawn.c) */

/*
 * What spawning needs to know of the host, without the user-namespace probe
 * (a clone of its own, most of a millisecond here): the Landlock ABI and
 * whether seccomp user notification is usable are one syscall each.
 * Namespaces are simply tried; when the host refuses them, spawn falls back
 * and only then asks features.c for the whole story.
 */
struct ward__fast_features {
	int landlock_abi;
	bool user_notif;
};

WARD_INTERNAL const struct ward__fast_features *ward__spawn_fast_features(void);
/*
 * The isolation the cold starts of this process found the host to give
 * (USERNS until namespaces were refused, then ROOT where root may create
 * them), for a prepared sandbox; NONE when only the fallback is left.
 */
WARD_INTERNAL enum ward__isolation ward__spawn_isolation_found(void);

/* ------------------------------------------------------------ the clone's child (child.c) */

/*
 * A cold start's child: maps its ids, builds the mount view, brings
 * loopback up, opens the pty, enters the working directory, builds the
 * Landlock ruleset and becomes init (ward__init_main). Never returns.
 */
_noreturn_ WARD_INTERNAL void ward__child_main(const struct ward__spawn_opts *opts, int report_fd,
					       int life_fd, int pty_sock, int hold_fd,
					       const struct ward__seccomp_prog *prog,
					       enum ward__isolation iso, uid_t uid, gid_t gid,
					       int landlock_abi,
					       const struct ward__init_leases *leases, int arm_fd);
/*
 * A prepared sandbox's child: the same without the command, its namespaces
 * made by unshare(), then init waits for its command
 * (ward__init_prepared_main). Never returns.
 */
_noreturn_ WARD_INTERNAL void ward__child_prepared_main(const struct ward__spawn_opts *opts,
							int report_fd, int life_fd, int ctl_fd,
							const struct ward__seccomp_prog *prog,
							enum ward__isolation iso, uid_t uid,
							gid_t gid, int landlock_abi);
