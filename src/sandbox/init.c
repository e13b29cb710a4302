/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's init: PID 1 of the new pid namespace (or, in the fallback
 * without namespaces, a child subreaper). It is ward's own code, not an exec:
 *
 *   - enforces Landlock on itself, so the command inherits the domain;
 *   - forks the command, which starts a new session, drops every capability,
 *     loads the seccomp filter and execs;
 *   - answers the command's seccomp notifications (supervise.c);
 *   - forwards the signals ward receives to the command's process group;
 *   - reaps orphans, and when the command ends kills everything left inside,
 *     reports the command's wait status and exits with its code.
 *
 * If ward is killed, PR_SET_PDEATHSIG kills init, and the kernel kills every
 * process of a pid namespace whose init dies (pid_namespaces(7)).
 */
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <linux/securebits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/util.h"
#include "sandbox/sandbox.h"

static const int forwarded_signals[] = {SIGHUP,	 SIGINT,   SIGQUIT, SIGTERM, SIGUSR1,
					SIGUSR2, SIGWINCH, SIGCONT, SIGTSTP, SIGALRM};

static void signal_default(int sig)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};

	sigaction(sig, &dfl, NULL);
}

static void forwarded_set(sigset_t *set)
{
	sigemptyset(set);
	for (size_t i = 0; i < ELEMENTSOF(forwarded_signals); i++)
		sigaddset(set, forwarded_signals[i]);
	sigaddset(set, SIGCHLD);
}

_noreturn_ static void cmd_fail(int report_fd, int code, const struct ward_error *e)
{
	struct ward__msg_error m = {.error = *e, .exit_code = code};

	ward__report(report_fd, WARD_MSG_ERROR, &m, sizeof(m));
	_exit(code);
}

static const char *env_get(char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

/*
 * execvpe() looks PATH up in ward's own environment; the command's
 * environment is built from a policy, so search the PATH it will see.
 */
static int exec_search(const char *name, char *const *argv, char *const *envp)
{
	const char *path, *p;
	int saved = ENOENT;
	char buf[PATH_MAX];

	/* An empty name is not found (as execvp), not a directory of PATH. */
	if (!name[0])
		return -ENOENT;
	if (strchr(name, '/')) {
		execve(name, argv, envp);
		return -errno;
	}
	path = env_get(envp, "PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p++) {
		const char *end = strchrnul(p, ':');
		size_t dl = (size_t)(end - p);

		if (dl == 0)
			snprintf(buf, sizeof(buf), "%s", name);
		else
			snprintf(buf, sizeof(buf), "%.*s/%s", (int)dl, p, name);
		execve(buf, argv, envp);
		/*
		 * EACCES on one entry must not hide a later match, but is remembered
		 * (as execvp does) when a file is there: a PATH directory the user
		 * cannot search (/root/.cargo/bin for nobody) is "not found" (127), as
		 * in a shell, not "permission denied" (126).
		 */
		if (errno == EACCES && access(buf, F_OK) < 0)
			errno = ENOENT;
		if (errno == EACCES || errno == ENOEXEC || errno == EISDIR)
			saved = errno == EISDIR ? EACCES : errno;
		else if (errno != ENOENT && errno != ENOTDIR && errno != ENAMETOOLONG)
			saved = errno;
		if (!*end)
			break;
		p = end;
	}
	return -saved;
}

static int drop_capabilities(struct ward_error *err)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {0};

	/*
	 * Empty bounding set and locked securebits: even a uid 0 inside (ward run
	 * by root) regains nothing at execve(), and no setuid binary fixes it up.
	 * Without CAP_SETPCAP (fallback mode, unprivileged) these fail, and there
	 * is nothing to drop anyway; capget() below is the check that counts.
	 */
	for (int cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno == EINVAL)
			break;
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	prctl(PR_SET_SECUREBITS,
	      SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
		      SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
		      SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
	      0, 0, 0);
	if (syscall(SYS_capset, &hdr, data) < 0)
		return ward__error(err, -errno, "capabilities", "cannot drop capabilities: %m");
	if (syscall(SYS_capget, &hdr, data) < 0)
		return ward__error(err, -errno, "capabilities", "cannot read capabilities: %m");
	if (data[0].effective || data[0].permitted || data[1].effective || data[1].permitted)
		return ward__error(err, -EPERM, "capabilities",
				   "capabilities remain after dropping them");
	return 0;
}

/*
 * init's privileges when it runs as root without a user namespace (after the
 * mounts, the network and the pty are set up): an empty bounding set, locked
 * securebits (a uid 0 gains nothing at execve, no setuid fix-up), no ambient
 * or inheritable capabilities, and of the permitted set only CAP_SYS_PTRACE,
 * which the seccomp supervisor needs to read the command's memory and take its
 * sockets (pidfd_getfd) even when the command runs an unreadable binary
 * (non-dumpable). init sees only the sandbox's pid namespace, so that
 * capability reaches nothing else. Every step is checked: as real root a step
 * that silently failed would leave the command with root's powers.
 */
