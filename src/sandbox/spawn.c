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
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "sandbox/sandbox.h"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

struct spawn_priv {
	struct ward__guard *guard;
	bool guard_pending; /* init reported a broken lease: trip once the reports are read */
	bool in_trip; /* guard_trip() is waiting for the sandbox to die */
	char rbuf[2 * PIPE_BUF];
	size_t rlen;
	bool killed;
	bool reaped;
	int init_status;
};

static int pidfd_send(int pidfd, int sig)
{
	return RET_NERRNO(syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0));
}

/* ------------------------------------------------------------------ child side */

_noreturn_ static void child_fail(int report_fd, const struct ward_error *e)
{
	struct ward__msg_error m = {.error = *e, .exit_code = 125};

	ward__report(report_fd, WARD_MSG_ERROR, &m, sizeof(m));
	_exit(125);
}

static int write_id_maps(uid_t uid, gid_t gid, struct ward_error *err)
{
	char line[64];
	int r;

	/* setgroups must be denied before an unprivileged process may write gid_map (user_namespaces(7)). */
	r = ward__write_file("/proc/self/setgroups", "deny");
	if (r < 0 && r != -ENOENT)
		return ward__error(err, r, "userns", "cannot write '/proc/self/setgroups': %m");
	snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	r = ward__write_file("/proc/self/uid_map", line);
	if (r < 0)
		return ward__error(err, r, "userns", "cannot write '/proc/self/uid_map': %m");
	snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	r = ward__write_file("/proc/self/gid_map", line);
	if (r < 0)
		return ward__error(err, r, "userns", "cannot write '/proc/self/gid_map': %m");
	return 0;
}

static int loopback_up(struct ward_error *err)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = {0};

	if (fd < 0)
		return ward__error(err, -errno, "network",
				   "cannot create a socket to bring 'lo' up: %m");
	memcpy(ifr.ifr_name, "lo", 3);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return ward__error(err, -errno, "network", "cannot read the flags of 'lo': %m");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		return ward__error(err, -errno, "network", "cannot bring 'lo' up: %m");
	return 0;
}

/*
 * Opens a pty from the sandbox's own devpts (after the mounts), so that the
 * command's terminal has a name that resolves inside (tty(1), ps). The master
 * goes to ward, which relays it to the real terminal.
 */
static int open_pty(struct ward__spawn_opts *o, int sock, struct ward_error *err)
{
	int master, slave, unlock = 0, r;

	master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0)
		return ward__error(err, -errno, "tty", "cannot open '/dev/ptmx': %m");
	if (ioctl(master, TIOCSPTLCK, &unlock) < 0) {
		r = ward__error(err, -errno, "tty", "cannot unlock the pty: %m");
		close(master);
		return r;
	}
	/* TIOCGPTPEER opens the slave through the master, with no path lookup to race. */
	slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0) {
		r = ward__error(err, -errno, "tty", "cannot open the pty's terminal: %m");
		close(master);
		return r;
	}
	if (o->have_termios)
		tcsetattr(slave, TCSANOW, &o->termios);
	ioctl(slave, TIOCSWINSZ, &o->winsize);
	r = ward__send_fd(sock, master);
	close(master);
	if (r < 0) {
		close(slave);
		return ward__error(err, r, "tty", "cannot hand the pty to ward: %m");
	}
	o->tty_fd = slave;
	for (int i = 0; i < 3; i++)
		if (o->pty_stdio[i])
			o->stdio[i] = slave;
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/*
 * The child never execs (it becomes init), so close-on-exec does not help
 * here: every fd of the caller it inherited would stay open for the whole run
 * (the write end of the command's stdin pipe among them, and the command would
 * never see EOF). Close everything above 2 but what the sandbox needs.
 */
static void close_inherited_fds(const struct ward__spawn_opts *o, int report_fd, int pty_sock,
				int hold_fd, const struct ward__init_leases *leases)
{
	int keep[WARD_MAX_KEEP_FDS + 8 + WARD_GUARD_MAX_LEASES];
	size_t n = 0;
	unsigned lo = 3;

	keep[n++] = report_fd;
	if (hold_fd >= 0)
		keep[n++] = hold_fd;
	if (pty_sock >= 0)
		keep[n++] = pty_sock;
	if (o->tty_fd >= 0)
		keep[n++] = o->tty_fd;
	for (int i = 0; i < 3; i++)
		if (o->stdio[i] >= 0)
			keep[n++] = o->stdio[i];
	for (size_t i = 0; i < o->n_keep_fds && n < ELEMENTSOF(keep); i++)
		keep[n++] = o->keep_fds[i];
	for (size_t i = 0; i < leases->n && n < ELEMENTSOF(keep); i++)
		keep[n++] = leases->fds[i];
	qsort(keep, n, sizeof(int), cmp_int);
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < (int)lo)
			continue;
		if ((unsigned)keep[i] > lo)
			syscall(SYS_close_range, lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	syscall(SYS_close_range, lo, ~0U, 0);
}

