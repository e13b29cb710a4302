/* SPDX-License-Identifier: MIT */
/*
 * Starting a sandbox: one clone() into new user, mount, pid, ipc, uts (and,
 * with the network off, network) namespaces. The child maps its own uid and
 * gid, builds the mount view, brings loopback up, builds the Landlock ruleset
 * and becomes the sandbox's init (init.c), which forks the command. The only
 * exec is the command's own.
 *
 * Where user namespaces are refused (Ubuntu 24.04's AppArmor restriction,
 * Docker's default seccomp profile, user.max_user_namespaces=0) the child skips
 * the namespaces and relies on Landlock and seccomp; the caller is told which
 * guarantees are missing (features.c), and --require-isolation refuses instead.
 *
 * The parent also guards what no mount protects (guard.c): protected paths
 * that do not exist yet, and in the fallback every protected path. When the
 * command changes one, the whole sandbox is killed at once and what was there
 * is put back before ward returns. See docs/ward.1 ("Protected paths that do
 * not exist yet", "Hardened hosts") for the limits.
 *
 * This file is the parent's side of a cold start: which isolation the host
 * gives, the clone, the fallback. The child's side until it is init is
 * child.c, prepared sandboxes are prepare.c, and the started sandbox's
 * reports, guard trips, wait and release are handle.c.
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "sandbox/spawn-state.h"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

/* A previous attempt in this process was refused: user namespaces, namespaces as root. */
static bool userns_refused, rootns_refused;
static int userns_errno; /* why (positive errno), and at which step */
static const char *userns_how = "clone(CLONE_NEWUSER)";

/*
 * CAP_SYS_ADMIN in the host's user namespace (root, or a container given it):
 * the namespaces other than the user namespace can be created directly, as
 * bubblewrap does when it runs as root.
 */
static bool have_sys_admin(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {0};

	if (syscall(SYS_capget, &hdr, data) < 0)
		return false;
	return data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective & CAP_TO_MASK(CAP_SYS_ADMIN);
}

const struct ward__fast_features *ward__spawn_fast_features(void)
{
	static struct ward__fast_features ff;
	static bool done;

	if (!done) {
		uint32_t action = SECCOMP_RET_USER_NOTIF;
		long abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
				   1U /* LANDLOCK_CREATE_RULESET_VERSION */);

		ff.landlock_abi = abi > 0 ? (int)abi : 0;
		/* User notification (5.0) and pidfd_getfd (5.6) for the supervisor. */
		ff.user_notif =
			syscall(SYS_seccomp, 2 /* SECCOMP_GET_ACTION_AVAIL */, 0, &action) == 0 &&
			syscall(SYS_pidfd_getfd, -1, 0, 0) < 0 && errno == EBADF;
		done = true;
	}
	return &ff;
}

/* Waits for the child's READY (setup done) or its error. */
static void wait_setup(struct ward__sandbox *sb)
{
	bool eof = false;

	while (!sb->ready && !sb->have_error && !eof) {
		struct pollfd pfd = {.fd = sb->report_fd, .events = POLLIN};

		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return;
		if (ward__sandbox_read_reports(sb, &eof) < 0)
			return;
	}
}

/* Autorun directories from which on they are watched while the child sets up (arm). */
#define ARM_AFTER_CLONE 32

/* Returns 1 when namespaces were refused by the host (caller falls back), 0 or -errno otherwise. */
static int spawn_attempt(const struct ward__spawn_opts *o, struct ward__sandbox *sb,
			 enum ward__isolation iso, int landlock_abi, bool user_notif,
			 struct ward_error *err)
{
	bool isolated = iso != WARD_ISOLATION_NONE;
	const struct ward_policy *p = o->policy;
	bool danger = p->mode == WARD_MODE_DANGER_FULL_ACCESS;
	struct ward__seccomp_opts so = {0};
	struct ward__seccomp_prog prog = {0};
	struct ward__init_leases leases = {0};
	_cleanup_free_ struct ward__sandbox_priv *priv = NULL;
	int report[2] = {-1, -1}, life[2] = {-1, -1}, ptys[2] = {-1, -1}, net[2] = {-1, -1},
	    arm[2] = {-1, -1};
	unsigned long flags;
	int pidfd = -1;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	long pid;
	int r, arm_r = 0;
	bool defer;

	priv = calloc(1, sizeof(*priv));
	if (!priv)
		return ward__error(err, -ENOMEM, "spawn", "out of memory");

