/* SPDX-License-Identifier: MIT */
/*
 * The seccomp filter and its supervisor, observed from inside: each test
 * loads the filter in a process and asserts what the syscalls returned, or
 * runs a filtered child while the test process plays the sandbox's init and
 * answers its notifications. Works unprivileged (no_new_privs is set before
 * every load); the network-namespace tests create a user namespace of their
 * own and skip where the host refuses one.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/io_uring.h>
#include <linux/landlock.h>
#include <linux/sched.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "tap.h"

#include "basic/util.h"
#include "sandbox/sandbox.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

/* ------------------------------------------------------------------ helpers */

static void load(const struct ward__seccomp_opts *o, int *ret_listener)
{
	struct ward__seccomp_prog prog = {0};
	struct ward_error err = {0};
	int listener = -1;

	ASSERT_OK(ward__seccomp_build(o, &prog, &err));
	ASSERT_TRUE(prog.insns != NULL);
	ASSERT_TRUE(prog.len > 0);
	ASSERT_EQ(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	ASSERT_OK(ward__seccomp_load(&prog, &listener));
	ASSERT_EQ(prog.has_notify, listener >= 0);
	ward__seccomp_prog_release(&prog);
	if (ret_listener)
		*ret_listener = listener;
	else if (listener >= 0)
		close(listener);
}

/* snprintf() into an array, failing the test on truncation. */
#define FMT(buf, ...) ASSERT_TRUE(snprintf((buf), sizeof(buf), __VA_ARGS__) < (int)sizeof(buf))

/* errno of a raw syscall that is expected to fail, or 0 if it succeeded. */
#define SYS_ERRNO(...) (syscall(__VA_ARGS__) < 0 ? errno : 0)

static void send_fd(int sock, int fd)
{
	char c = 'f';
	struct iovec iov = {.iov_base = &c, .iov_len = 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u = {0};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	if (sendmsg(sock, &mh, 0) != 1)
		_exit(101);
}

static int recv_fd(int sock)
{
	char c;
	struct iovec iov = {.iov_base = &c, .iov_len = 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u = {0};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *cm;
	int fd = -1;

	if (recvmsg(sock, &mh, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

static char tmpdir[64];

static void make_tmpdir(void)
{
	FMT(tmpdir, "/tmp/ward-seccomp-XXXXXX");
	ASSERT_TRUE(mkdtemp(tmpdir) != NULL);
}

/* Removes what the tests made under tmpdir (one level of files and directories). */
static void remove_tmpdir(void)
{
	char cmd[128];
	pid_t pid;

	if (!tmpdir[0])
		return;
	FMT(cmd, "%s", tmpdir);
	pid = fork();
	if (pid == 0) {
		execl("/bin/rm", "rm", "-rf", "--", cmd, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static void path_in(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", tmpdir, name);
}

static int unix_listener(const char *path, int backlog)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ASSERT_TRUE(fd >= 0);
	FMT(sun.sun_path, "%s", path);
	ASSERT_EQ(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	ASSERT_EQ(listen(fd, backlog), 0);
	return fd;
}

/* Returns 0 or the errno of connect() on a new stream socket (closed again unless ret_fd). */
static int unix_connect(const char *path, int *ret_fd)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int r;

	if (fd < 0)
		return errno;
	FMT(sun.sun_path, "%s", path);
	r = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ? errno : 0;
	if (ret_fd && r == 0)
		*ret_fd = fd;
	else
		close(fd);
	return r;
}

/* Accepts without waiting: the fd, or -errno (-EAGAIN: nobody connected). */
static int accept_now(int listener)
{
	struct pollfd pfd = {.fd = listener, .events = POLLIN};
	int fd;

	if (poll(&pfd, 1, 0) == 0)
		return -EAGAIN;
	fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

/* What the filtered child observed, in memory shared with the test. */
struct shared {
	int r[32];
	char s[32][64];
};

static struct shared *shared_new(void)
{
	void *p = mmap(NULL, sizeof(struct shared), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	ASSERT_TRUE(p != MAP_FAILED);
	memset(p, 0xff, sizeof(struct shared));
	return p;
}

typedef void (*cmd_fn)(struct shared *sh, void *arg);
typedef void (*tick_fn)(void *arg, uint64_t elapsed_ms);

struct run {
	struct ward__msg_denial denials[32];
	unsigned n_denials; /* kept, at most 32 */
	unsigned total; /* received */
	uint32_t dropped;
	int status;
};

static void drain_reports(int fd, struct run *run, char *buf, size_t *len, size_t cap)
{
	for (;;) {
		ssize_t n = read(fd, buf + *len, cap - *len);
		size_t off = 0;

		if (n <= 0)
			return;
		*len += (size_t)n;
		while (*len - off >= sizeof(struct ward__msg_hdr)) {
			struct ward__msg_hdr h;

			memcpy(&h, buf + off, sizeof(h));
			ASSERT_LE(h.len, PIPE_BUF);
			if (*len - off < sizeof(h) + h.len)
				break;
			if (h.type == WARD_MSG_DENIAL) {
				ASSERT_EQ(h.len, sizeof(struct ward__msg_denial));
				run->total++;
				if (run->n_denials < ELEMENTSOF(run->denials))
					memcpy(&run->denials[run->n_denials++],
					       buf + off + sizeof(h),
					       sizeof(struct ward__msg_denial));
			} else if (h.type == WARD_MSG_DENIALS_DROPPED) {
				ASSERT_EQ(h.len, sizeof(struct ward__msg_dropped));
				memcpy(&run->dropped, buf + off + sizeof(h), sizeof(run->dropped));
			}
			off += sizeof(h) + h.len;
		}
		memmove(buf, buf + off, *len - off);
		*len -= off;
	}
}

/*
 * Forks a child that loads the filter and runs fn; this process plays the
 * sandbox's init, answering the child's notifications until it exits.
 */
static void run_supervised(const struct ward__seccomp_opts *o, const struct ward_policy *p,
			   bool netns, cmd_fn fn, void *arg, tick_fn tick, struct shared *sh,
			   struct run *run)
{
	static char rbuf[4 * PIPE_BUF];
	struct ward__supervisor s;
	size_t rlen = 0;
	int sv[2], rep[2], listener;
	bool sup = true;
	uint64_t start = ward__now_ms();
	pid_t pid;

	memset(run, 0, sizeof(*run));
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	ASSERT_EQ(pipe2(rep, O_CLOEXEC), 0);
	ASSERT_OK(ward__fd_nonblock(rep[0], true));
	pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		close(rep[0]);
		load(o, &listener);
		if (listener < 0)
			_exit(100);
		send_fd(sv[1], listener);
		close(listener);
		close(sv[1]);
		fn(sh, arg);
		_exit(0);
	}
	close(sv[1]);
	listener = recv_fd(sv[0]);
	close(sv[0]);
	ASSERT_TRUE(listener >= 0);
	ASSERT_OK(ward__supervisor_init(&s, listener, rep[1], p, netns));

	for (;;) {
		struct pollfd pfd = {.fd = sup ? s.listener_fd : -1, .events = POLLIN};
		pid_t w;

		ASSERT_TRUE(ward__now_ms() - start < 20000);
		if (poll(&pfd, 1, 20) > 0 && (pfd.revents & POLLIN) &&
		    ward__supervisor_handle(&s) < 0)
			sup = false;
		drain_reports(rep[0], run, rbuf, &rlen, sizeof(rbuf));
		if (tick)
			tick(arg, ward__now_ms() - start);
		w = waitpid(pid, &run->status, WNOHANG);
		ASSERT_TRUE(w >= 0);
		if (w == pid)
			break;
	}
	ward__supervisor_release(&s);
	ASSERT_EQ(s.listener_fd, -1);
	close(rep[1]);
	drain_reports(rep[0], run, rbuf, &rlen, sizeof(rbuf));
	close(rep[0]);
	ASSERT_EQ(rlen, 0);
	ASSERT_TRUE(WIFEXITED(run->status));
	ASSERT_EQ(WEXITSTATUS(run->status), 0);
}

/* A policy with one writable root and the given allow-listed sockets, network off. */
static struct ward_policy *policy_new_deny(const char *root, const char *const *sockets, size_t n,
					   const char *deny)
{
	struct ward_policy *p = NULL;
	struct ward_error err = {0};

	ASSERT_OK(ward_policy_new(&p));
	if (deny)
		ASSERT_OK(ward_policy_add_deny_read(p, deny));
	ASSERT_OK(ward_policy_set_network(p, false));
	ASSERT_OK(ward_policy_set_exclude_slash_tmp(p, true));
	ASSERT_OK(ward_policy_set_exclude_tmpdir_env_var(p, true));
	ASSERT_OK(ward_policy_set_cwd(p, root));
	for (size_t i = 0; i < n; i++)
		ASSERT_OK(ward_policy_add_unix_socket(p, sockets[i]));
	if (ward_policy_resolve(p, &err) < 0)
		tap_fail(__FILE__, __LINE__, "resolve: %s", err.message);
	return p;
}

static struct ward_policy *policy_new(const char *root, const char *const *sockets, size_t n)
{
	return policy_new_deny(root, sockets, n, NULL);
}

/* ------------------------------------------------------------------ the filter */

TEST(syscall_names)
{
	ASSERT_STREQ(ward__seccomp_syscall_name(SYS_connect), "connect");
	ASSERT_STREQ(ward__seccomp_syscall_name(SYS_openat), "openat");
	/* Cached: the same static pointer, no second allocation. */
	ASSERT_TRUE(ward__seccomp_syscall_name(SYS_connect) ==
		    ward__seccomp_syscall_name(SYS_connect));
	ASSERT_TRUE(ward__seccomp_syscall_name(-1) == NULL);
	ASSERT_TRUE(ward__seccomp_syscall_name(100000) == NULL);
}

TEST(namespaces_and_mounts_refused)
{
	struct ward__seccomp_opts o = {0};
	struct clone_args ca = {.exit_signal = SIGCHLD};

	load(&o, NULL);
	ASSERT_EQ(SYS_ERRNO(SYS_unshare, CLONE_NEWUSER), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_unshare, CLONE_NEWNS), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_setns, 0, 0), EPERM);
	/* clone3 hides its flags in memory: ENOSYS sends libc back to clone(). */
	ASSERT_EQ(SYS_ERRNO(SYS_clone3, &ca, sizeof(ca)), ENOSYS);
	/* clone() with a namespace flag, also with high bits set around it. */
	ASSERT_EQ(SYS_ERRNO(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_clone, (long)(CLONE_NEWNET | SIGCHLD) | (1L << 40), 0, 0, 0, 0),
		  EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_clone, CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_mount, "none", "/", "tmpfs", 0, NULL), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_umount2, "/", 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_open_tree, AT_FDCWD, "/", 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_fsopen, "tmpfs", 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_pivot_root, "/", "/"), EPERM);
}

static void *thread_main(void *arg)
{
	*(int *)arg = 42;
	return NULL;
}

TEST(fork_and_threads_still_work)
{
	pthread_t t;
	int value = 0;
	struct ward__seccomp_opts o = {.network_off = true, .netns = true};
	int status = 0;
	pid_t pid;

	load(&o, NULL);
	pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0)
		_exit(7);
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 7);
	/* A thread-style clone (no namespace flag) is allowed. */
	pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	ASSERT_TRUE(pid >= 0);
	if (pid == 0)
		_exit(8);
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_EQ(WEXITSTATUS(status), 8);
	/* glibc tries clone3 first and falls back to clone on ENOSYS. */
	ASSERT_EQ(pthread_create(&t, NULL, thread_main, &value), 0);
	ASSERT_EQ(pthread_join(t, NULL), 0);
	ASSERT_EQ(value, 42);
}

TEST(tracing_and_kernel_surface_refused)
{
	struct ward__seccomp_opts o = {0};
	struct io_uring_params params = {0};
	char buf[8];
	struct iovec local = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct iovec remote = {.iov_base = buf, .iov_len = sizeof(buf)};

	load(&o, NULL);
	ASSERT_EQ(SYS_ERRNO(SYS_io_uring_setup, 1, &params), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_io_uring_enter, 0, 0, 0, 0, NULL, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_process_vm_readv, getppid(), &local, 1, &remote, 1, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_process_vm_writev, getppid(), &local, 1, &remote, 1, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_pidfd_getfd, 0, 0, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_keyctl, 0, 0, 0, 0, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_add_key, "user", "k", "v", 1, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_bpf, 0, NULL, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_perf_event_open, NULL, 0, -1, -1, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_userfaultfd, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_open_by_handle_at, AT_FDCWD, NULL, 0), EPERM);
}

/* A listener of the command's own could answer its own refused syscalls: refused. */
TEST(own_seccomp_listener_refused)
{
	struct ward__seccomp_opts o = {0};
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = {.len = 1, .filter = &allow};

	load(&o, NULL);
	ASSERT_EQ(SYS_ERRNO(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
			    &prog),
		  EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			    SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_TSYNC, &prog),
		  EPERM);
	/* A filter that only narrows stays allowed. */
	ASSERT_EQ(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog), 0);
}