static int drop_init_privileges(struct ward_error *err)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {0};
	const unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
		SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
		SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
	long sb;

	for (int cap = 0; cap <= 63; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0)
			continue;
		if (errno == EINVAL)
			break; /* past the last capability this kernel knows */
		return ward__error(err, -errno, "capabilities",
				   "cannot drop capability %d from the bounding set: %m", cap);
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return ward__error(err, -errno, "capabilities",
				   "cannot clear the ambient capabilities: %m");
	if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0)
		return ward__error(err, -errno, "capabilities", "cannot lock the securebits: %m");
	sb = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	if (sb < 0 || ((unsigned long)sb & bits) != bits)
		return ward__error(err, -EPERM, "capabilities", "the securebits did not lock");
	data[CAP_TO_INDEX(CAP_SYS_PTRACE)].permitted = CAP_TO_MASK(CAP_SYS_PTRACE);
	data[CAP_TO_INDEX(CAP_SYS_PTRACE)].effective = CAP_TO_MASK(CAP_SYS_PTRACE);
	if (syscall(SYS_capset, &hdr, data) < 0)
		return ward__error(err, -errno, "capabilities", "cannot drop capabilities: %m");
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) < 0)
		return ward__error(err, -errno, "capabilities", "cannot read capabilities: %m");
	if (data[0].permitted != CAP_TO_MASK(CAP_SYS_PTRACE) || data[1].permitted ||
	    data[0].inheritable || data[1].inheritable)
		return ward__error(err, -EPERM, "capabilities",
				   "capabilities remain after dropping them");
	for (int cap = 0; cap <= 63; cap++) {
		int in = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);

		if (in < 0)
			break;
		if (in > 0)
			return ward__error(err, -EPERM, "capabilities",
					   "capability %d remains in the bounding set", cap);
	}
	return 0;
}

/* Moves the requested stdio fds into place without one clobbering another. */
static int setup_stdio(const struct ward__spawn_opts *o, struct ward_error *err)
{
	int tmp[3] = {-1, -1, -1};

	for (int i = 0; i < 3; i++) {
		if (o->stdio[i] < 0)
			continue;
		tmp[i] = fcntl(o->stdio[i], F_DUPFD_CLOEXEC, 10);
		if (tmp[i] < 0)
			return ward__error(err, -errno, "spawn", "cannot duplicate fd %d: %m",
					   o->stdio[i]);
	}
	for (int i = 0; i < 3; i++) {
		if (tmp[i] < 0)
			continue;
		if (dup2(tmp[i], i) < 0)
			return ward__error(err, -errno, "spawn", "cannot set up fd %d: %m", i);
		close(tmp[i]);
	}
	return 0;
}

/* Every fd above 2 is closed at exec, except the ones asked for with --keep-fd. */
static int close_other_fds(const struct ward__spawn_opts *o, struct ward_error *err)
{
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		return ward__error(err, -errno, "spawn", "cannot mark fds close-on-exec: %m");
	for (size_t i = 0; i < o->n_keep_fds; i++) {
		int r = ward__fd_cloexec(o->keep_fds[i], false);

		if (r < 0)
			return ward__error(err, r, "spawn", "cannot keep fd %d open: %m",
					   o->keep_fds[i]);
	}
	return 0;
}

/* The command's first steps: its signals, its parent's death, a session of its own, its terminal. */
static void command_begin(const struct ward__spawn_opts *o, int report_fd)
{
	struct ward_error e = {0};
	sigset_t empty;

	sigemptyset(&empty);
	sigprocmask(SIG_SETMASK, &empty, NULL);
	/*
	 * ward ignores SIGPIPE for itself (a closed reader must not kill it);
	 * the command gets the default, as from a shell: `ward run -- yes | head`
	 * ends yes with SIGPIPE.
	 */
	signal_default(SIGPIPE);
	if (o->default_signals)
		for (int sig = 1; sig < NSIG; sig++)
			if (sig != SIGKILL && sig != SIGSTOP)
				signal_default(sig);
	prctl(PR_SET_PDEATHSIG, SIGKILL);

	/*
	 * A new session: the command has no controlling terminal of ward's, so
	 * TIOCSTI could not inject into it even without the seccomp rule
	 * (CVE-2017-5226). An interactive run gets a pty of its own instead.
	 */
	if (setsid() < 0) {
		ward__error(&e, -errno, "spawn", "cannot start a new session: %m");
		cmd_fail(report_fd, 125, &e);
	}
	if (o->tty_fd >= 0 && ioctl(o->tty_fd, TIOCSCTTY, 0) < 0) {
		ward__error(&e, -errno, "spawn",
			    "cannot make the pty the controlling terminal: %m");
		cmd_fail(report_fd, 125, &e);
	}
}

