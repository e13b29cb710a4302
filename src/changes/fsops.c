/* SPDX-License-Identifier: MIT */
/*
 * The path-safe file operations of src/changes (fsops.h). Apply and undo
 * are the only code that writes the host's writable roots with the person's
 * own rights, outside any sandbox, while a sandbox may be working in the
 * same roots: every path is opened from the root's descriptor with openat2
 * (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
 * RESOLVE_NO_XDEV, Linux 5.6), every change is made relative to a directory
 * descriptor with the *at() calls and AT_SYMLINK_NOFOLLOW, and nothing is
 * ever written into an existing inode of the host (entries are replaced
 * by rename), so a hard link cannot carry a write elsewhere either.
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/util.h"
#include "changes/changes.h"
#include "changes/fsops.h"
#include "changes/sha256.h"

#define BINARY_HEAD 8000 /* bytes git looks into for a NUL */

char ward__fs_type(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG:
		return WARD_FT_REG;
	case S_IFDIR:
		return WARD_FT_DIR;
	case S_IFLNK:
		return WARD_FT_LNK;
	case S_IFIFO:
		return WARD_FT_FIFO;
	case S_IFSOCK:
		return WARD_FT_SOCK;
	default:
		return WARD_FT_OTHER;
	}
}

static int openat2_raw(int dirfd, const char *path, uint64_t flags, uint64_t mode, uint64_t resolve)
{
	struct open_how how = {.flags = flags, .mode = mode, .resolve = resolve};
	long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

int ward__fs_open_root(const char *root, uint64_t dev, uint64_t ino)
{
	struct stat st;
	int fd;

	if (!root || root[0] != '/')
		return -EINVAL;
	/* A canonical root has no symlink on its way: one now means it was swapped. */
	fd = openat2_raw(AT_FDCWD, root, O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
			 RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -errno;
	}
	if (dev != 0 && ((uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int ward__fs_open_beneath(int dirfd, const char *rel, int flags, mode_t mode)
{
	return openat2_raw(dirfd, rel, (uint64_t)flags | O_CLOEXEC, mode,
			   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
				   RESOLVE_NO_XDEV);
}

int ward__fs_open_parent(int rootfd, const char *rel, const char **ret_name)
{
	const char *slash = strrchr(rel, '/');
	char dir[PATH_MAX];

	if (!slash) {
		*ret_name = rel;
		return ward__fs_open_beneath(rootfd, ".", O_PATH | O_DIRECTORY, 0);
	}
	if ((size_t)(slash - rel) >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, rel, (size_t)(slash - rel));
	dir[slash - rel] = '\0';
	*ret_name = slash + 1;
	return ward__fs_open_beneath(rootfd, dir, O_PATH | O_DIRECTORY, 0);
}

int ward__fs_make_parent(int rootfd, const char *rel, const char **ret_name)
{
	const char *slash = strrchr(rel, '/'), *p = rel;
	int fd;

	fd = ward__fs_open_parent(rootfd, rel, ret_name);
	if (fd != -ENOENT || !slash)
		return fd;
	fd = ward__fs_open_beneath(rootfd, ".", O_PATH | O_DIRECTORY, 0);
	while (fd >= 0 && p < slash) {
		const char *e = memchr(p, '/', (size_t)(slash - p) + 1);
		char name[NAME_MAX + 1];
		size_t n = (size_t)(e - p);
		int next;

		if (n == 0 || n > NAME_MAX) {
			close(fd);
			return -EINVAL;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		if (mkdirat(fd, name, 0700) < 0 && errno != EEXIST) {
			int r = -errno;

			close(fd);
			return r;
		}
		next = ward__fs_open_beneath(fd, name, O_PATH | O_DIRECTORY, 0);
		close(fd);
		fd = next;
		p = e + 1;
	}
	if (fd >= 0)
		*ret_name = slash + 1;
	return fd;
}

static int tree_walk(int at, const char *name, struct ward__tree_stats *s, unsigned depth)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	DIR *d;
	struct dirent *e;
	int r = 0;

	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	s->files++;
	if (ward__fs_ctime_ns(&st) > s->max_ctime_ns)
		s->max_ctime_ns = ward__fs_ctime_ns(&st);
	if (S_ISREG(st.st_mode))
		s->bytes += (uint64_t)st.st_size;
	if (!S_ISDIR(st.st_mode))
		return 0;
	if (depth >= WARD_CHANGES_MAX_DEPTH)
		return -ELOOP;
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d)
		return -errno;
	fd = -1;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		r = tree_walk(dirfd(d), e->d_name, s, depth + 1);
		if (r < 0)
			break;
	}
	closedir(d);
	return r;
}

int ward__fs_tree_stats(int dirfd, const char *name, struct ward__tree_stats *ret)
{
	struct ward__tree_stats s = {0};
	int r = tree_walk(dirfd, name, &s, 0);

	if (r < 0)
		return r;
	*ret = s;
	return 0;
}

static int remove_walk(int at, const char *name, unsigned depth)
{
	struct stat st;
	int fd;
	DIR *d;
	struct dirent *e;
	int r = 0;

	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(at, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	if (depth >= WARD_CHANGES_MAX_DEPTH)
		return -ELOOP;
	/* overlayfs leaves its work directory at mode 000: the owner may change that. */
	if ((st.st_mode & 0700) != 0700)
		(void)ward__fs_chmod_at(at, name, (st.st_mode & 07777) | 0700);
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		r = remove_walk(dirfd(d), e->d_name, depth + 1);
		if (r < 0)
			break;
	}
	closedir(d);
	if (r < 0)
		return r;
	return unlinkat(at, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
}

int ward__fs_remove_at(int dirfd, const char *name)
{
	return remove_walk(dirfd, name, 0);
}

static int copy_data(int in, int out)
{
	char buf[65536];

	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)1 << 30, 0);

		if (n == 0)
			return 0;
		if (n > 0)
			continue;
		if (errno == EINTR)
			continue;
		if (errno != EXDEV && errno != EINVAL && errno != EOPNOTSUPP && errno != ENOSYS)
			return -errno;
		break;
	}
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		if (ward__write_all(out, buf, (size_t)n) < 0)
			return -errno;
	}
}