TEST(terminal_injection_refused)
{
	struct ward__seccomp_opts o = {0};
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	char c = 'x';

	ASSERT_TRUE(fd >= 0);
	/* Without the filter /dev/null answers ENOTTY; with it the request never gets there. */
	ASSERT_EQ(SYS_ERRNO(SYS_ioctl, fd, TIOCGWINSZ, &c), ENOTTY);
	load(&o, NULL);
	ASSERT_EQ(SYS_ERRNO(SYS_ioctl, fd, TIOCSTI, &c), EPERM);
	/* The kernel reads the request as 32 bits: high bits must not slip past the filter. */
	ASSERT_EQ(SYS_ERRNO(SYS_ioctl, fd, (unsigned long)TIOCSTI | (1UL << 32), &c), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_ioctl, fd, (unsigned long)TIOCSTI | 0xffffffff00000000UL, &c),
		  EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_ioctl, fd, (unsigned long)TIOCLINUX | (1UL << 33), &c), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_ioctl, fd, TIOCGWINSZ, &c), ENOTTY);
	close(fd);
}

TEST(personality_limited)
{
	struct ward__seccomp_opts o = {0};
	long cur = syscall(SYS_personality, 0xffffffffUL);

	ASSERT_TRUE(cur >= 0);
	load(&o, NULL);
	ASSERT_EQ(syscall(SYS_personality, 0xffffffffUL), cur);
	ASSERT_EQ(SYS_ERRNO(SYS_personality, (unsigned long)PER_LINUX), 0);
	ASSERT_EQ(SYS_ERRNO(SYS_personality, (unsigned long)(PER_LINUX | ADDR_NO_RANDOMIZE)), 0);
	ASSERT_EQ(SYS_ERRNO(SYS_personality, (unsigned long)READ_IMPLIES_EXEC), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_personality, (unsigned long)MMAP_PAGE_ZERO), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_personality, (unsigned long)PER_LINUX32), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_personality, 0x80000000UL), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_personality, 0xfffffffeUL), EPERM);
	/* Truncated to 32 bits by the kernel, so judged on those. */
	ASSERT_EQ(SYS_ERRNO(SYS_personality, (1UL << 40) | READ_IMPLIES_EXEC), EPERM);
	/* The refused calls changed nothing. */
	ASSERT_EQ(syscall(SYS_personality, 0xffffffffUL), PER_LINUX | ADDR_NO_RANDOMIZE);
}