/* Landlock and the seccomp filter, whose listener goes to init through sock. */
static void command_confine(int report_fd, int sock, int landlock_fd,
			    const struct ward__seccomp_prog *prog)
{
	struct ward_error e = {0};
	int listener = -1;
	int r;

	/*
	 * Landlock here, not in init: with signal scoping (ABI 6) the command
	 * cannot signal init, which stays outside its domain (without a pid
	 * namespace, killing init would orphan the command out of the sandbox).
	 */
	if (landlock_fd >= 0 && ward__landlock_enforce(landlock_fd, &e) < 0)
		cmd_fail(report_fd, 125, &e);
	if (prog->insns) {
		r = ward__seccomp_load(prog, &listener);
		if (r < 0) {
			ward__error(&e, r, "seccomp", "cannot load the seccomp filter: %m");
			cmd_fail(report_fd, 125, &e);
		}
		if (listener >= 0) {
			r = ward__send_fd(sock, listener);
			if (r < 0) {
				ward__error(&e, r, "seccomp",
					    "cannot hand the notification fd to init: %m");
				cmd_fail(report_fd, 125, &e);
			}
			close(listener);
		}
	}
	if (sock >= 0)
		close(sock);
}

_noreturn_ static void command_exec(const struct ward__spawn_opts *o, int report_fd)
{
	char *const *envp = o->envp ? o->envp : environ;
	struct ward_error e = {0};
	int r;

	r = exec_search(o->exec_path ? o->exec_path : o->argv[0], o->argv, envp);
	ward__error(&e, r, "exec", "cannot execute '%s': %m",
		    o->exec_path ? o->exec_path : o->argv[0]);
	cmd_fail(report_fd, r == -ENOENT ? 127 : 126, &e);
}

/*
 * The rlimits of the policy's limits, last before the exec (after the
 * prepared path has received its descriptors: RLIMIT_NOFILE could refuse
 * them).
 */
static void command_limit(const struct ward__spawn_opts *o, int report_fd)
{
	struct ward_error e = {0};
	int resource = 0, r;

	if (!o->sb_limits)
		return;
	r = ward__rlimits_apply(&o->sb_limits->rl, &resource);
	if (r < 0) {
		ward__error(&e, r, "limits", "cannot set rlimit %d of the command: %m", resource);
		cmd_fail(report_fd, 125, &e);
	}
}

_noreturn_ static void command_main(const struct ward__spawn_opts *o, int report_fd, int sock,
				    int landlock_fd, const struct ward__seccomp_prog *prog)
{
	struct ward_error e = {0};

	command_begin(o, report_fd);
	/*
	 * danger-full-access is no sandbox: the command keeps what ward's caller
	 * has (root stays root, setuid binaries work); it only gets the session,
	 * the environment policy and the process-tree cleanup.
	 */
	if (setup_stdio(o, &e) < 0 || close_other_fds(o, &e) < 0 ||
	    (o->policy->mode != WARD_MODE_DANGER_FULL_ACCESS && drop_capabilities(&e) < 0))
		cmd_fail(report_fd, 125, &e);
	command_confine(report_fd, sock, landlock_fd, prog);
	command_limit(o, report_fd);
	command_exec(o, report_fd);
}

struct cmd_args {
	const struct ward__spawn_opts *o;
	int report_fd;
	int sock;
	int sfd;
	int landlock_fd;
	const struct ward__seccomp_prog *prog;
};

static int cmd_entry(void *arg)
{
	const struct cmd_args *a = arg;

	close(a->sfd);
	command_main(a->o, a->report_fd, a->sock, a->landlock_fd, a->prog);
	return 0;
}

/*
 * The command is started vfork-style: CLONE_VM|CLONE_VFORK shares init's
 * memory until the exec instead of copying its page tables, which costs more
 * than everything else in the launch on some virtual machines. init is
 * suspended meanwhile; the child only makes syscalls and writes to its own
 * stack (errno aside, which init does not read across the call).
 */
#if defined(__SANITIZE_ADDRESS__)
#define WARD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WARD_ASAN 1
#endif
#endif

static pid_t spawn_vfork(int (*fn)(void *), void *arg)
{
#ifdef WARD_ASAN
	/* AddressSanitizer cannot follow a switch to a stack of our own: plain fork() there. */
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn(arg));
	return pid;
