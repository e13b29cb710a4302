/* SPDX-License-Identifier: MIT */
/*
 * A started sandbox as ward holds it (struct ward__sandbox): the reports its
 * init and supervisor write, the guard's trips (every process dead first,
 * then the protected paths put back, guard.c), signals, the kill, the wait
 * for the command's status and exit code, and the release.
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/util.h"
#include "sandbox/spawn-state.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

static int pidfd_send(int pidfd, int sig)
{
	return RET_NERRNO(syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0));
}

/* ------------------------------------------------------------------ reports */

static void add_guard_denial(struct ward__sandbox *sb, const char *access, const char *path,
			     const char *reason);
static void limits_collect(struct ward__sandbox *sb);

/* reason NULL: looked up in the sandbox's policy (which protection, or why else). */
static void add_denial(struct ward__sandbox *sb, const char *access, const char *sc, int error,
		       const char *target, const char *reason)
{
	struct ward__sandbox_priv *priv = sb->priv;
	size_t len = strlen(target) + 1;
	struct ward__denial *d;

	if (sb->n_denials >= WARD_MAX_DENIALS || sb->denial_bytes + len > WARD_MAX_DENIAL_BYTES) {
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
	d->reason = reason ? reason
			   : ward__policy_denial_reason(priv ? priv->policy : NULL, access, target);
	d->target = strdup(target);
	if (!d->target) {
		sb->denials_dropped++;
		return;
	}
	sb->denial_bytes += len;
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
			s.usage.oom = (s.flags & WARD_STATUS_OOM) != 0;
			s.usage.have_cg = (s.flags & WARD_STATUS_CGROUP) != 0;
			((struct ward__sandbox_priv *)sb->priv)->usage = s.usage;
			((struct ward__sandbox_priv *)sb->priv)->have_usage = true;
			/* init's measure, for every run; a cgroup's counts refine it (limits_collect). */
			sb->limits.have_usage = true;
			sb->limits.cpu_user_us = s.usage.utime_us;
			sb->limits.cpu_system_us = s.usage.stime_us;
			sb->limits.max_rss = s.usage.maxrss_kb * 1024;
		}
		break;
	case WARD_MSG_READY:
		sb->ready = true;
		break;
	case WARD_MSG_NOTE:
		if (h->len == sizeof(struct ward__msg_note)) {
			struct ward__msg_note m;

			memcpy(&m, payload, sizeof(m));
			if (m.what == WARD_NOTE_HOST_PROC) {
				sb->host_proc = true;
				snprintf(sb->fallback_missing, sizeof(sb->fallback_missing), "%s",
					 WARD_HOST_PROC_LOST);
			}
		}
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
			add_guard_denial(sb, g.access, g.target, NULL);
			((struct ward__sandbox_priv *)sb->priv)->guard_pending = true;
		}
		break;
	case WARD_MSG_DENIAL:
		if (h->len == sizeof(struct ward__msg_denial)) {
			struct ward__msg_denial d;

			memcpy(&d, payload, sizeof(d));
			d.access[sizeof(d.access) - 1] = '\0';
			d.syscall[sizeof(d.syscall) - 1] = '\0';
			d.target[sizeof(d.target) - 1] = '\0';
			add_denial(sb, d.access, d.syscall, d.error, d.target, NULL);
		}
		break;
	default:
		break;
	}
}