TEST(raw_and_packet_sockets_refused)
{
	struct ward__seccomp_opts o = {0};
	int sv[2];
	char c = 0;

	/*
	 * Out-of-range types/protocols make the kernel answer EINVAL before it
	 * checks CAP_NET_RAW, so EPERM proves the filter answered, as root or not.
	 */
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_PACKET, 12, 0), EINVAL);
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_INET, SOCK_RAW | SOCK_CLOEXEC, 300), EINVAL);
	load(&o, NULL);
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_PACKET, 12, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_PACKET, SOCK_RAW, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_socket, (long)AF_PACKET | (1L << 32), 12, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_INET, SOCK_RAW | SOCK_CLOEXEC, 300), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_INET6, SOCK_RAW | SOCK_NONBLOCK, 300), EPERM);
	/* Ordinary sockets keep working. */
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	ASSERT_EQ(write(sv[0], "k", 1), 1);
	ASSERT_EQ(read(sv[1], &c, 1), 1);
	ASSERT_EQ(c, 'k');
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), 0);
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0), 0);
	/* Datagram unix sockets are refused only when connect() is supervised. */
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), 0);
}

TEST(network_off_without_netns)
{
	struct ward__seccomp_opts o = {.network_off = true, .netns = false};

	load(&o, NULL);
	/* No namespace: the host's network would be the sandbox's, so IP sockets are refused. */
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_INET, SOCK_STREAM, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_socket, (long)AF_INET | (1L << 32), SOCK_DGRAM, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_VSOCK, SOCK_STREAM, 0), EPERM);
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), 0);
}