	if (!danger) {
		so.network_off = !p->network;
		so.netns = isolated && !p->network;
		so.supervise_connect = !p->network && user_notif;
		so.observe_fs = o->observe_fs && user_notif;
		so.observe_reads = so.observe_fs && p->n_deny > 0;
		so.notify_refusals = so.observe_fs && isolated;
		r = ward__seccomp_build(&so, &prog, err);
		if (r < 0)
			return r;
	}

	/* The guard watches by it and the denials' reasons come from it, after the caller's is gone. */
	r = ward__policy_dup_resolved(p, &priv->policy);
	if (r < 0) {
		ward__error(err, r, "spawn", "out of memory");
		goto fail;
	}
	/*
	 * In the fallback this keeps every protected path: before the command
	 * exists. Many autorun directories (one watch each, a few hundred in a
	 * large workspace) are watched after the clone instead, while the child
	 * builds the sandbox, and the command waits for them (arm). A few are
	 * cheaper watched here than waited for.
	 */
	defer = p->n_watches >= ARM_AFTER_CLONE;
	r = ward__guard_new(priv->policy, !isolated && !danger, o->watches, defer, &priv->guard,
			    err);
	if (r < 0)
		goto fail;
	sb->guard_fd = ward__guard_fd(priv->guard);
	leases.n = ward__guard_leases(priv->guard, &leases.fds, &leases.paths);

	if (pipe2(report, O_CLOEXEC) < 0 || pipe2(life, O_CLOEXEC) < 0 ||
	    (priv->guard && defer && pipe2(arm, O_CLOEXEC) < 0)) {
		r = ward__error(err, -errno, "spawn", "cannot create a pipe: %m");
		goto fail;
	}
	if (o->pty && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ptys) < 0) {
		r = ward__error(err, -errno, "spawn", "cannot create a socket pair: %m");
		goto fail;
	}
	/* The network by domain: the sandbox hands its proxy's listeners to ward over net. */
	if (isolated && ward__policy_net_by_domain(p) &&
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, net) < 0) {
		r = ward__error(err, -errno, "spawn", "cannot create a socket pair: %m");
		goto fail;
	}
	/* The cgroup exists, limited, before the sandbox's first process does. */
	r = ward__sandbox_limits_setup(sb, priv, o, iso == WARD_ISOLATION_USERNS, err);
	if (r < 0)
		goto fail;

	flags = CLONE_PIDFD;
	if (isolated) {
		flags |= CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
		if (iso == WARD_ISOLATION_USERNS)
			flags |= CLONE_NEWUSER;
		if (!p->network)
			flags |= CLONE_NEWNET;
	}
	/*
	 * A raw clone() with a NULL stack behaves like fork(), but takes the
	 * namespace flags and hands back a pidfd atomically (no pid-reuse race);
	 * with a v2 cgroup it is clone3() into it. The child only makes syscalls
	 * until it execs or exits.
	 */
	pid = ward__cgroup_clone(priv->limits ? &priv->limits->cg : NULL, flags, &pidfd);
	if (pid < 0) {
		r = (int)pid;
		/* EPERM: a seccomp filter or AppArmor; ENOSPC/EUSERS: user.max_user_namespaces; EINVAL: no userns. */
		if (isolated &&
		    (r == -EPERM || r == -EACCES || r == -ENOSPC || r == -EUSERS || r == -EINVAL)) {
			if (iso == WARD_ISOLATION_USERNS) {
				userns_errno = -r;
				userns_how = "clone(CLONE_NEWUSER)";
			}
			r = 1;
			goto fail;
		}
		r = ward__error(err, r, "spawn", "cannot create the sandbox: %m");
		goto fail;
	}
	if (pid == 0) {
		struct ward__spawn_opts co = *o;

		close(report[0]);
		close(life[1]);
		if (arm[1] >= 0)
			close(arm[1]);
		if (ptys[0] >= 0)
			close(ptys[0]);
		if (net[0] >= 0)
			close(net[0]);
		co.net_fd = net[1];
		co.sb_limits = priv->limits;
		/*
		 * init holds on to the guard's inotify instance: see ward__init_main().
		 * Never a shared instance (guard_fd is -1 then): that one is ward's.
		 */
		ward__child_main(&co, report[1], life[0], ptys[1], sb->guard_fd, &prog, iso, uid,
				 gid, danger ? 0 : landlock_abi, &leases, arm[0]);
	}

	/*
	 * The autorun watches, while the child sets up (on another core, when
	 * there is one free). Then the byte that lets the command start; a child
	 * already gone (its report says why) makes the write fail harmlessly.
	 */
	if (arm[0] >= 0) {
		close(arm[0]);
		arm[0] = -1;
		arm_r = ward__guard_arm(priv->guard, err);
		if (arm_r >= 0)
			(void)ward__write_nosigpipe(arm[1], "", 1);
		close(arm[1]);
		arm[1] = -1;
	}

	close(report[1]);
	report[1] = -1;
	close(life[0]);
	life[0] = -1;
	if (net[1] >= 0) {
		close(net[1]);
		net[1] = -1;
		sb->net_fd = TAKE_FD(net[0]);
		ward__fd_nonblock(sb->net_fd, true);
	}
	/*
	 * init holds the leases now; ward's copies would keep them alive after
	 * init is gone, and ward's own restoration would wait on them.
	 */
	ward__guard_close_leases(priv->guard);
	ward__seccomp_prog_release(&prog);
	priv->init_status = -1;
	sb->pid = (pid_t)pid;
	sb->pidfd = pidfd;
	sb->report_fd = TAKE_FD(report[0]);
	ward__fd_nonblock(sb->report_fd, true);
	sb->isolated = isolated;
	sb->isolation = iso;
	sb->netns = isolated && !p->network;
	sb->landlock_abi = danger ? 0 : landlock_abi;
	sb->seccomp = !danger;
	sb->denials_exact = so.observe_fs;
	sb->priv = TAKE_PTR(priv);
	/*
	 * life[1] lives as long as the sandbox handle: the child checks it once,
	 * after arming PDEATHSIG, to catch a ward that died before that.
	 */
	sb->life_fd = TAKE_FD(life[1]);
	if (ptys[0] >= 0) {
		close(ptys[1]);
		/* No master means the child failed first; its error report explains why. */
		r = ward__recv_fd(ptys[0]);
		sb->pty_master = r >= 0 ? r : -1;
		close(ptys[0]);
	}
	/* Unarmed, init exits without the command: nothing ran, the error is ward's. */
	if (arm_r < 0) {
		ward__sandbox_release(sb);
		return arm_r;
	}

	if (isolated) {
		/*
		 * Ubuntu 24.04's AppArmor restriction lets the namespace be created
		 * but leaves it without capabilities: that shows up as the first
		 * mount or the id maps failing. Wait for the child's word before
		 * the caller starts relaying anything.
		 */
		wait_setup(sb);
		if (sb->have_error && strcmp(sb->error.error.stage, "userns") == 0 &&
		    (sb->error.error.code == -EPERM || sb->error.error.code == -EACCES)) {
			if (iso == WARD_ISOLATION_USERNS) {
				userns_errno = -sb->error.error.code;
				userns_how = "setting up a new user namespace";
			}
			ward__sandbox_release(sb);
			return 1;
		}
	}
	return 0;

