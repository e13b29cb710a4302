/* SPDX-License-Identifier: MIT */
/*
 * Removing what a command planted where the guard protects (see guard.c):
 * never following a symlink, only what ward's own user owns.
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "sandbox/guard-state.h"

/*
 * Removes name under parent_fd without following symlinks; directories
 * recursively (bounded depth), made writable first (the command may have left
 * a directory mode 0555 to keep it). Only entries owned by ward's own user are
 * touched: the sandbox creates files as that user, anything else was made by
 * someone else and is not ours to delete. Returns the first error.
 */
int ward__remove_tree_at(int parent_fd, const char *name, unsigned depth)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (st.st_uid != geteuid())
		return -EPERM;
	if (!S_ISDIR(st.st_mode))
		return RET_NERRNO(unlinkat(parent_fd, name, 0));
	if (depth > 64)
		return -ELOOP;
	fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0700) < 0)
		return -errno;
	d = fdopendir(TAKE_FD(fd));
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		int q;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		q = ward__remove_tree_at(dirfd(d), de->d_name, depth + 1);
		if (q < 0 && r == 0)
			r = q;
	}
	closedir(d);
	if (r < 0)
		return r;
	return RET_NERRNO(unlinkat(parent_fd, name, AT_REMOVEDIR));
}

int ward__open_dir_nofollow(const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));

	return fd >= 0 ? (int)fd : -errno;
}