TEST(network_off_with_netns)
{
	struct ward__seccomp_opts o = {.network_off = true, .netns = true};

	load(&o, NULL);
	/* The namespace has only loopback: IP sockets stay usable for it. */
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), 0);
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0), 0);
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_VSOCK, SOCK_STREAM, 0), EPERM);
}

TEST(unix_datagram_refused_when_supervised)
{
	struct ward__seccomp_opts o = {
		.network_off = true, .netns = true, .supervise_connect = true};
	int listener = -1, sv[2];

	load(&o, &listener);
	ASSERT_TRUE(listener >= 0);
	/* sendto() on a datagram socket could name a host socket path; seccomp cannot see it. */
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), EACCES);
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_UNIX, SOCK_RAW, 0), EACCES);
	ASSERT_EQ(SYS_ERRNO(SYS_socketpair, AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, sv), EACCES);
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), 0);
	ASSERT_EQ(SYS_ERRNO(SYS_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), 0);
	ASSERT_EQ(SYS_ERRNO(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, sv), 0);
}

TEST(foreign_abi_kills)
{
#if defined(__x86_64__)
	struct ward__seccomp_opts o = {0};
	int status = 0;
	pid_t pid = fork();

	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		load(&o, NULL);
		/* x32 getpid: rules written for x86_64 numbers would not match it. */
		syscall(0x40000000 | SYS_getpid);
		_exit(0);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(WTERMSIG(status), SIGSYS);
#else
	SKIP("x32 exists only on x86_64");
#endif
}

/* ------------------------------------------------------------------ the connect supervisor */

struct net_case {
	char host[108]; /* bound outside, as a host socket would be */
	char inside[108]; /* bound inside the private netns (netns tests) */
	char link[108]; /* a symlink to host */
	int lfd;
	int tcp_port;
	int accepted_at_ms;
};

static void cmd_unix_host(struct shared *sh, void *arg)
{
	struct net_case *nc = arg;
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd;

	sh->r[0] = unix_connect(nc->host, NULL);
	sh->r[1] = unix_connect(nc->host, NULL); /* the same again: one report */
	sh->r[2] = unix_connect(nc->link, NULL);
	/* Relative to the working directory, as the kernel resolves it. */
	sh->r[3] = chdir(tmpdir) == 0 ? unix_connect("host.sock", NULL) : -1;
	/* Abstract addresses belong to the host's network namespace here. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memcpy(sun.sun_path, "\0ward-test-abstract", 19);
	sh->r[4] = connect(fd, (struct sockaddr *)&sun,
			   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 19)) < 0
		? errno
		: 0;
	close(fd);
	sh->r[5] = unix_connect(tmpdir, NULL); /* not a socket */
	path_in(sun.sun_path, sizeof(sun.sun_path), "missing.sock");
	sh->r[6] = unix_connect(sun.sun_path, NULL);
	/* Oversized and unreadable addresses fail like the kernel's. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sh->r[7] = SYS_ERRNO(SYS_connect, fd, &sun, 4096);
	sh->r[8] = SYS_ERRNO(SYS_connect, fd, (void *)8, sizeof(sun));
	sh->r[9] = SYS_ERRNO(SYS_connect, 999, &sun, sizeof(sun));
	close(fd);
}

TEST(host_unix_socket_refused)
{
	struct ward__seccomp_opts o = {.network_off = true, .supervise_connect = true};
	struct net_case nc = {0};
	struct shared *sh = shared_new();
	struct ward_policy *p;
	struct run run;
	char real[PATH_MAX];

	make_tmpdir();
	path_in(nc.host, sizeof(nc.host), "host.sock");
	path_in(nc.link, sizeof(nc.link), "link.sock");
	nc.lfd = unix_listener(nc.host, 16);
	ASSERT_EQ(symlink(nc.host, nc.link), 0);
	ASSERT_TRUE(realpath(nc.host, real) != NULL);
	p = policy_new(tmpdir, NULL, 0);

	/* Without a private netns, nothing tells sandbox sockets from the host's: all refused. */
	run_supervised(&o, p, false, cmd_unix_host, &nc, NULL, sh, &run);
	ASSERT_EQ(sh->r[0], EACCES);
	ASSERT_EQ(sh->r[1], EACCES);
	ASSERT_EQ(sh->r[2], EACCES);
	ASSERT_EQ(sh->r[3], EACCES);
	ASSERT_EQ(sh->r[4], EACCES);
	ASSERT_EQ(sh->r[5], ECONNREFUSED);
	ASSERT_EQ(sh->r[6], ENOENT);
	ASSERT_EQ(sh->r[7], EINVAL);
	ASSERT_EQ(sh->r[8], EFAULT);
	ASSERT_EQ(sh->r[9], EBADF);
	/* The listener saw nothing. */
	ASSERT_EQ(accept_now(nc.lfd), -EAGAIN);
	/* One report per refusal, the identical consecutive ones folded. */
	ASSERT_EQ(run.n_denials, 2);
	ASSERT_STREQ(run.denials[0].access, "connect");
	ASSERT_STREQ(run.denials[0].syscall, "connect");
	ASSERT_EQ(run.denials[0].error, EACCES);
	ASSERT_STREQ(run.denials[0].target, real);
	ASSERT_STREQ(run.denials[1].target, "@ward-test-abstract");
	ASSERT_EQ(run.dropped, 0);
	ward_policy_free(p);
	close(nc.lfd);
	remove_tmpdir();
}