#else
	static char stack[256 * 1024] __attribute__((aligned(64)));

	return clone(fn, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | SIGCHLD, arg);
#endif
}

static pid_t spawn_command(struct cmd_args *a)
{
	return spawn_vfork(cmd_entry, a);
}

static void kill_everything(bool isolated)
{
	siginfo_t si = {0};

	if (isolated) {
		/* As PID 1, kill(-1) reaches every other process of the namespace. */
		kill(-1, SIGKILL);
		return;
	}
	/*
	 * init is a subreaper: every process of the sandbox is its descendant,
	 * and every orphan among them its child. No child at all (running or a
	 * zombie; WNOWAIT reaps none) means nothing is left to kill, and the walk
	 * through /proc is skipped (the usual end of a run).
	 */
	if (waitid(P_ALL, 0, &si, WEXITED | WSTOPPED | WCONTINUED | WNOHANG | WNOWAIT) < 0 &&
	    errno == ECHILD)
		return;
	ward__kill_tree(getpid());
}

/* What init sets up before the command exists (init_setup) and uses while it runs (init_run). */
struct init_ctx {
	int sfd; /* signalfd of the forwarded signals, SIGCHLD and init's own */
	int sv[2]; /* the socket pair the command hands its seccomp listener through */
	int lease_fds[WARD_GUARD_MAX_LEASES];
	size_t n_leases;
};

/*
 * Signals, subreaper, leases, no_new_privs, the listener's socket pair and,
 * as root without a user namespace, the drop of init's privileges: everything
 * of init that does not depend on the command. A prepared sandbox does this
 * before it waits for its command.
 */
static void init_setup(const struct ward__spawn_opts *o, int report_fd,
		       const struct ward__seccomp_prog *prog, enum ward__isolation iso,
		       const struct ward__init_leases *leases, struct init_ctx *c)
{
	bool isolated = iso != WARD_ISOLATION_NONE;
	struct ward_error e = {0};
	sigset_t set;

	c->n_leases = leases ? MIN(leases->n, (size_t)WARD_GUARD_MAX_LEASES) : 0;
	c->sv[0] = c->sv[1] = -1;
	/*
	 * A caller that ignores SIGCHLD would make the kernel reap the command
	 * behind init's back (and init would wait for it forever).
	 */
	signal_default(SIGCHLD);
	forwarded_set(&set);
	sigaddset(&set, WARD_SIG_PARENT_DIED);
	if (c->n_leases > 0) {
		sigaddset(&set, WARD_SIG_LEASE);
		sigaddset(&set, SIGIO);
	}
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 ||
	    (c->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		ward__error(&e, -errno, "init", "cannot set up signal handling: %m");
		cmd_fail(report_fd, 125, &e);
	}
	if (!isolated && prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		ward__error(&e, -errno, "init", "cannot become a subreaper: %m");
		cmd_fail(report_fd, 125, &e);
	}
	/*
	 * The fallback's guard: a read lease on every protected file. Opening one
	 * for writing (or truncating it) then blocks the opener in the kernel and
	 * signals init, which kills the sandbox before a byte is written. A file
	 * the kernel grants no lease (not owned by ward's user, open for writing
	 * elsewhere, a filesystem without leases) stays watched by ward's inotify.
	 */
	for (size_t i = 0; i < c->n_leases; i++) {
		c->lease_fds[i] = leases->fds[i];
		if (fcntl(c->lease_fds[i], F_SETSIG, WARD_SIG_LEASE) < 0 ||
		    fcntl(c->lease_fds[i], F_SETLEASE, F_RDLCK) < 0) {
			close(c->lease_fds[i]);
			c->lease_fds[i] = -1;
		}
	}
	/* Landlock and seccomp both require no_new_privs (or CAP_SYS_ADMIN, which the command must not keep). */
	if (o->policy->mode != WARD_MODE_DANGER_FULL_ACCESS &&
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		ward__error(&e, -errno, "init", "cannot set no_new_privs: %m");
		cmd_fail(report_fd, 125, &e);
	}
	if (prog->has_notify && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, c->sv) < 0) {
		ward__error(&e, -errno, "init", "cannot create a socket pair: %m");
		cmd_fail(report_fd, 125, &e);
	}
	/*
	 * Without a user namespace init holds root's capabilities in the host's
	 * own namespace: it gives them up before the command exists, so that
	 * neither the command (a fork of init) nor init itself, which reads the
	 * command's input, keeps anything a root process could use against the
	 * host.
	 */
	if (iso == WARD_ISOLATION_ROOT && drop_init_privileges(&e) < 0)
		cmd_fail(report_fd, 125, &e);
}

