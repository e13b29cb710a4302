/* SPDX-License-Identifier: MIT */
/*
 * The seccomp supervisor. It runs in the sandbox's init (PID 1 of the
 * sandbox), which has no seccomp filter of its own, and answers the user
 * notifications of the command's filter (seccomp.c):
 *
 *   connect()  Emulated, never continued. The kernel would read the address
 *              again from the command's memory after we answered CONTINUE, so
 *              another thread could swap it after our check. Instead the
 *              address is copied once, checked, and the connect is performed
 *              here on a duplicate of the command's socket (pidfd_getfd).
 *              Pathname unix sockets are opened O_PATH once, checked by inode
 *              (allow-listed, or bound by a process inside the sandbox) and
 *              connected through /proc/self/fd/N, so the inode checked is the
 *              inode connected.
 *
 *   filesystem Observed, then continued: the kernel makes the real decision,
 *   writes     so CONTINUE grants nothing. Before continuing we predict whether
 *              the kernel will refuse the call because of the sandbox (a
 *              read-only mount of ours, a deny-read mask, Landlock outside the
 *              writable roots, a protected mount point) rather than for the
 *              command's own reasons (a missing parent, an existing file), and
 *              report the predicted refusals as WARD_MSG_DENIAL.
 *
 * This file holds the refusals the filter sends to be reported, and the
 * loop; the connect emulation is supervise-net.c, the filesystem observation
 * supervise-fs.c, the reports and the reading of the command's memory and
 * descriptors supervise-notify.c.
 *
 * Everything runs in one thread, after a fork from a process that may have
 * had other threads: no malloc() here (the state lives in an anonymous
 * mapping), only syscalls and the policy's read-only lookups.
 *
 * Limits: the connect emulation makes the sandbox's init the connecting
 * process, so a unix server inside sees init's pid in SO_PEERCRED (the uid
 * and gid are the command's). The O_PATH lookup of a socket path uses init's
 * credentials, which inside the user namespace may pass directory permission
 * checks the command would fail; that only affects sockets the policy
 * allows anyway. The filesystem predictions read the path again after the
 * command did, so a racing command can make its own reports wrong, never the
 * enforcement.
 */
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/util.h"
#include "sandbox/supervise-notify.h"

#define MAX_BATCH 32 /* notifications handled per call, so init stays responsive to signals */

/* ------------------------------------------------------------------ refusals */

static const char *family_name(int family)
{
	switch (family) {
	case AF_UNIX:
		return "AF_UNIX";
	case AF_INET:
		return "AF_INET";
	case AF_INET6:
		return "AF_INET6";
	case AF_PACKET:
		return "AF_PACKET";
	case AF_VSOCK:
		return "AF_VSOCK";
	case AF_NETLINK:
		return "AF_NETLINK";
	}
	return NULL;
}

static const char *socktype_name(int type)
{
	switch (type & 0xf) {
	case SOCK_STREAM:
		return "SOCK_STREAM";
	case SOCK_DGRAM:
		return "SOCK_DGRAM";
	case SOCK_RAW:
		return "SOCK_RAW";
	case SOCK_SEQPACKET:
		return "SOCK_SEQPACKET";
	}
	return "?";
}

/*
 * A syscall the filter refuses, sent here (in observed runs) only to be
 * reported: answered with the errno the filter would have given (EACCES for
 * AF_UNIX datagram sockets, EPERM for everything else), never allowed.
 */