static int copy_walk(int sdir, const char *sname, int ddir, const char *dname, unsigned depth)
{
	struct stat st;
	struct timespec ts[2];
	int r;

	if (fstatat(sdir, sname, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	ts[0] = st.st_atim;
	ts[1] = st.st_mtim;
	if (S_ISREG(st.st_mode)) {
		_cleanup_close_ int in = -1, out = -1;

		in = openat(sdir, sname, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
		if (in < 0)
			return -errno;
		out = openat(ddir, dname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			     0600);
		if (out < 0)
			return -errno;
		r = copy_data(in, out);
		if (r >= 0 && fchmod(out, st.st_mode & 07777) < 0)
			r = -errno;
		if (r >= 0 && futimens(out, ts) < 0)
			r = -errno;
		if (r < 0)
			(void)unlinkat(ddir, dname, 0);
		return r;
	}
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(sdir, sname, target, sizeof(target) - 1);

		if (n < 0)
			return -errno;
		target[n] = '\0';
		if (symlinkat(target, ddir, dname) < 0)
			return -errno;
		(void)utimensat(ddir, dname, ts, AT_SYMLINK_NOFOLLOW);
		return 0;
	}
	if (S_ISFIFO(st.st_mode)) {
		if (mknodat(ddir, dname, S_IFIFO | (st.st_mode & 07777), 0) < 0)
			return -errno;
		(void)utimensat(ddir, dname, ts, AT_SYMLINK_NOFOLLOW);
		return 0;
	}
	if (S_ISDIR(st.st_mode)) {
		_cleanup_close_ int sfd = -1, dfd = -1;
		DIR *d;
		struct dirent *e;

		if (depth >= WARD_CHANGES_MAX_DEPTH)
			return -ELOOP;
		if (mkdirat(ddir, dname, 0700) < 0)
			return -errno;
		sfd = openat(sdir, sname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		dfd = openat(ddir, dname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sfd < 0 || dfd < 0)
			return -errno;
		d = fdopendir(sfd);
		if (!d)
			return -errno;
		sfd = -1;
		r = 0;
		while ((e = readdir(d))) {
			struct stat est;

			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			/* An overlayfs whiteout inside a copied tree is not part of it. */
			if (fstatat(dirfd(d), e->d_name, &est, AT_SYMLINK_NOFOLLOW) == 0 &&
			    ward__fs_whiteout(&est))
				continue;
			r = copy_walk(dirfd(d), e->d_name, dfd, e->d_name, depth + 1);
			if (r < 0)
				break;
		}
		closedir(d);
		if (r >= 0 && fchmod(dfd, st.st_mode & 07777) < 0)
			r = -errno;
		if (r >= 0 && futimens(dfd, ts) < 0)
			r = -errno;
		return r;
	}
	return -EOPNOTSUPP;
}

int ward__fs_copy_at(int sdir, const char *sname, int ddir, const char *dname)
{
	int r = copy_walk(sdir, sname, ddir, dname, 0);

	if (r < 0)
		(void)ward__fs_remove_at(ddir, dname);
	return r;
}

int ward__fs_same_content(int a, int b)
{
	char ba[32768], bb[32768];
	off_t off = 0;

	for (;;) {
		ssize_t na = pread(a, ba, sizeof(ba), off), nb;

		if (na < 0)
			return -errno;
		nb = pread(b, bb, (size_t)(na > 0 ? na : 1), off);
		if (nb < 0)
			return -errno;
		if (na != nb || memcmp(ba, bb, (size_t)na) != 0)
			return 0;
		if (na == 0)
			return 1;
		off += na;
	}
}

bool ward__fs_binary(int fd)
{
	char buf[BINARY_HEAD];
	ssize_t n = pread(fd, buf, sizeof(buf), 0);

	return n > 0 && memchr(buf, '\0', (size_t)n) != NULL;
}

int ward__fs_sha256(int fd, char out[65])
{
	struct ward__sha256 s;
	char buf[65536];
	off_t off = 0;

	ward__sha256_init(&s);
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		ward__sha256_update(&s, buf, (size_t)n);
		off += n;
	}
	ward__sha256_hex(&s, out);
	return 0;
}

bool ward__fs_opaque(int dirfd, const char *name)
{
	static const char *const names[] = {"user.overlay.opaque", "trusted.overlay.opaque"};
	_cleanup_close_ int fd =
		openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char v[4];

	if (fd < 0)
		return false;
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		ssize_t n = fgetxattr(fd, names[i], v, sizeof(v));

		if (n >= 1 && v[0] == 'y')
			return true;
	}
	return false;
}

bool ward__fs_whiteout(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0);
}

int ward__fs_sync_dir(int dirfd)
{
	_cleanup_close_ int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return fsync(fd) < 0 ? -errno : 0;
}

int ward__fs_chmod_at(int dirfd, const char *name, mode_t mode)
{
	return RET_NERRNO(fchmodat(dirfd, name, mode & 07777, AT_SYMLINK_NOFOLLOW));
}
