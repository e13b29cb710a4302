/* SPDX-License-Identifier: MIT */
/*
 * The filesystem operations (see fsimpl.h), with Codex's semantics (checked
 * against its 0.169 binary, docs/protocol.md "Filesystem methods") and
 * ward's rules on top: nothing blocks, nothing but a regular file is ever
 * opened for reading or writing, recursive operations never follow a
 * symlink inside the tree they work on.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "execserver/fsimpl.h"
#include "execserver/fsreq.h"
#include "execserver/fswalk.h"
#include "execserver/fswire.h"

/* ------------------------------------------------------------ results */

static void set_result(struct ward__xfs_res *res, json_t *result)
{
	if (!result) {
		ward__xfs_res_errno(res, ENOMEM);
		return;
	}
	res->code = 0;
	res->result = result;
}

/* "path `<path>` is not a file" (the path as Rust displays it: lossy UTF-8). */
static void fail_not_a_file(struct ward__xfs_res *res, const char *path)
{
	_cleanup_free_ char *shown = ward__xfs_lossy_utf8(path, strlen(path), NULL);

	ward__xfs_res_fail(res, WARD_XFS_INVALID_REQUEST, "path `%s` is not a file",
			   shown ? shown : "?");
}

/* ------------------------------------------------------------ opening */

static void closep_dir(DIR **d)
{
	if (*d)
		closedir(*d);
}

/*
 * Reopens an O_PATH descriptor with real access through its /proc/self/fd
 * link: the same inode, with no second lookup of the path that could land
 * on something swapped in meanwhile.
 */
static int reopen(int pfd, int flags)
{
	char p[64];
	int fd;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", pfd);
	fd = open(p, flags | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ENOENT && access("/proc/self/fd", F_OK) < 0)
		/* Without /proc ward cannot reopen safely; say so rather than guess. */
		return -ENOSYS;
	return fd < 0 ? -errno : fd;
}

/* O_PATH open of name at dirfd (following a final symlink or not), with its stat. */
static int open_path(int dirfd, const char *name, bool follow, struct stat *st)
{
	int fd = openat(dirfd, name, O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW)), r;

	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/*
 * The directory holding path's last component, reached without following a
 * symlink in any component (each opened O_PATH|O_NOFOLLOW|O_DIRECTORY, so a
 * symlink or a file gives ENOTDIR, as with Codex). O_PATH also crosses
 * directories that can be searched but not read. *ret_name points into path
 * at the last component ("" for "/").
 */
