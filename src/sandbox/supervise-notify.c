/* SPDX-License-Identifier: MIT */
/*
 * The seccomp supervisor's plumbing (see supervise.c): the reports it sends,
 * and reading and answering the command's notifications (its memory, its
 * descriptors, its directories). Only syscalls, no malloc().
 */
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "basic/util.h"
#include "sandbox/supervise-notify.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

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

void ward__supervisor_copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

void ward__supervisor_report_denial(struct ward__supervisor *s, const char *access, int nr,
				    int error, int32_t pid, const char *target)
{
	struct ward__supervisor_priv *pv = s->priv;
	struct ward__msg_denial *m = &pv->msg;
	const char *name = ward__seccomp_syscall_name(nr);

	memset(m, 0, sizeof(*m));
	ward__supervisor_copy_str(m->access, sizeof(m->access), access);
	if (name)
		ward__supervisor_copy_str(m->syscall, sizeof(m->syscall), name);
	else
		snprintf(m->syscall, sizeof(m->syscall), "syscall %d", nr);
	m->error = error;
	m->pid = pid;
	ward__supervisor_copy_str(m->target, sizeof(m->target), target);

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

/*
 * Whether /proc counts in another pid namespace than ours: in a container
 * that masks parts of its /proc the sandbox keeps the container's (mounts.c),
 * and a pid from a notification (ours, the sandbox's) names another process
 * there. Asked once per process (init): /proc/self names us in /proc's
 * namespace.
 */
static bool proc_is_foreign(void)
{
	static pid_t asked_by;
	static bool foreign;
	pid_t self = getpid();

	if (asked_by != self) {
		char buf[32];
		ssize_t n = readlink("/proc/self", buf, sizeof(buf) - 1);

		buf[n > 0 ? n : 0] = '\0';
		foreign = n <= 0 || strtol(buf, NULL, 10) != (long)self;
		asked_by = self;
	}
	return foreign;
}

/* The thread group of thread tid, by asking the kernel which group it belongs to (tgkill, signal 0). */
static pid_t thread_group_of(pid_t tid)
{
	/*
	 * A thread's id is given after its group leader's, so the leader is
	 * searched below it; a sandbox's own pid namespace rarely wraps, and the
	 * search is bounded.
	 */
	for (pid_t t = tid - 1; t > 0 && t >= tid - 4096; t--)
		if (syscall(SYS_tgkill, t, tid, 0) == 0)
			return t;
	return -ESRCH;
}

/*
 * The number /proc gives a process of the sandbox, from its pid here: the
 * same with the sandbox's own /proc; with the container's, the number a
 * pidfd's fdinfo shows (in the pid namespace of the /proc it is read
 * through). A thread that cannot have a pidfd of its own (before Linux 6.9)
 * is found through its thread group, whose memory, descriptors and working
 * directory it shares. The caller checks the notification is still valid
 * after using the number (the process may have died and the number been
 * reused meanwhile). -errno on failure.
 */
static pid_t proc_pid(pid_t pid)
{
	char path[64], buf[512];
	const char *t;
	long fd;
	ssize_t n;
	int ifd;

	if (!proc_is_foreign())
		return pid;
	fd = syscall(SYS_pidfd_open, pid, PIDFD_THREAD);
	if (fd < 0 && errno == EINVAL)
		fd = syscall(SYS_pidfd_open, pid, 0);
	/* Not a thread-group leader: EINVAL before Linux 6.9, ENOENT since. */
	if (fd < 0 && (errno == EINVAL || errno == ENOENT)) {
		pid_t group = thread_group_of(pid);

		if (group < 0)
			return group;
		fd = syscall(SYS_pidfd_open, group, 0);
	}
	if (fd < 0)
		return -errno;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", (int)fd);
	/* fdinfo is made when read: the pidfd stays open until then. */
	ifd = open(path, O_RDONLY | O_CLOEXEC);
	n = ifd >= 0 ? read(ifd, buf, sizeof(buf) - 1) : -1;
	if (ifd >= 0)
		close(ifd);
	close((int)fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	t = strstr(buf, "\nPid:");
	if (!t || strtol(t + 5, NULL, 10) <= 0)
		return -ESRCH;
	return (pid_t)strtol(t + 5, NULL, 10);
}

bool ward__notif_id_valid(struct ward__supervisor_priv *pv, uint64_t id)
{
	return ioctl(pv->notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

void ward__notif_respond(struct ward__supervisor_priv *pv, uint64_t id, int error, uint32_t flags)
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
int ward__notif_read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
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
	pid = proc_pid(pid);
	if (pid < 0)
		return pid;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len, (off_t)addr);
	close(fd);
	return n == (ssize_t)len ? 0 : -EFAULT;
}

/* Reads a NUL-terminated string, page by page so an unmapped page after it does not fail. */
int ward__notif_read_str(pid_t pid, uint64_t addr, char *buf, size_t size)
{
	size_t off = 0;

	if (addr == 0)
		return -EFAULT;
	while (off < size) {
		size_t chunk = 4096 - ((addr + off) & 4095);
		int r;

		chunk = MIN(chunk, size - off);
		r = ward__notif_read_mem(pid, addr + off, buf + off, chunk);
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
	if (fd >= 0 || (errno != EINVAL && errno != ENOENT))
		return fd >= 0 ? (int)fd : -errno;
	/* Not a thread-group leader without PIDFD_THREAD: its fd table is the group's. */
	if (proc_is_foreign()) {
		pid_t group = thread_group_of(pid);

		if (group < 0)
			return group;
		fd = syscall(SYS_pidfd_open, group, 0);
		return fd >= 0 ? (int)fd : -errno;
	}
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
int ward__notif_target_fd(struct ward__supervisor_priv *pv, uint64_t id, pid_t pid, int fd)
{
	int pidfd = target_pidfd(pid);
	long r;

	if (pidfd < 0)
		return ward__notif_id_valid(pv, id) ? pidfd : -ESRCH;
	/* The pid named the command when the pidfd was made only if the call is still waiting. */
	if (!ward__notif_id_valid(pv, id)) {
		close(pidfd);
		return -ESRCH;
	}
	r = syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	close(pidfd);
	return r >= 0 ? (int)r : -errno;
}

/* Opens /proc/PID/cwd or /proc/PID/fd/N as the base of a relative path (O_PATH). */
int ward__notif_target_dir(pid_t pid, int dirfd)
{
	char path[64];
	int fd;

	pid = proc_pid(pid);
	if (pid < 0)
		return pid;
	if (dirfd == AT_FDCWD)
		snprintf(path, sizeof(path), "/proc/%d/cwd", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, dirfd);
	fd = open(path, O_PATH | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

/* The path of one of our fds, through /proc/self/fd. */
int ward__notif_fd_path(int fd, char *buf, size_t size)
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