static void cmd_unix_allowed(struct shared *sh, void *arg)
{
	struct net_case *nc = arg;
	int fd = -1;

	sh->r[0] = unix_connect(nc->link, &fd);
	sh->r[1] = fd >= 0 && write(fd, "hi", 2) == 2 ? 0 : errno;
	if (fd >= 0)
		close(fd);
}

TEST(allow_listed_unix_socket_reachable)
{
	struct ward__seccomp_opts o = {.network_off = true, .supervise_connect = true};
	struct net_case nc = {0};
	struct shared *sh = shared_new();
	const char *sockets[1];
	struct ward_policy *p;
	struct run run;
	char buf[4] = {0};
	int fd;

	make_tmpdir();
	path_in(nc.host, sizeof(nc.host), "host.sock");
	path_in(nc.link, sizeof(nc.link), "link.sock");
	nc.lfd = unix_listener(nc.host, 16);
	ASSERT_EQ(symlink(nc.host, nc.link), 0);
	sockets[0] = nc.host;
	p = policy_new(tmpdir, sockets, 1);

	/* Reached through a symlink: the check is on the inode, not the name. */
	run_supervised(&o, p, false, cmd_unix_allowed, &nc, NULL, sh, &run);
	ASSERT_EQ(sh->r[0], 0);
	ASSERT_EQ(sh->r[1], 0);
	fd = accept_now(nc.lfd);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(read(fd, buf, 2), 2);
	ASSERT_STREQ(buf, "hi");
	ASSERT_EQ(run.n_denials, 0);
	close(fd);
	ward_policy_free(p);
	close(nc.lfd);
	remove_tmpdir();
}

static void cmd_unix_backlog(struct shared *sh, void *arg)
{
	struct net_case *nc = arg;
	struct timeval tv = {.tv_usec = 150 * 1000};
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd;

	/* Blocks (the backlog is full) until the test accepts one connection. */
	sh->r[0] = unix_connect(nc->host, NULL);
	/* The backlog is full again: a send timeout ends the wait with EAGAIN, as in the kernel. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	FMT(sun.sun_path, "%s", nc->host);
	sh->r[1] = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ? errno : 0;
	close(fd);
	/* Non-blocking sockets get the kernel's immediate answer. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	sh->r[2] = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ? errno : 0;
	close(fd);
}

static void tick_accept_once(void *arg, uint64_t elapsed_ms)
{
	struct net_case *nc = arg;
	int fd;

	if (nc->accepted_at_ms || elapsed_ms < 200)
		return;
	fd = accept_now(nc->lfd);
	ASSERT_GE(fd, 0);
	close(fd);
	nc->accepted_at_ms = (int)elapsed_ms;
}

TEST(blocking_connect_waits_without_stalling)
{
	struct ward__seccomp_opts o = {.network_off = true, .supervise_connect = true};
	struct net_case nc = {0};
	struct shared *sh = shared_new();
	const char *sockets[1];
	struct ward_policy *p;
	struct run run;
	int filler = -1;

	make_tmpdir();
	path_in(nc.host, sizeof(nc.host), "host.sock");
	/* Backlog 0 and one connection queued: the next connect must wait. */
	nc.lfd = unix_listener(nc.host, 0);
	ASSERT_EQ(unix_connect(nc.host, &filler), 0);
	sockets[0] = nc.host;
	p = policy_new(tmpdir, sockets, 1);

	run_supervised(&o, p, false, cmd_unix_backlog, &nc, tick_accept_once, sh, &run);
	ASSERT_TRUE(nc.accepted_at_ms >= 200);
	ASSERT_EQ(sh->r[0], 0);
	ASSERT_EQ(sh->r[1], EAGAIN);
	ASSERT_EQ(sh->r[2], EAGAIN);
	ASSERT_EQ(run.n_denials, 0);
	close(filler);
	ward_policy_free(p);
	close(nc.lfd);
	remove_tmpdir();
}

