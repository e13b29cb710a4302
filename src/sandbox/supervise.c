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
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/seccomp.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/util.h"
#include "sandbox/sandbox.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif
#ifndef SECCOMP_USER_NOTIF_FLAG_CONTINUE
#define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)
#endif
#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif
#ifndef __O_TMPFILE
#define __O_TMPFILE 020000000
#endif
#define TCP_LISTEN_STATE 10 /* TCP_LISTEN in the kernel's sock states, used by unix_diag too */
#if defined(__x86_64__) || defined(__aarch64__)
#define NR_FCHMODAT2 452 /* Linux 6.6; seccomp.c observes it by number */
#endif

#define MAX_PENDING 64 /* blocked connects in progress at once; more are answered EAGAIN */
#define MAX_BATCH 32 /* notifications handled per call, so init stays responsive to signals */
#define TICK_NS (20ULL * 1000 * 1000)
#define TARGET_MAX 256

enum { TAG_NOTIFY = 0, TAG_TIMER = 1, TAG_PENDING = 2 };

/* One connect() being emulated. */
struct conn {
	uint64_t id;
	int32_t pid;
	int sock; /* our duplicate of the command's socket */
	int opath; /* AF_UNIX pathname: the O_PATH fd of the socket file, else -1 */
	int domain;
	bool report; /* a failure is a denial: non-loopback destination, network off */
	socklen_t len;
	struct sockaddr_storage addr; /* what we connect to (our copy, or /proc/self/fd/N) */
	char target[TARGET_MAX];
};

/*
 * A connect() on a blocking socket that did not complete at once: the command
 * waits in its notification while we wait for the socket in the event loop.
 */
struct pending {
	bool used;
	bool retry; /* AF_UNIX with a full backlog: try again on every tick */
	uint64_t deadline_ns; /* from SO_SNDTIMEO, 0 for none */
	struct conn c;
};

struct priv {
	size_t map_size;
	int notify_fd;
	int epoll_fd;
	int timer_fd;
	bool timer_armed;
	int landlock_abi;
	/* The command's credentials, for telling its own permission failures from the sandbox's. */
	uid_t uid;
	gid_t gid;
	gid_t groups[64];
	int n_groups;
	bool ids_ambiguous; /* in a user namespace where our uid/gid is also the overflow id */
	uid_t overflow_uid;
	gid_t overflow_gid;
	struct seccomp_notif_sizes sizes;
	struct seccomp_notif *req;
	struct seccomp_notif_resp *resp;
	unsigned n_pending;
	struct pending pending[MAX_PENDING];
	int8_t mask_state[WARD_POLICY_MAX_PATHS]; /* deny-read mask in force: -1 unknown, 0, 1 */
	bool have_last;
	struct ward__msg_denial last;
	struct ward__msg_denial msg;
	char str[2][PATH_MAX]; /* path arguments read from the command */
	char lex[PATH_MAX]; /* lexical absolute path */
	char canon[PATH_MAX];
	char tmp[PATH_MAX];
	char nlbuf[32768] __attribute__((aligned(8)));
	/* The kernel's seccomp_notif and seccomp_notif_resp follow, sized at run time. */
};

/* ------------------------------------------------------------------ reports */

void ward__report(int fd, uint32_t type, const void *payload, uint32_t len)
{
	char buf[PIPE_BUF];
	struct ward__msg_hdr h = {.type = type, .len = len};
	int saved = errno;
	ssize_t n;

	/* One write() of at most PIPE_BUF bytes is atomic: concurrent writers never interleave. */
	if (fd < 0 || len > sizeof(buf) - sizeof(h))
		return;
	memcpy(buf, &h, sizeof(h));
	if (len > 0)
		memcpy(buf + sizeof(h), payload, len);
	do
		n = write(fd, buf, sizeof(h) + len);
	while (n < 0 && errno == EINTR);
	errno = saved;
}

static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void report_denial(struct ward__supervisor *s, const char *access, int nr, int error,
			  int32_t pid, const char *target)
{
	struct priv *pv = s->priv;
	struct ward__msg_denial *m = &pv->msg;
	const char *name = ward__seccomp_syscall_name(nr);

	memset(m, 0, sizeof(*m));
	copy_str(m->access, sizeof(m->access), access);
	if (name)
		copy_str(m->syscall, sizeof(m->syscall), name);
	else
		snprintf(m->syscall, sizeof(m->syscall), "syscall %d", nr);
	m->error = error;
	m->pid = pid;
	copy_str(m->target, sizeof(m->target), target);

	/* A loop hitting the same wall is one report. */
	if (pv->have_last && strcmp(pv->last.access, m->access) == 0 &&
	    strcmp(pv->last.syscall, m->syscall) == 0 && pv->last.error == m->error &&
	    strcmp(pv->last.target, m->target) == 0)
		return;
	pv->last = *m;
	pv->have_last = true;
	if (s->denials_sent >= WARD_MAX_DENIALS) {
		s->denials_dropped++;
		return;
	}
	ward__report(s->report_fd, WARD_MSG_DENIAL, m, sizeof(*m));
	s->denials_sent++;
}

/* ------------------------------------------------------------------ notification plumbing */

static bool id_valid(struct priv *pv, uint64_t id)
{
	return ioctl(pv->notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

static void respond(struct priv *pv, uint64_t id, int error, uint32_t flags)
{
	memset(pv->resp, 0, pv->sizes.seccomp_notif_resp);
	pv->resp->id = id;
	pv->resp->error = error;
	pv->resp->val = 0;
	pv->resp->flags = flags;
	/* ENOENT: the command was killed meanwhile; nothing is waiting for the answer. */
	(void)ioctl(pv->notify_fd, SECCOMP_IOCTL_NOTIF_SEND, pv->resp);
}

/*
 * Reads the command's memory. process_vm_readv() first; /proc/PID/mem where
 * it is unavailable. The caller checks the notification is still valid
 * afterwards (the pid could have been reused in between).
 */
static int read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	char path[64];
	ssize_t n;
	int fd;

	if (len == 0)
		return 0;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	if (n >= 0 || errno == EFAULT)
		return -EFAULT;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len, (off_t)addr);
	close(fd);
	return n == (ssize_t)len ? 0 : -EFAULT;
}

/* Reads a NUL-terminated string, page by page so an unmapped page after it does not fail. */
static int read_str(pid_t pid, uint64_t addr, char *buf, size_t size)
{
	size_t off = 0;

	if (addr == 0)
		return -EFAULT;
	while (off < size) {
		size_t chunk = 4096 - ((addr + off) & 4095);
		int r;

		chunk = MIN(chunk, size - off);
		r = read_mem(pid, addr + off, buf + off, chunk);
		if (r < 0)
			return r;
		if (memchr(buf + off, '\0', chunk))
			return 0;
		off += chunk;
	}
	return -ENAMETOOLONG;
}

