/* SPDX-License-Identifier: MIT */
/*
 * Reading a layer: what the command changed, from the overlay's upper
 * directory compared with the host (changes.h, ward__changes_scan).
 *
 * DESIGN: the upper directory holds every entry the command created or
 * changed (whole: metacopy is off), a whiteout (character device 0/0) for
 * every host entry it removed, and opaque directories where it removed a
 * directory and made one again. Each upper entry is compared with the
 * host's: a copied-up file that differs in nothing (opened for writing and
 * left alone) is no change; one that differs in bytes, mode, type, times
 * or link count is replaced whole. A new directory is added as one tree (a
 * single rename when applied), its files listed as members for the reader;
 * a removed one is deleted as one tree. Under an opaque directory, host
 * entries the layer does not have were removed. The host is read through
 * descriptors opened beneath the root (fsops.c): a symlink the host has on
 * the way is a conflict later, never followed now.
 *
 * Ignored or generated trees (node_modules, build outputs: the names of
 * ignored_names below, as Codex's snapshots skip them) are flagged: they are
 * listed by name and size only, and their before-images are not kept
 * unless the configuration asks (apply.c). Paths the policy protects are
 * refused here, once: the layer is not the host, so a protected name the
 * command created there (an editor's tasks file, a git hook) was never
 * refused by a mount, and it must never be applied.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "changes/changes.h"
#include "changes/fsops.h"

static const char *const ignored_names[] = {
	"node_modules",	 ".venv",	"venv",	  "env",  ".env",	 "dist",   "build",
	".pytest_cache", ".mypy_cache", ".cache", ".tox", "__pycache__", "target",
};

bool ward__changes_ignored_name(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(ignored_names); i++)
		if (strcmp(name, ignored_names[i]) == 0)
			return true;
	return false;
}

struct scan {
	struct ward__changes_run *run;
	const struct ward_policy *p;
	unsigned root;
	const char *root_path;
	size_t members;
	struct ward_error *err;
};

/* The protection that refuses rel under the root (static), or NULL. */
static const char *refused_reason(struct scan *s, const char *rel)
{
	char full[PATH_MAX];
	char *lift = NULL;
	const char *reason = NULL;
	int r;

	if (!s->p)
		return NULL;
	if ((size_t)snprintf(full, sizeof(full), "%s/%s",
			     strcmp(s->root_path, "/") == 0 ? "" : s->root_path,
			     rel) >= sizeof(full))
		return "a path too long to check";
	r = ward__policy_protection_of(s->p, full, &lift, &reason);
	free(lift);
	if (r == 0)
		return reason ? reason : "protected";
	if (r == -EPERM)
		return "--protect";
	return NULL;
}

static bool ignored_path(const char *rel)
{
	char name[NAME_MAX + 1];

	/* Every component but the last is a directory. */
	for (const char *p = rel, *e; (e = strchr(p, '/')); p = e + 1) {
		size_t n = (size_t)(e - p);

		if (n == 0 || n > NAME_MAX)
			continue;
		memcpy(name, p, n);
		name[n] = '\0';
		if (ward__changes_ignored_name(name))
			return true;
	}
	return false;
}

