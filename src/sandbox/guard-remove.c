/* SPDX-License-Identifier: MIT */
/*
 * Removing what a command planted where the guard protects (see guard.c):
 * never following a symlink, only what ward's own user owns.
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "sandbox/guard-state.h"

/*
 * Gives the directory parent_fd is open on (maybe O_PATH) its owner's read,
 * write and search rights, when it is ward's user's, and says what its mode
 * was. Through /proc/self/fd: the directory already opened, never a path the
 * command could change.
 */
static bool open_up(int parent_fd, mode_t *ret_mode)
{
	char proc[64];
	struct stat st;

	if (fstat(parent_fd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & S_IRWXU) == S_IRWXU)
		return false;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", parent_fd);
	if (chmod(proc, (st.st_mode & 07777) | S_IRWXU) < 0)
		return false;
	*ret_mode = st.st_mode & 07777;
	return true;
}

static void give_back(int parent_fd, mode_t mode)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", parent_fd);
	(void)chmod(proc, mode);
}

static int remove_at(int parent_fd, const char *name, unsigned depth)
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
	/*
	 * Made readable and writable before it is opened for reading: a
	 * directory left mode 0 could not be opened at all. Through an O_PATH
	 * descriptor of it, never by name.
	 */
	{
		_cleanup_close_ int o =
			openat(parent_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		char proc[64];

		if (o < 0)
			return -errno;
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o);
		if ((st.st_mode & S_IRWXU) != S_IRWXU && chmod(proc, 0700) < 0)
			return -errno;
		fd = openat(o, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0)
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

/*
 * Removes name under parent_fd without following symlinks; directories
 * recursively (bounded depth), made writable first (the command may have left
 * a directory mode 0555 to keep it). Only entries owned by ward's own user are
 * touched: the sandbox creates files as that user, anything else was made by
 * someone else and is not ours to delete. A parent that refuses (the command
 * made its own directory 0555 or 0 around what it planted: only root could
 * unlink in it) is opened up when it is ward's user's, and given its mode
 * back. Returns the first error.
 */
int ward__remove_tree_at(int parent_fd, const char *name, unsigned depth)
{
	mode_t mode;
	int r = remove_at(parent_fd, name, depth);

	if (r == -EACCES && open_up(parent_fd, &mode)) {
		r = remove_at(parent_fd, name, depth);
		give_back(parent_fd, mode);
	}
	return r;
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