/* A pidfd for the thread that made the call (PIDFD_THREAD: 6.9; before, its thread group). */
static int target_pidfd(pid_t pid)
{
	char path[64], buf[1024];
	const char *t;
	ssize_t n;
	long fd;
	int sfd;

	fd = syscall(SYS_pidfd_open, pid, PIDFD_THREAD);
	if (fd >= 0 || errno != EINVAL)
		return fd >= 0 ? (int)fd : -errno;
	fd = syscall(SYS_pidfd_open, pid, 0);
	if (fd >= 0 || errno != EINVAL)
		return fd >= 0 ? (int)fd : -errno;
	/* Not a thread-group leader on a kernel without PIDFD_THREAD: its fd table is the group's. */
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	sfd = open(path, O_RDONLY | O_CLOEXEC);
	if (sfd < 0)
		return -errno;
	n = read(sfd, buf, sizeof(buf) - 1);
	close(sfd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	t = strstr(buf, "\nTgid:");
	if (!t)
		return -ESRCH;
	fd = syscall(SYS_pidfd_open, (pid_t)strtol(t + 6, NULL, 10), 0);
	return fd >= 0 ? (int)fd : -errno;
}

/*
 * Duplicates the command's fd into ours. Returns the fd, -ESRCH when the
 * notification is gone (nothing to answer), or another -errno to answer with.
 */
static int target_fd(struct priv *pv, uint64_t id, pid_t pid, int fd)
{
	int pidfd = target_pidfd(pid);
	long r;

	if (pidfd < 0)
		return id_valid(pv, id) ? pidfd : -ESRCH;
	/* The pid named the command when the pidfd was made only if the call is still waiting. */
	if (!id_valid(pv, id)) {
		close(pidfd);
		return -ESRCH;
	}
	r = syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	close(pidfd);
	return r >= 0 ? (int)r : -errno;
}

/* Opens /proc/PID/cwd or /proc/PID/fd/N as the base of a relative path (O_PATH). */
static int target_dir(pid_t pid, int dirfd)
{
	char path[64];
	int fd;

	if (dirfd == AT_FDCWD)
		snprintf(path, sizeof(path), "/proc/%d/cwd", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, dirfd);
	fd = open(path, O_PATH | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

/* The path of one of our fds, through /proc/self/fd. */
static int fd_path(int fd, char *buf, size_t size)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return buf[0] == '/' ? 0 : -EINVAL;
}

/* ------------------------------------------------------------------ connect: unix sockets */

static bool allow_listed(const struct ward_policy *p, const struct stat *st)
{
	for (size_t i = 0; i < p->n_sockets; i++)
		if (p->sockets[i].dev == st->st_dev && p->sockets[i].ino == st->st_ino)
			return true;
	return false;
}

/*
 * unix_diag reports udiag_vfs_dev as the kernel's internal dev_t (major in
 * the top 12 bits, minor in the low 20), not the new_encode_dev() form that
 * stat() returns in st_dev: compare major and minor.
 */
static bool kdev_matches(uint32_t kdev, dev_t st_dev)
{
	return (kdev >> 20) == major(st_dev) && (kdev & 0xfffff) == minor(st_dev);
}

/*
 * True when a listening unix socket of our network namespace is bound to the
 * inode st. Our namespace is the sandbox's private one, so such a socket was
 * bound by a process inside: the host's sockets live in the host's namespace
 * and never show here, whatever path they are reached through.
 *
 * udiag_vfs_ino is 32 bits wide; an inode number that does not fit cannot be
 * matched exactly and is refused (it must be allow-listed instead).
 */
static bool bound_inside(struct priv *pv, const struct stat *st)
{
	struct {
		struct nlmsghdr nlh;
		struct unix_diag_req req;
	} msg = {
		.nlh = {.nlmsg_len = sizeof(msg),
			.nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			.nlmsg_seq = 1},
		.req = {.sdiag_family = AF_UNIX,
			.udiag_states = 1U << TCP_LISTEN_STATE,
			.udiag_show = UDIAG_SHOW_VFS},
	};
	struct sockaddr_nl nl = {.nl_family = AF_NETLINK};
	_cleanup_close_ int fd = -1;

	if (st->st_ino > UINT32_MAX)
		return false;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return false;
	if (sendto(fd, &msg, sizeof(msg), 0, (struct sockaddr *)&nl, sizeof(nl)) < 0)
		return false;
	/* Bounded: 64 Ki reads of up to 32 KiB, far beyond any sandbox's socket count. */
	for (unsigned rounds = 0; rounds < 65536; rounds++) {
		ssize_t n = recv(fd, pv->nlbuf, sizeof(pv->nlbuf), 0);
		size_t off = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		while (off + sizeof(struct nlmsghdr) <= (size_t)n) {
			struct nlmsghdr *h = (struct nlmsghdr *)(pv->nlbuf + off);
			struct unix_diag_msg *m;
			struct rtattr *a;
			int alen;

			if (h->nlmsg_len < sizeof(*h) || h->nlmsg_len > (size_t)n - off)
				break;
			off += NLMSG_ALIGN(h->nlmsg_len);
			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR)
				return false;
			if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
			    h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
				continue;
			m = NLMSG_DATA(h);
			a = (struct rtattr *)(m + 1);
			alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*m)));
			for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
				struct unix_diag_vfs v;

				if (a->rta_type != UNIX_DIAG_VFS || RTA_PAYLOAD(a) < sizeof(v))
					continue;
				memcpy(&v, RTA_DATA(a), sizeof(v));
				if (v.udiag_vfs_ino == (uint32_t)st->st_ino &&
				    kdev_matches(v.udiag_vfs_dev, st->st_dev))
					return true;
			}
		}
	}
	return false;
}

/* ------------------------------------------------------------------ connect: emulation */

static void conn_close(struct conn *c)
{
	if (c->sock >= 0)
		close(c->sock);
	if (c->opath >= 0)
		close(c->opath);
	c->sock = c->opath = -1;
}

static void conn_finish(struct ward__supervisor *s, struct conn *c, int r)
{
	respond(s->priv, c->id, r, 0);
	/* Loopback refusals are the command's own business; the rest could not leave the sandbox. */
	if (c->report && r < 0 && r != -EINPROGRESS)
		report_denial(s, "connect", SYS_connect, -r, c->pid, c->target);
	conn_close(c);
}

/*
 * connect() on our duplicate, never blocking: O_NONBLOCK lives in the open
 * file description the command shares, so it is set only around the call.
 */