static int open_parent_nofollow(const char *path, const char **ret_name)
{
	const char *p = path + 1;
	int dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return -errno;
	for (;;) {
		const char *slash = strchr(p, '/');
		char comp[NAME_MAX + 1];
		size_t n;
		int nfd;

		if (!slash) {
			*ret_name = p;
			return dfd;
		}
		n = (size_t)(slash - p);
		if (n > NAME_MAX) {
			close(dfd);
			return -ENAMETOOLONG;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		nfd = openat(dfd, comp, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
		close(dfd);
		if (nfd < 0)
			return -errno;
		dfd = nfd;
		p = slash + 1;
	}
}

/*
 * The file at path opened for reading, if it is a regular file: O_PATH
 * first, so that a FIFO (no writer needed to block forever), a device (its
 * driver's open may act, a watchdog arms itself) or a socket is never
 * opened. Returns the fd, or -1 with res set.
 */
static int open_read(const char *path, bool follow, struct stat *st, struct ward__xfs_res *res)
{
	_cleanup_close_ int dfd = -1, pfd = -1;
	const char *name = path;
	int fd;

	if (follow) {
		pfd = open_path(AT_FDCWD, path, true, st);
	} else {
		dfd = open_parent_nofollow(path, &name);
		if (dfd < 0) {
			ward__xfs_res_errno(res, dfd);
			return -1;
		}
		if (!name[0]) {
			ward__xfs_res_fail(res, WARD_XFS_INVALID_REQUEST,
					   "path must name an entry");
			return -1;
		}
		pfd = open_path(dfd, name, false, st);
	}
	if (pfd < 0) {
		ward__xfs_res_errno(res, pfd);
		return -1;
	}
	if (S_ISLNK(st->st_mode)) {
		/* Codex opens with O_NOFOLLOW: a final symlink is ELOOP. */
		ward__xfs_res_errno(res, ELOOP);
		return -1;
	}
	if (S_ISSOCK(st->st_mode)) {
		/* What open() of a socket gives, without opening it. */
		ward__xfs_res_errno(res, ENXIO);
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		if (follow)
			fail_not_a_file(res, path);
		else
			ward__xfs_res_fail(res, WARD_XFS_INVALID_REQUEST,
					   "path is not a regular file");
		return -1;
	}
	fd = reopen(pfd, O_RDONLY);
	if (fd < 0) {
		ward__xfs_res_errno(res, fd);
		return -1;
	}
	return fd;
}

/* A new path for a symlink's target: absolute as it is, relative to the link's directory. */
static char *link_target_path(int pfd, const char *cur)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(pfd, "", target, sizeof(target));
	const char *slash;
	char *out;

	if (n < 0)
		return NULL;
	if ((size_t)n >= sizeof(target)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	target[n] = '\0';
	if (target[0] == '/')
		return strdup(target);
	slash = strrchr(cur, '/');
	if (asprintf(&out, "%.*s/%s", (int)(slash ? slash - cur : 0), cur, target) < 0)
		return NULL;
	if (strlen(out) >= PATH_MAX) {
		free(out);
		errno = ENAMETOOLONG;
		return NULL;
	}
	return out;
}

/*
 * Opens path for writing, creating it (mode, before the umask) or truncating
 * it, as open(O_WRONLY|O_CREAT|O_TRUNC) would, but only ever a regular
 * file: a new file is made with O_EXCL (nothing existing can be opened that
 * way); an existing entry is looked at through O_PATH first and reopened
 * only if it is a regular file. A final symlink is followed by reading it
 * and going round again (at most 40 times, as the kernel), so a link that
 * dangles is created through, as Codex does, and a link swapped meanwhile is
 * looked at again. With nofollow, no component may be a symlink.
 *
 * same (optional): when the existing file is that inode, nothing is opened
 * or truncated and *ret_same is set (fs/copy onto itself).
 */
static int open_write(const char *path, bool follow, mode_t mode, const struct stat *same,
		      bool *ret_same, struct ward__xfs_res *res)
{
	_cleanup_free_ char *cur = NULL;
	_cleanup_close_ int dfd = -1;
	const char *name;
	int dir = AT_FDCWD;

	if (ret_same)
		*ret_same = false;
	if (follow) {
		cur = strdup(path);
		if (!cur) {
			ward__xfs_res_errno(res, ENOMEM);
			return -1;
		}
		name = cur;
	} else {
		dfd = open_parent_nofollow(path, &name);
		if (dfd < 0) {
			ward__xfs_res_errno(res, dfd);
			return -1;
		}
		if (!name[0]) {
			ward__xfs_res_fail(res, WARD_XFS_INVALID_REQUEST,
					   "path must name an entry");
			return -1;
		}
		dir = dfd;
	}
	for (int hops = 0;; hops++) {
		_cleanup_close_ int pfd = -1;
		struct stat st;
		int fd;

		if (hops > 40) {
			ward__xfs_res_errno(res, ELOOP);
			return -1;
		}
		fd = openat(dir, name,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST) {
			ward__xfs_res_errno(res, errno);
			return -1;
		}
		pfd = open_path(dir, name, false, &st);
		if (pfd == -ENOENT)
			continue; /* removed meanwhile: create it */
		if (pfd < 0) {
			ward__xfs_res_errno(res, pfd);
			return -1;
		}
		if (S_ISLNK(st.st_mode)) {
			char *next;

			if (!follow) {
				ward__xfs_res_errno(res, ELOOP);
				return -1;
			}
			next = link_target_path(pfd, cur);
			if (!next) {
				ward__xfs_res_errno(res, errno);
				return -1;
			}
			free(cur);
			cur = next;
			name = cur;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			ward__xfs_res_errno(res, EISDIR);
			return -1;
		}
		if (S_ISSOCK(st.st_mode)) {
			ward__xfs_res_errno(res, ENXIO);
			return -1;
		}
		if (!S_ISREG(st.st_mode)) {
			/* A FIFO would block a writer without reader; a device would run its driver. */
			if (follow)
				fail_not_a_file(res, path);
			else
				ward__xfs_res_fail(res, WARD_XFS_INVALID_REQUEST,
						   "path is not a regular file");
			return -1;
		}
		if (same && st.st_dev == same->st_dev && st.st_ino == same->st_ino) {
			*ret_same = true;
			return -1;
		}
		fd = reopen(pfd, O_WRONLY | O_TRUNC);
		if (fd < 0) {
			ward__xfs_res_errno(res, fd);
			return -1;
		}
		return fd;
	}
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, MIN(n, (size_t)1 << 30));

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* ------------------------------------------------------------ read, write */

static void op_read_file(const struct ward__xfs_req *rq, struct ward__xfs_res *res)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ uint8_t *buf = NULL;
	size_t cap, len = 0;
	struct stat st;

	fd = open_read(rq->path, rq->follow, &st, res);
	if (fd < 0)
		return;
	if (st.st_size > (off_t)WARD_XFS_READ_MAX)
		goto too_large;
	/* st_size is a hint (files in /proc say 0): read to EOF, one byte past the cap at most. */
	cap = (size_t)st.st_size + 1;
	buf = malloc(cap + 1);
	if (!buf) {
		ward__xfs_res_errno(res, ENOMEM);
		return;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			size_t ncap = MIN(cap * 2 + 4096, WARD_XFS_READ_MAX + 1);
			uint8_t *nb;

			if (ncap <= cap)
				goto too_large;
			nb = realloc(buf, ncap + 1);
			if (!nb) {
				ward__xfs_res_errno(res, ENOMEM);
				return;
			}
			buf = nb;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ward__xfs_res_errno(res, errno);
			return;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > WARD_XFS_READ_MAX)
			goto too_large;
	}
	res->code = 0;
	res->data = TAKE_PTR(buf);
	res->len = len;
	return;
too_large:
	ward__xfs_res_fail(res, WARD_XFS_INVALID_REQUEST,
			   "file is too large to read: limit is %zu bytes (use fs/open and "
			   "fs/readBlock)",
			   WARD_XFS_READ_MAX);
}