static int read_reports(struct ward__sandbox *sb, bool *ret_eof)
{
	struct ward__sandbox_priv *priv = sb->priv;

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
void ward__sandbox_add_net_denial(struct ward__sandbox *sb, const char *target, const char *reason)
{
	add_denial(sb, "network", "", 0, target, reason);
}

static bool is_net_denial(const struct ward__denial *d)
{
	return strcmp(d->access, "network") == 0;
}

static void add_guard_denial(struct ward__sandbox *sb, const char *access, const char *path,
			     const char *reason)
{
	if (!path || !path[0])
		return;
	for (size_t i = 0; i < sb->n_denials; i++)
		if (!sb->denials[i].syscall[0] && !is_net_denial(&sb->denials[i]) &&
		    strcmp(sb->denials[i].target, path) == 0)
			return;
	add_denial(sb, access, "", 0, path, reason);
}

static void guard_report(void *userdata, const char *access, const char *path)
{
	add_guard_denial(userdata, access, path, NULL);
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
	struct ward__sandbox_priv *priv = sb->priv;
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
static void guard_trip(struct ward__sandbox *sb, const char *access, const char *path,
		       const char *reason)
{
	struct ward__sandbox_priv *priv = sb->priv;

	add_guard_denial(sb, access, path, reason);
	if (sb->guard_tripped || priv->in_trip)
		return;
	sb->guard_tripped = true;
	kill_all_and_wait(sb);
	ward__guard_restore(priv->guard, guard_report, sb, sb->guard_left, sizeof(sb->guard_left));
	/* Nothing seen nor restored: lost events (a flood of them) stopped the run; say so. */
	for (size_t i = 0; i < sb->n_denials; i++)
		if (!sb->denials[i].syscall[0] && sb->denials[i].error == 0 &&
		    !is_net_denial(&sb->denials[i]))
			return;
	add_guard_denial(sb, "write",
			 "(events about protected paths were lost: inotify queue overflow)", NULL);
}

int ward__sandbox_read_reports(struct ward__sandbox *sb, bool *ret_eof)
{
	struct ward__sandbox_priv *priv = sb->priv;
	bool eof = false;
	int r = read_reports(sb, &eof);

	if (ret_eof)
		*ret_eof = eof;
	/* init reported (it left the cgroup first), or is gone: the limits' counts are final. */
	if (sb->have_status || eof)
		limits_collect(sb);
	/* init broke a run off (a lease broke): restore once, outside the parsing. */
	if (priv && priv->guard_pending && !priv->in_trip) {
		priv->guard_pending = false;
		guard_trip(sb, NULL, NULL, NULL);
	}
	return r;
}

int ward__sandbox_handle_guard(struct ward__sandbox *sb)
{
	struct ward__sandbox_priv *priv = sb->priv;
	char access[16], path[PATH_MAX + 256];
	const char *reason = NULL;
	bool changed = false;
	int r;

	if (!priv || !priv->guard)
		return 0;
	r = ward__guard_read(priv->guard, access, sizeof(access), path, sizeof(path), &reason,
			     &changed);
	/* New directories where autorun names matter: watched, then looked into. */
	if (r >= 0 && !changed)
		r = ward__guard_settle(priv->guard, access, sizeof(access), path, sizeof(path),
				       &reason, &changed);
	if (changed)
		guard_trip(sb, access, path, reason);
	return r;
}

/* ------------------------------------------------------------------ signals, wait, release */

int ward__sandbox_signal(struct ward__sandbox *sb, int sig)
{
	if (sb->pidfd < 0)
		return -ESRCH;
	return pidfd_send(sb->pidfd, sig);
}

void ward__sandbox_kill(struct ward__sandbox *sb)
{
	struct ward__sandbox_priv *priv = sb->priv;

	if (!priv || priv->killed || sb->pidfd < 0)
		return;
	priv->killed = true;
	/*
	 * The end of a sandbox with a cgroup is cgroup.kill: every process in it
	 * at once, race-free against forks (Linux 5.14; each pid listed on v1).
	 * Not once init reported: it killed the rest and is leaving the cgroup.
	 */
	if (!sb->have_status && priv->limits && priv->limits->cg.active)
		ward__cgroup_kill(&priv->limits->cg);
	if (!sb->isolated)
		ward__kill_tree(sb->pid);
	/* Killing PID 1 of the pid namespace kills every process in it (pid_namespaces(7)). */
	pidfd_send(sb->pidfd, SIGKILL);
}

int ward__sandbox_wait(struct ward__sandbox *sb, int *ret_exit_code)
{
	struct ward__sandbox_priv *priv = sb->priv;
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

	limits_collect(sb);
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

/* ------------------------------------------------------------------ limits */

int ward__sandbox_limits_setup(struct ward__sandbox *sb, struct ward__sandbox_priv *priv,
			       const struct ward__spawn_opts *o, bool userns,
			       struct ward_error *err)
{
	const struct ward_policy *p = o->policy;
	struct ward__sb_limits *sl;
	int r;

	sb->limits = (struct ward__limits_report){0};
	if (!ward__limits_any(&p->limits) && !(o->cg_parent && o->cg_parent->active))
		return 0;
	sl = calloc(1, sizeof(*sl));
	if (!sl)
		return ward__error(err, -ENOMEM, "limits", "out of memory");
	r = ward__sb_limits_setup(&p->limits, userns, o->cg_parent, sl, err);
	if (r < 0) {
		free(sl);
		return r;
	}
	priv->limits = sl;
	ward__sb_limits_describe(sl, &sb->limits);
	return 0;
}

void ward__sandbox_limits_release(struct ward__sandbox_priv *priv)
{
	if (!priv || !priv->limits)
		return;
	/* A cgroup still in use (init not gone) is killed and left to a later sweep. */
	ward__cgroup_bury(&priv->limits->cg);
	ward__sb_limits_release(priv->limits);
	free(priv->limits);
	priv->limits = NULL;
}

/*
 * The command is over (init reported its status, or init is gone): what the
 * cgroup counted goes into sb->limits, and the cgroup goes.
 */
static void limits_collect(struct ward__sandbox *sb)
{
	struct ward__sandbox_priv *priv = sb->priv;

	if (!priv || !priv->limits || priv->limits->collected)
		return;
	ward__sb_limits_collect(priv->limits, priv->have_usage ? &priv->usage : NULL, &sb->limits);
}

/* A sandbox with nothing in it yet (no descriptor, no process). */
void ward__sandbox_reset(struct ward__sandbox *sb)
{
	*sb = (struct ward__sandbox){.pid = -1,
				     .pidfd = -1,
				     .report_fd = -1,
				     .guard_fd = -1,
				     .life_fd = -1,
				     .ctl_fd = -1,
				     .pty_master = -1,
				     .net_fd = -1};
}

static void release(struct ward__sandbox *sb, bool reap)
{
	struct ward__sandbox_priv *priv = sb->priv;

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
	if (sb->net_fd >= 0)
		close(sb->net_fd);
	if (sb->ctl_fd >= 0)
		close(sb->ctl_fd);
	for (size_t i = 0; i < sb->n_denials; i++)
		free(sb->denials[i].target);
	free(sb->denials);
	if (priv) {
		ward__guard_free(priv->guard); /* closes guard_fd */
		ward_policy_free(priv->policy);
	}
	ward__sandbox_limits_release(priv);
	free(priv);
	ward__sandbox_reset(sb);
}

void ward__sandbox_set_guard_notify(struct ward__sandbox *sb, ward__guard_notify_fn fn,
				    void *userdata)
{
	struct ward__sandbox_priv *priv = sb->priv;

	if (priv)
		ward__guard_set_notify(priv->guard, fn, userdata);
}

void ward__sandbox_close(struct ward__sandbox *sb)
{
	struct ward__sandbox_priv *priv = sb->priv;

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
	if (sb->net_fd >= 0)
		close(sb->net_fd);
	if (sb->ctl_fd >= 0)
		close(sb->ctl_fd);
	sb->pidfd = sb->report_fd = sb->life_fd = sb->pty_master = sb->guard_fd = sb->ctl_fd = -1;
	sb->net_fd = -1;
	if (priv) {
		ward__guard_free(priv->guard); /* its watches, or its own instance */
		ward_policy_free(priv->policy);
	}
	limits_collect(sb);
	ward__sandbox_limits_release(priv);
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