static void handle_refusal(struct ward__supervisor *s, const struct seccomp_notif *req)
{
	struct ward__supervisor_priv *pv = s->priv;
	const char *name = ward__seccomp_syscall_name(req->data.nr);
	const char *access = "syscall";
	int error = EPERM;
	char target[96];

	snprintf(target, sizeof(target), "%s", name ? name : "?");
	if (req->data.nr == SYS_socket || req->data.nr == SYS_socketpair) {
		int family = (int)(uint32_t)req->data.args[0];
		const char *f = family_name(family);

		access = "socket";
		if (family == AF_UNIX)
			error = EACCES;
		if (f)
			snprintf(target, sizeof(target), "%s %s", f,
				 socktype_name((int)req->data.args[1]));
		else
			snprintf(target, sizeof(target), "family %d %s", family,
				 socktype_name((int)req->data.args[1]));
	} else if (req->data.nr == SYS_ioctl) {
		uint32_t request = (uint32_t)req->data.args[1];

		snprintf(target, sizeof(target), "%s",
			 request == TIOCSTI		? "TIOCSTI"
				 : request == TIOCLINUX ? "TIOCLINUX"
							: "ioctl");
	} else if (req->data.nr == SYS_clone) {
		snprintf(target, sizeof(target), "clone flags 0x%llx",
			 (unsigned long long)req->data.args[0]);
	}
	ward__notif_respond(pv, req->id, -error, 0);
	ward__supervisor_report_denial(s, access, req->data.nr, error, (int32_t)req->pid, target);
}

/* ------------------------------------------------------------------ the loop */

static void handle_one(struct ward__supervisor *s, const struct seccomp_notif *req)
{
	struct ward__supervisor_priv *pv = s->priv;

	if (req->data.nr == SYS_connect) {
		ward__supervisor_connect(s, req);
		return;
	}
	if (req->data.nr == SYS_sendto) {
		ward__supervisor_sendto(s, req);
		return;
	}
	if (ward__supervisor_observe_fs(s, req)) {
		/* Observation only: the kernel decides, so continuing grants nothing. */
		ward__notif_respond(pv, req->id, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
		return;
	}
	/* Everything else the filter sends here is a refusal to report (and never allowed). */
	handle_refusal(s, req);
}

static int handle_notifications(struct ward__supervisor *s)
{
	struct ward__supervisor_priv *pv = s->priv;

	for (unsigned i = 0; i < MAX_BATCH; i++) {
		struct pollfd pfd = {.fd = pv->notify_fd, .events = POLLIN};

		if (poll(&pfd, 1, 0) < 0)
			return errno == EINTR ? 0 : -errno;
		if (!(pfd.revents & POLLIN))
			/* Every filtered process is gone. */
			return pfd.revents & (POLLHUP | POLLERR | POLLNVAL) ? -ECHILD : 0;
		/* RECV requires a zeroed buffer. */
		memset(pv->req, 0, pv->sizes.seccomp_notif);
		if (ioctl(pv->notify_fd, SECCOMP_IOCTL_NOTIF_RECV, pv->req) < 0) {
			/* ENOENT: the caller was interrupted or killed before we got to it. */
			if (errno == ENOENT || errno == EINTR)
				continue;
			return -errno;
		}
		handle_one(s, pv->req);
	}
	return 0;
}

int ward__supervisor_handle(struct ward__supervisor *s)
{
	struct ward__supervisor_priv *pv = s->priv;
	struct epoll_event ev[16];
	int n, r = 0;

	if (!pv)
		return -EINVAL;
	n = epoll_wait(pv->epoll_fd, ev, (int)ELEMENTSOF(ev), 0);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		uint64_t tag = ev[i].data.u64;

		if (tag == TAG_NOTIFY) {
			int k = handle_notifications(s);

			if (k < 0)
				r = k;
		} else if (tag == TAG_TIMER) {
			uint64_t ticks;

			/* Only rearms the level-triggered event; the count does not matter. */
			if (read(pv->timer_fd, &ticks, sizeof(ticks)) < 0)
				ticks = 0;
			ward__supervisor_pending_tick(s);
		} else if (tag >= TAG_PENDING && tag < TAG_PENDING + MAX_PENDING) {
			ward__supervisor_pending_complete(s, (unsigned)(tag - TAG_PENDING));
		}
	}
	return r;
}