static void op_write_file(const struct ward__xfs_req *rq, struct ward__xfs_res *res)
{
	_cleanup_close_ int fd = -1;
	int r;

	fd = open_write(rq->path, rq->follow, 0666, NULL, NULL, res);
	if (fd < 0)
		return;
	r = write_all(fd, rq->data, rq->len);
	if (r < 0) {
		ward__xfs_res_errno(res, r);
		return;
	}
	set_result(res, json_object());
}

static void op_open(const struct ward__xfs_req *rq, struct ward__xfs_res *res)
{
	struct stat st;
	int fd;

	/* Codex's fs/open follows symlinks (it has no followSymlinks). */
	if (rq->replace)
		fd = open_write(rq->path, true, 0666, NULL, NULL, res);
	else
		fd = open_read(rq->path, true, &st, res);
	if (fd < 0)
		return;
	res->code = 0;
	res->fd = fd;
}

/* ------------------------------------------------------------ directories */

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Rust's create_dir_all: mkdir, and on ENOENT the parents first; an existing directory is fine. */
static int mkdir_all(char *path, unsigned depth)
{
	char *slash;
	int r;

	if (mkdir(path, 0777) == 0)
		return 0;
	r = -errno;
	if (r != -ENOENT)
		return is_dir(path) ? 0 : r;
	slash = strrchr(path, '/');
	if (!slash || depth > PATH_MAX)
		return r;
	if (slash != path) {
		*slash = '\0';
		r = mkdir_all(path, depth + 1);
		*slash = '/';
		if (r < 0)
			return r;
	}
	if (mkdir(path, 0777) == 0)
		return 0;
	r = -errno;
	return is_dir(path) ? 0 : r;
}