_noreturn_ static void child_main(const struct ward__spawn_opts *opts, int report_fd, int life_fd,
				  int pty_sock, int hold_fd, const struct ward__seccomp_prog *prog,
				  enum ward__isolation iso, uid_t uid, gid_t gid, int landlock_abi,
				  const struct ward__init_leases *leases)
{
	bool isolated = iso != WARD_ISOLATION_NONE;
	struct ward__spawn_opts local = *opts, *o = &local;
	const struct ward_policy *p = o->policy;
	struct ward_error e = {0};
	struct pollfd pfd = {.fd = life_fd, .events = POLLIN};
	int landlock_fd = -1;
	int r;

	/*
	 * If ward dies, so does everything inside: init's death kills the pid
	 * namespace; without one, init kills the tree itself (WARD_SIG_PARENT_DIED).
	 */
	if (prctl(PR_SET_PDEATHSIG, isolated ? SIGKILL : WARD_SIG_PARENT_DIED) < 0) {
		ward__error(&e, -errno, "spawn", "cannot set the parent-death signal: %m");
		child_fail(report_fd, &e);
	}
	/* The parent may have died before PDEATHSIG was armed: its end of life_fd is then closed. */
	if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLIN)))
		_exit(125);
	close(life_fd);
	close_inherited_fds(o, report_fd, pty_sock, hold_fd, leases);

	if (isolated) {
		/* Without a user namespace (root) the ids are the host's: nothing to map. */
		if (iso == WARD_ISOLATION_USERNS) {
			r = write_id_maps(uid, gid, &e);
			if (r < 0)
				child_fail(report_fd, &e);
		}
		r = ward__mounts_setup(p, &e);
		if (r < 0)
			child_fail(report_fd, &e);
		if (!p->network && p->mode != WARD_MODE_DANGER_FULL_ACCESS) {
			r = loopback_up(&e);
			if (r < 0)
				child_fail(report_fd, &e);
		}
	}
	if (pty_sock >= 0) {
		r = open_pty(o, pty_sock, &e);
		if (r < 0)
			child_fail(report_fd, &e);
		close(pty_sock);
	}
	if (isolated) {
		struct ward__msg_ready m = {.pid = 0};

		ward__report(report_fd, WARD_MSG_READY, &m, sizeof(m));
	}
	if (chdir(o->cwd ? o->cwd : p->resolved_cwd) < 0) {
		ward__error(&e, -errno, "spawn", "cannot enter the working directory '%s': %m",
			    o->cwd ? o->cwd : p->resolved_cwd);
		child_fail(report_fd, &e);
	}
	if (landlock_abi > 0 && p->mode != WARD_MODE_DANGER_FULL_ACCESS) {
		r = ward__landlock_build(p, landlock_abi, !isolated && !p->network, &landlock_fd,
					 &e);
		if (r < 0)
			child_fail(report_fd, &e);
	}
	ward__init_main(o, report_fd, hold_fd, prog, landlock_fd, iso, leases);
}

/*
 * The child of a prepared sandbox: what child_main() does before the
 * command, without knowing the command, then init waits for it
 * (ward__init_prepared_main). The namespaces beyond the user and pid ones
 * are made here by unshare(), not by the clone: creating them (the network
 * namespace above all) is most of the cost of a sandbox, and the clone runs
 * in the server's event loop, which must not wait for it. Made by the new
 * user namespace's process, they are the same namespaces, owned by the same
 * user namespace, as the cold path's clone flags make.
 */
_noreturn_ static void child_prepared_main(const struct ward__spawn_opts *opts, int report_fd,
					   int life_fd, int ctl_fd,
					   const struct ward__seccomp_prog *prog,
					   enum ward__isolation iso, uid_t uid, gid_t gid,
					   int landlock_abi)
{
	static const struct ward__init_leases no_leases = {0};
	struct ward__spawn_opts local = *opts, *o = &local;
	const struct ward_policy *p = o->policy;
	unsigned long flags = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS;
	struct ward_error e = {0};
	struct pollfd pfd = {.fd = life_fd, .events = POLLIN};
	int landlock_fd = -1, devnull, r;

	/* If ward dies, so does everything inside (init's death ends the pid namespace). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
		ward__error(&e, -errno, "spawn", "cannot set the parent-death signal: %m");
		child_fail(report_fd, &e);
	}
	if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLIN)))
		_exit(125);
	close(life_fd);
	/*
	 * Waiting for its command, the sandbox holds none of ward's stdio (with
	 * --listen stdio, the client's pipes): the command gets what is sent.
	 */
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0) {
		ward__error(&e, -errno, "spawn", "cannot open '/dev/null': %m");
		child_fail(report_fd, &e);
	}
	for (int i = 0; i < 3; i++)
		dup2(devnull, i);
	if (devnull > 2)
		close(devnull);
	for (int i = 0; i < 3; i++)
		o->stdio[i] = -1;
	o->tty_fd = -1;
	o->n_keep_fds = 0;
	close_inherited_fds(o, report_fd, ctl_fd, -1, &no_leases);

	if (iso == WARD_ISOLATION_USERNS) {
		r = write_id_maps(uid, gid, &e);
		if (r < 0)
			child_fail(report_fd, &e);
	}
	if (!p->network)
		flags |= CLONE_NEWNET;
	if (unshare(flags) < 0) {
		ward__error(&e, -errno, "userns", "cannot create the sandbox's namespaces: %m");
		child_fail(report_fd, &e);
	}
	r = ward__mounts_setup(p, &e);
	if (r < 0)
		child_fail(report_fd, &e);
	if (!p->network) {
		r = loopback_up(&e);
		if (r < 0)
			child_fail(report_fd, &e);
	}
	/* The terminal comes from the sandbox's own devpts, as in the cold path; ward gets the master now. */
	if (o->pty) {
		r = open_pty(o, ctl_fd, &e);
		if (r < 0)
			child_fail(report_fd, &e);
	}
	if (chdir(p->resolved_cwd) < 0) {
		ward__error(&e, -errno, "spawn", "cannot enter the working directory '%s': %m",
			    p->resolved_cwd);
		child_fail(report_fd, &e);
	}
	if (landlock_abi > 0) {
		r = ward__landlock_build(p, landlock_abi, false, &landlock_fd, &e);
		if (r < 0)
			child_fail(report_fd, &e);
	}
	ward__init_prepared_main(o, report_fd, ctl_fd, prog, landlock_fd, iso);
}

