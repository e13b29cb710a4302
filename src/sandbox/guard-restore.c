/* SPDX-License-Identifier: MIT */
/*
 * The guard's restoration (see guard.c): once every process of the sandbox is
 * dead, what the command changed at a protected path is put back as it was
 * kept, relative to the directory descriptors opened at the start, never
 * following a symlink the command planted.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/util.h"
#include "sandbox/guard-state.h"

/* ------------------------------------------------------------------ restoring */

struct restore_ctx {
	ward__guard_report_fn report;
	void *userdata;
	char *left;
	size_t left_size;
	unsigned changed;
};

static void report(struct restore_ctx *c, const char *access, const char *path)
{
	c->changed++;
	if (c->report)
		c->report(c->userdata, access, path);
}

static void left(struct restore_ctx *c, const char *path, const char *why)
{
	if (c->left && c->left_size && !c->left[0])
		snprintf(c->left, c->left_size, "%s: %s", path, why);
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Owner, mode and modification time of fd as kept; for a symlink through its parent. */
static int put_attrs(int fd, const struct node *n)
{
	struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, n->st.st_mtim};
	struct stat cur;

	if (fstat(fd, &cur) < 0)
		return -errno;
	if ((cur.st_uid != n->st.st_uid || cur.st_gid != n->st.st_gid) &&
	    fchown(fd, n->st.st_uid, n->st.st_gid) < 0)
		return -errno;
	if ((cur.st_mode & 07777) != (n->st.st_mode & 07777) &&
	    fchmod(fd, n->st.st_mode & 07777) < 0)
		return -errno;
	if (!same_time(&cur.st_mtim, &n->st.st_mtim) && futimens(fd, ts) < 0)
		return -errno;
	return 0;
}