/* Creates every missing component without following a symlink in any (mkdirat + O_NOFOLLOW). */
static int mkdir_all_nofollow(const char *path)
{
	const char *p = path + 1;
	int dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return -errno;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		char comp[NAME_MAX + 1];
		int nfd;

		if (n > NAME_MAX) {
			close(dfd);
			return -ENAMETOOLONG;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		nfd = openat(dfd, comp, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
		if (nfd < 0 && errno == ENOENT) {
			/* Another creator may win the race: EEXIST is fine, the open below decides. */
			if (mkdirat(dfd, comp, 0777) < 0 && errno != EEXIST) {
				int r = -errno;

				close(dfd);
				return r;
			}
			nfd = openat(dfd, comp, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
		}
		close(dfd);
		if (nfd < 0)
			return -errno;
		dfd = nfd;
		p = slash ? slash + 1 : p + n;
	}
	close(dfd);
	return 0;
}

static void op_create_directory(const struct ward__xfs_req *rq, struct ward__xfs_res *res)
{
	int r;

	if (rq->follow) {
		if (rq->recursive) {
			_cleanup_free_ char *copy = strdup(rq->path);

			r = copy ? mkdir_all(copy, 0) : -ENOMEM;
		} else {
			r = RET_NERRNO(mkdir(rq->path, 0777));
		}
	} else if (rq->recursive) {
		r = mkdir_all_nofollow(rq->path);
	} else {
		_cleanup_close_ int dfd = -1;
		const char *name;

		dfd = open_parent_nofollow(rq->path, &name);
		if (dfd < 0) {
			ward__xfs_res_errno(res, dfd);
			return;
		}
		if (!name[0]) {
			ward__xfs_res_fail(res, WARD_XFS_INTERNAL, "directory already exists");
			return;
		}
		r = RET_NERRNO(mkdirat(dfd, name, 0777));
	}
	if (r < 0) {
		ward__xfs_res_errno(res, r);
		return;
	}
	set_result(res, json_object());
}

/* ------------------------------------------------------------ metadata */

static int64_t ts_ms(const struct statx_timestamp *t)
{
	/* Before 1970 is 0, as Codex's conversion of a SystemTime. */
	if (t->tv_sec < 0)
		return 0;
	return t->tv_sec * 1000 + t->tv_nsec / 1000000;
}

static void op_get_metadata(const struct ward__xfs_req *rq, struct ward__xfs_res *res)
{
	const unsigned mask = STATX_BASIC_STATS | STATX_BTIME;
	struct statx st;
	bool link = false;
	int r;

	if (rq->follow) {
		r = RET_NERRNO(statx(AT_FDCWD, rq->path, AT_SYMLINK_NOFOLLOW, mask, &st));
		if (r >= 0 && S_ISLNK(st.stx_mode)) {
			link = true;
			r = RET_NERRNO(statx(AT_FDCWD, rq->path, 0, mask, &st));
		}
	} else {
		_cleanup_close_ int dfd = -1;
		const char *name;

		dfd = open_parent_nofollow(rq->path, &name);
		if (dfd < 0) {
			ward__xfs_res_errno(res, dfd);
			return;
		}
		r = RET_NERRNO(statx(dfd, name, AT_SYMLINK_NOFOLLOW | (name[0] ? 0 : AT_EMPTY_PATH),
				     mask, &st));
		if (r >= 0 && S_ISLNK(st.stx_mode)) {
			ward__xfs_res_fail(res, WARD_XFS_INVALID_REQUEST,
					   "path contains a symbolic link");
			return;
		}
	}
	if (r < 0) {
		ward__xfs_res_errno(res, r);
		return;
	}
	set_result(res,
		   json_pack("{s:b, s:b, s:b, s:I, s:I, s:I}", "isDirectory", S_ISDIR(st.stx_mode),
			     "isFile", S_ISREG(st.stx_mode), "isSymlink", link, "size",
			     (json_int_t)MIN(st.stx_size, (uint64_t)INT64_MAX), "createdAtMs",
			     (json_int_t)((st.stx_mask & STATX_BTIME) ? ts_ms(&st.stx_btime) : 0),
			     "modifiedAtMs", (json_int_t)ts_ms(&st.stx_mtime)));
}

static void op_canonicalize(const struct ward__xfs_req *rq, struct ward__xfs_res *res)
{
	_cleanup_free_ char *real = realpath(rq->path, NULL), *uri = NULL;

	if (!real) {
		ward__xfs_res_errno(res, errno);
		return;
	}
	uri = ward__xfs_path_to_uri(real);
	set_result(res, uri ? json_pack("{s:s}", "path", uri) : NULL);
}

/* ------------------------------------------------------------ listing */

/* What a directory entry is, following a symlink (false: omit it, as a dangling link). */
static bool entry_type(int dfd, const struct dirent *de, bool follow_links, mode_t *ret)
{
	struct stat st;

	switch (de->d_type) {
	case DT_DIR:
		*ret = S_IFDIR;
		return true;
	case DT_REG:
		*ret = S_IFREG;
		return true;
	case DT_FIFO:
		*ret = S_IFIFO;
		return true;
	case DT_SOCK:
		*ret = S_IFSOCK;
		return true;
	case DT_CHR:
		*ret = S_IFCHR;
		return true;
	case DT_BLK:
		*ret = S_IFBLK;
		return true;
	default:
		break;
	}
	if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	if (S_ISLNK(st.st_mode) && follow_links && fstatat(dfd, de->d_name, &st, 0) < 0)
		return false;
	*ret = st.st_mode & S_IFMT;
	return true;
}

/* Bytes a file name takes in the answer, escapes included. */
static size_t json_name_cost(const char *s)
{
	size_t n = 0;

	for (; *s; s++) {
		uint8_t c = (uint8_t)*s;

		n += c < 0x20 ? 6 : c == '"' || c == '\\' ? 2 : c >= 0x80 ? 3 : 1;
	}
	return n;
}

static void op_read_directory(const struct ward__xfs_req *rq, struct ward__xfs_res *res)
{
	__attribute__((cleanup(closep_dir))) DIR *d = NULL;
	json_t *entries = json_array(), *result;
	size_t n = 0, bytes = 0;
	struct dirent *de;

	if (!entries) {
		ward__xfs_res_errno(res, ENOMEM);
		return;
	}
	result = json_pack("{s:o}", "entries", entries);
	if (!result) {
		ward__xfs_res_errno(res, ENOMEM);
		return;
	}
	d = opendir(rq->path);
	if (!d) {
		json_decref(result);
		ward__xfs_res_errno(res, errno);
		return;
	}
	for (;;) {
		mode_t type;
		_cleanup_free_ char *name = NULL;
		json_t *e;

		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno) {
				json_decref(result);
				ward__xfs_res_errno(res, errno);
				return;
			}
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* Symlinks are followed; one that leads nowhere is left out (as Codex). */
		if (!entry_type(dirfd(d), de, true, &type))
			continue;
		n++;
		if (n > WARD_XFS_READDIR_MAX)
			continue; /* counted for the message, not kept */
		bytes += json_name_cost(de->d_name) + 48;
		if (bytes > WARD_XFS_READDIR_BYTES) {
			json_decref(result);
			ward__xfs_res_fail(res, WARD_XFS_INTERNAL,
					   "fs/readDirectory answer exceeds %zu bytes",
					   WARD_XFS_READDIR_BYTES);
			return;
		}
		name = ward__xfs_lossy_utf8(de->d_name, strlen(de->d_name), NULL);
		e = name ? json_pack("{s:s, s:b, s:b}", "fileName", name, "isDirectory",
				     S_ISDIR(type), "isFile", S_ISREG(type))
			 : NULL;
		if (!e || json_array_append_new(entries, e) < 0) {
			json_decref(result);
			ward__xfs_res_errno(res, ENOMEM);
			return;
		}
	}
	if (n > WARD_XFS_READDIR_MAX) {
		json_decref(result);
		ward__xfs_res_fail(res, WARD_XFS_INTERNAL,
				   "fs/readDirectory returned %zu entries; limit is %u", n,
				   WARD_XFS_READDIR_MAX);
		return;
	}
	set_result(res, result);
}

/* ------------------------------------------------------------ remove */

/*
 * Empties the directory dfd (taken), fd-relative all the way down: entries
 * are looked at with AT_SYMLINK_NOFOLLOW and subdirectories opened with
 * O_NOFOLLOW, so a symlink inside the tree is removed, never followed (the
 * escape of CVE-2022-21658), however it is swapped meanwhile.
 */
static int empty_dir(int dfd, unsigned depth)
{
	__attribute__((cleanup(closep_dir))) DIR *d = NULL;
	struct dirent *de;
	int r = 0;

	if (depth > WARD_XFS_TREE_DEPTH) {
		close(dfd);
		return -ELOOP;
	}
	d = fdopendir(dfd);
	if (!d) {
		r = -errno;
		close(dfd);
		return r;
	}
	/* A few rounds: entries removed while reading may hide others from readdir. */
	for (int round = 0; round < 3; round++) {
		bool any = false;

		rewinddir(d);
		for (;;) {
			errno = 0;
			de = readdir(d);
			if (!de) {
				if (errno)
					return -errno;
				break;
			}
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			any = true;
			if (unlinkat(dirfd(d), de->d_name, 0) == 0 || errno == ENOENT)
				continue;
			if (errno != EISDIR && errno != EPERM)
				return -errno;
			/* A directory: empty it, then remove it. */
			{
				int sub = openat(dirfd(d), de->d_name,
						 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

				if (sub < 0) {
					if (errno == ENOENT)
						continue;
					return -errno;
				}
				r = empty_dir(sub, depth + 1);
				if (r < 0)
					return r;
				if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0 &&
				    errno != ENOENT)
					return -errno;
			}
		}
		if (!any)
			break;
	}
	return 0;
}

/* Removes the directory name at dirfd and everything in it. */
static int remove_tree(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = empty_dir(fd, 0);
	if (r < 0)
		return r;
	return RET_NERRNO(unlinkat(dirfd, name, AT_REMOVEDIR));
}

static void op_remove(const struct ward__xfs_req *rq, struct ward__xfs_res *res)
{
	_cleanup_close_ int dfd = -1;
	const char *name = rq->path;
	int dir = AT_FDCWD;
	struct stat st;
	int r;

	if (!rq->follow) {
		dfd = open_parent_nofollow(rq->path, &name);
		if (dfd == -ENOENT && rq->force)
			goto done;
		if (dfd < 0) {
			ward__xfs_res_errno(res, dfd);
			return;
		}
		if (!name[0]) {
			ward__xfs_res_fail(res, WARD_XFS_INVALID_REQUEST,
					   "path must name an entry");
			return;
		}
		dir = dfd;
	}
	/* The entry itself: a symlink is removed, never its target. */
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		r = -errno;
		if (r == -ENOENT && rq->force)
			goto done;
		ward__xfs_res_errno(res, r);
		return;
	}
	if (S_ISLNK(st.st_mode) && !rq->follow) {
		ward__xfs_res_fail(res, WARD_XFS_INVALID_REQUEST, "path contains a symbolic link");
		return;
	}
	if (S_ISDIR(st.st_mode))
		r = rq->recursive ? remove_tree(dir, name)
				  : RET_NERRNO(unlinkat(dir, name, AT_REMOVEDIR));
	else
		r = RET_NERRNO(unlinkat(dir, name, 0));
	if (r == -ENOENT && rq->force)
		r = 0;
	if (r < 0) {
		ward__xfs_res_errno(res, r);
		return;
	}
done:
	set_result(res, json_object());
}

