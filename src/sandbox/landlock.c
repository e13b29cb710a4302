/* SPDX-License-Identifier: MIT */
/*
 * Landlock, the second wall under the mounts (and the first one in the
 * fallback without namespaces). No C library exists for it: the raw syscalls
 * of <linux/landlock.h>, with the best-effort ABI ladder of the kernel's
 * samples/landlock/sandboxer.c: ask the kernel for its ABI and handle every
 * right that ABI knows, so that an older kernel still enforces what it can.
 */
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "sandbox/sandbox.h"

/* Debian 12's header stops at ABI 2 or 3: the newer uapi values, from the kernel. */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#define WARD_LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define WARD_LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#define WARD_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define WARD_LANDLOCK_SCOPE_SIGNAL (1ULL << 1)

/* struct landlock_ruleset_attr as of ABI 6 (handled_access_net from 4, scoped from 6). */
struct ward_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

#define FS_READ \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define FS_WRITE_V1                                                      \
	(LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | \
	 LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR | \
	 LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |     \
	 LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |   \
	 LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM)

/* Every filesystem right the given ABI knows. */
static uint64_t fs_rights(int abi)
{
	uint64_t r = FS_READ | FS_WRITE_V1;

	if (abi >= 2)
		r |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		r |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return r;
}

static int add_path(int ruleset, const char *path, uint64_t access, uint64_t handled,
		    struct ward_error *err)
{
	struct landlock_path_beneath_attr pb = {.allowed_access = access & handled};
	_cleanup_close_ int fd = -1;
	struct stat st;

	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		/* A path that does not exist grants nothing and needs no rule. */
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return ward__error(err, -errno, "landlock",
				   "cannot open '%s' for a Landlock rule: %m", path);
	}
	/* Directory-only rights on a file are refused by the kernel (EINVAL). */
	if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
		pb.allowed_access &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |
			LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
			LANDLOCK_ACCESS_FS_IOCTL_DEV;
	pb.parent_fd = fd;
	if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
		return ward__error(err, -errno, "landlock",
				   "cannot add a Landlock rule for '%s': %m", path);
	return 0;
}

int ward__landlock_build(const struct ward_policy *p, int abi, bool restrict_net,
			 int *ret_ruleset_fd, struct ward_error *err)
{
	struct ward_ruleset_attr attr = {0};
	size_t attr_size;
	uint64_t handled;
	int fd, r;

	*ret_ruleset_fd = -1;
	if (abi < 1)
		return 0;
	/* Full access everywhere is no ruleset at all. */
	if (p->mode == WARD_MODE_DANGER_FULL_ACCESS)
		return 0;

	handled = fs_rights(abi);
	attr.handled_access_fs = handled;
	attr_size = sizeof(uint64_t);
	if (abi >= 4) {
		/* Without a network namespace (fallback), TCP is refused by handling it with no rule. */
		if (restrict_net)
			attr.handled_access_net = WARD_LANDLOCK_ACCESS_NET_BIND_TCP |
				WARD_LANDLOCK_ACCESS_NET_CONNECT_TCP;
		attr_size = 2 * sizeof(uint64_t);
	}
	if (abi >= 6) {
		/*
		 * Scoping (Linux 6.12): no signal to a process outside the sandbox's
		 * domain, no connect to an abstract unix socket created outside it.
		 */
		attr.scoped = WARD_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | WARD_LANDLOCK_SCOPE_SIGNAL;
		attr_size = sizeof(attr);
	}
	fd = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
	if (fd < 0) {
		ward__error(err, -errno, "landlock",
			    "cannot create a Landlock ruleset (ABI %d): %m", abi);
		ward__error_hint(
			err, "Landlock may be disabled: check 'lsm=' on the kernel command line");
		return -errno;
	}

	/* Read and execute everywhere; the writable roots get every right. */
	r = add_path(fd, "/", FS_READ, handled, err);
	for (size_t i = 0; r >= 0 && i < p->roots.n; i++)
		r = add_path(fd, p->roots.v[i], handled, handled, err);
	/*
	 * /dev is the sandbox's own tmpfs with null, zero, full, random, urandom,
	 * tty, a private devpts and /dev/shm; in the fallback it is the host's,
	 * where write access to device nodes is still bounded by their modes.
	 */
	if (r >= 0)
		r = add_path(fd, "/dev", handled, handled, err);
	/* /proc stays read-only: most sysctls trust a host-root euid alone (see mounts.c). */
	if (r < 0) {
		close(fd);
		return r;
	}
	*ret_ruleset_fd = fd;
	return 0;
}

int ward__landlock_enforce(int ruleset_fd, struct ward_error *err)
{
	if (syscall(SYS_landlock_restrict_self, ruleset_fd, 0) < 0)
		return ward__error(err, -errno, "landlock",
				   "cannot enforce the Landlock ruleset: %m");
	return 0;
}