fail:
	ward__seccomp_prog_release(&prog);
	for (int i = 0; i < 2; i++) {
		if (report[i] >= 0)
			close(report[i]);
		if (life[i] >= 0)
			close(life[i]);
		if (ptys[i] >= 0)
			close(ptys[i]);
		if (net[i] >= 0)
			close(net[i]);
		if (arm[i] >= 0)
			close(arm[i]);
	}
	if (priv) {
		ward__guard_free(priv->guard);
		ward_policy_free(priv->policy);
	}
	ward__sandbox_limits_release(priv);
	sb->guard_fd = -1;
	return r;
}

enum ward__isolation ward__spawn_isolation_found(void)
{
	if (!userns_refused)
		return WARD_ISOLATION_USERNS;
	if (!rootns_refused && have_sys_admin())
		return WARD_ISOLATION_ROOT;
	return WARD_ISOLATION_NONE;
}

int ward__sandbox_spawn(const struct ward__spawn_opts *o, struct ward__sandbox *sb,
			struct ward_error *err)
{
	const struct ward_policy *p = o->policy;
	const struct ward__fast_features *ff = ward__spawn_fast_features();
	const struct ward__features *f;
	bool danger;
	int r;

	ward__sandbox_reset(sb);
	if (!p || !p->resolved)
		return ward__error(err, -EINVAL, "policy", "the policy was not resolved");
	if (!o->argv || !o->argv[0])
		return ward__error(err, -EINVAL, "spawn", "no command given");
	danger = p->mode == WARD_MODE_DANGER_FULL_ACCESS;
	if (danger && o->n_layers > 0)
		return ward__error(
			err, -EINVAL, "layer",
			"danger-full-access runs without a sandbox: its changes cannot be "
			"held or recorded");
	if (danger)
		return spawn_attempt(o, sb, WARD_ISOLATION_NONE, 0, false, err);
	/*
	 * A kept descriptor of a directory leads to the host's own mount of it,
	 * which the sandbox's read-only view does not cover: only Landlock, which
	 * checks the path an fd leads to, stops writes beneath it. Without
	 * Landlock such a descriptor would open the host: refuse it.
	 */
	for (size_t i = 0; ff->landlock_abi < 1 && i < o->n_keep_fds; i++) {
		struct stat st;
		int fl = fcntl(o->keep_fds[i], F_GETFL);

		if (fstat(o->keep_fds[i], &st) == 0 &&
		    (S_ISDIR(st.st_mode) || (fl >= 0 && (fl & O_PATH)))) {
			ward__error(
				err, -EPERM, "spawn",
				"cannot keep fd %d: it is a directory (or an O_PATH descriptor), and without Landlock nothing would stop writes beneath it",
				o->keep_fds[i]);
			return -EPERM;
		}
	}