static void cmd_tcp(struct shared *sh, void *arg)
{
	struct net_case *nc = arg;
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd;

	sin.sin_port = htons((uint16_t)nc->tcp_port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sh->r[0] = connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ? errno : 0;
	sh->r[1] = write(fd, "tcp", 3) == 3 ? 0 : errno;
	close(fd);
	/* A closed loopback port: refused, and not the sandbox's doing. */
	sin.sin_port = htons(1);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sh->r[2] = connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ? errno : 0;
	close(fd);
}

static int tcp_listener(int *ret_port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ASSERT_EQ(listen(fd, 16), 0);
	ASSERT_EQ(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	*ret_port = ntohs(sin.sin_port);
	return fd;
}

TEST(loopback_tcp_connects)
{
	struct ward__seccomp_opts o = {
		.network_off = true, .netns = true, .supervise_connect = true};
	struct net_case nc = {0};
	struct shared *sh = shared_new();
	struct ward_policy *p;
	struct run run;
	char buf[4] = {0};
	int fd;

	make_tmpdir();
	nc.lfd = tcp_listener(&nc.tcp_port);
	p = policy_new(tmpdir, NULL, 0);

	run_supervised(&o, p, false, cmd_tcp, &nc, NULL, sh, &run);
	ASSERT_EQ(sh->r[0], 0);
	ASSERT_EQ(sh->r[1], 0);
	ASSERT_EQ(sh->r[2], ECONNREFUSED);
	fd = accept_now(nc.lfd);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(read(fd, buf, 3), 3);
	ASSERT_STREQ(buf, "tcp");
	ASSERT_EQ(run.n_denials, 0);
	close(fd);
	ward_policy_free(p);
	close(nc.lfd);
	remove_tmpdir();
}

/* Enters a new user namespace (our ids mapped to 0) plus the given ones, or skips. */
static void enter_userns(int flags)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();

	if (unshare(CLONE_NEWUSER | flags) < 0)
		SKIP("cannot create a user namespace: %s", strerror(errno));
	/* Files (sockets, mount content) can be created only with the owner mapped. */
	FMT(map, "0 %u 1", (unsigned)uid);
	ASSERT_OK(ward__write_file("/proc/self/uid_map", map));
	ASSERT_OK(ward__write_file("/proc/self/setgroups", "deny"));
	FMT(map, "0 %u 1", (unsigned)gid);
	ASSERT_OK(ward__write_file("/proc/self/gid_map", map));
}

/* Enters a new user + network namespace with loopback up, or skips. */
static void enter_netns(void)
{
	struct ifreq ifr = {0};
	int fd;

	enter_userns(CLONE_NEWNET);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(fd >= 0);
	FMT(ifr.ifr_name, "lo");
	ASSERT_EQ(ioctl(fd, SIOCGIFFLAGS, &ifr), 0);
	ifr.ifr_flags |= IFF_UP;
	ASSERT_EQ(ioctl(fd, SIOCSIFFLAGS, &ifr), 0);
	close(fd);
}

static void cmd_netns(struct shared *sh, void *arg)
{
	struct net_case *nc = arg;
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(80)};
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons(443)};
	int fd = -1;

	sh->r[0] = unix_connect(nc->inside, &fd);
	sh->r[1] = fd >= 0 && write(fd, "in", 2) == 2 ? 0 : errno;
	if (fd >= 0)
		close(fd);
	sh->r[2] = unix_connect(nc->host, NULL);
	/* Off the loopback nothing is routable: the sandbox's network is off. */
	inet_pton(AF_INET, "10.1.2.3", &sin.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sh->r[3] = connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ? errno : 0;
	close(fd);
	inet_pton(AF_INET6, "2001:db8::1", &sin6.sin6_addr);
	fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	sh->r[4] = connect(fd, (struct sockaddr *)&sin6, sizeof(sin6)) < 0 ? errno : 0;
	close(fd);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(1);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sh->r[5] = connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ? errno : 0;
	close(fd);
}

TEST(private_netns_tells_inside_from_host)
{
	struct ward__seccomp_opts o = {
		.network_off = true, .netns = true, .supervise_connect = true};
	struct net_case nc = {0};
	struct shared *sh = shared_new();
	struct ward_policy *p;
	struct run run;
	char real[PATH_MAX], buf[4] = {0};
	int host_fd, fd;

	make_tmpdir();
	path_in(nc.host, sizeof(nc.host), "host.sock");
	path_in(nc.inside, sizeof(nc.inside), "inside.sock");
	/* Bound before entering the namespace: the host's. */
	host_fd = unix_listener(nc.host, 16);
	ASSERT_TRUE(realpath(nc.host, real) != NULL);
	enter_netns();
	/* Bound in the private namespace: the sandbox's own (found by unix_diag). */
	nc.lfd = unix_listener(nc.inside, 16);
	p = policy_new(tmpdir, NULL, 0);

	run_supervised(&o, p, true, cmd_netns, &nc, NULL, sh, &run);
	ASSERT_EQ(sh->r[0], 0);
	ASSERT_EQ(sh->r[1], 0);
	ASSERT_EQ(sh->r[2], EACCES);
	ASSERT_EQ(sh->r[3], ENETUNREACH);
	ASSERT_EQ(sh->r[4], ENETUNREACH);
	ASSERT_EQ(sh->r[5], ECONNREFUSED);
	fd = accept_now(nc.lfd);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(read(fd, buf, 2), 2);
	ASSERT_STREQ(buf, "in");
	ASSERT_EQ(accept_now(host_fd), -EAGAIN);
	ASSERT_EQ(run.n_denials, 3);
	ASSERT_STREQ(run.denials[0].target, real);
	ASSERT_EQ(run.denials[0].error, EACCES);
	ASSERT_STREQ(run.denials[1].access, "connect");
	ASSERT_STREQ(run.denials[1].target, "10.1.2.3:80");
	ASSERT_EQ(run.denials[1].error, ENETUNREACH);
	ASSERT_STREQ(run.denials[2].target, "[2001:db8::1]:443");
	close(fd);
	close(host_fd);
	ward_policy_free(p);
	close(nc.lfd);
	remove_tmpdir();
}

static void cmd_many_denials(struct shared *sh, void *arg)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sh->r[0] = 0;
	for (int i = 0; i < WARD_MAX_DENIALS + 44; i++) {
		int n = snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1, "ward-test-%d", i);

		if (connect(fd, (struct sockaddr *)&sun,
			    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) ==
			    0 ||
		    errno != EACCES)
			sh->r[0] = -1;
		/* The same again right away: folded into the previous report. */
		if (connect(fd, (struct sockaddr *)&sun,
			    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) ==
		    0)
			sh->r[0] = -1;
	}
	close(fd);
}

TEST(denial_reports_bounded)
{
	struct ward__seccomp_opts o = {.network_off = true, .supervise_connect = true};
	struct shared *sh = shared_new();
	struct ward_policy *p;
	struct run run;

	make_tmpdir();
	p = policy_new(tmpdir, NULL, 0);
	run_supervised(&o, p, false, cmd_many_denials, NULL, NULL, sh, &run);
	ASSERT_EQ(sh->r[0], 0);
	/* WARD_MAX_DENIALS distinct reports, the rest counted, the repeats folded. */
	ASSERT_EQ(run.total, WARD_MAX_DENIALS);
	ASSERT_EQ(run.dropped, 44);
	ASSERT_STREQ(run.denials[0].target, "@ward-test-0");
	ASSERT_STREQ(run.denials[1].target, "@ward-test-1");
	ward_policy_free(p);
	remove_tmpdir();
}

