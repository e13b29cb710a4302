/* SPDX-License-Identifier: MIT */
/*
 * The command's seccomp filter, built with libseccomp in the parent (before
 * fork) and exported as plain BPF, so the child between fork and exec only
 * makes one seccomp(2) call and never allocates.
 *
 * The filter allows by default and refuses the syscalls that reach kernel
 * attack surface or sandbox escapes a coding agent's commands never need.
 * Other layers (user namespace without capabilities, Landlock) already stop
 * most of these; seccomp is the layer that still holds where namespaces are
 * refused, and it narrows what a kernel bug could be reached through.
 *
 * Every argument compare on an int-typed syscall argument looks at the low 32
 * bits only (SCMP_CMP_MASKED_EQ with 0xffffffff): the kernel truncates such
 * arguments, so a full 64-bit compare could be bypassed by setting the high
 * bits of the register (the trick behind CVE-2017-5226's TIOCSTI filters).
 *
 * Only the native architecture is allowed. A syscall made through another
 * ABI (int 0x80 on x86_64, or x32 numbers with bit 30 set) kills the process,
 * because rules written for native numbers would not match there. libseccomp
 * emits the x32 check itself when the native arch is x86_64 and x32 is not in
 * the filter ("nr >= 0x40000000 -> bad arch"); test-seccomp checks it.
 */
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "sandbox/sandbox.h"

#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

/* The flags argument of clone(2): arg0 on x86_64 and aarch64 (arg1 on s390). */
#if defined(__s390__) || defined(__s390x__) || defined(__CRIS__)
#define CLONE_FLAGS_ARG 1
#else
#define CLONE_FLAGS_ARG 0
#endif

/*
 * Syscalls newer than libseccomp 2.5.4's table, by number. Since Linux 5.1
 * new syscalls have one number on every architecture (alpha aside), so these
 * are right for x86_64 and aarch64; elsewhere only names are used.
 */
#if defined(__x86_64__) || defined(__aarch64__)
#define NR_FCHMODAT2 452
#define NR_OPEN_TREE_ATTR 467
#else
#define NR_FCHMODAT2 (-1)
#define NR_OPEN_TREE_ATTR (-1)
#endif

#define LOW32 0xffffffffULL
/* Compares the low 32 bits of an int argument (see the top of the file). */
#define ARG32_EQ(n, v) SCMP_CMP64((n), SCMP_CMP_MASKED_EQ, LOW32, (uint32_t)(v))
/* True when all the bits of m are set in the argument. */
#define ARG_HAS(n, m) SCMP_CMP64((n), SCMP_CMP_MASKED_EQ, (m), (m))
/* The socket type without SOCK_CLOEXEC/SOCK_NONBLOCK, which ride in the same argument. */
#define SOCK_TYPE_EQ(n, t) SCMP_CMP64((n), SCMP_CMP_MASKED_EQ, 0xf, (t))

struct build {
	scmp_filter_ctx ctx;
	struct ward_error *err;
	bool has_notify;
	/*
	 * Refusals (EPERM, EACCES) go to the supervisor instead, which answers
	 * with the same errno and reports the denial: the only way ward learns
	 * that the filter refused something. Set for observed (captured) runs.
	 */
	bool notify_refusals;
};

/*
 * Adds one rule. A syscall that does not exist on the native architecture
 * (open, mkdir, ... on aarch64) is skipped: there is nothing to filter.
 */
static int add(struct build *b, uint32_t action, const char *name, int fallback_nr, unsigned n,
	       const struct scmp_arg_cmp *cmp)
{
	int nr = seccomp_syscall_resolve_name(name);
	int r;

	if (nr == __NR_SCMP_ERROR)
		nr = fallback_nr;
	if (nr < 0)
		return 0;
	if (b->notify_refusals &&
	    (action == SCMP_ACT_ERRNO(EPERM) || action == SCMP_ACT_ERRNO(EACCES)))
		action = SCMP_ACT_NOTIFY;
	r = seccomp_rule_add_array(b->ctx, action, nr, n, cmp);
	if (r < 0)
		return ward__error(b->err, r, "seccomp", "cannot add the seccomp rule for '%s': %m",
				   name);
	if (action == SCMP_ACT_NOTIFY) {
		b->has_notify = true;
		/* Cache the name now: the supervisor must not call into libseccomp after fork. */
		(void)ward__seccomp_syscall_name(nr);
	}
	return 0;
}