/* Starts the command (unless cmd, a prepared one, runs already) and is its init until it ends. */
_noreturn_ static void init_run(const struct ward__spawn_opts *o, int report_fd, int hold_fd,
				const struct ward__seccomp_prog *prog, int landlock_fd,
				enum ward__isolation iso, const struct ward__init_leases *leases,
				struct init_ctx *c, pid_t cmd)
{
	bool isolated = iso != WARD_ISOLATION_NONE;
	struct ward__supervisor sup = {.listener_fd = -1};
	bool have_sup = false, have_status = false, sup_done = false;
	struct ward_error e = {0};
	int sfd = c->sfd, status = 0, code;
	int oom_fd = o->sb_limits ? ward__cgroup_oom_fd(&o->sb_limits->cg) : -1;
	uint32_t status_flags = 0;

	if (cmd < 0) {
		struct cmd_args ca = {.o = o,
				      .report_fd = report_fd,
				      .sock = c->sv[1],
				      .sfd = sfd,
				      .landlock_fd = landlock_fd,
				      .prog = prog};

		cmd = spawn_command(&ca);
	}
	if (landlock_fd >= 0)
		close(landlock_fd);
	if (cmd < 0) {
		ward__error(&e, -errno, "init", "cannot start the command: %m");
		cmd_fail(report_fd, 125, &e);
	}

	/*
	 * init keeps none of the command's stdio, nor ward's own (it never
	 * writes to them): whoever reads ward's output sees EOF as soon as the
	 * command's side closes, not after init has torn the namespaces down.
	 */
	{
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (devnull >= 0) {
			for (int i = 0; i < 3; i++)
				dup2(devnull, i);
			if (devnull > 2)
				close(devnull);
		}
	}
	for (int i = 0; i < 3; i++)
		if (o->stdio[i] > 2)
			close(o->stdio[i]);
	if (o->tty_fd > 2)
		close(o->tty_fd);
	for (size_t i = 0; i < o->n_keep_fds; i++)
		if (o->keep_fds[i] > 2 && o->keep_fds[i] != report_fd)
			close(o->keep_fds[i]);

	if (c->sv[1] >= 0) {
		int listener;

		close(c->sv[1]);
		listener = ward__recv_fd(c->sv[0]);
		close(c->sv[0]);
		/* No fd means the command failed before exec; its error report is on the way. */
		if (listener >= 0) {
			if (ward__supervisor_init(&sup, listener, report_fd, o->policy,
						  isolated && !o->policy->network) >= 0) {
				have_sup = true;
				sup.net_fd = o->net_fd;
			} else
				/* Fail closed: unanswered, the filter's notifications would fail open. */
				kill_everything(isolated);
		}
	}

	for (;;) {
		struct pollfd pfds[3] = {
			{.fd = sfd, .events = POLLIN},
			{.fd = have_sup && !sup_done ? sup.listener_fd : -1, .events = POLLIN},
			{.fd = oom_fd, .events = POLLIN},
		};
		struct signalfd_siginfo si;

		if (poll(pfds, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfds[2].revents & POLLIN) {
			/*
			 * cgroup v1 killed one process at the memory limit: the rest of
			 * the sandbox goes too, as memory.oom.group does on v2.
			 */
			uint64_t n;

			(void)!read(oom_fd, &n, sizeof(n));
			kill_everything(isolated);
			oom_fd = -1;
			status_flags |= WARD_STATUS_OOM;
		}
		if (pfds[1].revents & POLLIN) {
			if (ward__supervisor_handle(&sup) < 0) {
				/*
				 * The listener is broken while the command may live: a process
				 * outliving it could install a listener of its own and answer
				 * its own refused syscalls. Nothing may outlive it.
				 */
				kill_everything(isolated);
				ward__supervisor_release(&sup);
				have_sup = false;
			}
		} else if (pfds[1].revents & (POLLHUP | POLLERR | POLLNVAL)) {
			/*
			 * All filtered processes are gone: stop listening. The release
			 * (closing the listener frees the filter, a tenth of a
			 * millisecond) waits until the status is reported.
			 */
			sup_done = true;
		}
		if (!(pfds[0].revents & POLLIN))
			continue;
		while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if ((int)si.ssi_signo == WARD_SIG_PARENT_DIED) {
				/*
				 * ward is gone (the fallback's parent-death signal: without a pid
				 * namespace nothing else would end the processes inside).
				 */
				kill_everything(isolated);
				_exit(128 + SIGKILL);
			}
			if ((int)si.ssi_signo == WARD_SIG_LEASE || si.ssi_signo == SIGIO) {
				/*
				 * A lease broke: the command is about to write a protected
				 * file (it waits in open() meanwhile). Everything dies now;
				 * ward restores and reports once init has reaped it all.
				 */
				struct ward__msg_guard m = {.access = "write"};

				for (size_t i = 0; i < c->n_leases; i++)
					if (c->lease_fds[i] >= 0 && c->lease_fds[i] == si.ssi_fd)
						snprintf(m.target, sizeof(m.target), "%s",
							 leases->paths[i]);
				kill_everything(isolated);
				ward__report(report_fd, WARD_MSG_GUARD, &m, sizeof(m));
				continue;
			}
			if (si.ssi_signo != SIGCHLD) {
				/* To the command's process group, as a terminal would; to the pid if it left it. */
				if (kill(-cmd, (int)si.ssi_signo) < 0)
					kill(cmd, (int)si.ssi_signo);
				continue;
			}
		}
		for (;;) {
			int st;
			pid_t w = waitpid(-1, &st, WNOHANG);

			if (w <= 0)
				break;
			if (w == cmd) {
				status = st;
				have_status = true;
			}
		}
		if (have_status)
			break;
	}

