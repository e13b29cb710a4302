/* SPDX-License-Identifier: MIT */
/*
 * The plain run of `ward run`: one command in the sandbox, stdio straight
 * through, for the verb itself (run.c) and for each run the approval runner
 * makes (approve.c), whose report it fills.
 *
 * Pipes and files are handed to the command as they are: ward copies no byte.
 * When ward's stdin or stdout is a terminal, the command gets a pty of its own
 * (in its own session, as its controlling terminal) and ward relays between
 * the pty and the real terminal, which it puts in raw mode: job control,
 * window size and Ctrl-C work inside, and the command never holds the user's
 * real terminal, so it cannot inject keystrokes into it.
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <termios.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "cli/ask.h"
#include "cli/cli.h"
#include "exec/exec.h"
#include "approval/approval.h"
#include "exec/netproxy.h"
#include "sandbox/sandbox.h"

/* ------------------------------------------------------------ the plain run's report */

void cli_run_report_fill(struct cli_run_report *rep, const struct ward__sandbox *sb, int code,
			 bool timed_out)
{
	size_t n = sb->n_denials;

	rep->exit_code = code;
	rep->timed_out = timed_out;
	rep->denied = sb->guard_tripped || sb->n_denials > 0 || sb->denials_dropped > 0;
	rep->denials_dropped = sb->denials_dropped;
	rep->denials = calloc(n ? n : 1, sizeof(*rep->denials));
	if (!rep->denials) {
		rep->denials_dropped += n;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		rep->denials[i] = sb->denials[i];
		rep->denials[i].target = strdup(sb->denials[i].target ? sb->denials[i].target : "");
		if (!rep->denials[i].target) {
			rep->denials_dropped += n - i;
			break;
		}
		rep->n_denials++;
	}
}

void cli_run_report_release(struct cli_run_report *rep)
{
	for (size_t i = 0; i < rep->n_denials; i++)
		free(rep->denials[i].target);
	free(rep->denials);
	*rep = (struct cli_run_report){0};
}

/* ------------------------------------------------------------ the run */

struct tty_state {
	bool active; /* a pty is relayed */
	bool raw; /* the real terminal was put in raw mode */
	int term_in; /* real terminal fd we read keystrokes from, or -1 */
	int term_out; /* real terminal fd we write the pty's output to, or -1 */
	int master;
	struct termios saved;
};

static struct tty_state tty = {.term_in = -1, .term_out = -1, .master = -1};

static void tty_restore(void)
{
	if (tty.raw) {
		tcsetattr(tty.term_in, TCSAFLUSH, &tty.saved);
		tty.raw = false;
	}
}

static void copy_winsize(void)
{
	struct winsize ws;
	int src = tty.term_in >= 0 ? tty.term_in : tty.term_out;

	if (src >= 0 && ioctl(src, TIOCGWINSZ, &ws) == 0)
		ioctl(tty.master, TIOCSWINSZ, &ws);
}

/*
 * Decides whether the command gets a pty, and prepares the real terminal. The
 * pty itself is opened inside the sandbox (its own devpts) by spawn.
 */
static void tty_prepare(struct ward__spawn_opts *so)
{
	struct termios t;
	int ref = -1;

	for (int fd = 0; fd < 3; fd++)
		if (isatty(fd)) {
			ref = fd;
			break;
		}
	if (ref < 0)
		return;
	so->pty = true;
	for (int fd = 0; fd < 3; fd++)
		so->pty_stdio[fd] = so->stdio[fd] < 0 && isatty(fd);
	if (tcgetattr(ref, &so->termios) == 0)
		so->have_termios = true;
	ioctl(ref, TIOCGWINSZ, &so->winsize);
	tty.term_in = isatty(STDIN_FILENO) && so->pty_stdio[0] ? STDIN_FILENO : -1;
	tty.term_out = isatty(STDOUT_FILENO) ? STDOUT_FILENO
		: isatty(STDERR_FILENO)	     ? STDERR_FILENO
					     : -1;
	if (tty.term_in >= 0 && tcgetattr(tty.term_in, &tty.saved) == 0) {
		t = tty.saved;
		cfmakeraw(&t);
		if (tcsetattr(tty.term_in, TCSAFLUSH, &t) == 0) {
			tty.raw = true;
			atexit(tty_restore);
		}
	}
	tty.active = true;
}

/* Copies what is available from one fd to another; returns false at EOF or error. */
static bool relay(int from, int to)
{
	char buf[16384];
	ssize_t n = read(from, buf, sizeof(buf));

	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	if (n == 0)
		return false;
	if (to >= 0)
		ward__write_all(to, buf, (size_t)n);
	return true;
}

static void print_fallback_warning(const struct ward__sandbox *sb)
{
	const struct ward__features *f = ward__features_get();

	fprintf(stderr,
		"ward: warning: user namespaces are unavailable (%s); running with Landlock (ABI %d) and seccomp only, without: %s\n",
		f->userns_why[0] ? f->userns_why : "refused by this host", sb->landlock_abi,
		sb->fallback_missing);
}