/* ------------------------------------------------------------------ parent side */

/*
 * What spawning needs to know of the host, without the user-namespace probe
 * (a clone of its own, most of a millisecond here): the Landlock ABI and
 * whether seccomp user notification is usable are one syscall each.
 * Namespaces are simply tried; when the host refuses them, spawn falls back
 * and only then asks features.c for the whole story.
 */
struct fast_features {
	int landlock_abi;
	bool user_notif;
};

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

static const struct fast_features *fast_features(void)
{
	static struct fast_features ff;
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
	_cleanup_free_ struct spawn_priv *priv = NULL;
	int report[2] = {-1, -1}, life[2] = {-1, -1}, ptys[2] = {-1, -1};
	unsigned long flags;
	int pidfd = -1;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	long pid;
	int r;

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

	/* In the fallback this keeps every protected path: before the command exists. */
	r = ward__guard_new(p, !isolated && !danger, o->watches, &priv->guard, err);
	if (r < 0)
		goto fail;
	sb->guard_fd = ward__guard_fd(priv->guard);
	leases.n = ward__guard_leases(priv->guard, &leases.fds, &leases.paths);

	if (pipe2(report, O_CLOEXEC) < 0 || pipe2(life, O_CLOEXEC) < 0) {
		r = ward__error(err, -errno, "spawn", "cannot create a pipe: %m");
		goto fail;
	}
	if (o->pty && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ptys) < 0) {
		r = ward__error(err, -errno, "spawn", "cannot create a socket pair: %m");
		goto fail;
	}

	flags = CLONE_PIDFD | SIGCHLD;
	if (isolated) {
		flags |= CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
		if (iso == WARD_ISOLATION_USERNS)
			flags |= CLONE_NEWUSER;
		if (!p->network)
			flags |= CLONE_NEWNET;
	}
	/*
	 * A raw clone() with a NULL stack behaves like fork(), but takes the
	 * namespace flags and hands back a pidfd atomically (no pid-reuse race).
	 * The child only makes syscalls until it execs or exits.
	 */
	pid = syscall(SYS_clone, flags, NULL, &pidfd, NULL, 0);
	if (pid < 0) {
		r = -errno;
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
		close(report[0]);
		close(life[1]);
		if (ptys[0] >= 0)
			close(ptys[0]);
		/*
		 * init holds on to the guard's inotify instance: see ward__init_main().
		 * Never a shared instance (guard_fd is -1 then): that one is ward's.
		 */
		child_main(o, report[1], life[0], ptys[1], sb->guard_fd, &prog, iso, uid, gid,
			   danger ? 0 : landlock_abi, &leases);
	}

	close(report[1]);
	report[1] = -1;
	close(life[0]);
	life[0] = -1;
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
	}
	if (priv)
		ward__guard_free(priv->guard);
	sb->guard_fd = -1;
	return r;
}

/* A sandbox with nothing in it yet (no descriptor, no process). */
static void sandbox_reset(struct ward__sandbox *sb)
{
	*sb = (struct ward__sandbox){.pid = -1,
				     .pidfd = -1,
				     .report_fd = -1,
				     .guard_fd = -1,
				     .life_fd = -1,
				     .ctl_fd = -1,
				     .pty_master = -1};
}

int ward__sandbox_spawn(const struct ward__spawn_opts *o, struct ward__sandbox *sb,
			struct ward_error *err)
{
	const struct ward_policy *p = o->policy;
	const struct fast_features *ff = fast_features();
	const struct ward__features *f;
	bool danger;
	int r;