static int connect_nonblocking(struct conn *c, bool *ret_blocking)
{
	int fl = fcntl(c->sock, F_GETFL);
	int r;

	if (fl < 0)
		return -errno;
	*ret_blocking = !(fl & O_NONBLOCK);
	if (*ret_blocking && fcntl(c->sock, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	r = connect(c->sock, (struct sockaddr *)&c->addr, c->len) < 0 ? -errno : 0;
	if (*ret_blocking)
		(void)fcntl(c->sock, F_SETFL, fl);
	return r;
}

static void timer_update(struct priv *pv)
{
	struct itimerspec its = {0};
	bool want = pv->n_pending > 0;

	if (want == pv->timer_armed)
		return;
	if (want) {
		its.it_value.tv_nsec = (long)TICK_NS;
		its.it_interval.tv_nsec = (long)TICK_NS;
	}
	if (timerfd_settime(pv->timer_fd, 0, &its, NULL) == 0)
		pv->timer_armed = want;
}

static void pending_drop(struct priv *pv, unsigned i)
{
	struct pending *e = &pv->pending[i];

	/* Remove before closing: the command still holds the file, so close alone would not. */
	if (!e->retry)
		(void)epoll_ctl(pv->epoll_fd, EPOLL_CTL_DEL, e->c.sock, NULL);
	conn_close(&e->c);
	e->used = false;
	pv->n_pending--;
	timer_update(pv);
}

static bool pending_add(struct priv *pv, struct conn *c, bool retry)
{
	struct timeval tv = {0};
	socklen_t tvlen = sizeof(tv);

	for (unsigned i = 0; i < MAX_PENDING; i++) {
		struct pending *e = &pv->pending[i];

		if (e->used)
			continue;
		if (!retry) {
			struct epoll_event ev = {.events = EPOLLOUT, .data.u64 = TAG_PENDING + i};

			if (epoll_ctl(pv->epoll_fd, EPOLL_CTL_ADD, c->sock, &ev) < 0)
				return false;
		}
		e->used = true;
		e->retry = retry;
		e->deadline_ns = 0;
		/* A blocking connect gives up after SO_SNDTIMEO, as the kernel's would. */
		if (getsockopt(c->sock, SOL_SOCKET, SO_SNDTIMEO, &tv, &tvlen) == 0 &&
		    (tv.tv_sec > 0 || tv.tv_usec > 0))
			e->deadline_ns = ward__now_ns() + (uint64_t)tv.tv_sec * 1000000000ULL +
				(uint64_t)tv.tv_usec * 1000ULL;
		e->c = *c;
		c->sock = c->opath = -1;
		pv->n_pending++;
		timer_update(pv);
		return true;
	}
	return false;
}

/*
 * Performs the connect. A blocking socket whose connect cannot complete at
 * once (TCP handshake in progress, or a unix listener with a full backlog)
 * is parked in the pending table and answered when it completes, so one
 * slow connect never stalls the supervisor (nor init's signal handling).
 * When the table is full the command gets EAGAIN.
 */
static void conn_perform(struct ward__supervisor *s, struct conn *c)
{
	bool blocking = false;
	int r = connect_nonblocking(c, &blocking);

	if (blocking &&
	    (r == -EINPROGRESS || r == -EALREADY || (r == -EAGAIN && c->domain == AF_UNIX))) {
		if (pending_add(s->priv, c, r == -EAGAIN))
			return;
		r = -EAGAIN;
	}
	conn_finish(s, c, r);
}

static void printable(char *dst, size_t size, const char *src, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 1 < size; i++)
		dst[o++] = (src[i] >= 0x20 && src[i] < 0x7f) ? src[i] : '?';
	dst[o] = '\0';
}

static void connect_unix(struct ward__supervisor *s, struct conn *c)
{
	struct priv *pv = s->priv;
	const struct sockaddr_un *sun = (const struct sockaddr_un *)&c->addr;
	size_t off = offsetof(struct sockaddr_un, sun_path);
	size_t n;
	_cleanup_close_ int base = -1;
	struct stat st;
	struct sockaddr_un via = {.sun_family = AF_UNIX};

	/* Unnamed, oversized or malformed: the kernel refuses it (EINVAL), nothing to reach. */
	if (c->len <= off || c->len > sizeof(struct sockaddr_un) || sun->sun_family != AF_UNIX) {
		conn_finish(s, c, -EINVAL);
		return;
	}
	n = c->len - off;
	if (sun->sun_path[0] == '\0') {
		/*
		 * Abstract addresses are per network namespace: in our private one
		 * only the sandbox's own are there. Without it the host's would be.
		 */
		c->target[0] = '@';
		printable(c->target + 1, sizeof(c->target) - 1, sun->sun_path + 1, n - 1);
		if (!s->netns) {
			respond(pv, c->id, -EACCES, 0);
			report_denial(s, "connect", SYS_connect, EACCES, c->pid, c->target);
			conn_close(c);
			return;
		}
		conn_perform(s, c);
		return;
	}

	/* The kernel reads sun_path up to the first NUL within the given length. */
	memcpy(pv->tmp, sun->sun_path, n);
	pv->tmp[n] = '\0';
	if (pv->tmp[0] != '/') {
		/* Relative to the command's working directory, as the kernel resolves it. */
		base = target_dir(c->pid, AT_FDCWD);
		if (!id_valid(pv, c->id)) {
			conn_close(c);
			return;
		}
		if (base < 0) {
			conn_finish(s, c, base);
			return;
		}
	}
	/* Followed like connect(2) follows symlinks; from now on this inode is the one we talk about. */
	c->opath = openat(base >= 0 ? base : AT_FDCWD, pv->tmp, O_PATH | O_CLOEXEC);
	if (c->opath < 0) {
		conn_finish(s, c, -errno);
		return;
	}
	if (fstat(c->opath, &st) < 0) {
		conn_finish(s, c, -errno);
		return;
	}
	if (fd_path(c->opath, c->target, sizeof(c->target)) < 0)
		copy_str(c->target, sizeof(c->target), pv->tmp);
	if (!S_ISSOCK(st.st_mode)) {
		conn_finish(s, c, -ECONNREFUSED);
		return;
	}
	/*
	 * The host's sockets (docker, D-Bus, ssh-agent) must stay out of reach:
	 * a read-only mount does not stop connect(2). Allowed: the policy's
	 * allow-list, and sockets bound inside the sandbox, which can be told
	 * apart only in a private network namespace.
	 */
	if (!allow_listed(s->policy, &st) && !(s->netns && bound_inside(pv, &st))) {
		respond(pv, c->id, -EACCES, 0);
		report_denial(s, "connect", SYS_connect, EACCES, c->pid, c->target);
		conn_close(c);
		return;
	}
	snprintf(via.sun_path, sizeof(via.sun_path), "/proc/self/fd/%d", c->opath);
	memset(&c->addr, 0, sizeof(c->addr));
	memcpy(&c->addr, &via, sizeof(via));
	c->len = (socklen_t)(off + strlen(via.sun_path) + 1);
	conn_perform(s, c);
}

static bool inet_loopback(const struct sockaddr_storage *ss, socklen_t len)
{
	if (ss->ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		uint32_t a = ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr);

		/* 0.0.0.0 connects to the local host. */
		return (a >> 24) == 127 || a == 0;
	}
	if (ss->ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;

		if (IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_UNSPECIFIED(a))
			return true;
		return IN6_IS_ADDR_V4MAPPED(a) &&
			(a->s6_addr[12] == 127 ||
			 (a->s6_addr[12] | a->s6_addr[13] | a->s6_addr[14] | a->s6_addr[15]) == 0);
	}
	/* AF_UNSPEC dissolves an association; malformed addresses are refused by the kernel. */
	return true;
}