	kill_everything(isolated);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	/* The denials the supervisor could not send are counted before the status, the last word. */
	if (have_sup)
		ward__supervisor_flush(&sup);
	/* The leases go before the status: ward restores next, and must not wait on them. */
	for (size_t i = 0; i < c->n_leases; i++)
		if (c->lease_fds[i] >= 0)
			close(c->lease_fds[i]);
	{
		struct ward__msg_status m = {.wait_status = status, .flags = status_flags};
		struct rusage ru;

		/* Every process of the sandbox was init's to reap, directly or as an orphan. */
		if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
			m.usage.utime_us = (uint64_t)ru.ru_utime.tv_sec * 1000000 +
				(uint64_t)ru.ru_utime.tv_usec;
			m.usage.stime_us = (uint64_t)ru.ru_stime.tv_sec * 1000000 +
				(uint64_t)ru.ru_stime.tv_usec;
			m.usage.maxrss_kb = (uint64_t)ru.ru_maxrss;
		}
		/*
		 * What the cgroup counted goes with the status: ward reads nothing
		 * and waits for nothing more (init leaves and removes the cgroup
		 * after its last word, see ward__cgroup_leave()).
		 */
		if (o->sb_limits && o->sb_limits->cg.active) {
			ward__cgroup_stats(&o->sb_limits->cg, &m.usage.cg);
			m.flags |= WARD_STATUS_CGROUP;
			/*
			 * ward may exit the moment it reads the status (ward run): the
			 * parent-death signal must not cut the removal short, or the
			 * cgroup would outlive everything. Armed again right after.
			 */
			prctl(PR_SET_PDEATHSIG, 0);
		}
		ward__report(report_fd, WARD_MSG_STATUS, &m, sizeof(m));
		if (m.flags & WARD_STATUS_CGROUP) {
			struct pollfd pfd = {.fd = report_fd, .events = POLLOUT};

			ward__cgroup_leave(&o->sb_limits->cg);
			prctl(PR_SET_PDEATHSIG, isolated ? SIGKILL : WARD_SIG_PARENT_DIED);
			/* ward went meanwhile (its end of the reports is closed): nothing to wait for. */
			if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLERR | POLLHUP)))
				_exit(WIFEXITED(status) ? WEXITSTATUS(status)
							: 128 + WTERMSIG(status));
		}
	}
	if (have_sup)
		ward__supervisor_release(&sup);
	code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (hold_fd >= 0) {
		/*
		 * The last close of an inotify instance with watches waits for an
		 * SRCU grace period in the kernel (fsnotify_destroy_group), 3-25 ms
		 * here. Holding a reference to ward's guard instance until ward
		 * itself is gone (the parent-death signal ends this wait) makes ward's
		 * own close cheap and moves the wait here, where nobody waits for it.
		 * Everything else is closed first: no pipe or pty stays open.
		 */
		sigset_t pd;

		if (hold_fd > 0)
			syscall(SYS_close_range, 0U, (unsigned)hold_fd - 1, 0);
		syscall(SYS_close_range, (unsigned)hold_fd + 1, ~0U, 0);
		/* The fallback's parent-death signal now simply ends init (default action). */
		sigemptyset(&pd);
		sigaddset(&pd, WARD_SIG_PARENT_DIED);
		sigprocmask(SIG_UNBLOCK, &pd, NULL);
		for (;;)
			pause();
	}
	_exit(code);
}

void ward__init_main(const struct ward__spawn_opts *o, int report_fd, int hold_fd,
		     const struct ward__seccomp_prog *prog, int landlock_fd,
		     enum ward__isolation iso, const struct ward__init_leases *leases, int arm_fd)
{
	struct init_ctx c;

