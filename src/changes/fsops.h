/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The file operations src/changes shares (fsops.c): every one works from a
 * directory descriptor and a name, never follows a symlink, and opens host
 * paths beneath a root with openat2 so that nothing planted on the way
 * (a symlink, a mount, "..") leads out of it.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include "basic/macro.h"

/* The type letter of a mode (WARD_FT_*). */
WARD_INTERNAL char ward__fs_type(mode_t m);

/*
 * Opens root (canonical, absolute: no symlink on its way is followed) as an
 * O_PATH directory and checks it is still the directory (dev, ino) the run
 * started with: -ESTALE when it was replaced. dev 0 skips the check.
 */
WARD_INTERNAL int ward__fs_open_root(const char *root, uint64_t dev, uint64_t ino);
/*
 * openat2(dirfd, rel) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV: rel never leads out of dirfd,
 * through a symlink or onto another mount. The fd, or -errno (ELOOP for a
 * symlink, EXDEV for a mount, ENOENT).
 */
WARD_INTERNAL int ward__fs_open_beneath(int dirfd, const char *rel, int flags, mode_t mode);
/*
 * The directory holding rel, beneath rootfd (O_PATH | O_DIRECTORY): the fd,
 * or -errno; *ret_name is rel's last component.
 */
WARD_INTERNAL int ward__fs_open_parent(int rootfd, const char *rel, const char **ret_name);
/* Like open_parent, making missing directories (mode 0700) on the way. */
WARD_INTERNAL int ward__fs_make_parent(int rootfd, const char *rel, const char **ret_name);

struct ward__tree_stats {
	uint64_t files; /* entries beneath, the top one included */
	uint64_t bytes; /* of regular files */
	int64_t max_ctime_ns; /* the latest status change of any entry */
};
/* Walks name under dirfd without following symlinks (depth bounded). */
WARD_INTERNAL int ward__fs_tree_stats(int dirfd, const char *name, struct ward__tree_stats *ret);
/*
 * Removes name under dirfd and everything beneath, never following a
 * symlink; directories without write or search permission for their owner
 * (overlayfs' work directory) are made so first. For ward's own directories.
 */
WARD_INTERNAL int ward__fs_remove_at(int dirfd, const char *name);
/*
 * Copies name (a file, symlink, FIFO or directory tree) to dname under ddir,
 * which must not exist: content, mode and modification time. -EOPNOTSUPP for
 * sockets and devices.
 */
WARD_INTERNAL int ward__fs_copy_at(int sdir, const char *sname, int ddir, const char *dname);
/* Whether two open regular files hold the same bytes (1) or not (0); -errno. */
WARD_INTERNAL int ward__fs_same_content(int a, int b);
/* Whether the head of an open regular file holds a NUL (git's test for binary). */
WARD_INTERNAL bool ward__fs_binary(int fd);
/* SHA-256 of an open regular file, hex. */
WARD_INTERNAL int ward__fs_sha256(int fd, char out[65]);
/* Whether name under dirfd is an opaque overlayfs directory (user. or trusted.overlay.opaque). */
WARD_INTERNAL bool ward__fs_opaque(int dirfd, const char *name);
/* An overlayfs whiteout: a character device 0/0. */
WARD_INTERNAL bool ward__fs_whiteout(const struct stat *st);
/* fsync of a directory given by fd (O_PATH is reopened). */
WARD_INTERNAL int ward__fs_sync_dir(int dirfd);
/* Sets mode (07777 bits) on name under dirfd without following a symlink. */
WARD_INTERNAL int ward__fs_chmod_at(int dirfd, const char *name, mode_t mode);
/* A file's ctime in nanoseconds. */
static inline int64_t ward__fs_ctime_ns(const struct stat *st)
{
	return (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}
static inline int64_t ward__fs_mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}