static void inet_target(const struct sockaddr_storage *ss, socklen_t len, char *buf, size_t size)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &sin->sin_addr, a, sizeof(a));
		snprintf(buf, size, "%s:%u", a, ntohs(sin->sin_port));
	} else if (ss->ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &sin6->sin6_addr, a, sizeof(a));
		snprintf(buf, size, "[%s]:%u", a, ntohs(sin6->sin6_port));
	} else {
		snprintf(buf, size, "family %u", (unsigned)ss->ss_family);
	}
}

static void handle_connect(struct ward__supervisor *s, const struct seccomp_notif *req)
{
	struct priv *pv = s->priv;
	struct conn c = {.id = req->id, .pid = (int32_t)req->pid, .sock = -1, .opath = -1};
	int fd = (int)req->data.args[0];
	int len = (int)req->data.args[2];
	socklen_t dlen = sizeof(c.domain);
	struct stat st;
	int r;

	/* The address is copied once (the kernel's own cap); we never let the kernel read it again. */
	if (len < 0 || (size_t)len > sizeof(c.addr)) {
		respond(pv, c.id, -EINVAL, 0);
		return;
	}
	c.len = (socklen_t)len;
	r = read_mem(c.pid, req->data.args[1], &c.addr, c.len);
	if (!id_valid(pv, c.id))
		return;
	if (r < 0) {
		respond(pv, c.id, -EFAULT, 0);
		return;
	}
	r = target_fd(pv, c.id, c.pid, fd);
	if (r == -ESRCH)
		return;
	if (r < 0) {
		respond(pv, c.id, r, 0);
		return;
	}
	c.sock = r;
	if (fstat(c.sock, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		conn_finish(s, &c, -ENOTSOCK);
		return;
	}
	if (getsockopt(c.sock, SOL_SOCKET, SO_DOMAIN, &c.domain, &dlen) < 0) {
		conn_finish(s, &c, -errno);
		return;
	}
	switch (c.domain) {
	case AF_UNIX:
		connect_unix(s, &c);
		return;
	case AF_INET:
	case AF_INET6:
		/*
		 * With the network off in a private namespace only loopback
		 * exists; anything else fails there (ENETUNREACH), and that
		 * failure is the sandbox's doing, so it is reported.
		 */
		inet_target(&c.addr, c.len, c.target, sizeof(c.target));
		c.report = s->netns && !inet_loopback(&c.addr, c.len);
		conn_perform(s, &c);
		return;
	default:
		/* Other families (netlink, ...) have no host objects to reach by address. */
		conn_perform(s, &c);
		return;
	}
}

/* A pending blocking connect became writable (or failed). */
static void pending_complete(struct ward__supervisor *s, unsigned i)
{
	struct priv *pv = s->priv;
	struct pending *e = &pv->pending[i];
	int err = 0;
	socklen_t elen = sizeof(err);

	if (i >= MAX_PENDING || !e->used || e->retry)
		return;
	if (getsockopt(e->c.sock, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
		err = errno;
	respond(pv, e->c.id, err ? -err : 0, 0);
	if (e->c.report && err)
		report_denial(s, "connect", SYS_connect, err, e->c.pid, e->c.target);
	pending_drop(pv, i);
}

static void pending_tick(struct ward__supervisor *s)
{
	struct priv *pv = s->priv;
	uint64_t now = ward__now_ns();

	for (unsigned i = 0; i < MAX_PENDING; i++) {
		struct pending *e = &pv->pending[i];

		if (!e->used)
			continue;
		/* The command was killed: drop our reference to its socket. */
		if (!id_valid(pv, e->c.id)) {
			pending_drop(pv, i);
			continue;
		}
		if (e->retry) {
			bool blocking;
			int r = connect_nonblocking(&e->c, &blocking);

			if (r != -EAGAIN) {
				respond(pv, e->c.id, r, 0);
				pending_drop(pv, i);
				continue;
			}
		}
		if (e->deadline_ns && now >= e->deadline_ns) {
			/* What a blocking connect returns when SO_SNDTIMEO runs out. */
			respond(pv, e->c.id, e->retry ? -EAGAIN : -EINPROGRESS, 0);
			pending_drop(pv, i);
		}
	}
}

/* ------------------------------------------------------------------ filesystem observation */

enum fs_op {
	FS_OPEN, /* open/openat: flags decide */
	FS_OPENAT2, /* flags in struct open_how */
	FS_CREAT,
	FS_CREATE, /* mkdir, mknod, symlink: a new directory entry */
	FS_DELETE, /* unlink, rmdir */
	FS_RENAME,
	FS_LINK,
	FS_TRUNCATE,
	FS_SETATTR, /* chmod, chown, utimes, xattrs: the inode, not Landlock's business */
};

struct fs_call {
	enum fs_op op;
	int dirfd_arg; /* -1: AT_FDCWD */
	int path_arg;
	int dirfd2_arg;
	int path2_arg; /* -1: none */
	int flags_arg; /* open flags, or at-flags (AT_SYMLINK_NOFOLLOW); -1: none */
	bool nofollow;
};

static bool fs_call_for(int nr, struct fs_call *ret)
{
	struct fs_call c = {.dirfd_arg = -1, .dirfd2_arg = -1, .path2_arg = -1, .flags_arg = -1};

	switch (nr) {
#ifdef SYS_open
	case SYS_open:
		c.op = FS_OPEN, c.path_arg = 0, c.flags_arg = 1;
		break;
#endif
	case SYS_openat:
		c.op = FS_OPEN, c.dirfd_arg = 0, c.path_arg = 1, c.flags_arg = 2;
		break;
	case SYS_openat2:
		c.op = FS_OPENAT2, c.dirfd_arg = 0, c.path_arg = 1, c.flags_arg = 2;
		break;
#ifdef SYS_creat
	case SYS_creat:
		c.op = FS_CREAT, c.path_arg = 0;
		break;
#endif
#if defined(SYS_mkdir) && defined(SYS_mknod)
	case SYS_mkdir:
	case SYS_mknod:
		c.op = FS_CREATE, c.path_arg = 0;
		break;
#endif
	case SYS_mkdirat:
	case SYS_mknodat:
		c.op = FS_CREATE, c.dirfd_arg = 0, c.path_arg = 1;
		break;
#ifdef SYS_symlink
	case SYS_symlink:
		c.op = FS_CREATE, c.path_arg = 1;
		break;
#endif
	case SYS_symlinkat:
		c.op = FS_CREATE, c.dirfd_arg = 1, c.path_arg = 2;
		break;
#if defined(SYS_unlink) && defined(SYS_rmdir)
	case SYS_unlink:
	case SYS_rmdir:
		c.op = FS_DELETE, c.path_arg = 0;
		break;
#endif
	case SYS_unlinkat:
		c.op = FS_DELETE, c.dirfd_arg = 0, c.path_arg = 1;
		break;
#ifdef SYS_rename
	case SYS_rename:
		c.op = FS_RENAME, c.path_arg = 0, c.path2_arg = 1;
		break;
#endif
#ifdef SYS_renameat
	case SYS_renameat:
#endif
	case SYS_renameat2:
		c.op = FS_RENAME, c.dirfd_arg = 0, c.path_arg = 1, c.dirfd2_arg = 2,
		c.path2_arg = 3;
		break;
#ifdef SYS_link
	case SYS_link:
		c.op = FS_LINK, c.path_arg = 0, c.path2_arg = 1;
		break;
#endif
	case SYS_linkat:
		c.op = FS_LINK, c.dirfd_arg = 0, c.path_arg = 1, c.dirfd2_arg = 2, c.path2_arg = 3;
		break;
	case SYS_truncate:
		c.op = FS_TRUNCATE, c.path_arg = 0;
		break;
#ifdef SYS_chmod
	case SYS_chmod:
#endif
#ifdef SYS_chown
	case SYS_chown:
#endif
#ifdef SYS_utime
	case SYS_utime:
#endif
#ifdef SYS_utimes
	case SYS_utimes:
#endif
	case SYS_setxattr:
	case SYS_removexattr:
		c.op = FS_SETATTR, c.path_arg = 0;
		break;
#ifdef SYS_lchown
	case SYS_lchown:
#endif
	case SYS_lsetxattr:
	case SYS_lremovexattr:
		c.op = FS_SETATTR, c.path_arg = 0, c.nofollow = true;
		break;
	case SYS_fchmodat:
#ifdef SYS_futimesat
	case SYS_futimesat:
#endif
		c.op = FS_SETATTR, c.dirfd_arg = 0, c.path_arg = 1;
		break;
#ifdef NR_FCHMODAT2
	case NR_FCHMODAT2:
#endif
	case SYS_utimensat:
		c.op = FS_SETATTR, c.dirfd_arg = 0, c.path_arg = 1, c.flags_arg = 3;
		break;
	case SYS_fchownat:
		c.op = FS_SETATTR, c.dirfd_arg = 0, c.path_arg = 1, c.flags_arg = 4;
		break;
	default:
		return false;
	}
	*ret = c;
	return true;
}

/* A path argument resolved the way the command's kernel call will resolve it. */
struct resolved {
	int parent; /* O_PATH of the containing directory, or -1 */
	int obj; /* O_PATH of the object itself, or -1 when it does not exist */
	struct stat st; /* of obj */
	const char *last; /* final component, inside the caller's buffer */
};

static void resolved_release(struct resolved *r)
{
	if (r->parent >= 0)
		close(r->parent);
	if (r->obj >= 0)
		close(r->obj);
	r->parent = r->obj = -1;
}

/* Appends path to the absolute base in out, removing ".", ".." and "//" lexically. */
static int lexical(const char *base, const char *path, char *out, size_t size)
{
	size_t o = 0;
	const char *parts[2] = {path[0] == '/' ? "" : base, path};

	out[o++] = '/';
	for (int k = 0; k < 2; k++) {
		const char *p = parts[k];

		while (*p) {
			const char *e;
			size_t n;

			while (*p == '/')
				p++;
			e = strchrnul(p, '/');
			n = (size_t)(e - p);
			if (n == 0 || (n == 1 && p[0] == '.')) {
				/* nothing */
			} else if (n == 2 && p[0] == '.' && p[1] == '.') {
				while (o > 1 && out[o - 1] != '/')
					o--;
				if (o > 1)
					o--;
			} else {
				if (o + (o > 1) + n + 1 > size)
					return -ENAMETOOLONG;
				if (o > 1)
					out[o++] = '/';
				memcpy(out + o, p, n);
				o += n;
			}
			p = e;
		}
	}
	out[o] = '\0';
	return 0;
}

/*
 * Resolves one path argument: opens the base (the command's cwd or dirfd),
 * the parent directory and, when it exists, the object (following a final
 * symlink or not). Fills pv->lex with the lexical absolute path. Returns 0,
 * -ESRCH when the notification is gone, or -errno when the parent cannot be
 * resolved (the kernel call fails for ordinary reasons then).
 */
static int resolve(struct priv *pv, uint64_t id, pid_t pid, int dirfd, char *path, bool follow,
		   struct resolved *ret)
{
	_cleanup_close_ int base = -1;
	char *slash;
	size_t n = strlen(path);
	int r;

	ret->parent = ret->obj = -1;
	pv->lex[0] = '\0';
	if (n == 0)
		return -ENOENT;
	if (path[0] != '/') {
		base = target_dir(pid, dirfd);
		if (!id_valid(pv, id))
			return -ESRCH;
		if (base < 0)
			return base;
		r = fd_path(base, pv->canon, sizeof(pv->canon));
		if (r < 0)
			return r;
	} else {
		pv->canon[0] = '\0';
	}
	r = lexical(pv->canon, path, pv->lex, sizeof(pv->lex));
	if (r < 0)
		return r;

	/* Split into parent and last component; trailing slashes belong to the last. */
	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
	slash = strrchr(path, '/');
	if (!slash) {
		ret->last = path;
		ret->parent =
			openat(base >= 0 ? base : AT_FDCWD, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	} else {
		ret->last = slash + 1;
		if (slash == path) {
			ret->parent = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		} else {
			*slash = '\0';
			ret->parent = openat(base >= 0 ? base : AT_FDCWD, path,
					     O_PATH | O_DIRECTORY | O_CLOEXEC);
		}
	}
	if (ret->parent < 0)
		return -errno;
	if (ret->last[0] == '\0' || strcmp(ret->last, ".") == 0 || strcmp(ret->last, "..") == 0) {
		/* "/", "." and "..": no directory entry of their own to create, remove or rename. */
		resolved_release(ret);
		return -EINVAL;
	}
	ret->obj = openat(ret->parent, ret->last, O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	if (ret->obj >= 0 && fstat(ret->obj, &ret->st) < 0) {
		close(ret->obj);
		ret->obj = -1;
	}
	return 0;
}

/* The canonical path of the entry (parent's path + last), into buf. */
static int entry_path(const struct resolved *r, char *buf, size_t size)
{
	int k = fd_path(r->parent, buf, size);
	size_t n;

	if (k < 0)
		return k;
	n = strlen(buf);
	if (n + 1 + strlen(r->last) + 1 > size)
		return -ENAMETOOLONG;
	if (n > 1)
		buf[n++] = '/';
	copy_str(buf + n, size - n, r->last);
	return 0;
}

static bool fd_readonly(int fd)
{
	struct statvfs sv;

	return fstatvfs(fd, &sv) == 0 && (sv.f_flag & ST_RDONLY);
}

/* The mount an fd lies on (its id); 0 when unknown. */
static uint64_t fd_mnt_id(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) < 0 ||
	    !(stx.stx_mask & STATX_MNT_ID))
		return 0;
	return stx.stx_mnt_id;
}

static bool fd_mount_root(int fd)
{
	struct statx stx;

	return statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx) == 0 &&
		(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
		(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* True when the deny-read mask of d is mounted (mode 000), not merely listed in the policy. */
static bool mask_in_force(const struct ward__supervisor *s, struct priv *pv,
			  const struct ward__deny *d)
{
	size_t i = (size_t)(d - s->policy->deny);
	struct stat st;

	if (i >= WARD_POLICY_MAX_PATHS)
		return false;
	if (pv->mask_state[i] < 0)
		pv->mask_state[i] = stat(d->path, &st) == 0 && (st.st_mode & 07777) == 0;
	return pv->mask_state[i] == 1;
}

/*
 * A deny-read path reached by name (lexically) or by what it resolves to.
 * exact_ok: the call succeeds on the masked path itself (O_PATH) and only
 * fails beneath it.
 */
static bool denied_read(const struct ward__supervisor *s, struct priv *pv, const char *lex, int obj,
			bool exact_ok)
{
	const struct ward__deny *d = ward__policy_deny_for(s->policy, lex);

	if (!d && obj >= 0 && fd_path(obj, pv->tmp, sizeof(pv->tmp)) == 0)
		d = ward__policy_deny_for(s->policy, pv->tmp);
	if (!d || !mask_in_force(s, pv, d))
		return false;
	return !(exact_ok && strcmp(d->path, lex) == 0);
}

/* A protected path bound over itself (read-only or pinned): a mount point of ours. */
static bool protected_mount(const struct ward_policy *p, const char *path)
{
	for (size_t i = 0; i < p->n_protected; i++)
		if (p->protected[i].kind != WARD_PROTECT_MISSING &&
		    strcmp(p->protected[i].path, path) == 0)
			return true;
	return false;
}

static void init_ids(struct priv *pv)
{
	char map[64];
	bool userns;

	pv->uid = geteuid();
	pv->gid = getegid();
	pv->n_groups = getgroups(ELEMENTSOF(pv->groups), pv->groups);
	if (pv->n_groups < 0)
		pv->n_groups = 0;
	pv->overflow_uid = (uid_t)ward__read_proc_long("/proc/sys/kernel/overflowuid", 65534);
	pv->overflow_gid = (gid_t)ward__read_proc_long("/proc/sys/kernel/overflowgid", 65534);
	ward__read_small("/proc/self/uid_map", map, sizeof(map));
	/* The initial namespace maps everything: "0 0 4294967295". */
	userns = !strstr(map, "4294967295");
	/*
	 * Inside our user namespace an unmapped owner shows as the overflow id:
	 * if that is also our own id, a file may be ours or anyone's.
	 */
	pv->ids_ambiguous = userns && (pv->uid == pv->overflow_uid || pv->gid == pv->overflow_gid);
}

enum perm {
	PERM_WRITE, /* write to the inode (an existing file) */
	PERM_DIR, /* add or remove an entry: write and search on the directory */
	PERM_OWNER, /* change attributes: be the owner */
};

/*
 * Would the host's own permission checks let the command do this, sandbox or
 * not? When they would not, the failure is the command's own (an unprivileged
 * user writing /etc/passwd) and is not a denial of the sandbox. ward run as
 * root passes them (root outside has CAP_DAC_OVERRIDE); ACLs are not read
 * (their mask can only narrow group permissions; a refusal they add is
 * reported). Where ids are ambiguous (only for attribute changes, or
 * without faccessat2) the stricter reading is taken.
 */
static bool host_permits(const struct priv *pv, int fd, enum perm perm)
{
	struct stat st;
	unsigned need = perm == PERM_DIR ? 3 : 2, owner_bits, group_bits, other_bits;
	bool owner, group = false;

	if (pv->uid == 0 || fd < 0)
		return true;
	if (perm != PERM_OWNER) {
		/*
		 * The kernel's own answer: access(2) without AT_EACCESS checks with
		 * the real ids and, for a non-root uid, without capabilities (as the
		 * command), and reports the permission bits (EACCES) before our
		 * read-only mount (EROFS). Unlike the bits we can stat, it sees the
		 * real owner of files whose owner is not mapped in our namespace.
		 */
		long r = syscall(SYS_faccessat2, fd, "", perm == PERM_DIR ? W_OK | X_OK : W_OK,
				 AT_EMPTY_PATH);

		if (r == 0 || errno == EROFS)
			return true;
		if (errno == EACCES)
			return false;
		/* No faccessat2 (Linux < 5.8): the permission bits below. */
	}
	if (fstat(fd, &st) < 0)
		return true;
	owner = st.st_uid == pv->uid;
	if (owner && pv->ids_ambiguous && st.st_uid == pv->overflow_uid)
		owner = false;
	if (perm == PERM_OWNER)
		return owner;
	if (!owner) {
		group = st.st_gid == pv->gid;
		for (int i = 0; !group && i < pv->n_groups; i++)
			group = st.st_gid == pv->groups[i];
		if (group && pv->ids_ambiguous && st.st_gid == pv->overflow_gid)
			group = false;
	}
	owner_bits = (st.st_mode >> 6) & 7;
	group_bits = (st.st_mode >> 3) & 7;
	other_bits = st.st_mode & 7;
	if (owner)
		return (owner_bits & need) == need;
	if (group)
		return (group_bits & need) == need;
	return (other_bits & need) == need;
}

/*
 * Predicts the sandbox's refusal of a write to path: the errno the command
 * gets, or 0 when the sandbox does not stand in the way. ro: the relevant
 * mount is read-only; busy: the entry is a mount point; landlock: Landlock
 * (ABI >= 1) governs this operation.
 *
 * /dev and /proc are ward's own (a tmpfs, a fresh procfs) and writable as
 * far as the sandbox is concerned; their failures are never reported. A
 * protected path that does not exist yet is not refused by the kernel (the
 * guard in spawn.c handles its creation), so it is not predicted here.
 */
static int predict_write(const struct ward__supervisor *s, const struct priv *pv, const char *path,
			 bool ro, bool busy, bool landlock, int perm_fd, enum perm perm)
{
	const struct ward__protected *prot;
	bool outside;

	if (ward__path_under(path, "/dev") || ward__path_under(path, "/proc"))
		return 0;
	/* Refused by the host's own permissions anyway: not the sandbox's doing. */
	if (!host_permits(pv, perm_fd, perm))
		return 0;
	prot = ward__policy_protected_for(s->policy, path);
	outside = !prot && !ward__policy_path_writable(s->policy, path);
	/* Our mount view is read-only outside the roots and on protected paths (checked first). */
	if (ro)
		return outside || (prot && prot->kind == WARD_PROTECT_READONLY) ? EROFS : 0;
	/* A protected path is a mount point: renaming or removing it fails with EBUSY. */
	if (busy)
		return protected_mount(s->policy, path) ? EBUSY : 0;
	/* Without a mount namespace, Landlock refuses writes outside the roots. */
	if (landlock && pv->landlock_abi > 0 && outside)
		return EACCES;
	return 0;
}

/* The kind of access an operation needs, as reported. */
static const char *op_access(enum fs_op op, int flags)
{
	switch (op) {
	case FS_CREATE:
	case FS_LINK:
		return "create";
	case FS_DELETE:
		return "delete";
	case FS_RENAME:
		return "rename";
	case FS_OPEN:
	case FS_OPENAT2:
		if (!(flags & (O_ACCMODE | O_CREAT | O_TRUNC)))
			return "read";
		return "write";
	case FS_CREAT:
	case FS_TRUNCATE:
	case FS_SETATTR:
		return "write";
	}
	return "write";
}

static void fs_report(struct ward__supervisor *s, const char *access, int nr, int error,
		      int32_t pid, const char *path)
{
	if (error > 0)
		report_denial(s, access, nr, error, pid, path);
}

/* open/openat/openat2/creat: what the flags ask for decides what can be refused. */
static void observe_open(struct ward__supervisor *s, int nr, int32_t pid, const struct resolved *r,
			 int flags)
{
	struct priv *pv = s->priv;
	int acc = flags & O_ACCMODE;
	/* O_PATH ignores the access and creation flags. */
	bool write = !(flags & O_PATH) && (acc != O_RDONLY || (flags & O_TRUNC));
	bool creat = !(flags & O_PATH) && (flags & O_CREAT);
	bool tmpfile = (flags & __O_TMPFILE) == __O_TMPFILE;
	int err;

	if (denied_read(s, pv, pv->lex, r->obj, flags & O_PATH)) {
		fs_report(s, write || creat ? "write" : "read", nr, EACCES, pid, pv->lex);
		return;
	}
	if (!write && !creat)
		return;
	if (tmpfile) {
		/* An unnamed file in the directory named by the path. */
		if (r->obj < 0 || !S_ISDIR(r->st.st_mode) ||
		    fd_path(r->obj, pv->canon, sizeof(pv->canon)) < 0)
			return;
		err = predict_write(s, pv, pv->canon, fd_readonly(r->obj), false, true, r->obj,
				    PERM_DIR);
		fs_report(s, "create", nr, err, pid, pv->canon);
		return;
	}
	if (r->obj >= 0) {
		/* EEXIST, EISDIR, and devices/fifos (writable on read-only mounts) are not ours. */
		if ((creat && (flags & O_EXCL)) || !write || !S_ISREG(r->st.st_mode))
			return;
		if (fd_path(r->obj, pv->canon, sizeof(pv->canon)) < 0)
			return;
		err = predict_write(s, pv, pv->canon, fd_readonly(r->obj), false, true, r->obj,
				    PERM_WRITE);
		fs_report(s, "write", nr, err, pid, pv->canon);
		return;
	}
	/* Missing: ENOENT unless created. */
	if (!creat || entry_path(r, pv->canon, sizeof(pv->canon)) < 0)
		return;
	err = predict_write(s, pv, pv->canon, fd_readonly(r->parent), false, true, r->parent,
			    PERM_DIR);
	fs_report(s, "create", nr, err, pid, pv->canon);
}

static void observe_fs(struct ward__supervisor *s, const struct seccomp_notif *req,
		       const struct fs_call *c)
{
	struct priv *pv = s->priv;
	pid_t pid = (pid_t)req->pid;
	int nr = req->data.nr;
	struct resolved a = {.parent = -1, .obj = -1}, b = {.parent = -1, .obj = -1};
	int dirfd = c->dirfd_arg >= 0 ? (int)req->data.args[c->dirfd_arg] : AT_FDCWD;
	int flags = 0;
	bool follow = !c->nofollow;
	int err = 0;

	if (read_str(pid, req->data.args[c->path_arg], pv->str[0], sizeof(pv->str[0])) < 0)
		return;
	if (c->path2_arg >= 0 &&
	    read_str(pid, req->data.args[c->path2_arg], pv->str[1], sizeof(pv->str[1])) < 0)
		return;
	if (c->op == FS_OPENAT2) {
		uint64_t how_flags;

		/* struct open_how starts with the u64 flags; the size argument is at least 24. */
		if (req->data.args[3] < 24 || read_mem(pid, req->data.args[2], &how_flags, 8) < 0)
			return;
		flags = (int)(uint32_t)how_flags;
	} else if (c->op == FS_CREAT) {
		flags = O_CREAT | O_WRONLY | O_TRUNC;
	} else if (c->flags_arg >= 0) {
		flags = (int)(uint32_t)req->data.args[c->flags_arg];
	}
	if (c->op == FS_OPEN || c->op == FS_OPENAT2 || c->op == FS_CREAT) {
		/* O_CREAT|O_EXCL does not follow a final symlink (EEXIST instead). */
		follow =
			!(flags & O_NOFOLLOW) && (flags & (O_CREAT | O_EXCL)) != (O_CREAT | O_EXCL);
	} else if (c->flags_arg >= 0 && (flags & AT_SYMLINK_NOFOLLOW)) {
		follow = false;
	}
	/* Entries (create, delete, rename, link) are never followed. */
	if (c->op == FS_CREATE || c->op == FS_DELETE || c->op == FS_RENAME || c->op == FS_LINK)
		follow = false;

	if (c->op == FS_LINK) {
		/* Only the new name is created; the old one is read. */
		memmove(pv->str[0], pv->str[1], sizeof(pv->str[0]));
		dirfd = c->dirfd2_arg >= 0 ? (int)req->data.args[c->dirfd2_arg] : AT_FDCWD;
	}
	err = resolve(pv, req->id, pid, dirfd, pv->str[0], follow, &a);
	if (err == -ESRCH)
		return;
	if (err < 0) {
		/* The command's call fails on its own, unless it ran into a deny-read mask. */
		if (pv->lex[0] == '/' && denied_read(s, pv, pv->lex, -1, false))
			fs_report(s, op_access(c->op, flags), nr, EACCES, pid, pv->lex);
		return;
	}

	switch (c->op) {
	case FS_OPEN:
	case FS_OPENAT2:
	case FS_CREAT:
		observe_open(s, nr, pid, &a, flags);
		break;
	case FS_CREATE:
	case FS_LINK:
		if (denied_read(s, pv, pv->lex, -1, false)) {
			fs_report(s, "create", nr, EACCES, pid, pv->lex);
			break;
		}
		/* EEXIST wins over EROFS for a name that exists. */
		if (a.obj >= 0 || entry_path(&a, pv->canon, sizeof(pv->canon)) < 0)
			break;
		err = predict_write(s, pv, pv->canon, fd_readonly(a.parent), false, true, a.parent,
				    PERM_DIR);
		fs_report(s, "create", nr, err, pid, pv->canon);
		break;
	case FS_DELETE:
		if (denied_read(s, pv, pv->lex, -1, false)) {
			fs_report(s, "delete", nr, EACCES, pid, pv->lex);
			break;
		}
		if (entry_path(&a, pv->canon, sizeof(pv->canon)) < 0)
			break;
		if (a.obj < 0) {
			/* The kernel checks the mount before the lookup: EROFS even for a missing name. */
			err = predict_write(s, pv, pv->canon, fd_readonly(a.parent), false, false,
					    a.parent, PERM_DIR);
			fs_report(s, "delete", nr, err == EROFS ? err : 0, pid, pv->canon);
			break;
		}
		err = predict_write(s, pv, pv->canon, fd_readonly(a.parent), fd_mount_root(a.obj),
				    true, a.parent, PERM_DIR);
		fs_report(s, "delete", nr, err, pid, pv->canon);
		break;
	case FS_RENAME: {
		struct stat pa, pb;

		if (denied_read(s, pv, pv->lex, -1, false)) {
			fs_report(s, "rename", nr, EACCES, pid, pv->lex);
			break;
		}
		err = resolve(pv, req->id, pid,
			      c->dirfd2_arg >= 0 ? (int)req->data.args[c->dirfd2_arg] : AT_FDCWD,
			      pv->str[1], false, &b);
		if (err < 0)
			break;
		if (denied_read(s, pv, pv->lex, -1, false)) {
			fs_report(s, "rename", nr, EACCES, pid, pv->lex);
			break;
		}
		/* Across mounts the kernel answers EXDEV first; not a refusal of the policy. */
		if (fstat(a.parent, &pa) < 0 || fstat(b.parent, &pb) < 0 ||
		    pa.st_dev != pb.st_dev || fd_mnt_id(a.parent) != fd_mnt_id(b.parent))
			break;
		if (entry_path(&a, pv->canon, sizeof(pv->canon)) < 0)
			break;
		err = predict_write(s, pv, pv->canon, fd_readonly(a.parent),
				    a.obj >= 0 && fd_mount_root(a.obj), true, a.parent, PERM_DIR);
		if (a.obj < 0 && err != EROFS)
			break;
		if (err == 0 && entry_path(&b, pv->canon, sizeof(pv->canon)) == 0)
			err = predict_write(s, pv, pv->canon, fd_readonly(b.parent),
					    b.obj >= 0 && fd_mount_root(b.obj), true, b.parent,
					    PERM_DIR);
		fs_report(s, "rename", nr, err, pid, pv->canon);
		break;
	}
	case FS_TRUNCATE:
	case FS_SETATTR:
		if (denied_read(s, pv, pv->lex, a.obj, false)) {
			fs_report(s, "write", nr, EACCES, pid, pv->lex);
			break;
		}
		if (a.obj < 0 || fd_path(a.obj, pv->canon, sizeof(pv->canon)) < 0)
			break;
		if (c->op == FS_TRUNCATE && !S_ISREG(a.st.st_mode))
			break;
		/* Landlock governs truncate() from ABI 3; attribute changes never. */
		err = predict_write(s, pv, pv->canon, fd_readonly(a.obj), false,
				    c->op == FS_TRUNCATE && pv->landlock_abi >= 3, a.obj,
				    c->op == FS_TRUNCATE ? PERM_WRITE : PERM_OWNER);
		fs_report(s, "write", nr, err, pid, pv->canon);
		break;
	}
	resolved_release(&a);
	resolved_release(&b);
}

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
	struct priv *pv = s->priv;
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
	respond(pv, req->id, -error, 0);
	report_denial(s, access, req->data.nr, error, (int32_t)req->pid, target);
}

/*
 * sendto() with an address, in a private network namespace with the network
 * off: a destination outside loopback is unreachable there (ENETUNREACH), the
 * sandbox's doing, so it is reported. The kernel decides (CONTINUE).
 */
static void handle_sendto(struct ward__supervisor *s, const struct seccomp_notif *req)
{
	struct priv *pv = s->priv;
	struct sockaddr_storage ss;
	int64_t len = (int64_t)req->data.args[5];
	char target[INET6_ADDRSTRLEN + 16];

	memset(&ss, 0, sizeof(ss));
	if (s->netns && len > 0 && (size_t)len <= sizeof(ss) &&
	    read_mem((pid_t)req->pid, req->data.args[4], &ss, (size_t)len) == 0 &&
	    id_valid(pv, req->id) && (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) &&
	    !inet_loopback(&ss, (socklen_t)len)) {
		inet_target(&ss, (socklen_t)len, target, sizeof(target));
		report_denial(s, "sendto", req->data.nr, ENETUNREACH, (int32_t)req->pid, target);
	}
	respond(pv, req->id, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
}

/* ------------------------------------------------------------------ the loop */

static void handle_one(struct ward__supervisor *s, const struct seccomp_notif *req)
{
	struct priv *pv = s->priv;
	struct fs_call c;

	if (req->data.nr == SYS_connect) {
		handle_connect(s, req);
		return;
	}
	if (req->data.nr == SYS_sendto) {
		handle_sendto(s, req);
		return;
	}
	if (fs_call_for(req->data.nr, &c)) {
		observe_fs(s, req, &c);
		/* Observation only: the kernel decides, so continuing grants nothing. */
		respond(pv, req->id, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
		return;
	}
	/* Everything else the filter sends here is a refusal to report (and never allowed). */
	handle_refusal(s, req);
}

static int handle_notifications(struct ward__supervisor *s)
{
	struct priv *pv = s->priv;

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
	struct priv *pv = s->priv;
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
			pending_tick(s);
		} else if (tag >= TAG_PENDING && tag < TAG_PENDING + MAX_PENDING) {
			pending_complete(s, (unsigned)(tag - TAG_PENDING));
		}
	}
	return r;
}

int ward__supervisor_init(struct ward__supervisor *s, int listener_fd, int report_fd,
			  const struct ward_policy *p, bool netns)
{
	struct seccomp_notif_sizes sizes = {0};
	struct epoll_event ev = {.events = EPOLLIN};
	struct priv *pv;
	size_t size;
	long abi;
	int r;

	*s = (struct ward__supervisor){
		.listener_fd = -1, .report_fd = report_fd, .policy = p, .netns = netns};
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0) {
		r = -errno;
		goto fail;
	}
	/* The kernel's structures may be larger than ours (newer fields); never smaller. */
	sizes.seccomp_notif = MAX(sizes.seccomp_notif, (uint16_t)sizeof(struct seccomp_notif));
	sizes.seccomp_notif_resp =
		MAX(sizes.seccomp_notif_resp, (uint16_t)sizeof(struct seccomp_notif_resp));
	size = sizeof(struct priv) + sizes.seccomp_notif + 16 + sizes.seccomp_notif_resp + 16;
	/* An anonymous mapping, not malloc(): see the top of the file. */
	pv = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pv == MAP_FAILED) {
		r = -errno;
		goto fail;
	}
	pv->map_size = size;
	pv->sizes = sizes;
	pv->req = (struct seccomp_notif *)((char *)pv + ((sizeof(struct priv) + 15) & ~(size_t)15));
	pv->resp = (struct seccomp_notif_resp *)((char *)pv->req +
						 ((sizes.seccomp_notif + 15) & ~(size_t)15));
	pv->notify_fd = listener_fd;
	pv->epoll_fd = -1;
	pv->timer_fd = -1;
	memset(pv->mask_state, -1, sizeof(pv->mask_state));
	abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
		      1U /* LANDLOCK_CREATE_RULESET_VERSION */);
	pv->landlock_abi = abi > 0 ? (int)abi : 0;
	init_ids(pv);
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
	struct priv *pv;

	if (!s || !s->priv)
		return;
	pv = s->priv;
	for (unsigned i = 0; i < MAX_PENDING; i++)
		if (pv->pending[i].used) {
			/* The command is still waiting: tell it the connect did not happen. */
			respond(pv, pv->pending[i].c.id, -ECONNABORTED, 0);
			pending_drop(pv, i);
		}
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