	sandbox_reset(sb);
	if (!p || !p->resolved)
		return ward__error(err, -EINVAL, "policy", "the policy was not resolved");
	if (!o->argv || !o->argv[0])
		return ward__error(err, -EINVAL, "spawn", "no command given");
	danger = p->mode == WARD_MODE_DANGER_FULL_ACCESS;
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

/* ------------------------------------------------------------------ prepared sandboxes */

int ward__sandbox_prepare(const struct ward__spawn_opts *o, struct ward__sandbox *sb,
			  struct ward_error *err)
{
	const struct ward_policy *p = o->policy;
	const struct fast_features *ff = fast_features();
	struct ward__seccomp_opts so = {0};
	struct ward__seccomp_prog prog = {0};
	_cleanup_free_ struct spawn_priv *priv = NULL;
	int report[2] = {-1, -1}, life[2] = {-1, -1}, ctl[2] = {-1, -1};
	enum ward__isolation iso;
	unsigned long flags;
	int pidfd = -1;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	long pid;
	int r;

	sandbox_reset(sb);
	if (!p || !p->resolved)
		return ward__error(err, -EINVAL, "policy", "the policy was not resolved");
	if (p->mode == WARD_MODE_DANGER_FULL_ACCESS || o->n_keep_fds > 0)
		return -EOPNOTSUPP;
	/*
	 * The isolation the cold path found on this host; never the fallback,
	 * whose guard keeps the protected paths as they are right before the
	 * command runs (a prepared sandbox would keep them seconds earlier).
	 */
	if (!userns_refused)
		iso = WARD_ISOLATION_USERNS;
	else if (!rootns_refused && have_sys_admin())
		iso = WARD_ISOLATION_ROOT;
	else
		return -EOPNOTSUPP;

	/* The same filter options as a cold start's (spawn_attempt) with namespaces. */
	so.network_off = !p->network;
	so.netns = !p->network;
	so.supervise_connect = !p->network && ff->user_notif;
	so.observe_fs = o->observe_fs && ff->user_notif;
	so.observe_reads = so.observe_fs && p->n_deny > 0;
	so.notify_refusals = so.observe_fs;
	r = ward__seccomp_build(&so, &prog, err);
	if (r < 0)
		return r;
	priv = calloc(1, sizeof(*priv));
	if (!priv) {
		r = ward__error(err, -ENOMEM, "spawn", "out of memory");
		goto fail;
	}
	if (pipe2(report, O_CLOEXEC) < 0 || pipe2(life, O_CLOEXEC) < 0) {
		r = ward__error(err, -errno, "spawn", "cannot create a pipe: %m");
		goto fail;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) < 0) {
		r = ward__error(err, -errno, "spawn", "cannot create a socket pair: %m");
		goto fail;
	}
	flags = CLONE_PIDFD | SIGCHLD | CLONE_NEWPID;
	if (iso == WARD_ISOLATION_USERNS)
		flags |= CLONE_NEWUSER;
	/* As in spawn_attempt: fork semantics, a pidfd without a pid-reuse race. */
	pid = syscall(SYS_clone, flags, NULL, &pidfd, NULL, 0);
	if (pid < 0) {
		r = ward__error(err, -errno, "spawn", "cannot create the sandbox: %m");
		goto fail;
	}
	if (pid == 0) {
		close(report[0]);
		close(life[1]);
		close(ctl[0]);
		child_prepared_main(o, report[1], life[0], ctl[1], &prog, iso, uid, gid,
				    ff->landlock_abi);
	}
	close(report[1]);
	close(life[0]);
	close(ctl[1]);
	ward__seccomp_prog_release(&prog);
	priv->init_status = -1;
	sb->pid = (pid_t)pid;
	sb->pidfd = pidfd;
	sb->report_fd = report[0];
	ward__fd_nonblock(sb->report_fd, true);
	sb->life_fd = life[1];
	sb->ctl_fd = ctl[0];
	sb->prepared = true;
	sb->isolated = true;
	sb->isolation = iso;
	sb->netns = !p->network;
	sb->landlock_abi = ff->landlock_abi;
	sb->seccomp = true;
	sb->denials_exact = so.observe_fs;
	sb->priv = TAKE_PTR(priv);
	return 0;

fail:
	ward__seccomp_prog_release(&prog);
	for (int i = 0; i < 2; i++) {
		if (report[i] >= 0)
			close(report[i]);
		if (life[i] >= 0)
			close(life[i]);
		if (ctl[i] >= 0)
			close(ctl[i]);
	}
	return r;
}