static int join(char *out, size_t size, const char *prefix, const char *name)
{
	int n = prefix[0] ? snprintf(out, size, "%s/%s", prefix, name)
			  : snprintf(out, size, "%s", name);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int add(struct scan *s, struct ward__change *c)
{
	int r;

	c->root = s->root;
	c->renamed_from = -1;
	if (ignored_path(c->path))
		c->flags |= WARD_CF_IGNORED;
	r = ward__changes_run_add(s->run, c);
	if (r == -E2BIG)
		return ward__error(s->err, r, "changes",
				   "the run changed more than %d entries: too many to review",
				   WARD_CHANGES_MAX_ENTRIES);
	return r;
}

static uint32_t mode_bits(const struct stat *st)
{
	return st->st_mode & 07777;
}

/* Whether a regular file's head is binary, by its descriptor's directory and name. */
static bool binary_at(int dirfd, const char *name)
{
	_cleanup_close_ int fd =
		openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	return fd >= 0 && ward__fs_binary(fd);
}

/*
 * Lists the entries of a tree as members (for the reader), and refuses the
 * tree when a protected path lies in it. of_del: a host tree being deleted.
 */
static int members(struct scan *s, int at, const char *name, const char *rel, bool of_del,
		   bool list, char *refused, size_t refused_size, unsigned depth)
{
	_cleanup_close_ int fd = -1;
	DIR *d;
	struct dirent *e;
	int r = 0;

	if (depth >= WARD_CHANGES_MAX_DEPTH)
		return ward__error(s->err, -ELOOP, "changes", "'%s' is nested too deep", rel);
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return ward__error(s->err, -errno, "changes", "cannot read '%s': %m", rel);
	d = fdopendir(fd);
	if (!d)
		return -errno;
	fd = -1;
	while ((e = readdir(d)) && r >= 0) {
		char sub[PATH_MAX];
		struct stat st;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (join(sub, sizeof(sub), rel, e->d_name) < 0 ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (ward__fs_whiteout(&st))
			continue;
		if (!of_del && !refused[0]) {
			const char *why = refused_reason(s, sub);

			if (why)
				snprintf(refused, refused_size, "%s ('%s')", why, sub);
		}
		if (list && s->members >= WARD_CHANGES_MAX_MEMBERS) {
			s->run->members_dropped++;
		} else if (list) {
			struct ward__change c = {
				.path = sub,
				.kind = WARD_CHANGE_MEMBER,
				.state = WARD_CS_PENDING,
				.flags = of_del ? WARD_CF_MEMBER_OF_DEL : 0,
			};

			if (of_del) {
				c.old_type = ward__fs_type(st.st_mode);
				c.old_mode = mode_bits(&st);
				c.old_size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
			} else {
				c.new_type = ward__fs_type(st.st_mode);
				c.new_mode = mode_bits(&st);
				c.new_size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
				c.new_mtime_ns = ward__fs_mtime_ns(&st);
			}
			if (S_ISREG(st.st_mode) && binary_at(dirfd(d), e->d_name))
				c.flags |= WARD_CF_BINARY;
			s->members++;
			r = add(s, &c);
		}
		if (r >= 0 && S_ISDIR(st.st_mode))
			r = members(s, dirfd(d), e->d_name, sub, of_del, list, refused,
				    refused_size, depth + 1);
	}
	closedir(d);
	return r;
}

/* A host entry the command removed: a file, or a whole tree. */
static int add_delete(struct scan *s, int hostfd, const char *name, const char *rel,
		      const struct stat *hst)
{
	struct ward__change c = {
		.path = (char *)rel,
		.kind = WARD_CHANGE_DELETE,
		.state = WARD_CS_PENDING,
		.old_type = ward__fs_type(hst->st_mode),
		.old_mode = mode_bits(hst),
		.old_size = S_ISREG(hst->st_mode) ? (uint64_t)hst->st_size : 0,
		.old_files = 1,
		.old_ino = (uint64_t)hst->st_ino,
	};
	char refused[8] = "";
	int r;

	if (S_ISDIR(hst->st_mode)) {
		struct ward__tree_stats ts;

		c.flags |= WARD_CF_TREE;
		if (ward__fs_tree_stats(hostfd, name, &ts) >= 0) {
			c.old_files = ts.files;
			c.old_size = ts.bytes;
		}
	} else if (S_ISREG(hst->st_mode) && binary_at(hostfd, name)) {
		c.flags |= WARD_CF_BINARY;
	}
	r = add(s, &c);
	if (r >= 0 && S_ISDIR(hst->st_mode))
		r = members(s, hostfd, name, rel, true,
			    !(s->run->v[s->run->n - 1].flags & WARD_CF_IGNORED) &&
				    !ward__changes_ignored_name(name),
			    refused, sizeof(refused), 0);
	return r;
}

/* Whether the layer's entry differs from the host's (non-directories of one type). */
static int compare(int udir, int hdir, const char *name, const struct stat *ust,
		   const struct stat *hst, unsigned *ret_flags)
{
	unsigned f = 0;

	if (ward__fs_type(ust->st_mode) != ward__fs_type(hst->st_mode)) {
		*ret_flags = WARD_CF_TYPE | WARD_CF_CONTENT;
		return 0;
	}
	if (S_ISLNK(ust->st_mode)) {
		char a[PATH_MAX], b[PATH_MAX];
		ssize_t na = readlinkat(udir, name, a, sizeof(a)),
			nb = readlinkat(hdir, name, b, sizeof(b));

		if (na < 0 || nb < 0 || na != nb || memcmp(a, b, (size_t)na) != 0)
			f |= WARD_CF_CONTENT;
		*ret_flags = f;
		return 0;
	}
	if (mode_bits(ust) != mode_bits(hst))
		f |= WARD_CF_MODE;
	if (S_ISREG(ust->st_mode)) {
		if (ust->st_size != hst->st_size) {
			f |= WARD_CF_CONTENT;
		} else {
			_cleanup_close_ int a = -1, b = -1;
			int r;

			a = openat(udir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			b = openat(hdir, name,
				   O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
			r = a >= 0 && b >= 0 ? ward__fs_same_content(a, b) : 0;
			if (r <= 0)
				f |= WARD_CF_CONTENT;
		}
		if (ust->st_nlink > 1)
			f |= WARD_CF_LINKS;
	}
	if (ward__fs_mtime_ns(ust) != ward__fs_mtime_ns(hst))
		f |= WARD_CF_TIMES;
	*ret_flags = f;
	return 0;
}

static int scan_dir(struct scan *s, int udir, int hdir, const char *prefix, bool hidden,
		    unsigned depth);

/* One entry of the layer at rel (udir/name), against the host's (hdir/name, or none). */
static int scan_entry(struct scan *s, int udir, int hdir, const char *name, const char *rel,
		      bool hidden, unsigned depth)
{
	struct stat ust, hst;
	bool have_host;
	int r;

	if (fstatat(udir, name, &ust, AT_SYMLINK_NOFOLLOW) < 0)
		return ward__error(s->err, -errno, "changes", "cannot read the layer's '%s': %m",
				   rel);
	have_host = hdir >= 0 && fstatat(hdir, name, &hst, AT_SYMLINK_NOFOLLOW) == 0;

	if (ward__fs_whiteout(&ust))
		return have_host ? add_delete(s, hdir, name, rel, &hst) : 0;

	if (S_ISDIR(ust.st_mode)) {
		bool opaque = ward__fs_opaque(udir, name);

		if (have_host && S_ISDIR(hst.st_mode)) {
			_cleanup_close_ int usub = -1, hsub = -1;

			if (mode_bits(&ust) != mode_bits(&hst)) {
				struct ward__change c = {
					.path = (char *)rel,
					.kind = WARD_CHANGE_DIRMODE,
					.state = WARD_CS_PENDING,
					.flags = WARD_CF_MODE,
					.old_type = WARD_FT_DIR,
					.new_type = WARD_FT_DIR,
					.old_mode = mode_bits(&hst),
					.new_mode = mode_bits(&ust),
					.old_ino = (uint64_t)hst.st_ino,
				};
				const char *why = refused_reason(s, rel);

				if (why) {
					c.state = WARD_CS_REFUSED;
					c.refused = (char *)why;
				}
				r = add(s, &c);
				if (r < 0)
					return r;
			}
			usub = openat(udir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (usub < 0)
				return ward__error(s->err, -errno, "changes",
						   "cannot read the layer's '%s': %m", rel);
			hsub = ward__fs_open_beneath(hdir, name, O_PATH | O_DIRECTORY, 0);
			return scan_dir(s, TAKE_FD(usub), TAKE_FD(hsub), rel, hidden || opaque,
					depth + 1);
		}
		/* A new directory (or one that replaces a host file): one tree. */
		{
			struct ward__change c = {
				.path = (char *)rel,
				.kind = have_host ? WARD_CHANGE_REPLACE : WARD_CHANGE_ADD,
				.state = WARD_CS_PENDING,
				.flags = WARD_CF_TREE |
					(have_host ? WARD_CF_TYPE | WARD_CF_CONTENT : 0),
				.new_type = WARD_FT_DIR,
				.new_mode = mode_bits(&ust),
				.new_ino = (uint64_t)ust.st_ino,
				.new_mtime_ns = ward__fs_mtime_ns(&ust),
			};
			struct ward__tree_stats ts;
			const char *why = refused_reason(s, rel);
			char refused[PATH_MAX + 128] = "";
			size_t at;

			if (have_host) {
				c.old_type = ward__fs_type(hst.st_mode);
				c.old_mode = mode_bits(&hst);
				c.old_size = S_ISREG(hst.st_mode) ? (uint64_t)hst.st_size : 0;
				c.old_files = 1;
				c.old_ino = (uint64_t)hst.st_ino;
			}
			if (ward__fs_tree_stats(udir, name, &ts) >= 0) {
				c.new_files = ts.files;
				c.new_size = ts.bytes;
			}
			r = add(s, &c);
			if (r < 0)
				return r;
			at = s->run->n - 1;
			if (why)
				snprintf(refused, sizeof(refused), "%s", why);
			r = members(s, udir, name, rel, false,
				    !(s->run->v[at].flags & WARD_CF_IGNORED) &&
					    !ward__changes_ignored_name(name),
				    refused, sizeof(refused), 0);
			if (r < 0)
				return r;
			if (refused[0]) {
				struct ward__change *e = &s->run->v[at];

				e->state = WARD_CS_REFUSED;
				e->refused = strdup(refused);
				if (!e->refused)
					return -ENOMEM;
			}
			return 0;
		}
	}

	/* A file, symlink, FIFO, socket or device of the layer. */
	{
		struct ward__change c = {
			.path = (char *)rel,
			.kind = WARD_CHANGE_ADD,
			.state = WARD_CS_PENDING,
			.new_type = ward__fs_type(ust.st_mode),
			.new_mode = mode_bits(&ust),
			.new_size = S_ISREG(ust.st_mode) ? (uint64_t)ust.st_size : 0,
			.new_files = 1,
			.new_ino = (uint64_t)ust.st_ino,
			.new_mtime_ns = ward__fs_mtime_ns(&ust),
		};
		const char *why = NULL;

		if (have_host) {
			unsigned f = 0;

			c.kind = WARD_CHANGE_REPLACE;
			c.old_type = ward__fs_type(hst.st_mode);
			c.old_mode = mode_bits(&hst);
			c.old_size = S_ISREG(hst.st_mode) ? (uint64_t)hst.st_size : 0;
			c.old_files = 1;
			c.old_ino = (uint64_t)hst.st_ino;
			if (S_ISDIR(hst.st_mode)) {
				struct ward__tree_stats ts;

				f = WARD_CF_TYPE | WARD_CF_CONTENT;
				if (ward__fs_tree_stats(hdir, name, &ts) >= 0) {
					c.old_files = ts.files;
					c.old_size = ts.bytes;
				}
			} else {
				compare(udir, hdir, name, &ust, &hst, &f);
			}
			if (f == 0)
				return 0; /* copied up, left as it was */
			c.flags |= f;
		}
		if (S_ISREG(ust.st_mode) && binary_at(udir, name))
			c.flags |= WARD_CF_BINARY;
		if (S_ISSOCK(ust.st_mode))
			why = "a socket cannot be applied";
		else if (c.new_type == WARD_FT_OTHER)
			why = "a device node cannot be applied";
		else
			why = refused_reason(s, rel);
		if (why) {
			c.state = WARD_CS_REFUSED;
			c.refused = (char *)why;
		}
		return add(s, &c);
	}
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of an open directory, sorted (so that records and listings are stable). */
static int read_names(int fd, char ***ret, size_t *ret_n)
{
	_cleanup_close_ int dup_fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char **v = NULL;
	size_t n = 0, cap = 0;
	DIR *d;
	struct dirent *e;

	if (dup_fd < 0)
		return -errno;
	d = fdopendir(dup_fd);
	if (!d)
		return -errno;
	dup_fd = -1;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (n == cap) {
			char **nv = realloc(v, (cap ? cap * 2 : 16) * sizeof(*nv));

			if (!nv)
				goto nomem;
			v = nv;
			cap = cap ? cap * 2 : 16;
		}
		v[n] = strdup(e->d_name);
		if (!v[n])
			goto nomem;
		n++;
	}
	closedir(d);
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_name);
	*ret = v;
	*ret_n = n;
	return 0;
nomem:
	closedir(d);
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return -ENOMEM;
}

static void free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int scan_dir(struct scan *s, int udir, int hdir, const char *prefix, bool hidden,
		    unsigned depth)
{
	char **names = NULL, **hnames = NULL;
	size_t n = 0, hn = 0;
	int r;

	if (depth >= WARD_CHANGES_MAX_DEPTH)
		return ward__error(s->err, -ELOOP, "changes", "'%s' is nested too deep", prefix);
	r = read_names(udir, &names, &n);
	if (r < 0)
		return ward__error(s->err, r, "changes", "cannot read the layer's '%s': %m",
				   prefix[0] ? prefix : ".");
	for (size_t i = 0; i < n && r >= 0; i++) {
		char rel[PATH_MAX];

		r = join(rel, sizeof(rel), prefix, names[i]);
		if (r < 0)
			break;
		r = scan_entry(s, udir, hdir, names[i], rel, hidden, depth);
	}
	/* Under an opaque directory, host entries the layer does not show were removed. */
	if (r >= 0 && hidden && hdir >= 0) {
		r = read_names(hdir, &hnames, &hn);
		for (size_t i = 0; i < hn && r >= 0; i++) {
			char rel[PATH_MAX];
			struct stat hst;

			if (bsearch(&hnames[i], names, n, sizeof(*names), cmp_name))
				continue;
			if (join(rel, sizeof(rel), prefix, hnames[i]) < 0 ||
			    fstatat(hdir, hnames[i], &hst, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			r = add_delete(s, hdir, hnames[i], rel, &hst);
		}
		free_names(hnames, hn);
	}
	free_names(names, n);
	if (hdir >= 0)
		close(hdir);
	close(udir);
	return r;
}

/* Pairs a removed file with an added one of the same bytes: a rename, for the reader. */
static void find_renames(struct ward__changes_run *run, unsigned root, int hostfd, int upperfd)
{
	size_t budget = 4096;

	for (size_t i = 0; i < run->n && budget > 0; i++) {
		struct ward__change *a = &run->v[i];

		if (a->root != root || a->kind != WARD_CHANGE_ADD || a->new_type != WARD_FT_REG ||
		    a->state != WARD_CS_PENDING)
			continue;
		for (size_t j = 0; j < run->n && budget > 0; j++) {
			struct ward__change *d = &run->v[j];
			_cleanup_close_ int fa = -1, fd = -1;
			bool taken = false;

			if (d->root != root || d->kind != WARD_CHANGE_DELETE ||
			    d->old_type != WARD_FT_REG || d->old_size != a->new_size)
				continue;
			for (size_t k = 0; k < run->n; k++)
				taken |= run->v[k].renamed_from == (int64_t)j;
			if (taken)
				continue;
			budget--;
			fa = ward__fs_open_beneath(upperfd, a->path, O_RDONLY | O_NOFOLLOW, 0);
			fd = ward__fs_open_beneath(
				hostfd, d->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
			if (fa >= 0 && fd >= 0 && ward__fs_same_content(fa, fd) == 1) {
				a->renamed_from = (int64_t)j;
				break;
			}
		}
	}
}

int ward__changes_scan(struct ward__changes_run *run, const struct ward_policy *p,
		       struct ward_error *err)
{
	for (unsigned i = 0; i < run->n_roots; i++) {
		struct ward__changes_root *rt = &run->roots[i];
		_cleanup_free_ char *upper = NULL;
		struct scan s = {.run = run, .p = p, .root = i, .root_path = rt->path, .err = err};
		int ufd, hfd, r;

		if (!rt->layered)
			continue;
		upper = ward__journal_upper(run, i);
		if (!upper)
			return -ENOMEM;
		ufd = open(upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (ufd < 0)
			return ward__error(err, -errno, "changes", "cannot read the layer '%s': %m",
					   upper);
		hfd = ward__fs_open_root(rt->path, rt->dev, rt->ino);
		if (hfd < 0) {
			close(ufd);
			if (hfd == -ESTALE)
				return ward__error(err, hfd, "changes",
						   "writable root '%s' was replaced during the run",
						   rt->path);
			return ward__error(err, hfd, "changes",
					   "cannot open writable root '%s': %m", rt->path);
		}
		r = scan_dir(&s, ufd, hfd, "", false, 0);
		if (r < 0)
			return r;
		{
			_cleanup_close_ int h2 = ward__fs_open_root(rt->path, rt->dev, rt->ino);
			_cleanup_close_ int u2 =
				open(upper, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (h2 >= 0 && u2 >= 0)
				find_renames(run, i, h2, u2);
		}
	}
	return 0;
}