#define RULE(b, action, name, ...)                                               \
	add((b), (action), (name), -1,                                           \
	    ELEMENTSOF(((const struct scmp_arg_cmp[]){{0}, ##__VA_ARGS__})) - 1, \
	    ((const struct scmp_arg_cmp[]){{0}, ##__VA_ARGS__}) + 1)
#define RULE_NR(b, action, name, nr) add((b), (action), (name), (nr), 0, NULL)

#define DENY SCMP_ACT_ERRNO(EPERM)

/* Refuses a list of syscalls outright with EPERM. */
static int deny_all(struct build *b, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int r = RULE(b, DENY, names[i]);

		if (r < 0)
			return r;
	}
	return 0;
}

static int rules_always(struct build *b)
{
	static const char *const denied[] = {
		/* io_uring performs syscalls from kernel threads, out of seccomp's sight. */
		"io_uring_setup",
		"io_uring_enter",
		"io_uring_register",
		/* Reading or writing another process's memory: a way out of any filter. */
		"ptrace",
		"process_vm_readv",
		"process_vm_writev",
		/* Stealing another process's fds (PTRACE_MODE_ATTACH without Yama's ancestry rule). */
		"pidfd_getfd",
		"process_madvise",
		/* Changing the mount view would undo the read-only and masking mounts. */
		"mount",
		"umount",
		"umount2",
		"pivot_root",
		"chroot",
		"move_mount",
		"open_tree",
		"fsopen",
		"fsconfig",
		"fsmount",
		"fspick",
		"mount_setattr",
		/*
		 * New namespaces would give the command capabilities over fresh
		 * ones, the start of most user-namespace kernel exploits and of
		 * remounting tricks; setns would join another process's.
		 */
		"unshare",
		"setns",
		/* The kernel keyring is shared across the sandbox boundary (per uid, not per namespace). */
		"keyctl",
		"add_key",
		"request_key",
		/* Kernel attack surface (eBPF verifier, perf, userfaultfd-assisted races). */
		"bpf",
		"perf_event_open",
		"userfaultfd",
		/* Whole-machine state a command must never touch (all need capabilities anyway). */
		"kexec_load",
		"kexec_file_load",
		"init_module",
		"finit_module",
		"delete_module",
		"acct",
		"swapon",
		"swapoff",
		"reboot",
		"settimeofday",
		"clock_settime",
		"adjtimex",
		"clock_adjtime",
		/* The "shocker" container escape: opening host files by handle. */
		"open_by_handle_at",
	};
	static const int ns_flags[] = {CLONE_NEWNS,  CLONE_NEWUSER, CLONE_NEWPID,   CLONE_NEWNET,
				       CLONE_NEWIPC, CLONE_NEWUTS,  CLONE_NEWCGROUP};
	int r;

	r = deny_all(b, denied, ELEMENTSOF(denied));
	if (r < 0)
		return r;
	/* open_tree_attr() (6.15) clones mounts like open_tree(). */
	r = RULE_NR(b, DENY, "open_tree_attr", NR_OPEN_TREE_ATTR);
	if (r < 0)
		return r;

	/*
	 * clone() with any namespace flag, one masked rule per flag: creating
	 * namespaces is what unshare() was refused for.
	 */
	for (size_t i = 0; i < ELEMENTSOF(ns_flags); i++) {
		r = RULE(b, DENY, "clone", ARG_HAS(CLONE_FLAGS_ARG, (uint32_t)ns_flags[i]));
		if (r < 0)
			return r;
	}
	/*
	 * clone3() passes its flags in a struct that seccomp cannot read. ENOSYS
	 * makes glibc (and other libcs) fall back to clone(), which is checked.
	 */
	r = RULE(b, SCMP_ACT_ERRNO(ENOSYS), "clone3");
	if (r < 0)
		return r;

	/*
	 * Terminal injection: TIOCSTI pushes input into the terminal (the
	 * user's shell would run it once the sandbox exits, CVE-2017-5226),
	 * TIOCLINUX can do the same on a virtual console. The kernel reads the
	 * request as an unsigned int, so only the low 32 bits are compared.
	 */
	r = RULE(b, DENY, "ioctl", ARG32_EQ(1, TIOCSTI));
	if (r < 0)
		return r;
	r = RULE(b, DENY, "ioctl", ARG32_EQ(1, TIOCLINUX));
	if (r < 0)
		return r;

	/*
	 * A seccomp listener of the command's own: where ward's supervisor is
	 * gone (a process that outlived it), a newer filter's notification would
	 * win over ours and the command could answer CONTINUE to its own refused
	 * syscalls. Filters without a listener stay allowed (they only narrow).
	 */
	r = RULE(b, DENY, "seccomp", SCMP_A0(SCMP_CMP_EQ, SECCOMP_SET_MODE_FILTER),
		 SCMP_A1(SCMP_CMP_MASKED_EQ, SECCOMP_FILTER_FLAG_NEW_LISTENER,
			 SECCOMP_FILTER_FLAG_NEW_LISTENER));
	if (r < 0)
		return r;

	/*
	 * personality(): only PER_LINUX, PER_LINUX|ADDR_NO_RANDOMIZE (used by
	 * debuggers and setarch -R) and the query 0xffffffff are allowed. Other
	 * values can turn on READ_IMPLIES_EXEC or MMAP_PAGE_ZERO, historical
	 * helpers of kernel exploits. The kernel truncates the argument to 32
	 * bits; libseccomp allows one compare per argument and rule, so "not one
	 * of three values" is spelt bit by bit on the low 32 bits:
	 *   bit 31 clear: refused when any bit other than ADDR_NO_RANDOMIZE is set;
	 *   bit 31 set:   refused when any bit is clear (only 0xffffffff passes).
	 */
	for (unsigned bit = 0; bit < 31; bit++) {
		uint32_t m = 1U << bit;

		if (m != ADDR_NO_RANDOMIZE) {
			r = RULE(b, DENY, "personality",
				 SCMP_CMP64(0, SCMP_CMP_MASKED_EQ, 0x80000000U | m, m));
			if (r < 0)
				return r;
		}
		r = RULE(b, DENY, "personality",
			 SCMP_CMP64(0, SCMP_CMP_MASKED_EQ, 0x80000000U | m, 0x80000000U));
		if (r < 0)
			return r;
	}

	/*
	 * Packet sockets see and forge every frame of an interface; raw IP
	 * sockets forge packets. Both need CAP_NET_RAW, refused here as well so
	 * that a kernel bug in their setup paths stays out of reach. Netlink
	 * stays allowed: ip(8) and glibc's getaddrinfo() use it.
	 */
	r = RULE(b, DENY, "socket", ARG32_EQ(0, AF_PACKET));
	if (r < 0)
		return r;
	r = RULE(b, DENY, "socket", ARG32_EQ(0, AF_INET), SOCK_TYPE_EQ(1, SOCK_RAW));
	if (r < 0)
		return r;
	return RULE(b, DENY, "socket", ARG32_EQ(0, AF_INET6), SOCK_TYPE_EQ(1, SOCK_RAW));
}

static int rules_network(struct build *b, const struct ward__seccomp_opts *o)
{
	static const int dgram_types[] = {SOCK_DGRAM, SOCK_RAW};
	int r;

	if (!o->network_off)
		return 0;
	/*
	 * vsock is not network-namespaced: it reaches the hypervisor host (and
	 * its services) from inside any namespace.
	 */
	r = RULE(b, DENY, "socket", ARG32_EQ(0, AF_VSOCK));
	if (r < 0)
		return r;
	if (!o->netns) {
		/*
		 * Fallback without a network namespace: the host's network is the
		 * sandbox's. Landlock (ABI 4) refuses TCP connect and bind but not
		 * UDP, so IP sockets are refused altogether. There is no loopback
		 * networking in this mode either.
		 */
		r = RULE(b, DENY, "socket", ARG32_EQ(0, AF_INET));
		if (r < 0)
			return r;
		r = RULE(b, DENY, "socket", ARG32_EQ(0, AF_INET6));
		if (r < 0)
			return r;
	}
	if (o->observe_fs && o->netns) {
		/*
		 * Observed runs: a datagram sent to an address outside fails in the
		 * private namespace (ENETUNREACH); the supervisor reports it and lets
		 * the kernel decide. Only sendto() with an address: seccomp cannot
		 * see the address inside sendmsg()'s struct.
		 */
		r = RULE(b, SCMP_ACT_NOTIFY, "sendto", SCMP_A4(SCMP_CMP_NE, 0));
		if (r < 0)
			return r;
	}
	if (!o->supervise_connect)
		return 0;
	/*
	 * connect() goes to the supervisor, which refuses the host's pathname
	 * unix sockets (a read-only mount does not stop connect(2) on a socket
	 * file) and performs the allowed connects itself with its own copy of
	 * the address (no time-of-check/time-of-use window).
	 */
	r = RULE(b, SCMP_ACT_NOTIFY, "connect");
	if (r < 0)
		return r;
	/*
	 * Datagram unix sockets can sendto() any socket path without connect(),
	 * and seccomp cannot see the address in sendto()/sendmsg(). Stream and
	 * seqpacket sockets need connect(), which is supervised. SOCK_RAW on
	 * AF_UNIX is a datagram socket too (unix_create()).
	 */
	for (size_t i = 0; i < ELEMENTSOF(dgram_types); i++) {
		r = RULE(b, SCMP_ACT_ERRNO(EACCES), "socket", ARG32_EQ(0, AF_UNIX),
			 SOCK_TYPE_EQ(1, dgram_types[i]));
		if (r < 0)
			return r;
		r = RULE(b, SCMP_ACT_ERRNO(EACCES), "socketpair", ARG32_EQ(0, AF_UNIX),
			 SOCK_TYPE_EQ(1, dgram_types[i]));
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Filesystem observation: the write-ish path syscalls go to the supervisor,
 * which predicts whether the kernel will refuse them because of the sandbox
 * and reports that, then lets the syscall continue (it grants nothing: the
 * kernel still makes the decision). The set: open/openat/creat with a write,
 * create or truncate flag (openat2 always: its flags are in a struct),
 * mkdir, mknod, unlink, rmdir, rename, link, symlink, truncate, chmod, chown,
 * utimes and the path-based xattr setters. fd-based variants (ftruncate,
 * fchmod, fsetxattr) act on files already opened, whose open was observed.
 */
static int rules_observe(struct build *b, const struct ward__seccomp_opts *o)
{
	static const char *const always[] = {
		"creat",     "openat2",	 "mkdir",     "mkdirat",     "mknod",	     "mknodat",
		"unlink",    "unlinkat", "rmdir",     "rename",	     "renameat",     "renameat2",
		"link",	     "linkat",	 "symlink",   "symlinkat",   "truncate",     "chmod",
		"fchmodat",  "chown",	 "lchown",    "fchownat",    "utime",	     "utimes",
		"futimesat", "setxattr", "lsetxattr", "removexattr", "lremovexattr",
	};
	static const unsigned write_flags[] = {O_WRONLY, O_RDWR, O_CREAT, O_TRUNC};
	int r;

	if (!o->observe_fs)
		return 0;
	for (size_t i = 0; i < ELEMENTSOF(always); i++) {
		r = RULE(b, SCMP_ACT_NOTIFY, always[i]);
		if (r < 0)
			return r;
	}
	r = RULE_NR(b, SCMP_ACT_NOTIFY, "fchmodat2", NR_FCHMODAT2);
	if (r < 0)
		return r;
	/* utimensat(fd, NULL, ...) is futimens() on an open file: no path to observe. */
	r = RULE(b, SCMP_ACT_NOTIFY, "utimensat", SCMP_A1(SCMP_CMP_NE, 0));
	if (r < 0)
		return r;
	if (o->observe_reads) {
		/* Reads of deny-read paths are reported too: every open is observed. */
		r = RULE(b, SCMP_ACT_NOTIFY, "open");
		if (r < 0)
			return r;
		return RULE(b, SCMP_ACT_NOTIFY, "openat");
	}
	for (size_t i = 0; i < ELEMENTSOF(write_flags); i++) {
		r = RULE(b, SCMP_ACT_NOTIFY, "open", ARG_HAS(1, write_flags[i]));
		if (r < 0)
			return r;
		r = RULE(b, SCMP_ACT_NOTIFY, "openat", ARG_HAS(2, write_flags[i]));
		if (r < 0)
			return r;
	}
	return 0;
}

/* libseccomp 2.5.4 has no seccomp_export_bpf_mem(): export into a memfd and read it back. */
static int export_bpf(scmp_filter_ctx ctx, struct ward__seccomp_prog *ret, struct ward_error *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ void *buf = NULL;
	struct stat st;
	ssize_t n;
	int r;

	fd = memfd_create("ward-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return ward__error(err, -errno, "seccomp", "cannot create a memfd: %m");
	r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return ward__error(err, r, "seccomp", "cannot export the seccomp filter: %m");
	if (fstat(fd, &st) < 0)
		return ward__error(err, -errno, "seccomp", "cannot export the seccomp filter: %m");
	if (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) != 0 ||
	    st.st_size / sizeof(struct sock_filter) > BPF_MAXINSNS)
		return ward__error(err, -E2BIG, "seccomp",
				   "the seccomp filter has an unexpected size (%lld bytes)",
				   (long long)st.st_size);
	buf = malloc((size_t)st.st_size);
	if (!buf)
		return ward__error(err, -ENOMEM, "seccomp", "out of memory");
	n = pread(fd, buf, (size_t)st.st_size, 0);
	if (n != st.st_size)
		return ward__error(err, n < 0 ? -errno : -EIO, "seccomp",
				   "cannot read the seccomp filter back: %m");
	ret->insns = TAKE_PTR(buf);
	ret->len = (unsigned short)(st.st_size / sizeof(struct sock_filter));
	return 0;
}

int ward__seccomp_compile(const struct ward__seccomp_opts *o, struct ward__seccomp_prog *ret,
			  struct ward_error *err)
{
	struct build b = {.err = err, .notify_refusals = o->notify_refusals && o->observe_fs};
	struct ward__seccomp_prog prog = {0};
	int r;

	b.ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!b.ctx)
		return ward__error(err, -ENOMEM, "seccomp", "cannot create a seccomp filter");
	/* A syscall through a foreign ABI (i386 int 0x80, x32) would bypass every rule. */
	r = seccomp_attr_set(b.ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r < 0) {
		ward__error(err, r, "seccomp", "cannot set the bad-architecture action: %m");
		goto out;
	}
	/* A binary tree of syscall numbers instead of a linear scan; optional. */
	(void)seccomp_attr_set(b.ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);

	r = rules_always(&b);
	if (r >= 0)
		r = rules_network(&b, o);
	if (r >= 0)
		r = rules_observe(&b, o);
	if (r < 0)
		goto out;
	r = export_bpf(b.ctx, &prog, err);
	if (r < 0)
		goto out;
	prog.has_notify = b.has_notify;
	*ret = prog;
out:
	seccomp_release(b.ctx);
	return r < 0 ? r : 0;
}

unsigned ward__seccomp_opts_index(const struct ward__seccomp_opts *o)
{
	return (o->network_off ? 1u : 0u) | (o->netns ? 2u : 0u) |
		(o->supervise_connect ? 4u : 0u) | (o->observe_fs ? 8u : 0u) |
		(o->observe_reads ? 16u : 0u) | (o->notify_refusals ? 32u : 0u);
}

/*
 * The generator itself (WARD_SECCOMP_NO_PRECOMPILED) must not even look for
 * the header: clang records a file __has_include found as a dependency, and
 * the generator depending on its own output is a cycle ninja refuses.
 */
#if defined(WARD_SECCOMP_NO_PRECOMPILED)
#define WARD_SECCOMP_HAVE_PRECOMPILED 0
#elif __has_include("seccomp-precompiled.h")
#define WARD_SECCOMP_HAVE_PRECOMPILED 1
#else
#define WARD_SECCOMP_HAVE_PRECOMPILED 0
#endif

#if WARD_SECCOMP_HAVE_PRECOMPILED
/*
 * The filters for every combination of options, compiled by libseccomp at
 * build time (seccomp-gen.c): generating BPF costs about a millisecond per
 * launch, more than mounting the whole sandbox, and its result only depends
 * on these five switches and the architecture.
 */
#include "seccomp-precompiled.h"

int ward__seccomp_build(const struct ward__seccomp_opts *o, struct ward__seccomp_prog *ret,
			struct ward_error *err)
{
	const struct ward__seccomp_precompiled *pc =
		&ward__seccomp_precompiled[ward__seccomp_opts_index(o)];
	void *insns;

	if (pc->len == 0)
		return ward__seccomp_compile(o, ret, err);
	insns = malloc(pc->len * sizeof(struct sock_filter));
	if (!insns)
		return ward__error(err, -ENOMEM, "seccomp", "out of memory");
	memcpy(insns, pc->insns, pc->len * sizeof(struct sock_filter));
	*ret = (struct ward__seccomp_prog){
		.insns = insns, .len = pc->len, .has_notify = pc->has_notify};
	return 0;
}
#else
int ward__seccomp_build(const struct ward__seccomp_opts *o, struct ward__seccomp_prog *ret,
			struct ward_error *err)
{
	return ward__seccomp_compile(o, ret, err);
}
#endif

void ward__seccomp_prog_release(struct ward__seccomp_prog *prog)
{
	if (!prog)
		return;
	free(prog->insns);
	prog->insns = NULL;
	prog->len = 0;
	prog->has_notify = false;
}

int ward__seccomp_load(const struct ward__seccomp_prog *prog, int *ret_listener_fd)
{
	struct sock_fprog fprog = {.len = prog->len, .filter = prog->insns};
	unsigned long flags = 0;
	long r;

	if (prog->has_notify)
		/*
		 * WAIT_KILLABLE_RECV (5.19): once the supervisor has received a
		 * notification, only a fatal signal interrupts the wait. connect()
		 * is emulated (performed by the supervisor), so an interrupted and
		 * restarted call would see its own earlier effect (EISCONN).
		 */
		flags = SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
	r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog);
	if (r < 0 && errno == EINVAL && (flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)) {
		flags &= ~SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
		r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog);
	}
	if (r < 0)
		return -errno;
	*ret_listener_fd = prog->has_notify ? (int)r : -1;
	return 0;
}

/*
 * Names are cached forever in a table indexed by number: the returned pointer
 * stays valid (static storage in effect), and looking a name up a second
 * time does not allocate, so names resolved before fork are free afterwards.
 */
#define SYSCALL_NAME_CACHE 1024

const char *ward__seccomp_syscall_name(int nr)
{
	static char *cache[SYSCALL_NAME_CACHE];
	char *name, *expected = NULL;

	if (nr < 0 || nr >= SYSCALL_NAME_CACHE)
		return NULL;
#ifdef WARD__SECCOMP_HAVE_NAMES
	/* Generated at build time: no libseccomp call (and no malloc) after a fork. */
	if ((size_t)nr < ELEMENTSOF(ward__seccomp_names) && ward__seccomp_names[nr])
		return ward__seccomp_names[nr];
#endif
	name = __atomic_load_n(&cache[nr], __ATOMIC_ACQUIRE);
	if (name)
		return name;
	name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
	if (!name)
		return NULL;
	if (!__atomic_compare_exchange_n(&cache[nr], &expected, name, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		/* Another thread won the race; keep its copy. */
		free(name);
		return expected;
	}
	return name;
}