/* The command's strings as the init of a prepared sandbox reads them: [exec_path] argv envp. */
static int launch_blob(const struct ward__spawn_opts *o, struct ward__launch_msg *m, char **ret,
		       size_t *ret_len)
{
	char *const *envp = o->envp ? o->envp : environ;
	size_t len = 0, argc = 0, envc = 0;
	char *blob, *q;

	if (o->exec_path)
		len += strlen(o->exec_path) + 1;
	if (o->cwd)
		len += strlen(o->cwd) + 1;
	for (; o->argv[argc]; argc++)
		len += strlen(o->argv[argc]) + 1;
	for (; envp && envp[envc]; envc++)
		len += strlen(envp[envc]) + 1;
	if (len > WARD_LAUNCH_MAX || argc > WARD_LAUNCH_MAX_STRINGS ||
	    envc > WARD_LAUNCH_MAX_STRINGS)
		return -E2BIG;
	blob = malloc(sizeof(*m) + len);
	if (!blob)
		return -ENOMEM;
	q = blob + sizeof(*m);
	if (o->exec_path)
		q = stpcpy(q, o->exec_path) + 1;
	if (o->cwd)
		q = stpcpy(q, o->cwd) + 1;
	for (size_t i = 0; i < argc; i++)
		q = stpcpy(q, o->argv[i]) + 1;
	for (size_t i = 0; i < envc; i++)
		q = stpcpy(q, envp[i]) + 1;
	m->magic = WARD_LAUNCH_MAGIC;
	m->flags |= o->exec_path ? WARD_LAUNCH_EXEC_PATH : 0;
	m->flags |= o->cwd ? WARD_LAUNCH_CWD : 0;
	m->argc = (uint32_t)argc;
	m->envc = (uint32_t)envc;
	m->blob_len = (uint32_t)len;
	memcpy(blob, m, sizeof(*m));
	*ret = blob;
	*ret_len = len;
	return 0;
}

int ward__sandbox_launch(struct ward__sandbox *sb, const struct ward__spawn_opts *o,
			 struct ward_error *err)
{
	struct spawn_priv *priv = sb->priv;
	struct ward__launch_msg m = {0};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} u = {0};
	struct iovec iov;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	_cleanup_free_ char *blob = NULL;
	_cleanup_close_ int memfd = -1;
	int fds[4], nfd = 0;
	size_t len;
	ssize_t n;
	int r;

	if (!priv || !sb->prepared || sb->ctl_fd < 0 || !o->argv || !o->argv[0])
		return ward__error(err, -EINVAL, "launch", "not a prepared sandbox");
	/* Descriptors kept at their numbers need the cold path's fork (and its checks). */
	if (o->n_keep_fds > 0)
		return ward__error(err, -EOPNOTSUPP, "launch", "descriptors to keep");
	if (o->pty) {
		/* The master of the terminal init opened in the sandbox's own devpts. */
		struct pollfd pfd = {.fd = sb->ctl_fd, .events = POLLIN};

		if (poll(&pfd, 1, 0) <= 0 || (r = ward__recv_fd(sb->ctl_fd)) < 0)
			return ward__error(err, -EPIPE, "launch", "the sandbox has no terminal");
		sb->pty_master = r;
		m.rows = o->winsize.ws_row;
		m.cols = o->winsize.ws_col;
	} else {
		for (int i = 0; i < 3; i++)
			if (o->stdio[i] >= 0) {
				m.flags |= WARD_LAUNCH_STDIN << i;
				fds[nfd++] = o->stdio[i];
			}
	}
	/*
	 * The guard starts before the command, as in the cold path (and on the
	 * policy the sandbox was prepared for: the caller checked they are the
	 * same).
	 */
	r = ward__guard_new(o->policy, false, o->watches, &priv->guard, err);
	if (r < 0)
		return r;
	sb->guard_fd = ward__guard_fd(priv->guard);

	r = launch_blob(o, &m, &blob, &len);
	if (r < 0)
		return ward__error(err, r, "launch", "cannot pass the command to the sandbox: %m");
	if (len <= WARD_LAUNCH_INLINE_MAX) {
		iov = (struct iovec){.iov_base = blob, .iov_len = sizeof(m) + len};
	} else {
		/* Too large for one datagram: the strings go in a memfd (init maps it). */
		m.flags |= WARD_LAUNCH_MEMFD;
		memcpy(blob, &m, sizeof(m));
		memfd = memfd_create("ward-launch", MFD_CLOEXEC);
		if (memfd < 0)
			return ward__error(err, -errno, "launch", "cannot create a memfd: %m");
		r = ward__write_all(memfd, blob + sizeof(m), len);
		if (r < 0)
			return ward__error(err, r, "launch", "cannot write the command: %m");
		fds[nfd++] = memfd;
		iov = (struct iovec){.iov_base = blob, .iov_len = sizeof(m)};
	}
	if (nfd > 0) {
		struct cmsghdr *cm;

		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfd);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfd);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfd);
	}
	/* One datagram into an empty socket: never blocks the caller's loop. */
	do
		n = sendmsg(sb->ctl_fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return ward__error(err, -errno, "launch",
				   "cannot pass the command to the sandbox: %m");
	/* init reads the datagram after ward's end is gone (queued data outlives the sender). */
	close(sb->ctl_fd);
	sb->ctl_fd = -1;
	sb->prepared = false;
	sb->launched = true;
	return 0;
}

static void add_guard_denial(struct ward__sandbox *sb, const char *access, const char *path);