	if (!userns_refused) {
		r = spawn_attempt(o, sb, WARD_ISOLATION_USERNS, ff->landlock_abi, ff->user_notif,
				  err);
		if (r <= 0)
			return r;
		userns_refused = true;
	}
	/*
	 * No user namespace, but the rights to create the others (root where
	 * user namespaces are refused): the same sandbox without the user
	 * namespace. init drops every privilege before the command starts
	 * (init.c), so the command holds exactly what it holds with one.
	 */
	if (!rootns_refused && have_sys_admin()) {
		r = spawn_attempt(o, sb, WARD_ISOLATION_ROOT, ff->landlock_abi, ff->user_notif,
				  err);
		if (r <= 0)
			return r;
		rootns_refused = true;
	}

	/*
	 * The host refused namespaces: now learn why, for the message and the
	 * hint, from what the attempts found (no probe process of its own).
	 */
	ward__features_note_refused(userns_errno, userns_how, rootns_refused || !have_sys_admin());
	f = ward__features_get();
	/*
	 * The network by domain is a proxy reached only from the sandbox's own
	 * network namespace: without one the command would reach the network
	 * directly, or not at all. Refuse rather than pretend.
	 */
	if (ward__policy_net_by_domain(p)) {
		ward__error(
			err, -EOPNOTSUPP, "network",
			"--allow-domain and --deny-domain need a network namespace, and user namespaces are unavailable (%s)",
			f->userns_why[0] ? f->userns_why : "refused by this host");
		ward__error_hint(
			err, "run 'ward doctor' for what this host refuses and how to allow it");
		return -EOPNOTSUPP;
	}
	/* A layer is a mount: without a mount namespace the command would write to the host. */
	if (o->n_layers > 0) {
		ward__error(
			err, -EOPNOTSUPP, "layer",
			"holding or recording changes needs a mount namespace, and user namespaces are unavailable (%s)",
			f->userns_why[0] ? f->userns_why : "refused by this host");
		ward__error_hint(
			err, "run 'ward doctor' for what this host refuses and how to allow it");
		return -EOPNOTSUPP;
	}
	if (p->require_isolation) {
		ward__error(
			err, -EPERM, "userns",
			"user namespaces are unavailable (%s) and --require-isolation was given",
			f->userns_why[0] ? f->userns_why : "refused by this host");
		ward__error_hint(
			err, "run 'ward doctor' for what this host refuses and how to allow it");
		return -EPERM;
	}
	/* Without namespaces and without Landlock, nothing would confine writes: refuse, never pretend. */
	if (ff->landlock_abi < 1) {
		ward__error(
			err, -EPERM, "userns",
			"cannot sandbox: user namespaces are unavailable (%s) and so is Landlock",
			f->userns_why[0] ? f->userns_why : "refused by this host");
		ward__error_hint(
			err, "run 'ward doctor' for what this host refuses and how to allow it");
		return -EPERM;
	}
	r = spawn_attempt(o, sb, WARD_ISOLATION_NONE, ff->landlock_abi, ff->user_notif, err);
	if (r == 0)
		ward__features_missing_guarantees(f, p, sb->fallback_missing,
						  sizeof(sb->fallback_missing));
	return r;
}
