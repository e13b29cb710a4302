/* SPDX-License-Identifier: MIT */
/*
 * Prepared sandboxes, for a server (see ward__sandbox_prepare in sandbox.h):
 * the clone of a sandbox built ahead with the isolation the cold starts
 * found (spawn.c), and the command handed to its init later over a socket
 * (struct ward__launch_msg; init.c reads it).
 */
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "sandbox/spawn-state.h"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

int ward__sandbox_prepare(const struct ward__spawn_opts *o, struct ward__sandbox *sb,
			  struct ward_error *err)
{
	const struct ward_policy *p = o->policy;
	const struct ward__fast_features *ff = ward__spawn_fast_features();
	struct ward__seccomp_opts so = {0};
	struct ward__seccomp_prog prog = {0};
	_cleanup_free_ struct ward__sandbox_priv *priv = NULL;
	struct ward__spawn_opts child_opts;
	int report[2] = {-1, -1}, life[2] = {-1, -1}, ctl[2] = {-1, -1};
	enum ward__isolation iso;
	unsigned long flags;
	int pidfd = -1;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	long pid;
	int r;

	ward__sandbox_reset(sb);
	if (!p || !p->resolved)
		return ward__error(err, -EINVAL, "policy", "the policy was not resolved");
	/* Layers belong to one run, made for it: never prepared ahead. */
	if (p->mode == WARD_MODE_DANGER_FULL_ACCESS || o->n_keep_fds > 0 || o->n_layers > 0)
		return -EOPNOTSUPP;
	/*
	 * The isolation the cold path found on this host; never the fallback,
	 * whose guard keeps the protected paths as they are right before the
	 * command runs (a prepared sandbox would keep them seconds earlier).
	 */
	iso = ward__spawn_isolation_found();
	if (iso == WARD_ISOLATION_NONE)
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
	/* Made in its cgroup, limited, like a cold one. */
	r = ward__sandbox_limits_setup(sb, priv, o, iso == WARD_ISOLATION_USERNS, err);
	if (r < 0)
		goto fail;
	child_opts = *o;
	child_opts.sb_limits = priv->limits;
	flags = CLONE_PIDFD | CLONE_NEWPID;
	if (iso == WARD_ISOLATION_USERNS)
		flags |= CLONE_NEWUSER;
	/* As in spawn_attempt: fork semantics, a pidfd without a pid-reuse race. */
	pid = ward__cgroup_clone(priv->limits ? &priv->limits->cg : NULL, flags, &pidfd);
	if (pid < 0) {
		r = ward__error(err, (int)pid, "spawn", "cannot create the sandbox: %m");
		goto fail;
	}
	if (pid == 0) {
		close(report[0]);
		close(life[1]);
		close(ctl[0]);
		ward__child_prepared_main(&child_opts, report[1], life[0], ctl[1], &prog, iso, uid,
					  gid, ff->landlock_abi);
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
	ward__sandbox_limits_release(priv);
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
	struct ward__sandbox_priv *priv = sb->priv;
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
	if (!priv->policy) {
		r = ward__policy_dup_resolved(o->policy, &priv->policy);
		if (r < 0)
			return ward__error(err, r, "launch", "out of memory");
	}
	r = ward__guard_new(priv->policy, false, o->watches, false, &priv->guard, err);
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