static void add_denial(struct ward__sandbox *sb, const char *access, const char *sc, int error,
		       const char *target)
{
	struct ward__denial *d;

	if (sb->n_denials >= WARD_MAX_DENIALS) {
		sb->denials_dropped++;
		return;
	}
	if (!sb->denials) {
		sb->denials = calloc(WARD_MAX_DENIALS, sizeof(*sb->denials));
		if (!sb->denials) {
			sb->denials_dropped++;
			return;
		}
	}
	d = &sb->denials[sb->n_denials];
	snprintf(d->access, sizeof(d->access), "%s", access);
	snprintf(d->syscall, sizeof(d->syscall), "%s", sc);
	d->error = error;
	d->target = strdup(target);
	if (!d->target) {
		sb->denials_dropped++;
		return;
	}
	sb->n_denials++;
}

static void handle_message(struct ward__sandbox *sb, const struct ward__msg_hdr *h,
			   const char *payload)
{
	/*
	 * The child armed its parent-death signal before its first report: the
	 * life pipe has served (one descriptor less per sandbox in a server
	 * holding many).
	 */
	if ((h->type == WARD_MSG_READY || h->type == WARD_MSG_ERROR) && sb->life_fd >= 0) {
		close(sb->life_fd);
		sb->life_fd = -1;
	}
	switch (h->type) {
	case WARD_MSG_ERROR:
		if (h->len == sizeof(struct ward__msg_error) && !sb->have_error) {
			memcpy(&sb->error, payload, sizeof(sb->error));
			sb->error.error.message[sizeof(sb->error.error.message) - 1] = '\0';
			sb->error.error.stage[sizeof(sb->error.error.stage) - 1] = '\0';
			sb->error.error.hint[sizeof(sb->error.error.hint) - 1] = '\0';
			sb->have_error = true;
		}
		break;
	case WARD_MSG_STATUS:
		if (h->len == sizeof(struct ward__msg_status)) {
			struct ward__msg_status s;

			memcpy(&s, payload, sizeof(s));
			sb->wait_status = s.wait_status;
			sb->have_status = true;
		}
		break;
	case WARD_MSG_READY:
		sb->ready = true;
		break;
	case WARD_MSG_DENIALS_DROPPED:
		if (h->len == sizeof(struct ward__msg_dropped)) {
			struct ward__msg_dropped m;

			memcpy(&m, payload, sizeof(m));
			sb->denials_dropped += m.count;
		}
		break;
	case WARD_MSG_GUARD:
		if (h->len == sizeof(struct ward__msg_guard)) {
			struct ward__msg_guard g;

			memcpy(&g, payload, sizeof(g));
			g.access[sizeof(g.access) - 1] = '\0';
			g.target[sizeof(g.target) - 1] = '\0';
			add_guard_denial(sb, g.access, g.target);
			((struct spawn_priv *)sb->priv)->guard_pending = true;
		}
		break;
	case WARD_MSG_DENIAL:
		if (h->len == sizeof(struct ward__msg_denial)) {
			struct ward__msg_denial d;

			memcpy(&d, payload, sizeof(d));
			d.access[sizeof(d.access) - 1] = '\0';
			d.syscall[sizeof(d.syscall) - 1] = '\0';
			d.target[sizeof(d.target) - 1] = '\0';
			add_denial(sb, d.access, d.syscall, d.error, d.target);
		}
		break;
	default:
		break;
	}
}

static int read_reports(struct ward__sandbox *sb, bool *ret_eof)
{
	struct spawn_priv *priv = sb->priv;

	if (ret_eof)
		*ret_eof = false;
	if (sb->report_fd < 0) {
		if (ret_eof)
			*ret_eof = true;
		return 0;
	}
	for (;;) {
		ssize_t n = read(sb->report_fd, priv->rbuf + priv->rlen,
				 sizeof(priv->rbuf) - priv->rlen);
		size_t off = 0;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			return -errno;
		}
		if (n == 0) {
			close(sb->report_fd);
			sb->report_fd = -1;
			if (ret_eof)
				*ret_eof = true;
			return 0;
		}
		priv->rlen += (size_t)n;
		while (priv->rlen - off >= sizeof(struct ward__msg_hdr)) {
			struct ward__msg_hdr h;

			memcpy(&h, priv->rbuf + off, sizeof(h));
			if (h.len > PIPE_BUF) {
				/* Writers never send this; a corrupt stream is dropped rather than trusted. */
				priv->rlen = 0;
				off = 0;
				break;
			}
			if (priv->rlen - off < sizeof(h) + h.len)
				break;
			handle_message(sb, &h, priv->rbuf + off + sizeof(h));
			off += sizeof(h) + h.len;
		}
		memmove(priv->rbuf, priv->rbuf + off, priv->rlen - off);
		priv->rlen -= off;
	}
}

static void wait_init_dead(struct ward__sandbox *sb, int timeout_ms)
{
	struct pollfd pfd = {.fd = sb->pidfd, .events = POLLIN};

	if (sb->pidfd >= 0)
		poll(&pfd, 1, timeout_ms);
}