/* ------------------------------------------------------------ copy */

/* Copies the bytes of in to out (copy_file_range, or read and write where it cannot). */
static int copy_data(int in, int out)
{
	static uint8_t buf[1 << 16];
	bool plain = false;

	for (;;) {
		ssize_t n;

		if (!plain) {
			n = copy_file_range(in, NULL, out, NULL, (size_t)1 << 30, 0);
			if (n < 0 &&
			    (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
			     errno == EOPNOTSUPP || errno == EBADF)) {
				plain = true;
				continue;
			}
		} else {
			n = read(in, buf, sizeof(buf));
			if (n > 0) {
				int r = write_all(out, buf, (size_t)n);

				if (r < 0)
					return r;
			}
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
	}
}

/*
 * Copies the regular file (already opened, its stat in st) to dest: created
 * or truncated like fs/writeFile, with the source's permission bits (not its
 * set-id or sticky bits: a copy must not mint a set-uid file). A copy onto
 * the same file leaves it as it is (Codex truncates it to nothing).
 */
static int copy_file_to(int in, const struct stat *st, const char *dest, int dest_dir,
			const char *dest_name, struct ward__xfs_res *res)
{
	_cleanup_close_ int out = -1;
	bool same = false;
	int r;

	if (dest_dir >= 0) {
		/* Inside a tree: never through a symlink (O_NOFOLLOW relative to the directory). */
		struct stat dst;

		out = openat(dest_dir, dest_name,
			     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
			     st->st_mode & 0777);
		if (out < 0 && errno == EEXIST) {
			_cleanup_close_ int pfd = open_path(dest_dir, dest_name, false, &dst);

			if (pfd < 0)
				return pfd;
			if (S_ISLNK(dst.st_mode))
				return -ELOOP;
			if (S_ISDIR(dst.st_mode))
				return -EISDIR;
			if (!S_ISREG(dst.st_mode))
				return -ENXIO;
			if (dst.st_dev == st->st_dev && dst.st_ino == st->st_ino)
				return 0;
			out = reopen(pfd, O_WRONLY | O_TRUNC);
			if (out < 0)
				return out;
		} else if (out < 0) {
			return -errno;
		}
	} else {
		out = open_write(dest, true, st->st_mode & 0777, st, &same, res);
		if (same)
			return 0;
		if (out < 0)
			return 1; /* res is set */
	}
	r = copy_data(in, out);
	if (r >= 0)
		r = RET_NERRNO(fchmod(out, st->st_mode & 0777));
	return r;
}

static int copy_symlink_at(int sdir, const char *sname, int ddir, const char *dname)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(sdir, sname, target, sizeof(target));

	if (n < 0)
		return -errno;
	if ((size_t)n >= sizeof(target))
		return -ENAMETOOLONG;
	target[n] = '\0';
	return RET_NERRNO(symlinkat(target, ddir, dname));
}