/* The proxy's refusals, one line each (a few), so that a failed download says why. */
static void print_net_denials(const struct ward__sandbox *sb)
{
	size_t shown = 0, more = 0;

	for (size_t i = 0; i < sb->n_denials; i++) {
		if (strcmp(sb->denials[i].access, "network") != 0 || !sb->denials[i].reason)
			continue;
		if (shown++ >= 8) {
			more++;
			continue;
		}
		{
			_cleanup_free_ char *t = cli_sanitize(sb->denials[i].target, 512);

			cli_errorf("run: network access to '%s' refused (%s)", t ? t : "?",
				   sb->denials[i].reason);
		}
	}
	if (more)
		cli_errorf("run: and %zu more network refusals", more);
}

int cli_run_plain(struct cli_run_args *a, struct ward_policy *policy, struct cli_run_report *rep)
{
	/* With a report wanted (approvals), the sandbox's denials are observed and handed back. */
	struct ward__spawn_opts so = {
		.policy = policy, .argv = a->argv, .tty_fd = -1, .observe_fs = rep != NULL};
	struct ward__sandbox sb;
	struct ward_error err = {0};
	_cleanup_strv_free_ char **envp = NULL;
	_cleanup_close_ int sfd = -1, tfd = -1, stdin_fd = -1;
	bool timed_out = false, stdin_open, master_open;
	struct ward__netproxy *net = NULL;
	struct cli_netask netask = {.approver = a->approver};
	sigset_t set;
	int code = WARD_EXIT_FAILURE, r;

	r = policy->resolved ? 0 : ward_policy_resolve(policy, &err);
	if (r < 0) {
		cli_report_error(&err);
		return WARD_EXIT_FAILURE;
	}
	cli_warn_policy(policy);
	/* A second run (a retry outside the sandbox) starts from a clean terminal state. */
	tty = (struct tty_state){.term_in = -1, .term_out = -1, .master = -1};
	r = ward__exec_env_build(a->opts, policy, &envp);
	if (r < 0) {
		cli_errorf("run: cannot build the environment: %s", strerror(-r));
		return WARD_EXIT_FAILURE;
	}
	so.envp = envp;
	so.layers = a->layers;
	so.n_layers = a->n_layers;
	so.stdio[0] = so.stdio[1] = so.stdio[2] = -1;
	memcpy(so.keep_fds, a->keep_fds, sizeof(a->keep_fds[0]) * a->n_keep_fds);
	so.n_keep_fds = a->n_keep_fds;

	if (a->stdin_path) {
		stdin_fd = open(a->stdin_path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (stdin_fd < 0) {
			cli_errorf("run: --stdin '%s': %s", a->stdin_path, strerror(errno));
			return WARD_EXIT_FAILURE;
		}
		so.stdio[0] = stdin_fd;
	}

	tty_prepare(&so);

	/* Signals arrive through a signalfd and are forwarded; blocked before the fork so none is lost. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGWINCH);
	sigaddset(&set, SIGCONT);
	sigaddset(&set, SIGTSTP);
	sigaddset(&set, SIGALRM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		cli_errorf("run: cannot set up signal handling: %s", strerror(errno));
		return WARD_EXIT_FAILURE;
	}
	signal(SIGPIPE, SIG_IGN);

	r = ward__sandbox_spawn(&so, &sb, &err);
	if (r < 0) {
		tty_restore();
		cli_report_error(&err);
		return WARD_EXIT_FAILURE;
	}
	if (tty.active) {
		tty.master = TAKE_FD(sb.pty_master);
		if (tty.master < 0)
			tty.active = false;
		else
			ward__fd_nonblock(tty.master, true);
	}
	if (!sb.isolated && policy->mode != WARD_MODE_DANGER_FULL_ACCESS)
		print_fallback_warning(&sb);
	else if (sb.host_proc && policy->mode != WARD_MODE_DANGER_FULL_ACCESS)
		fprintf(stderr, "ward: warning: running in every namespace but without %s\n",
			sb.fallback_missing);
	/* The network by domain: the proxy runs here, in ward, for as long as the sandbox. */
	if (sb.net_fd >= 0) {
		struct ward_net_hooks hooks;

		cli_netask_hooks(&netask, &hooks);
		r = ward__netproxy_start(NULL, &sb, policy, a->approver ? &hooks : NULL,
					 a->approver && ward__approval_net_may_ask(a->approver),
					 &net, &err);
		if (r < 0) {
			ward__sandbox_release(&sb);
			tty_restore();
			cli_report_error(&err);
			return WARD_EXIT_FAILURE;
		}
	}
	/* Never a limit implied that is not enforced (--require-limits refused it already). */
	if (sb.limits.missing[0])
		fprintf(stderr, "ward: warning: %s\n", sb.limits.missing);

	if (a->have_timeout) {
		struct itimerspec its = {
			.it_value = {.tv_sec = (time_t)(a->timeout_ms / 1000),
				     .tv_nsec = (long)(a->timeout_ms % 1000) * 1000000L}};

		tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (tfd < 0 || timerfd_settime(tfd, 0, &its, NULL) < 0) {
			ward__sandbox_release(&sb);
			tty_restore();
			cli_errorf("run: cannot arm the timeout: %s", strerror(errno));
			return WARD_EXIT_FAILURE;
		}
	}

	stdin_open = tty.active && tty.term_in >= 0;
	master_open = tty.active;
	for (;;) {
		struct pollfd p[8] = {
			{.fd = sb.pidfd, .events = POLLIN},
			{.fd = sfd, .events = POLLIN},
			{.fd = sb.report_fd, .events = POLLIN},
			{.fd = sb.guard_fd, .events = POLLIN},
			{.fd = tfd, .events = POLLIN},
			{.fd = master_open ? tty.master : -1, .events = POLLIN},
			{.fd = stdin_open ? tty.term_in : -1, .events = POLLIN},
			{.fd = ward__netproxy_fd(net), .events = POLLIN},
		};

		/*
		 * The status can come with the start-up reports already (a quick
		 * command), after which the report pipe is closed and init lingers
		 * (see init.c): nothing would wake the poll below.
		 */
		if (sb.have_status || sb.report_fd < 0)
			break;
		if (poll(p, ELEMENTSOF(p), -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[7].revents)
			ward__netproxy_dispatch(net);
		if (p[5].revents & (POLLIN | POLLHUP | POLLERR))
			master_open = relay(tty.master, tty.term_out);
		if (p[6].revents & (POLLIN | POLLHUP | POLLERR))
			stdin_open = relay(tty.term_in, tty.master);
		if (p[2].revents)
			ward__sandbox_read_reports(&sb, NULL);
		if (p[3].revents)
			ward__sandbox_handle_guard(&sb);
		if (p[4].revents & POLLIN) {
			timed_out = true;
			ward__sandbox_kill(&sb);
		}
		if (p[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGWINCH && tty.active)
					/* The kernel signals the pty's foreground group itself. */
					copy_winsize();
				else
					ward__sandbox_signal(&sb, (int)si.ssi_signo);
			}
		}
		if ((p[0].revents & POLLIN) || sb.have_status)
			break;
	}
	/* Everything inside is dead now; flush what the pty still holds. */
	while (master_open && relay(tty.master, tty.term_out)) {
		struct pollfd pf = {.fd = tty.master, .events = POLLIN};

		if (poll(&pf, 1, 0) <= 0)
			break;
	}
	r = ward__sandbox_wait(&sb, &code);
	/* The proxy dies with the sandbox: nothing of it outlives the run. */
	ward__netproxy_free(net);
	net = NULL;
	tty_restore();
	if (r < 0) {
		cli_errorf("run: cannot wait for the sandbox: %s", strerror(-r));
		code = WARD_EXIT_FAILURE;
	} else if (sb.have_error) {
		cli_report_error(&sb.error.error);
	}
	/*
	 * The guard's reports: a change ward saw (no syscall was refused), undone.
	 * The paths are names the command chose: escaped for the terminal.
	 */
	if (sb.guard_tripped)
		for (size_t i = 0; i < sb.n_denials; i++) {
			_cleanup_free_ char *t = NULL;

			if (sb.denials[i].syscall[0] || sb.denials[i].error != 0 ||
			    strcmp(sb.denials[i].access, "network") == 0)
				continue;
			t = cli_sanitize(sb.denials[i].target, PATH_MAX);
			cli_errorf(
				"run: the command changed protected path '%s' (%s%s%s); the sandbox was stopped and the path restored",
				t ? t : "?", sb.denials[i].access, sb.denials[i].reason ? ", " : "",
				sb.denials[i].reason ? sb.denials[i].reason : "");
		}
	print_net_denials(&sb);
	if (sb.guard_left[0]) {
		_cleanup_free_ char *t = cli_sanitize(sb.guard_left, PATH_MAX);

		cli_errorf(
			"run: could not restore protected path %s; put it right by hand before git or an agent runs there",
			t ? t : "?");
	}
	if (timed_out)
		code = WARD_EXIT_TIMEOUT;
	if (rep)
		cli_run_report_fill(rep, &sb, code, timed_out);
	/*
	 * ward exits next. init, alone in the sandbox by now, is not waited for:
	 * its end (the kernel's teardown of its inotify watches and namespaces)
	 * takes tens of milliseconds here. It dies with ward (parent-death signal)
	 * and is reaped by the host's init or the nearest subreaper. With layers
	 * it is reaped: its end unmounts the overlay, which the scan waits for.
	 */
	if (sb.have_status && a->n_layers == 0)
		ward__sandbox_release_exiting(&sb);
	else
		ward__sandbox_release(&sb);
	if (tty.master >= 0)
		close(tty.master);
	tty.master = -1;
	return code;
}