/* A change the guard saw or repaired: a denial (not a refused syscall: syscall and error empty). */
static void add_guard_denial(struct ward__sandbox *sb, const char *access, const char *path)
{
	if (!path || !path[0])
		return;
	for (size_t i = 0; i < sb->n_denials; i++)
		if (!sb->denials[i].syscall[0] && strcmp(sb->denials[i].target, path) == 0)
			return;
	add_denial(sb, access, "", 0, path);
}

static void guard_report(void *userdata, const char *access, const char *path)
{
	add_guard_denial(userdata, access, path);
}

/*
 * Every process of the sandbox dead, not merely signalled: nothing may write
 * while (or after) the guard restores. With a pid namespace that is init's
 * death (the kernel kills and reaps the namespace first). Without one, ward
 * stops and kills init's descendants itself and lets init, a subreaper that
 * every orphan of the sandbox comes back to, reap them all: its status report
 * comes only after its last child is gone. init is killed as well if it does
 * not report in time (or was itself killed by the command: Landlock ABI < 6).
 */
static void kill_all_and_wait(struct ward__sandbox *sb)
{
	struct spawn_priv *priv = sb->priv;
	uint64_t deadline = ward__now_ns() + 5ULL * 1000 * 1000 * 1000;

	if (sb->isolated) {
		ward__sandbox_kill(sb);
		wait_init_dead(sb, 5000);
		return;
	}
	if (!priv->killed && sb->pidfd >= 0)
		ward__kill_tree(sb->pid);
	priv->in_trip = true;
	while (!sb->have_status && sb->report_fd >= 0) {
		struct pollfd pfds[2] = {{.fd = sb->report_fd, .events = POLLIN},
					 {.fd = sb->pidfd, .events = POLLIN}};
		uint64_t now = ward__now_ns();
		bool eof = false;

		if (now >= deadline)
			break;
		if (poll(pfds, 2, (int)((deadline - now) / 1000000 + 1)) < 0 && errno != EINTR)
			break;
		if (pfds[0].revents)
			ward__sandbox_read_reports(sb, &eof);
		if (eof || ((pfds[1].revents & POLLIN) && !pfds[0].revents))
			break;
	}
	priv->in_trip = false;
	if (!sb->have_status) {
		ward__sandbox_kill(sb);
		wait_init_dead(sb, 5000);
	}
}

/*
 * The command changed a protected path: stop everything inside first (so
 * nothing more is written), then put back what was there.
 */
static void guard_trip(struct ward__sandbox *sb, const char *access, const char *path)
{
	struct spawn_priv *priv = sb->priv;

	add_guard_denial(sb, access, path);
	if (sb->guard_tripped || priv->in_trip)
		return;
	sb->guard_tripped = true;
	kill_all_and_wait(sb);
	ward__guard_restore(priv->guard, guard_report, sb, sb->guard_left, sizeof(sb->guard_left));
	/* Nothing seen nor restored: lost events (a flood of them) stopped the run; say so. */
	for (size_t i = 0; i < sb->n_denials; i++)
		if (!sb->denials[i].syscall[0] && sb->denials[i].error == 0)
			return;
	add_guard_denial(sb, "write",
			 "(events about protected paths were lost: inotify queue overflow)");
}

int ward__sandbox_read_reports(struct ward__sandbox *sb, bool *ret_eof)
{
	struct spawn_priv *priv = sb->priv;
	int r = read_reports(sb, ret_eof);

	/* init broke a run off (a lease broke): restore once, outside the parsing. */
	if (priv && priv->guard_pending && !priv->in_trip) {
		priv->guard_pending = false;
		guard_trip(sb, NULL, NULL);
	}
	return r;
}

int ward__sandbox_handle_guard(struct ward__sandbox *sb)
{
	struct spawn_priv *priv = sb->priv;
	char access[16], path[PATH_MAX + 256];
	bool changed = false;
	int r;

	if (!priv || !priv->guard)
		return 0;
	r = ward__guard_read(priv->guard, access, sizeof(access), path, sizeof(path), &changed);
	if (changed)
		guard_trip(sb, access, path);
	return r;
}

int ward__sandbox_signal(struct ward__sandbox *sb, int sig)
{
	if (sb->pidfd < 0)
		return -ESRCH;
	return pidfd_send(sb->pidfd, sig);
}

void ward__sandbox_kill(struct ward__sandbox *sb)
{
	struct spawn_priv *priv = sb->priv;

	if (!priv || priv->killed || sb->pidfd < 0)
		return;
	priv->killed = true;
	if (!sb->isolated)
		ward__kill_tree(sb->pid);
	/* Killing PID 1 of the pid namespace kills every process in it (pid_namespaces(7)). */
	pidfd_send(sb->pidfd, SIGKILL);
}