	init_setup(o, report_fd, prog, iso, leases, &c);
	/*
	 * ward watches the autorun directories while this process set up the
	 * sandbox (spawn.c): the command must not start before every watch is
	 * there, or it could plant a name where none looks yet. EOF without
	 * the byte: ward failed to arm the guard, or died; no command then.
	 */
	if (arm_fd >= 0) {
		char b;
		ssize_t n;

		while ((n = read(arm_fd, &b, 1)) < 0 && errno == EINTR)
			;
		if (n != 1)
			_exit(125);
		close(arm_fd);
	}
	init_run(o, report_fd, hold_fd, prog, landlock_fd, iso, leases, &c, -1);
}

/* ------------------------------------------------------------ a prepared sandbox's command */

/*
 * Receives the command of a prepared sandbox (ward__sandbox_launch): its
 * argv, environment, program, window size and stdio descriptors, into o.
 * Only ward holds the other end of ctl_fd (the command does not exist yet),
 * but the message is still checked against its own sizes before use. No
 * malloc: the memory comes from mmap (init may be the fork of a threaded
 * program). Returns 0, 1 when ward closed the socket without a command (the
 * sandbox was thrown away), or -errno.
 */
static int receive_command(int ctl_fd, struct ward__spawn_opts *o, struct ward_error *err)
{
	static char inline_buf[sizeof(struct ward__launch_msg) + WARD_LAUNCH_INLINE_MAX];
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} u;
	struct iovec iov = {.iov_base = inline_buf, .iov_len = sizeof(inline_buf)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	struct ward__launch_msg m;
	int fds[4] = {-1, -1, -1, -1}, nfd = 0, next = 0;
	const char *blob, *end, *s;
	char **vec;
	size_t nvec, lead;
	ssize_t n;

	do
		n = recvmsg(ctl_fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return 1;
	if (n < 0)
		return ward__error(err, -errno, "launch", "cannot receive the command: %m");
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (size_t i = 0; i < k && nfd < 4; i++)
				memcpy(&fds[nfd++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
		}
	if ((size_t)n < sizeof(m) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return ward__error(err, -EPROTO, "launch", "the command arrived cut short");
	memcpy(&m, inline_buf, sizeof(m));
	if (m.magic != WARD_LAUNCH_MAGIC || m.blob_len > WARD_LAUNCH_MAX || m.argc == 0 ||
	    m.argc > WARD_LAUNCH_MAX_STRINGS || m.envc > WARD_LAUNCH_MAX_STRINGS)
		return ward__error(err, -EPROTO, "launch", "the command is malformed");
	/* Each stdio descriptor sent replaces /dev/null (or, with a tty, the terminal). */
	for (int i = 0; i < 3; i++)
		if (m.flags & (WARD_LAUNCH_STDIN << i)) {
			if (next >= nfd)
				return ward__error(err, -EPROTO, "launch",
						   "a descriptor is missing");
			o->stdio[i] = fds[next++];
		}
	if (m.flags & WARD_LAUNCH_MEMFD) {
		void *map;

		if (next >= nfd)
			return ward__error(err, -EPROTO, "launch", "a descriptor is missing");
		map = mmap(NULL, m.blob_len ? m.blob_len : 1, PROT_READ, MAP_PRIVATE, fds[next], 0);
		close(fds[next++]);
		if (map == MAP_FAILED)
			return ward__error(err, -errno, "launch", "cannot map the command: %m");
		blob = map;
	} else {
		if ((size_t)n != sizeof(m) + m.blob_len)
			return ward__error(err, -EPROTO, "launch", "the command arrived cut short");
		blob = inline_buf + sizeof(m);
	}
	/* [exec_path] [cwd] argv... envp..., each NUL-terminated, exactly filling the blob. */
	nvec = (size_t)m.argc + 1 + m.envc + 1;
	vec = mmap(NULL, nvec * sizeof(char *), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (vec == MAP_FAILED)
		return ward__error(err, -errno, "launch", "out of memory");
	s = blob;
	end = blob + m.blob_len;
	o->exec_path = NULL;
	o->cwd = NULL;
	lead = !!(m.flags & WARD_LAUNCH_EXEC_PATH) + !!(m.flags & WARD_LAUNCH_CWD);
	for (size_t i = 0, want = nvec - 2 + lead; i < want; i++) {
		const char *z = memchr(s, '\0', (size_t)(end - s));

		if (!z)
			return ward__error(err, -EPROTO, "launch", "the command is malformed");
		if (i == 0 && (m.flags & WARD_LAUNCH_EXEC_PATH))
			o->exec_path = s;
		else if (i + 1 == lead && (m.flags & WARD_LAUNCH_CWD))
			o->cwd = s;
		else
			vec[i - lead] = (char *)s;
		s = z + 1;
	}
	if (s != end)
		return ward__error(err, -EPROTO, "launch", "the command is malformed");
	/* vec: argv[0..argc-1], NULL, envp[0..envc-1], NULL. */
	memmove(&vec[m.argc + 1], &vec[m.argc], m.envc * sizeof(char *));
	vec[m.argc] = NULL;
	vec[m.argc + 1 + m.envc] = NULL;
	o->argv = vec;
	o->envp = vec + m.argc + 1;
	if (o->pty && o->tty_fd >= 0 && m.rows && m.cols) {
		struct winsize ws = {.ws_row = m.rows, .ws_col = m.cols};

		ioctl(o->tty_fd, TIOCSWINSZ, &ws);
	}
	return 0;
}

/*
 * The command of a prepared sandbox, started by init ahead: it goes as far
 * as the cold path's command goes before its exec (session, terminal,
 * capabilities, Landlock, the seccomp filter), says the sandbox is ready, and
 * waits for what only the start knows: its stdio, argv and environment. So a
 * start costs a message and an exec.
 *
 * It is started vfork-style, as the cold path's command: it shares init's
 * memory, and init stays suspended until the exec. Sharing spares the exec
 * the teardown of a copy of the server's address space (a forked, waiting
 * command execs 0.1-0.5 ms slower here); init has nothing to do meanwhile
 * (there is no command yet whose signals it would forward or whose
 * notifications it would answer), and it remains killable: killing it ends
 * the pid namespace, the waiting command with it. The command writes only
 * to its own stack and to mappings of its own (receive_command), never to
 * init's variables, and its descriptors are its own (no CLONE_FILES).
 */
struct prepared_args {
	const struct ward__spawn_opts *o;
	int report_fd;
	int ctl_fd;
	int sock;
	int sfd;
	int sv0;
	int landlock_fd;
	const struct ward__seccomp_prog *prog;
};

static int prepared_command_entry(void *arg)
{
	const struct prepared_args *a = arg;
	struct ward__spawn_opts local = *a->o, *o = &local;
	struct ward__msg_ready ready = {.pid = 0};
	struct ward_error e = {0};
	int report_fd = a->report_fd;
	int r;

	close(a->sfd);
	if (a->sv0 >= 0)
		close(a->sv0);
	command_begin(o, report_fd);
	/* A tty's terminal is known already: it becomes stdio now. */
	if (o->pty && setup_stdio(o, &e) < 0)
		cmd_fail(report_fd, 125, &e);
	if (drop_capabilities(&e) < 0)
		cmd_fail(report_fd, 125, &e);
	command_confine(report_fd, a->sock, a->landlock_fd, a->prog);
	/* Ready: everything is built; the command is what remains. */
	ward__report(report_fd, WARD_MSG_READY, &ready, sizeof(ready));
	r = receive_command(a->ctl_fd, o, &e);
	if (r == 1)
		_exit(0); /* thrown away unused: init reports an ordinary end */
	if (r < 0)
		cmd_fail(report_fd, 125, &e);
	/* The command's own directory (a session's workdir), as the cold path enters it. */
	if (o->cwd && chdir(o->cwd) < 0) {
		ward__error(&e, -errno, "spawn", "cannot enter the working directory '%s': %m",
			    o->cwd);
		cmd_fail(report_fd, 125, &e);
	}
	if (!o->pty && setup_stdio(o, &e) < 0)
		cmd_fail(report_fd, 125, &e);
	if (close_other_fds(o, &e) < 0)
		cmd_fail(report_fd, 125, &e);
	command_limit(o, report_fd);
	command_exec(o, report_fd);
}

void ward__init_prepared_main(struct ward__spawn_opts *o, int report_fd, int ctl_fd,
			      const struct ward__seccomp_prog *prog, int landlock_fd,
			      enum ward__isolation iso)
{
	struct ward_error e = {0};
	struct init_ctx c;
	struct prepared_args a;
	pid_t cmd;

	init_setup(o, report_fd, prog, iso, NULL, &c);
	a = (struct prepared_args){.o = o,
				   .report_fd = report_fd,
				   .ctl_fd = ctl_fd,
				   .sock = c.sv[1],
				   .sfd = c.sfd,
				   .sv0 = c.sv[0],
				   .landlock_fd = landlock_fd,
				   .prog = prog};
	/* Returns once the command was exec()ed (or has exited): init takes over from there. */
	cmd = spawn_vfork(prepared_command_entry, &a);
	if (cmd < 0) {
		ward__error(&e, -errno, "init", "cannot start the command: %m");
		cmd_fail(report_fd, 125, &e);
	}
	close(ctl_fd);
	init_run(o, report_fd, -1, prog, landlock_fd, iso, NULL, &c, cmd);
}