/*
 * Copies the contents of directory sfd into directory dfd (both taken):
 * subdirectories, regular files and symlinks (as symlinks); FIFOs, sockets
 * and devices are skipped (as Codex). fd-relative with O_NOFOLLOW on both
 * sides, so neither tree is left through a symlink swapped in meanwhile.
 */
static int copy_tree(int sfd, int dfd, unsigned depth)
{
	__attribute__((cleanup(closep_dir))) DIR *d = NULL;
	_cleanup_close_ int out_dir = dfd;
	struct dirent *de;
	int r;

	if (depth > WARD_XFS_TREE_DEPTH) {
		close(sfd);
		return -ELOOP;
	}
	d = fdopendir(sfd);
	if (!d) {
		r = -errno;
		close(sfd);
		return r;
	}
	for (;;) {
		struct stat st;

		errno = 0;
		de = readdir(d);
		if (!de)
			return errno ? -errno : 0;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			return -errno;
		}
		if (S_ISDIR(st.st_mode)) {
			int s2, d2;

			if (mkdirat(out_dir, de->d_name, 0777) < 0 && errno != EEXIST)
				return -errno;
			d2 = openat(out_dir, de->d_name,
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (d2 < 0)
				return errno == ENOTDIR || errno == ELOOP ? -EEXIST : -errno;
			s2 = openat(dirfd(d), de->d_name,
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (s2 < 0) {
				r = -errno;
				close(d2);
				return r;
			}
			r = copy_tree(s2, d2, depth + 1);
			if (r < 0)
				return r;
		} else if (S_ISREG(st.st_mode)) {
			_cleanup_close_ int pfd = -1, in = -1;
			struct stat st2;

			pfd = open_path(dirfd(d), de->d_name, false, &st2);
			if (pfd < 0)
				return pfd;
			if (!S_ISREG(st2.st_mode))
				continue; /* swapped meanwhile: skipped like any special file */
			in = reopen(pfd, O_RDONLY);
			if (in < 0)
				return in;
			r = copy_file_to(in, &st2, NULL, out_dir, de->d_name, NULL);
			if (r < 0)
				return r;
		} else if (S_ISLNK(st.st_mode)) {
			r = copy_symlink_at(dirfd(d), de->d_name, out_dir, de->d_name);
			if (r < 0)
				return r;
		}
	}
}

/* Codex's resolve_existing_path: the longest existing prefix canonicalised, the rest appended. */
static char *resolve_existing(const char *path)
{
	_cleanup_free_ char *prefix = strdup(path), *real = NULL;
	const char *rest;
	char *out;

	if (!prefix)
		return NULL;
	for (;;) {
		struct stat st;
		size_t cut;

		if (stat(prefix, &st) == 0)
			break;
		cut = strlen(prefix);
		while (cut > 0 && prefix[cut - 1] != '/')
			cut--;
		if (cut <= 1) {
			prefix[1] = '\0';
			break;
		}
		prefix[cut - 1] = '\0';
	}
	real = realpath(prefix, NULL);
	if (!real)
		return NULL;
	/* What was cut off, with its leading slash ("/" as a prefix keeps the whole path). */
	rest = strcmp(prefix, "/") == 0 ? path : path + strlen(prefix);
	if (asprintf(&out, "%s%s", strcmp(real, "/") == 0 ? "" : real, rest) < 0)
		return NULL;
	if (!out[0]) {
		free(out);
		return strdup("/");
	}
	return out;
}

/* True when path is base or below it, component by component. */
static bool path_within(const char *path, const char *base)
{
	size_t n = strlen(base);

	if (strcmp(base, "/") == 0)
		return true;
	return strncmp(path, base, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static void op_copy(const struct ward__xfs_req *rq, struct ward__xfs_res *res)
{
	struct stat st;
	int r;

	if (lstat(rq->path, &st) < 0) {
		ward__xfs_res_errno(res, errno);
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		_cleanup_free_ char *src = NULL, *dst = NULL, *dcopy = NULL;
		int sfd, dfd;

		if (!rq->recursive) {
			ward__xfs_res_fail(res, WARD_XFS_INVALID_REQUEST,
					   "fs/copy requires recursive: true when sourcePath is a "
					   "directory");
			return;
		}
		src = realpath(rq->path, NULL);
		if (!src) {
			ward__xfs_res_errno(res, errno);
			return;
		}
		dst = resolve_existing(rq->path2);
		if (!dst) {
			ward__xfs_res_errno(res, errno);
			return;
		}
		if (path_within(dst, src)) {
			ward__xfs_res_fail(
				res, WARD_XFS_INVALID_REQUEST,
				"fs/copy cannot copy a directory to itself or one of its "
				"descendants");
			return;
		}
		/* The source is opened first: a tree that cannot be read leaves nothing made. */
		sfd = open(rq->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sfd < 0) {
			ward__xfs_res_errno(res, errno);
			return;
		}
		dcopy = strdup(rq->path2);
		r = dcopy ? mkdir_all(dcopy, 0) : -ENOMEM;
		if (r < 0) {
			close(sfd);
			ward__xfs_res_errno(res, r);
			return;
		}
		dfd = open(rq->path2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			r = -errno;
			close(sfd);
			ward__xfs_res_errno(res, r);
			return;
		}
		r = copy_tree(sfd, dfd, 0);
	} else if (S_ISLNK(st.st_mode)) {
		/* A symlink is copied as a symlink (its target is not read). */
		r = copy_symlink_at(AT_FDCWD, rq->path, AT_FDCWD, rq->path2);
	} else if (S_ISREG(st.st_mode)) {
		_cleanup_close_ int pfd = -1, in = -1;

		pfd = open_path(AT_FDCWD, rq->path, false, &st);
		if (pfd < 0) {
			ward__xfs_res_errno(res, pfd);
			return;
		}
		if (!S_ISREG(st.st_mode)) {
			ward__xfs_res_fail(res, WARD_XFS_INVALID_REQUEST,
					   "fs/copy only supports regular files, directories, and "
					   "symlinks");
			return;
		}
		in = reopen(pfd, O_RDONLY);
		if (in < 0) {
			ward__xfs_res_errno(res, in);
			return;
		}
		r = copy_file_to(in, &st, rq->path2, -1, NULL, res);
		if (r > 0)
			return; /* res holds the error */
	} else {
		ward__xfs_res_fail(
			res, WARD_XFS_INVALID_REQUEST,
			"fs/copy only supports regular files, directories, and symlinks");
		return;
	}
	if (r < 0) {
		ward__xfs_res_errno(res, r);
		return;
	}
	set_result(res, json_object());
}

/* ------------------------------------------------------------ dispatch */

void ward__xfs_run(const struct ward__xfs_req *rq, struct ward__xfs_res *res)
{
	ward__xfs_res_release(res);
	/* The kernel would refuse it too, but the no-follow walks go one component at a time. */
	if (!rq->path || strlen(rq->path) >= PATH_MAX ||
	    (rq->path2 && strlen(rq->path2) >= PATH_MAX)) {
		ward__xfs_res_errno(res, ENAMETOOLONG);
		return;
	}
	switch (rq->op) {
	case WARD_XFS_READ_FILE:
		op_read_file(rq, res);
		break;
	case WARD_XFS_WRITE_FILE:
		op_write_file(rq, res);
		break;
	case WARD_XFS_CREATE_DIRECTORY:
		op_create_directory(rq, res);
		break;
	case WARD_XFS_GET_METADATA:
		op_get_metadata(rq, res);
		break;
	case WARD_XFS_CANONICALIZE:
		op_canonicalize(rq, res);
		break;
	case WARD_XFS_READ_DIRECTORY:
		op_read_directory(rq, res);
		break;
	case WARD_XFS_REMOVE:
		op_remove(rq, res);
		break;
	case WARD_XFS_COPY:
		op_copy(rq, res);
		break;
	case WARD_XFS_OPEN:
		op_open(rq, res);
		break;
	case WARD_XFS_WALK:
		ward__xfs_walk(rq, res);
		break;
	case WARD_XFS_OP_MAX:
	default:
		ward__xfs_res_fail(res, WARD_XFS_INTERNAL, "unknown filesystem operation");
		break;
	}
}