int ward__sandbox_wait(struct ward__sandbox *sb, int *ret_exit_code)
{
	struct spawn_priv *priv = sb->priv;
	siginfo_t si = {0};
	bool eof = false;
	int code;

	if (!priv)
		return -ECHILD; /* closed (ward__sandbox_close) */

	while (!sb->have_status) {
		struct pollfd pfds[3] = {
			{.fd = sb->pidfd, .events = POLLIN},
			{.fd = sb->report_fd, .events = POLLIN},
			{.fd = sb->guard_fd, .events = POLLIN},
		};

		if (poll(pfds, 3, -1) < 0 && errno != EINTR)
			return -errno;
		if (pfds[1].revents)
			ward__sandbox_read_reports(sb, &eof);
		if (pfds[2].revents)
			ward__sandbox_handle_guard(sb);
		/*
		 * init reports the status only after it killed and reaped every
		 * other process of the sandbox: the run is over then. Tearing the
		 * namespaces down takes init another millisecond, which need not
		 * be waited for (release() reaps it).
		 */
		if ((pfds[0].revents & POLLIN) || sb->have_status)
			break;
	}
	ward__sandbox_handle_guard(sb);
	/*
	 * In the fallback, what the guard kept is compared once more after the
	 * run (every process is dead once init reported): a change no event told
	 * of (a lost event, a file beyond the leases written through a link) is
	 * undone and reported as well.
	 */
	if (priv->guard && !sb->isolated && !sb->guard_tripped) {
		if (!sb->have_status)
			kill_all_and_wait(sb);
		if (ward__guard_restore(priv->guard, guard_report, sb, sb->guard_left,
					sizeof(sb->guard_left)) > 0)
			sb->guard_tripped = true;
	}
	if (!priv->reaped) {
		si.si_pid = 0;
		if (waitid((idtype_t)P_PIDFD, (id_t)sb->pidfd, &si,
			   WEXITED | (sb->have_status ? WNOHANG : 0)) < 0)
			return -errno;
		if (si.si_pid != 0) {
			priv->reaped = true;
			priv->init_status =
				si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
		}
	}
	if (!priv->reaped)
		eof = true; /* the status is in; init's last word was it */
	/* init has exited: every writer of the report pipe is gone, so this reaches EOF. */
	while (!eof && sb->report_fd >= 0) {
		struct pollfd pfd = {.fd = sb->report_fd, .events = POLLIN};

		if (poll(&pfd, 1, 1000) <= 0)
			break;
		ward__sandbox_read_reports(sb, &eof);
	}

	if (sb->have_error)
		code = sb->error.exit_code;
	else if (sb->have_status && WIFEXITED(sb->wait_status))
		code = WEXITSTATUS(sb->wait_status);
	else if (sb->have_status && WIFSIGNALED(sb->wait_status))
		code = 128 + WTERMSIG(sb->wait_status);
	else
		code = priv->init_status;
	if (sb->guard_tripped && code == 0)
		code = 1;
	if (ret_exit_code)
		*ret_exit_code = code;
	return 0;
}

static void release(struct ward__sandbox *sb, bool reap)
{
	struct spawn_priv *priv = sb->priv;

	if (reap && priv && !priv->reaped && sb->pidfd >= 0) {
		siginfo_t si;

		ward__sandbox_kill(sb);
		waitid((idtype_t)P_PIDFD, (id_t)sb->pidfd, &si, WEXITED);
	}
	if (sb->pidfd >= 0)
		close(sb->pidfd);
	if (sb->report_fd >= 0)
		close(sb->report_fd);
	if (sb->life_fd >= 0)
		close(sb->life_fd);
	if (sb->pty_master >= 0)
		close(sb->pty_master);
	if (sb->ctl_fd >= 0)
		close(sb->ctl_fd);
	for (size_t i = 0; i < sb->n_denials; i++)
		free(sb->denials[i].target);
	free(sb->denials);
	if (priv)
		ward__guard_free(priv->guard); /* closes guard_fd */
	free(priv);
	sandbox_reset(sb);
}

void ward__sandbox_set_guard_notify(struct ward__sandbox *sb, ward__guard_notify_fn fn,
				    void *userdata)
{
	struct spawn_priv *priv = sb->priv;

	if (priv)
		ward__guard_set_notify(priv->guard, fn, userdata);
}

void ward__sandbox_close(struct ward__sandbox *sb)
{
	struct spawn_priv *priv = sb->priv;

	/* Never an unreaped init: its pidfd is the only handle on it. */
	if (priv && !priv->reaped && sb->pidfd >= 0)
		return;
	if (sb->pidfd >= 0)
		close(sb->pidfd);
	if (sb->report_fd >= 0)
		close(sb->report_fd);
	if (sb->life_fd >= 0)
		close(sb->life_fd);
	if (sb->pty_master >= 0)
		close(sb->pty_master);
	if (sb->ctl_fd >= 0)
		close(sb->ctl_fd);
	sb->pidfd = sb->report_fd = sb->life_fd = sb->pty_master = sb->guard_fd = sb->ctl_fd = -1;
	if (priv)
		ward__guard_free(priv->guard); /* its watches, or its own instance */
	free(priv);
	sb->priv = NULL;
}

void ward__sandbox_release(struct ward__sandbox *sb)
{
	release(sb, true);
}

void ward__sandbox_release_exiting(struct ward__sandbox *sb)
{
	release(sb, false);
}