int ward__supervisor_init(struct ward__supervisor *s, int listener_fd, int report_fd,
			  const struct ward_policy *p, bool netns)
{
	struct seccomp_notif_sizes sizes = {0};
	struct epoll_event ev = {.events = EPOLLIN};
	struct ward__supervisor_priv *pv;
	size_t size;
	long abi;
	int r;

	*s = (struct ward__supervisor){.listener_fd = -1,
				       .report_fd = report_fd,
				       .policy = p,
				       .netns = netns,
				       .net_fd = -1};
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0) {
		r = -errno;
		goto fail;
	}
	/* The kernel's structures may be larger than ours (newer fields); never smaller. */
	sizes.seccomp_notif = MAX(sizes.seccomp_notif, (uint16_t)sizeof(struct seccomp_notif));
	sizes.seccomp_notif_resp =
		MAX(sizes.seccomp_notif_resp, (uint16_t)sizeof(struct seccomp_notif_resp));
	size = sizeof(struct ward__supervisor_priv) + sizes.seccomp_notif + 16 +
		sizes.seccomp_notif_resp + 16;
	/* An anonymous mapping, not malloc(): see the top of the file. */
	pv = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pv == MAP_FAILED) {
		r = -errno;
		goto fail;
	}
	pv->map_size = size;
	pv->sizes = sizes;
	pv->req = (struct seccomp_notif *)((char *)pv +
					   ((sizeof(struct ward__supervisor_priv) + 15) &
					    ~(size_t)15));
	pv->resp = (struct seccomp_notif_resp *)((char *)pv->req +
						 ((sizes.seccomp_notif + 15) & ~(size_t)15));
	pv->notify_fd = listener_fd;
	pv->epoll_fd = -1;
	pv->timer_fd = -1;
	memset(pv->mask_state, -1, sizeof(pv->mask_state));
	abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
		      1U /* LANDLOCK_CREATE_RULESET_VERSION */);
	pv->landlock_abi = abi > 0 ? (int)abi : 0;
	ward__supervisor_init_ids(pv);
	s->priv = pv;

	pv->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (pv->epoll_fd < 0) {
		r = -errno;
		goto fail;
	}
	pv->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (pv->timer_fd < 0) {
		r = -errno;
		goto fail;
	}
	ev.data.u64 = TAG_NOTIFY;
	if (epoll_ctl(pv->epoll_fd, EPOLL_CTL_ADD, listener_fd, &ev) < 0) {
		r = -errno;
		goto fail;
	}
	ev.data.u64 = TAG_TIMER;
	if (epoll_ctl(pv->epoll_fd, EPOLL_CTL_ADD, pv->timer_fd, &ev) < 0) {
		r = -errno;
		goto fail;
	}
	s->listener_fd = pv->epoll_fd;
	return 0;

fail:
	if (s->priv) {
		ward__supervisor_release(s);
	} else if (listener_fd >= 0) {
		close(listener_fd);
	}
	return r;
}

void ward__supervisor_flush(struct ward__supervisor *s)
{
	if (!s || !s->priv || s->denials_dropped == 0)
		return;
	{
		struct ward__msg_dropped m = {.count = s->denials_dropped};

		ward__report(s->report_fd, WARD_MSG_DENIALS_DROPPED, &m, sizeof(m));
		s->denials_dropped = 0;
	}
}

void ward__supervisor_release(struct ward__supervisor *s)
{
	struct ward__supervisor_priv *pv;

	if (!s || !s->priv)
		return;
	pv = s->priv;
	ward__supervisor_pending_abort(pv);
	if (s->denials_dropped > 0) {
		struct ward__msg_dropped m = {.count = s->denials_dropped};

		ward__report(s->report_fd, WARD_MSG_DENIALS_DROPPED, &m, sizeof(m));
		s->denials_dropped = 0;
	}
	/* Closing the listener makes any later notification fail with ENOSYS rather than hang. */
	if (pv->notify_fd >= 0)
		close(pv->notify_fd);
	if (pv->timer_fd >= 0)
		close(pv->timer_fd);
	if (pv->epoll_fd >= 0)
		close(pv->epoll_fd);
	munmap(pv, pv->map_size);
	s->priv = NULL;
	s->listener_fd = -1;
}
