/* SPDX-License-Identifier: MIT */
/*
 * The clone's child, from the clone until it becomes the sandbox's init
 * (init.c): in its new namespaces it maps its own uid and gid, builds the
 * mount view (mounts.c), brings loopback up, opens the command's terminal
 * from its own devpts, enters the working directory and builds the Landlock
 * ruleset. A failure is reported to ward as {stage, errno}, then _exit(125).
 * The clone itself is the parent's (spawn.c, prepare.c).
 */
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "sandbox/spawn-state.h"

_noreturn_ static void child_fail(int report_fd, const struct ward_error *e)
{
	struct ward__msg_error m = {.error = *e, .exit_code = 125};

	ward__report(report_fd, WARD_MSG_ERROR, &m, sizeof(m));
	_exit(125);
}

/* The mount view kept the container's /proc: ward says so (before READY, so before the command). */
static void note_host_proc(int report_fd)
{
	struct ward__msg_note m = {.what = WARD_NOTE_HOST_PROC};

	ward__report(report_fd, WARD_MSG_NOTE, &m, sizeof(m));
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
				int hold_fd, int arm_fd, const struct ward__init_leases *leases)
{
	int keep[WARD_MAX_KEEP_FDS + 9 + WARD_GUARD_MAX_LEASES + WARD_CGROUP_CHILD_FDS];
	size_t n = 0;
	unsigned lo = 3;

	/* init's way back out of the sandbox's cgroup, and the v1 OOM notification. */
	if (o->sb_limits)
		n += ward__cgroup_child_fds(&o->sb_limits->cg, keep, WARD_CGROUP_CHILD_FDS);
	keep[n++] = report_fd;
	if (arm_fd >= 0)
		keep[n++] = arm_fd;
	if (o->net_fd >= 0)
		keep[n++] = o->net_fd;
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

_noreturn_ void ward__child_main(const struct ward__spawn_opts *opts, int report_fd, int life_fd,
				 int pty_sock, int hold_fd, const struct ward__seccomp_prog *prog,
				 enum ward__isolation iso, uid_t uid, gid_t gid, int landlock_abi,
				 const struct ward__init_leases *leases, int arm_fd)
{
	bool isolated = iso != WARD_ISOLATION_NONE;
	struct ward__spawn_opts local = *opts, *o = &local;
	const struct ward_policy *p = o->policy;
	struct ward_error e = {0};
	struct pollfd pfd = {.fd = life_fd, .events = POLLIN};
	int landlock_fd = -1;
	int r;

	/* Into the sandbox's v1 cgroups before anything else (a v2 one was entered by the clone). */
	if (o->sb_limits && (r = ward__cgroup_enter(&o->sb_limits->cg)) < 0) {
		ward__error(&e, r, "limits", "cannot enter the sandbox's cgroup: %m");
		child_fail(report_fd, &e);
	}
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
	close_inherited_fds(o, report_fd, pty_sock, hold_fd, arm_fd, leases);

	if (isolated) {
		/* Without a user namespace (root) the ids are the host's: nothing to map. */
		if (iso == WARD_ISOLATION_USERNS) {
			r = write_id_maps(uid, gid, &e);
			if (r < 0)
				child_fail(report_fd, &e);
		}
		r = ward__mounts_setup(p, o->layers, o->n_layers, iso == WARD_ISOLATION_USERNS, &e);
		if (r < 0)
			child_fail(report_fd, &e);
		if (r == 1)
			note_host_proc(report_fd);
		if (!p->network && p->mode != WARD_MODE_DANGER_FULL_ACCESS) {
			r = loopback_up(&e);
			if (r < 0)
				child_fail(report_fd, &e);
		}
		if (o->net_fd >= 0) {
			r = ward__netns_resolv_conf(&e);
			if (r >= 0)
				r = ward__netns_setup(o->net_fd, &e);
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
	ward__init_main(o, report_fd, hold_fd, prog, landlock_fd, iso, leases, arm_fd);
}

/*
 * The child of a prepared sandbox: what ward__child_main() does before the
 * command, without knowing the command, then init waits for it
 * (ward__init_prepared_main). The namespaces beyond the user and pid ones
 * are made here by unshare(), not by the clone: creating them (the network
 * namespace above all) is most of the cost of a sandbox, and the clone runs
 * in the server's event loop, which must not wait for it. Made by the new
 * user namespace's process, they are the same namespaces, owned by the same
 * user namespace, as the cold path's clone flags make.
 */
_noreturn_ void ward__child_prepared_main(const struct ward__spawn_opts *opts, int report_fd,
					  int life_fd, int ctl_fd,
					  const struct ward__seccomp_prog *prog,
					  enum ward__isolation iso, uid_t uid, gid_t gid,
					  int landlock_abi)
{
	static const struct ward__init_leases no_leases = {0};
	struct ward__spawn_opts local = *opts, *o = &local;
	const struct ward_policy *p = o->policy;
	unsigned long flags = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS;

	o->net_fd = -1;
	struct ward_error e = {0};
	struct pollfd pfd = {.fd = life_fd, .events = POLLIN};
	int landlock_fd = -1, devnull, r;

	if (o->sb_limits && (r = ward__cgroup_enter(&o->sb_limits->cg)) < 0) {
		ward__error(&e, r, "limits", "cannot enter the sandbox's cgroup: %m");
		child_fail(report_fd, &e);
	}
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
	close_inherited_fds(o, report_fd, ctl_fd, -1, -1, &no_leases);

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
	r = ward__mounts_setup(p, NULL, 0, iso == WARD_ISOLATION_USERNS, &e);
	if (r < 0)
		child_fail(report_fd, &e);
	if (r == 1)
		note_host_proc(report_fd);
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