/* ------------------------------------------------------------------ filesystem observation */

struct fs_case {
	char inside[PATH_MAX];
	char outside[PATH_MAX];
};

static void landlock_writes_beneath(const char *root)
{
	struct landlock_ruleset_attr attr = {
		.handled_access_fs = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
			LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
			LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
			LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
			LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM,
	};
	struct landlock_path_beneath_attr pb = {.allowed_access = attr.handled_access_fs};
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);

	if (rs < 0)
		_exit(102);
	pb.parent_fd = open(root, O_PATH | O_CLOEXEC);
	if (pb.parent_fd < 0 ||
	    syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_landlock_restrict_self, rs, 0) < 0)
		_exit(103);
	close(pb.parent_fd);
	close(rs);
}

static int try_open(const char *dir, const char *name, int flags)
{
	char path[PATH_MAX];
	int fd;

	FMT(path, "%s/%s", dir, name);
	fd = open(path, flags | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int try_path(int (*fn)(const char *), const char *dir, const char *name)
{
	char path[PATH_MAX];

	FMT(path, "%s/%s", dir, name);
	return fn(path) < 0 ? errno : 0;
}

static int do_unlink(const char *path)
{
	return unlink(path);
}

static int do_mkdir(const char *path)
{
	return mkdir(path, 0755);
}

static void cmd_fs(struct shared *sh, void *arg)
{
	struct fs_case *fc = arg;

	/*
	 * The sandbox without a mount namespace: Landlock allows writes beneath
	 * the writable root only.
	 */
	landlock_writes_beneath(fc->inside);
	sh->r[0] = try_open(fc->outside, "new", O_WRONLY | O_CREAT);
	sh->r[1] = try_open(fc->inside, "new", O_WRONLY | O_CREAT);
	sh->r[2] = try_open(fc->inside, "missing/x", O_WRONLY | O_CREAT);
	sh->r[3] = try_path(do_unlink, fc->outside, "existing");
	sh->r[4] = try_path(do_mkdir, fc->outside, "d");
	sh->r[5] = try_open(fc->outside, "existing", O_RDONLY);
	sh->r[6] = try_open(fc->outside, "existing", O_WRONLY | O_APPEND);
	sh->r[7] = try_open(fc->outside, "missing", O_WRONLY);
	sh->r[8] = try_path(do_unlink, fc->inside, "missing");
	sh->r[9] = try_path(do_mkdir, fc->outside, "existing");
}

TEST(filesystem_denials_reported_exactly)
{
	struct ward__seccomp_opts o = {.observe_fs = true};
	struct fs_case *fc;
	struct shared *sh = shared_new();
	struct ward_policy *p;
	struct run run;
	char path[PATH_MAX + 16];
	int fd;

	if (syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) < 1)
		SKIP("Landlock is not available");
	make_tmpdir();
	fc = calloc(1, sizeof(*fc));
	ASSERT_TRUE(fc != NULL);
	path_in(path, sizeof(path), "inside");
	ASSERT_EQ(mkdir(path, 0755), 0);
	ASSERT_TRUE(realpath(path, fc->inside) != NULL);
	path_in(path, sizeof(path), "outside");
	ASSERT_EQ(mkdir(path, 0755), 0);
	ASSERT_TRUE(realpath(path, fc->outside) != NULL);
	FMT(path, "%s/existing", fc->outside);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ASSERT_TRUE(fd >= 0);
	close(fd);
	p = policy_new(fc->inside, NULL, 0);

	run_supervised(&o, p, false, cmd_fs, fc, NULL, sh, &run);
	ASSERT_EQ(sh->r[0], EACCES);
	ASSERT_EQ(sh->r[1], 0);
	ASSERT_EQ(sh->r[2], ENOENT);
	ASSERT_EQ(sh->r[3], EACCES);
	ASSERT_EQ(sh->r[4], EACCES);
	ASSERT_EQ(sh->r[5], 0);
	ASSERT_EQ(sh->r[6], EACCES);
	ASSERT_EQ(sh->r[7], ENOENT);
	ASSERT_EQ(sh->r[8], ENOENT);
	ASSERT_EQ(sh->r[9], EEXIST);

	/* Exactly the refusals, none of the ordinary failures. */
	ASSERT_EQ(run.n_denials, 4);
	ASSERT_STREQ(run.denials[0].access, "create");
	ASSERT_EQ(run.denials[0].error, EACCES);
	FMT(path, "%s/new", fc->outside);
	ASSERT_STREQ(run.denials[0].target, path);
	ASSERT_TRUE(strcmp(run.denials[0].syscall, "openat") == 0 ||
		    strcmp(run.denials[0].syscall, "open") == 0);
	ASSERT_STREQ(run.denials[1].access, "delete");
	FMT(path, "%s/existing", fc->outside);
	ASSERT_STREQ(run.denials[1].target, path);
	ASSERT_STREQ(run.denials[2].access, "create");
	FMT(path, "%s/d", fc->outside);
	ASSERT_STREQ(run.denials[2].target, path);
	ASSERT_TRUE(strcmp(run.denials[2].syscall, "mkdir") == 0 ||
		    strcmp(run.denials[2].syscall, "mkdirat") == 0);
	ASSERT_STREQ(run.denials[3].access, "write");
	FMT(path, "%s/existing", fc->outside);
	ASSERT_STREQ(run.denials[3].target, path);
	ward_policy_free(p);
	free(fc);
	remove_tmpdir();
}

static void drop_capabilities(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {0};

	if (syscall(SYS_capset, &h, d) < 0)
		_exit(104);
}

static int do_chmod(const char *path)
{
	return chmod(path, 0600);
}

static int do_rename_to_file2(const char *path)
{
	char to[PATH_MAX];

	FMT(to, "%s2", path);
	return rename(path, to);
}

static void cmd_mounts(struct shared *sh, void *arg)
{
	struct fs_case *fc = arg; /* outside: the read-only mount; inside: the root */
	char denied[PATH_MAX];
	int fd;

	/* The command keeps no capability: permission checks apply to it. */
	drop_capabilities();
	FMT(denied, "%s/../denied", fc->inside);
	sh->r[0] = try_open(fc->outside, "file", O_WRONLY);
	sh->r[1] = try_open(fc->outside, "new", O_WRONLY | O_CREAT);
	sh->r[2] = try_open(fc->outside, "file", O_RDONLY);
	sh->r[3] = try_path(do_unlink, fc->outside, "file");
	sh->r[4] = try_path(do_unlink, fc->outside, "missing");
	sh->r[5] = try_path(do_rename_to_file2, fc->outside, "file");
	sh->r[6] = try_open(denied, "secret", O_RDONLY);
	sh->r[7] = try_open(denied, ".", O_RDONLY | O_DIRECTORY);
	sh->r[8] = try_open(fc->inside, "x", O_WRONLY | O_CREAT);
	sh->r[9] = try_path(do_mkdir, fc->outside, "dir");
	sh->r[10] = try_open(fc->outside, "missing/x", O_WRONLY | O_CREAT);
	sh->r[11] = try_path(do_chmod, fc->outside, "file");
	/* O_PATH needs no permission on the masked path itself. */
	fd = open(denied, O_PATH | O_CLOEXEC);
	sh->r[12] = fd >= 0 ? 0 : errno;
	if (fd >= 0)
		close(fd);
	sh->r[13] = try_open(fc->inside, "x", O_RDONLY);
}

TEST(readonly_and_masked_paths_reported)
{
	struct ward__seccomp_opts o = {.observe_fs = true, .observe_reads = true};
	struct shared *sh = shared_new();
	struct fs_case *fc;
	struct ward_policy *p;
	struct run run;
	char path[PATH_MAX + 16], ro[PATH_MAX], denied[PATH_MAX], base[PATH_MAX];
	const char *expect[][2] = {
		{"write", "/file"},	{"create", "/new"},  {"delete", "/file"},
		{"delete", "/missing"}, {"rename", "/file"}, {"read", "/secret"},
		{"read", ""},		{"create", "/dir"},  {"write", "/file"},
	};
	int fd;

	make_tmpdir();
	ASSERT_TRUE(realpath(tmpdir, base) != NULL);
	fc = calloc(1, sizeof(*fc));
	ASSERT_TRUE(fc != NULL);
	FMT(fc->inside, "%s/inside", base);
	FMT(ro, "%s/ro", base);
	FMT(denied, "%s/denied", base);
	FMT(fc->outside, "%s", ro);
	ASSERT_EQ(mkdir(fc->inside, 0755), 0);
	ASSERT_EQ(mkdir(ro, 0755), 0);
	ASSERT_EQ(mkdir(denied, 0755), 0);
	FMT(path, "%s/secret", denied);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ASSERT_TRUE(fd >= 0);
	close(fd);

	/* The sandbox's mount view in miniature: a read-only mount and a deny-read mask. */
	enter_userns(CLONE_NEWNS);
	ASSERT_EQ(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	ASSERT_EQ(mount("tmpfs", ro, "tmpfs", 0, "mode=0755"), 0);
	FMT(path, "%s/file", ro);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ASSERT_TRUE(fd >= 0);
	close(fd);
	ASSERT_EQ(mount(NULL, ro, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL), 0);
	ASSERT_EQ(mount("tmpfs", denied, "tmpfs", 0, "mode=0000"), 0);
	ASSERT_EQ(mount(NULL, denied, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL), 0);
	p = policy_new_deny(fc->inside, NULL, 0, denied);

	run_supervised(&o, p, false, cmd_mounts, fc, NULL, sh, &run);
	ASSERT_EQ(sh->r[0], EROFS);
	ASSERT_EQ(sh->r[1], EROFS);
	ASSERT_EQ(sh->r[2], 0);
	ASSERT_EQ(sh->r[3], EROFS);
	ASSERT_EQ(sh->r[4], EROFS);
	ASSERT_EQ(sh->r[5], EROFS);
	ASSERT_EQ(sh->r[6], EACCES);
	ASSERT_EQ(sh->r[7], EACCES);
	ASSERT_EQ(sh->r[8], 0);
	ASSERT_EQ(sh->r[9], EROFS);
	ASSERT_EQ(sh->r[10], ENOENT);
	ASSERT_EQ(sh->r[11], EROFS);
	ASSERT_EQ(sh->r[12], 0);
	ASSERT_EQ(sh->r[13], 0);

	ASSERT_EQ(run.n_denials, ELEMENTSOF(expect));
	for (size_t i = 0; i < ELEMENTSOF(expect); i++) {
		const char *dir = i == 5 || i == 6 ? denied : ro;

		FMT(path, "%s%s", dir, expect[i][1]);
		ASSERT_STREQ(run.denials[i].access, expect[i][0]);
		ASSERT_STREQ(run.denials[i].target, path);
		ASSERT_EQ(run.denials[i].error, i == 5 || i == 6 ? EACCES : EROFS);
	}
	ASSERT_EQ(umount2(ro, MNT_DETACH), 0);
	ASSERT_EQ(umount2(denied, MNT_DETACH), 0);
	ward_policy_free(p);
	free(fc);
	remove_tmpdir();
}

int main(void)
{
	return tap_main();
}