/* Does the regular file at fd hold exactly the kept bytes? */
static bool same_content(int fd, const struct node *n)
{
	char buf[65536];
	size_t off = 0, size = (size_t)n->st.st_size;

	for (;;) {
		ssize_t k = pread(fd, buf, sizeof(buf), (off_t)off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return false;
		if (k == 0)
			return off == size;
		if (off + (size_t)k > size || memcmp(buf, n->data + off, (size_t)k) != 0)
			return false;
		off += (size_t)k;
	}
}

static int write_content(int fd, const struct node *n)
{
	int r = ward__write_all(fd, n->data, (size_t)n->st.st_size);

	if (r < 0)
		return r;
	return RET_NERRNO(ftruncate(fd, n->st.st_size));
}

static void restore_node(struct restore_ctx *c, int dirfd, const struct node *n, unsigned depth);

static void restore_regular(struct restore_ctx *c, int dirfd, const struct node *n, bool exists,
			    const struct stat *cur)
{
	_cleanup_close_ int fd = -1;
	int r;

	if (exists) {
		char proc[64];
		_cleanup_close_ int o = openat(dirfd, n->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		bool same;

		if (o < 0) {
			left(c, n->path, strerror(errno));
			return;
		}
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o);
		fd = open(proc, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
		same = fd >= 0 && cur->st_size == n->st.st_size && same_content(fd, n);
		if (same && (cur->st_mode & 07777) == (n->st.st_mode & 07777) &&
		    cur->st_uid == n->st.st_uid && cur->st_gid == n->st.st_gid &&
		    same_time(&cur->st_mtim, &n->st.st_mtim))
			return;
		if (fd >= 0)
			close(TAKE_FD(fd));
		/* Rewritten in place: needs only the file, which is ours, not its directory. */
		if (cur->st_uid == geteuid() && fchmodat(AT_FDCWD, proc, 0600, 0) < 0) {
			left(c, n->path, strerror(errno));
			return;
		}
		fd = open(proc, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0) {
			left(c, n->path, strerror(errno));
			return;
		}
		r = same ? 0 : write_content(fd, n);
		if (r >= 0)
			r = put_attrs(fd, n);
		if (r < 0)
			left(c, n->path, strerror(-r));
		report(c, "write", n->path);
		return;
	}
	fd = openat(dirfd, n->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
		    0600);
	if (fd < 0) {
		left(c, n->path, strerror(errno));
		return;
	}
	r = write_content(fd, n);
	if (r >= 0)
		r = put_attrs(fd, n);
	if (r < 0)
		left(c, n->path, strerror(-r));
	report(c, "delete", n->path);
}

static bool kept(const struct node *n, const char *name)
{
	size_t lo = 0, hi = n->n_kids;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int k = strcmp(n->kids[mid].name, name);

		if (k == 0)
			return true;
		if (k < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static void restore_dir(struct restore_ctx *c, int dirfd, const struct node *n, bool exists,
			unsigned depth)
{
	_cleanup_close_ int fd = -1;
	DIR *d;
	struct dirent *de;
	int r, dfd;

	if (!exists) {
		if (mkdirat(dirfd, n->name, 0700) < 0) {
			left(c, n->path, strerror(errno));
			return;
		}
		report(c, "delete", n->path);
	}
	fd = openat(dirfd, n->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		left(c, n->path, strerror(errno));
		return;
	}
	{
		struct stat cur;

		/* A directory left read-only (ours) is opened up while its entries are put back. */
		if (fstat(fd, &cur) == 0 && cur.st_uid == geteuid() &&
		    (cur.st_mode & 0700) != 0700 && fchmod(fd, 0700) < 0)
			left(c, n->path, strerror(errno));
	}
	/* Entries that were not there: removed (never followed, only ours). */
	dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		left(c, n->path, strerror(errno));
		return;
	}
	while ((de = readdir(d))) {
		_cleanup_free_ char *p = NULL;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || kept(n, de->d_name))
			continue;
		p = ward__path_join(n->path, de->d_name);
		r = ward__remove_tree_at(fd, de->d_name, 0);
		if (r < 0)
			left(c, p ? p : n->path,
			     r == -EPERM ? "not owned by ward's user" : strerror(-r));
		report(c, "create", p ? p : n->path);
	}
	closedir(d);
	for (size_t i = 0; i < n->n_kids; i++)
		restore_node(c, fd, &n->kids[i], depth + 1);
	/* Last: the directory's own mode (maybe read-only), owner and time, after its entries. */
	r = put_attrs(fd, n);
	if (r < 0)
		left(c, n->path, strerror(-r));
}

static void restore_node(struct restore_ctx *c, int dirfd, const struct node *n, unsigned depth)
{
	struct stat cur;
	bool exists;
	int r;

	if (depth > WARD_GUARD_MAX_DEPTH + 1)
		return;
	exists = fstatat(dirfd, n->name, &cur, AT_SYMLINK_NOFOLLOW) == 0;
	if (!exists && errno != ENOENT) {
		left(c, n->path, strerror(errno));
		return;
	}
	if (exists && (cur.st_mode & S_IFMT) != (n->st.st_mode & S_IFMT)) {
		/* Replaced by something else: what the command put there goes first. */
		r = ward__remove_tree_at(dirfd, n->name, 0);
		if (r < 0) {
			left(c, n->path, r == -EPERM ? "not owned by ward's user" : strerror(-r));
			return;
		}
		exists = false;
	}
	/*
	 * More names for the file than it had: the command linked it elsewhere
	 * (nothing is mounted here, so a link can leave the protected path), and
	 * through that name a later run would write the protected file, guarded
	 * or not. The protected name gets a copy of its own, a new inode; the
	 * other name keeps the old one, which protects nothing any more.
	 */
	if (exists && S_ISREG(cur.st_mode) && S_ISREG(n->st.st_mode) &&
	    cur.st_nlink > n->st.st_nlink) {
		r = ward__remove_tree_at(dirfd, n->name, 0);
		if (r < 0) {
			left(c, n->path, r == -EPERM ? "not owned by ward's user" : strerror(-r));
			return;
		}
		exists = false;
	}
	switch (n->st.st_mode & S_IFMT) {
	case S_IFREG:
		restore_regular(c, dirfd, n, exists, &cur);
		return;
	case S_IFDIR:
		if (exists &&
		    ((cur.st_mode & 07777) != (n->st.st_mode & 07777) ||
		     cur.st_uid != n->st.st_uid || cur.st_gid != n->st.st_gid))
			report(c, "write", n->path);
		restore_dir(c, dirfd, n, exists, depth);
		return;
	case S_IFLNK: {
		char buf[PATH_MAX];
		ssize_t k = exists ? readlinkat(dirfd, n->name, buf, sizeof(buf) - 1) : -1;
		struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, n->st.st_mtim};

		if (k >= 0) {
			buf[k] = '\0';
			if (strcmp(buf, n->data) == 0 && cur.st_uid == n->st.st_uid)
				return;
			if (unlinkat(dirfd, n->name, 0) < 0) {
				left(c, n->path, strerror(errno));
				return;
			}
		}
		if (symlinkat(n->data, dirfd, n->name) < 0) {
			left(c, n->path, strerror(errno));
			return;
		}
		/* A link's owner and time are cosmetic to git and agents: best effort. */
		if (fchownat(dirfd, n->name, n->st.st_uid, n->st.st_gid, AT_SYMLINK_NOFOLLOW) < 0 ||
		    utimensat(dirfd, n->name, ts, AT_SYMLINK_NOFOLLOW) < 0)
			left(c, n->path, strerror(errno));
		report(c, exists ? "write" : "delete", n->path);
		return;
	}
	case S_IFIFO:
		if (exists && (cur.st_mode & 07777) == (n->st.st_mode & 07777))
			return;
		if (!exists && mkfifoat(dirfd, n->name, 0600) < 0) {
			left(c, n->path, strerror(errno));
			return;
		}
		if (fchmodat(dirfd, n->name, n->st.st_mode & 07777, 0) < 0)
			left(c, n->path, strerror(errno));
		report(c, exists ? "write" : "delete", n->path);
		return;
	default:
		if (!exists || cur.st_ino != n->st.st_ino || cur.st_dev != n->st.st_dev) {
			left(c, n->path, "a socket or device cannot be made again");
			report(c, exists ? "write" : "delete", n->path);
		}
		return;
	}
}

/* A pinned directory must be at its name again: whatever replaced it goes, it comes back. */
static void restore_name(struct restore_ctx *c, struct target *t)
{
	char link[64], cur[PATH_MAX], dir[PATH_MAX];
	struct stat st;
	const char *base;
	ssize_t k;
	_cleanup_close_ int dfd = -1;
	int r;

	if (fstatat(t->parent_fd, t->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_dev == t->self_st.st_dev && st.st_ino == t->self_st.st_ino)
		return;
	report(c, "rename", t->path);
	r = ward__remove_tree_at(t->parent_fd, t->name, 0);
	if (r < 0) {
		left(c, t->path, r == -EPERM ? "not owned by ward's user" : strerror(-r));
		return;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", t->self_fd);
	k = readlink(link, cur, sizeof(cur) - 1);
	if (k <= 0) {
		left(c, t->path, "cannot find where the directory went");
		return;
	}
	cur[k] = '\0';
	if (cur[0] != '/' || strstr(cur, " (deleted)")) {
		left(c, t->path, "the directory was removed");
		return;
	}
	if (!ward__path_split(cur, dir, sizeof(dir), &base)) {
		left(c, t->path, "cannot find where the directory went");
		return;
	}
	dfd = ward__open_dir_nofollow(dir);
	if (dfd < 0 || fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    st.st_dev != t->self_st.st_dev || st.st_ino != t->self_st.st_ino) {
		left(c, t->path, "cannot find where the directory went");
		return;
	}
	if (renameat2(dfd, base, t->parent_fd, t->name, RENAME_NOREPLACE) < 0)
		left(c, t->path, strerror(errno));
}

int ward__guard_restore(struct ward__guard *g, ward__guard_report_fn fn, void *userdata,
			char *left_buf, size_t left_size)
{
	struct restore_ctx c = {fn, userdata, left_buf, left_size, 0};
	char drain[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	if (!g)
		return 0;
	/* Outer pins first: a renamed parent is back before what lies in it is looked at. */
	for (size_t depth = 0; depth < PATH_MAX / 2; depth++) {
		bool any = false;

		for (size_t i = 0; i < g->n; i++) {
			size_t d = ward__path_depth(g->t[i].path);

			if (d > depth)
				any = true;
			if (g->t[i].kind == T_NAME && d == depth)
				restore_name(&c, &g->t[i]);
		}
		if (!any)
			break;
	}
	for (size_t i = 0; i < g->n; i++) {
		struct target *t = &g->t[i];
		struct stat st;
		int r;

		if (t->kind == T_SNAPSHOT) {
			restore_node(&c, t->parent_fd, &t->root, 0);
		} else if (t->kind == T_MISSING &&
			   fstatat(t->parent_fd, t->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			r = ward__remove_tree_at(t->parent_fd, t->name, 0);
			if (r < 0)
				left(&c, t->path,
				     r == -EPERM ? "not owned by ward's user" : strerror(-r));
			report(&c, "create", t->path);
		}
	}
	/* Autorun names the command planted, wherever the scan's directories are. */
	c.changed += ward__guard_autorun_restore(g, fn, userdata, left_buf, left_size);
	/*
	 * Our own repairs raised events too: they are not the command's. A shared
	 * instance is not drained (the events of other guards are in it): once a
	 * repair was made the guard is tripped, and a tripped guard ignores its
	 * events.
	 */
	if (g->fd >= 0)
		while (read(g->fd, drain, sizeof(drain)) > 0)
			;
	if (c.changed)
		g->tripped = true;
	return (int)c.changed;
}
