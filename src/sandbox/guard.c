/* SPDX-License-Identifier: MIT */
/*
 * The guard of protected paths that no mount protects.
 *
 * With namespaces, existing protected paths are read-only mounts; only the
 * missing ones (.codex in most repositories) need a guard: nothing can be
 * mounted there without creating a file on the host, which ward never does.
 * The guard watches the nearest existing directory and, when the command
 * creates the name, the sandbox is killed and the entry removed.
 *
 * In the Landlock+seccomp fallback nothing is mounted at all, and Landlock
 * cannot take a path back out of a writable root: every protected path is
 * guarded. Before the command starts the guard keeps what is there (each
 * protected file's content, mode, owner and modification time, each protected
 * directory's entries, recursively; bounded), and watches with inotify
 *
 *   - every protected file and directory (and everything beneath a protected
 *     directory) for writes, attribute changes, entries created, removed or
 *     renamed, and its own removal or rename;
 *   - the parent of every protected path, missing ones included, for its name
 *     being created, removed or renamed;
 *   - the same for every directory between a writable root and a protected
 *     path (the ones the namespaces would pin), so that renaming .git away and
 *     building a new one is seen too.
 *
 * Besides, the sandbox's init holds a read lease (F_SETLEASE) on every
 * protected file: opening one for writing, or truncating it, blocks the opener
 * in the kernel and signals init, which kills the sandbox before a byte is
 * written (spawn.c hands init the descriptors).
 *
 * When anything changes, the sandbox is killed (every process of it dead, not
 * only signalled) and ward__guard_restore() puts back exactly what was there,
 * byte for byte, relative to directory descriptors opened at the start: it
 * never follows a symlink the command planted, and touches nothing but the
 * protected paths themselves (and a protected directory the command moved
 * away, which it moves back).
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
#include "basic/error.h"
#include "basic/util.h"
#include "sandbox/sandbox.h"

/* What the command changed at a watched place: the kind of change, for the report. */
#define NAME_EVENTS (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)
#define DIR_EVENTS                                                                              \
	(NAME_EVENTS | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | \
	 IN_ONLYDIR)
#define FILE_EVENTS (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF)

struct node {
	char *name; /* directory entry (for a target's root: the target's last component) */
	char *path; /* absolute, for reports */
	struct stat st; /* at the snapshot */
	char *data; /* regular file: its content (st.st_size bytes); symlink: its target */
	struct node *kids; /* directory: its entries, sorted by name */
	size_t n_kids;
	int wd; /* inotify watch on this inode, or -1 */
};

enum target_kind {
	T_MISSING, /* the name must not appear in parent */
	T_NAME, /* the name in parent must stay the directory it is (a pin) */
	T_SNAPSHOT, /* an existing protected path: kept, watched, restored */
};

struct target {
	enum target_kind kind;
	char *path;
	const char *name; /* inside path, or guard_name for T_MISSING */
	char *name_buf;
	int parent_fd; /* O_PATH|O_DIRECTORY: the parent directory itself, whatever its path becomes */
	bool parent_borrowed; /* parent_fd and parent_wd are an earlier target's (the same directory) */
	int parent_wd;
	int self_fd; /* T_NAME: O_PATH of the directory itself */
	struct stat self_st;
	struct node root; /* T_SNAPSHOT */
};

struct ward__guard {
	int fd; /* the inotify instance of its own, or -1 with a shared one */
	struct ward__watches *hub; /* the shared instance, or NULL */
	bool fallback;
	bool tripped;
	/* With a shared instance: what the dispatched events said, until ward__guard_read(). */
	const char *pend_access;
	char *pend_path;
	bool pend_lost; /* the shared queue overflowed */
	bool notify_pending;
	ward__guard_notify_fn notify;
	void *notify_userdata;
	struct ward__guard *hub_prev, *hub_next;
	struct target *t;
	size_t n, cap;
	size_t n_nodes;
	size_t bytes;
	int *lease_fds;
	char **lease_paths;
	size_t n_leases;
};

/* ------------------------------------------------------------------ building */

static void node_release(struct node *n)
{
	for (size_t i = 0; i < n->n_kids; i++)
		node_release(&n->kids[i]);
	free(n->kids);
	free(n->name);
	free(n->path);
	free(n->data);
	*n = (struct node){.wd = -1};
}

static int hub_add(struct ward__watches *w, struct ward__guard *g, const char *path, uint32_t mask);

static int watch_fd(struct ward__guard *g, int fd, uint32_t mask, const char *path,
		    struct ward_error *err)
{
	char proc[64];
	int wd;

	/* Watch the inode just opened, not whatever the path names by now. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	wd = g->hub ? hub_add(g->hub, g, proc, mask)
		    : inotify_add_watch(g->fd, proc, mask | IN_MASK_ADD);
	if (wd < 0) {
		int r = g->hub ? wd : -errno;

		ward__error(err, r, "guard", "cannot watch '%s': %m", path);
		ward__error_hint(err, "raise fs.inotify.max_user_watches");
		return r;
	}
	return wd;
}

static int cmp_dirent_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int snapshot_node(struct ward__guard *g, int dirfd, struct node *n, unsigned depth,
			 struct ward_error *err);

/* Reads a directory's entries (sorted) and snapshots each. */
static int snapshot_dir(struct ward__guard *g, int fd, struct node *n, unsigned depth,
			struct ward_error *err)
{
	_cleanup_free_ char **names = NULL;
	size_t count = 0, cap = 0;
	DIR *d;
	struct dirent *de;
	int dfd, r = 0;

	dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dfd < 0)
		return ward__error(err, -errno, "guard", "cannot read '%s': %m", n->path);
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return ward__error(err, -errno, "guard", "cannot read '%s': %m", n->path);
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (g->n_nodes + count >= WARD_GUARD_MAX_ENTRIES) {
			r = ward__error(
				err, -E2BIG, "guard",
				"cannot guard '%s' without namespaces: more than %d entries",
				n->path, WARD_GUARD_MAX_ENTRIES);
			goto out;
		}
		if (count == cap) {
			char **nn = reallocarray(names, cap ? cap * 2 : 16, sizeof(char *));

			if (!nn) {
				r = -ENOMEM;
				goto out;
			}
			names = nn;
			cap = cap ? cap * 2 : 16;
		}
		names[count] = strdup(de->d_name);
		if (!names[count]) {
			r = -ENOMEM;
			goto out;
		}
		count++;
	}
	qsort(names, count, sizeof(char *), cmp_dirent_name);
	n->kids = calloc(count ? count : 1, sizeof(*n->kids));
	if (!n->kids) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < count; i++) {
		struct node *k = &n->kids[n->n_kids++];

		*k = (struct node){.wd = -1, .name = TAKE_PTR(names[i])};
		k->path = ward__path_join(n->path, k->name);
		if (!k->path) {
			r = -ENOMEM;
			goto out;
		}
		r = snapshot_node(g, fd, k, depth + 1, err);
		if (r < 0)
			goto out;
	}
out:
	for (size_t i = 0; i < count; i++)
		free(names[i]);
	closedir(d);
	if (r == -ENOMEM)
		ward__error(err, r, "guard", "out of memory");
	return r;
}

static int snapshot_file(struct ward__guard *g, int fd, struct node *n, struct ward_error *err)
{
	size_t size = (size_t)n->st.st_size, off = 0;
	struct stat after;

	if (n->st.st_size > WARD_GUARD_MAX_FILE)
		return ward__error(
			err, -EFBIG, "guard",
			"cannot guard protected file '%s' without namespaces: %lld bytes, over the %d MiB ward can keep to restore it",
			n->path, (long long)n->st.st_size, WARD_GUARD_MAX_FILE >> 20);
	if (g->bytes + size > WARD_GUARD_MAX_BYTES)
		return ward__error(
			err, -EFBIG, "guard",
			"cannot guard protected file '%s' without namespaces: the protected files are over the %d MiB ward can keep to restore them",
			n->path, WARD_GUARD_MAX_BYTES >> 20);
	n->data = malloc(size ? size : 1);
	if (!n->data)
		return ward__error(err, -ENOMEM, "guard", "out of memory");
	while (off < size) {
		ssize_t k = pread(fd, n->data + off, size - off, (off_t)off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return ward__error(err, k < 0 ? -errno : -EIO, "guard",
					   "cannot read protected file '%s': %s", n->path,
					   k < 0 ? strerror(errno) : "it shrank while being read");
		off += (size_t)k;
	}
	if (fstat(fd, &after) < 0 || after.st_size != n->st.st_size ||
	    after.st_mtim.tv_sec != n->st.st_mtim.tv_sec ||
	    after.st_mtim.tv_nsec != n->st.st_mtim.tv_nsec)
		return ward__error(err, -EAGAIN, "guard",
				   "protected file '%s' changed while ward kept it; try again",
				   n->path);
	g->bytes += size;
	return 0;
}

static int add_lease(struct ward__guard *g, int fd, const char *path)
{
	int dup_fd;

	if (g->n_leases >= WARD_GUARD_MAX_LEASES)
		return 0; /* Beyond the cap a file is watched, not leased (documented). */
	dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dup_fd < 0)
		return -errno;
	g->lease_paths[g->n_leases] = strdup(path);
	if (!g->lease_paths[g->n_leases]) {
		close(dup_fd);
		return -ENOMEM;
	}
	g->lease_fds[g->n_leases++] = dup_fd;
	return 0;
}

/* Keeps and watches what is at name in dirfd (n->name); n->path is set. */
static int snapshot_node(struct ward__guard *g, int dirfd, struct node *n, unsigned depth,
			 struct ward_error *err)
{
	_cleanup_close_ int fd = -1;
	int r;

	if (depth > WARD_GUARD_MAX_DEPTH)
		return ward__error(err, -E2BIG, "guard",
				   "cannot guard '%s' without namespaces: deeper than %d levels",
				   n->path, WARD_GUARD_MAX_DEPTH);
	if (++g->n_nodes > WARD_GUARD_MAX_ENTRIES)
		return ward__error(err, -E2BIG, "guard",
				   "cannot guard '%s' without namespaces: more than %d entries",
				   n->path, WARD_GUARD_MAX_ENTRIES);
	if (fstatat(dirfd, n->name, &n->st, AT_SYMLINK_NOFOLLOW) < 0)
		return ward__error(err, -errno, "guard", "cannot look at '%s': %m", n->path);
	switch (n->st.st_mode & S_IFMT) {
	case S_IFLNK: {
		char buf[PATH_MAX];
		ssize_t k = readlinkat(dirfd, n->name, buf, sizeof(buf) - 1);

		if (k < 0)
			return ward__error(err, -errno, "guard", "cannot read link '%s': %m",
					   n->path);
		buf[k] = '\0';
		n->data = strdup(buf);
		return n->data ? 0 : ward__error(err, -ENOMEM, "guard", "out of memory");
	}
	case S_IFREG:
		fd = openat(dirfd, n->name,
			    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			return ward__error(err, -errno, "guard", "cannot open '%s': %m", n->path);
		r = snapshot_file(g, fd, n, err);
		if (r < 0)
			return r;
		r = watch_fd(g, fd, FILE_EVENTS, n->path, err);
		if (r < 0)
			return r;
		n->wd = r;
		r = add_lease(g, fd, n->path);
		return r < 0 ? ward__error(err, r, "guard", "cannot keep '%s': %m", n->path) : 0;
	case S_IFDIR:
		fd = openat(dirfd, n->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return ward__error(err, -errno, "guard", "cannot open '%s': %m", n->path);
		r = watch_fd(g, fd, DIR_EVENTS, n->path, err);
		if (r < 0)
			return r;
		n->wd = r;
		return snapshot_dir(g, fd, n, depth, err);
	default:
		/* fifos, sockets, devices: their type and mode are kept; only a fifo can be made again. */
		return 0;
	}
}

static struct target *target_find(struct ward__guard *g, const char *path, enum target_kind k)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->t[i].kind == k && strcmp(g->t[i].path, path) == 0)
			return &g->t[i];
	return NULL;
}

/* Under (or at) a kept directory: covered by its snapshot already. */
static bool covered(const struct ward__guard *g, const char *path)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->t[i].kind == T_SNAPSHOT && S_ISDIR(g->t[i].root.st.st_mode) &&
		    ward__path_under(path, g->t[i].path))
			return true;
	return false;
}

/* Whether target t lies directly in dir (its path is dir + "/" + its name). */
static bool same_parent(const struct target *t, const char *dir)
{
	size_t dl = strlen(dir), pl = strlen(t->path), nl = strlen(t->name);

	if (strcmp(dir, "/") == 0)
		return pl == nl + 1 && t->path[0] == '/';
	return pl == dl + 1 + nl && strncmp(t->path, dir, dl) == 0 && t->path[dl] == '/';
}

/*
 * Adds a target for path (canonical, absolute; for T_MISSING the guard dir and
 * the first missing name). Opens and watches its parent.
 */
static int target_add(struct ward__guard *g, enum target_kind kind, const char *dir,
		      const char *name, struct ward_error *err)
{
	_cleanup_free_ char *path = ward__path_join(dir, name);
	struct target *t;
	int r;

	if (!path)
		return ward__error(err, -ENOMEM, "guard", "out of memory");
	if (target_find(g, path, kind) || covered(g, path))
		return 0;
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 16;
		struct target *nt;

		if (cap > 4 * WARD_POLICY_MAX_PATHS + 64)
			return ward__error(err, -E2BIG, "guard", "too many protected paths");
		nt = reallocarray(g->t, cap, sizeof(*nt));
		if (!nt)
			return ward__error(err, -ENOMEM, "guard", "out of memory");
		g->t = nt;
		g->cap = cap;
	}
	t = &g->t[g->n];
	*t = (struct target){.kind = kind, .parent_fd = -1, .parent_wd = -1, .self_fd = -1};
	t->root.wd = -1;
	t->name_buf = strdup(name);
	if (!t->name_buf)
		return ward__error(err, -ENOMEM, "guard", "out of memory");
	t->name = t->name_buf;
	t->path = TAKE_PTR(path);
	g->n++;
	/*
	 * Names in one directory (.codex, .agents, .ward in the working
	 * directory) share its descriptor and its watch, which asks for the
	 * same events (the mask depends on the mode only).
	 */
	for (size_t i = 0; i + 1 < g->n; i++)
		if (!g->t[i].parent_borrowed && g->t[i].parent_fd >= 0 &&
		    same_parent(&g->t[i], dir)) {
			t->parent_fd = g->t[i].parent_fd;
			t->parent_wd = g->t[i].parent_wd;
			t->parent_borrowed = true;
			break;
		}
	if (!t->parent_borrowed) {
		t->parent_fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (t->parent_fd < 0)
			return ward__error(err, -errno, "guard", "cannot open '%s': %m", dir);
		r = watch_fd(g, t->parent_fd,
			     g->fallback ? NAME_EVENTS | IN_ONLYDIR
					 : IN_CREATE | IN_MOVED_TO | IN_ONLYDIR,
			     dir, err);
		if (r < 0)
			return r;
		t->parent_wd = r;
	}
	if (kind == T_NAME) {
		t->self_fd = openat(t->parent_fd, t->name,
				    O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (t->self_fd < 0 || fstat(t->self_fd, &t->self_st) < 0)
			return ward__error(err, -errno, "guard", "cannot open '%s': %m", t->path);
	} else if (kind == T_SNAPSHOT) {
		t->root.name = strdup(t->name);
		t->root.path = strdup(t->path);
		if (!t->root.name || !t->root.path)
			return ward__error(err, -ENOMEM, "guard", "out of memory");
		return snapshot_node(g, t->parent_fd, &t->root, 0, err);
	}
	return 0;
}

/* dir and last component of a canonical path, into buf. */
static const char *split(const char *path, char *buf, size_t size, const char **ret_name)
{
	const char *slash = strrchr(path, '/');
	size_t n = (size_t)(slash - path);

	if (!slash || n + 1 >= size)
		return NULL;
	memcpy(buf, path, n ? n : 1);
	buf[n ? n : 1] = '\0';
	*ret_name = slash + 1;
	return buf;
}

/*
 * The pins: every directory from path up to (not including) the first one
 * whose parent the command cannot write must keep its name, or the command
 * could rename it away and build a replacement (with planted hooks) there.
 */
static int pin_chain(struct ward__guard *g, const struct ward_policy *p, const char *path,
		     bool inclusive, struct ward_error *err)
{
	char cur[PATH_MAX], dir[PATH_MAX];
	const char *name;
	int r;

	if (strlen(path) >= sizeof(cur))
		return 0;
	snprintf(cur, sizeof(cur), "%s", path);
	if (!inclusive) {
		if (!split(cur, dir, sizeof(dir), &name))
			return 0;
		snprintf(cur, sizeof(cur), "%s", dir);
	}
	while (strcmp(cur, "/") != 0) {
		if (!split(cur, dir, sizeof(dir), &name) || !ward__policy_path_writable(p, dir))
			break;
		r = target_add(g, T_NAME, dir, name, err);
		if (r < 0)
			return r;
		snprintf(cur, sizeof(cur), "%s", dir);
	}
	return 0;
}

static void hub_join(struct ward__watches *w, struct ward__guard *g);

int ward__guard_new(const struct ward_policy *p, bool fallback, struct ward__watches *shared,
		    struct ward__guard **ret, struct ward_error *err)
{
	struct ward__guard *g;
	size_t n_missing = 0;
	int r = 0;

	*ret = NULL;
	for (size_t i = 0; i < p->n_protected; i++)
		if (p->protected[i].kind == WARD_PROTECT_MISSING)
			n_missing++;
	if (!fallback && n_missing == 0)
		return 0;
	if (fallback && p->n_protected == 0)
		return 0;
	g = calloc(1, sizeof(*g));
	if (!g)
		return ward__error(err, -ENOMEM, "guard", "out of memory");
	g->fallback = fallback;
	g->lease_fds = calloc(WARD_GUARD_MAX_LEASES, sizeof(int));
	g->lease_paths = calloc(WARD_GUARD_MAX_LEASES, sizeof(char *));
	if (!g->lease_fds || !g->lease_paths) {
		ward__guard_free(g);
		return ward__error(err, -ENOMEM, "guard", "out of memory");
	}
	if (shared) {
		g->fd = -1;
		hub_join(shared, g);
	} else {
		g->fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	}
	if (!shared && g->fd < 0) {
		r = ward__error(err, -errno, "guard", "cannot create an inotify instance: %m");
		ward__error_hint(err, "raise fs.inotify.max_user_instances");
		ward__guard_free(g);
		return r;
	}
	/* Parents come first in the policy's list: a kept directory is in place before what it covers. */
	for (size_t i = 0; r >= 0 && i < p->n_protected; i++) {
		const struct ward__protected *e = &p->protected[i];
		char dir[PATH_MAX];
		const char *name;

		switch (e->kind) {
		case WARD_PROTECT_MISSING:
			r = target_add(g, T_MISSING, e->guard_dir, e->guard_name, err);
			if (r >= 0 && fallback)
				r = pin_chain(g, p, e->guard_dir, true, err);
			break;
		case WARD_PROTECT_READONLY:
			if (!fallback)
				break;
			if (!split(e->path, dir, sizeof(dir), &name))
				break;
			r = target_add(g, T_SNAPSHOT, dir, name, err);
			if (r >= 0)
				r = pin_chain(g, p, e->path, false, err);
			break;
		case WARD_PROTECT_PIN:
			if (fallback)
				r = pin_chain(g, p, e->path, true, err);
			break;
		}
	}
	if (r < 0) {
		ward__guard_free(g);
		return r;
	}
	*ret = g;
	return 0;
}

int ward__guard_fd(const struct ward__guard *g)
{
	return g ? g->fd : -1;
}

size_t ward__guard_leases(const struct ward__guard *g, const int **ret_fds, char *const **ret_paths)
{
	if (!g) {
		*ret_fds = NULL;
		*ret_paths = NULL;
		return 0;
	}
	*ret_fds = g->lease_fds;
	*ret_paths = g->lease_paths;
	return g->n_leases;
}

void ward__guard_close_leases(struct ward__guard *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n_leases; i++)
		if (g->lease_fds[i] >= 0) {
			close(g->lease_fds[i]);
			g->lease_fds[i] = -1;
		}
}

static void hub_leave(struct ward__guard *g);

void ward__guard_free(struct ward__guard *g)
{
	if (!g)
		return;
	hub_leave(g);
	free(g->pend_path);
	for (size_t i = 0; i < g->n; i++) {
		struct target *t = &g->t[i];

		if (t->parent_fd >= 0 && !t->parent_borrowed)
			close(t->parent_fd);
		if (t->self_fd >= 0)
			close(t->self_fd);
		free(t->path);
		free(t->name_buf);
		node_release(&t->root);
	}
	free(g->t);
	ward__guard_close_leases(g);
	for (size_t i = 0; i < g->n_leases; i++)
		free(g->lease_paths[i]);
	free(g->lease_paths);
	free(g->lease_fds);
	if (g->fd >= 0)
		close(g->fd);
	free(g);
}

/* ------------------------------------------------------------------ events */

static const char *event_access(uint32_t mask)
{
	if (mask & (IN_CREATE | IN_MOVED_TO))
		return "create";
	if (mask & (IN_DELETE | IN_DELETE_SELF))
		return "delete";
	if (mask & (IN_MOVED_FROM | IN_MOVE_SELF))
		return "rename";
	return "write";
}

static bool node_event(struct node *n, int wd, const char **ret_path)
{
	if (n->wd == wd) {
		*ret_path = n->path;
		return true;
	}
	for (size_t i = 0; i < n->n_kids; i++)
		if (node_event(&n->kids[i], wd, ret_path))
			return true;
	return false;
}

/* What one event means: true (and access and path) when it changed a protected path. */
static bool event_matches(struct ward__guard *g, const struct inotify_event *ev,
			  const char **ret_access, char *path, size_t size)
{
	const char *where;

	if (ev->mask & IN_IGNORED)
		return false;
	for (size_t i = 0; i < g->n; i++) {
		struct target *t = &g->t[i];

		if (ev->len && t->parent_wd == ev->wd && (ev->mask & NAME_EVENTS) &&
		    strcmp(t->name, ev->name) == 0) {
			*ret_access = event_access(ev->mask);
			snprintf(path, size, "%s", t->path);
			return true;
		}
		if (t->kind == T_SNAPSHOT && node_event(&t->root, ev->wd, &where)) {
			*ret_access = event_access(ev->mask);
			if (ev->len && S_ISDIR(t->root.st.st_mode) &&
			    !(ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)))
				snprintf(path, size, "%s/%s", where, ev->name);
			else
				snprintf(path, size, "%s", where);
			return true;
		}
	}
	return false;
}

/*
 * Events were lost (the queue overflowed). With namespaces only missing names
 * are guarded, and whether one exists now is the whole answer. In the fallback
 * a lost event could have been any change (a command can flood the queue on
 * purpose before it writes): the sandbox is stopped, and the restoration pass
 * compares everything and reports what really changed.
 */
static void overflow(struct ward__guard *g, char *access, size_t asize, char *path, size_t psize,
		     bool *ret_changed)
{
	struct stat st;

	if (*ret_changed)
		return;
	for (size_t i = 0; !g->fallback && i < g->n; i++)
		if (g->t[i].kind == T_MISSING &&
		    fstatat(g->t[i].parent_fd, g->t[i].name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			snprintf(access, asize, "%s", "create");
			snprintf(path, psize, "%s", g->t[i].path);
			*ret_changed = true;
			return;
		}
	if (g->fallback) {
		snprintf(access, asize, "%s", "write");
		snprintf(path, psize, "%s", "");
		*ret_changed = true;
	}
}

int ward__guard_read(struct ward__guard *g, char *access, size_t asize, char *path, size_t psize,
		     bool *ret_changed)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));

	*ret_changed = false;
	if (!g)
		return 0;
	if (g->hub) {
		/* The shared instance's reader (ward__watches_dispatch) kept what concerned us. */
		if (g->pend_path) {
			snprintf(access, asize, "%s", g->pend_access);
			snprintf(path, psize, "%s", g->pend_path);
			*ret_changed = true;
			free(g->pend_path);
			g->pend_path = NULL;
		}
		if (g->pend_lost) {
			g->pend_lost = false;
			if (!g->tripped)
				overflow(g, access, asize, path, psize, ret_changed);
		}
		return 0;
	}
	if (g->fd < 0)
		return 0;
	for (;;) {
		ssize_t n = read(g->fd, buf, sizeof(buf));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -errno;
		}
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			const char *a;

			p += sizeof(*ev) + ev->len;
			if (g->tripped)
				continue; /* after a trip the restoration tells what changed */
			if (ev->mask & IN_Q_OVERFLOW) {
				overflow(g, access, asize, path, psize, ret_changed);
				continue;
			}
			if (!*ret_changed && event_matches(g, ev, &a, path, psize)) {
				snprintf(access, asize, "%s", a);
				*ret_changed = true;
			}
		}
	}
}

void ward__guard_set_notify(struct ward__guard *g, ward__guard_notify_fn fn, void *userdata)
{
	if (!g)
		return;
	g->notify = fn;
	g->notify_userdata = userdata;
}

/* ------------------------------------------------------------------ the shared instance */

/* A guard's interest in a watched inode: the events it asked for. */
struct hub_sub {
	struct ward__guard *g;
	uint32_t mask;
};

/*
 * One watched inode of the shared instance, and the guards that watch it
 * (a guard once per target). The kernel's mask is the union of theirs.
 */
struct hub_watch {
	int wd;
	struct hub_sub *subs;
	uint32_t n_subs, cap_subs;
};

struct ward__watches {
	int fd;
	struct hub_watch *w; /* sorted by wd */
	size_t n, cap;
	struct ward__guard *guards; /* every guard on this instance */
	size_t n_pending; /* guards with notify_pending set */
};

int ward__watches_new(struct ward__watches **ret, struct ward_error *err)
{
	struct ward__watches *w = calloc(1, sizeof(*w));
	int r;

	if (!w)
		return ward__error(err, -ENOMEM, "guard", "out of memory");
	w->fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (w->fd < 0) {
		r = ward__error(err, -errno, "guard", "cannot create an inotify instance: %m");
		ward__error_hint(err, "raise fs.inotify.max_user_instances");
		free(w);
		return r;
	}
	*ret = w;
	return 0;
}

void ward__watches_free(struct ward__watches *w)
{
	if (!w)
		return;
	/* Guards outliving their instance keep their paths but see no more events. */
	while (w->guards)
		hub_leave(w->guards);
	for (size_t i = 0; i < w->n; i++)
		free(w->w[i].subs);
	free(w->w);
	close(w->fd);
	free(w);
}

int ward__watches_fd(const struct ward__watches *w)
{
	return w ? w->fd : -1;
}

/* Index of wd in the sorted table, or where it would go (*found false). */
static size_t hub_find(const struct ward__watches *w, int wd, bool *found)
{
	size_t lo = 0, hi = w->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (w->w[mid].wd == wd) {
			*found = true;
			return mid;
		}
		if (w->w[mid].wd < wd)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static void hub_delete(struct ward__watches *w, size_t i)
{
	free(w->w[i].subs);
	memmove(&w->w[i], &w->w[i + 1], (w->n - i - 1) * sizeof(*w->w));
	w->n--;
}

/*
 * Adds g's interest in the inode at path. IN_MASK_ADD: the inode may be
 * watched already for another guard, whose events must keep coming (without
 * it the kernel replaces the mask). The union only grows while the watch
 * lives; events a guard did not ask for are ignored by its matching.
 */
static int hub_add(struct ward__watches *w, struct ward__guard *g, const char *path, uint32_t mask)
{
	struct hub_watch *hw;
	bool found;
	size_t i;
	int wd;

	wd = inotify_add_watch(w->fd, path, mask | IN_MASK_ADD);
	if (wd < 0)
		return -errno;
	i = hub_find(w, wd, &found);
	if (!found) {
		if (w->n == w->cap) {
			size_t ncap = w->cap ? w->cap * 2 : 16;
			struct hub_watch *nw = reallocarray(w->w, ncap, sizeof(*nw));

			if (!nw)
				goto fail;
			w->w = nw;
			w->cap = ncap;
		}
		memmove(&w->w[i + 1], &w->w[i], (w->n - i) * sizeof(*w->w));
		w->w[i] = (struct hub_watch){.wd = wd};
		w->n++;
	}
	hw = &w->w[i];
	if (hw->n_subs == hw->cap_subs) {
		uint32_t ncap = hw->cap_subs ? hw->cap_subs * 2 : 4;
		struct hub_sub *ns = reallocarray(hw->subs, ncap, sizeof(*ns));

		if (!ns) {
			if (hw->n_subs == 0) {
				hub_delete(w, i);
				goto fail;
			}
			return -ENOMEM;
		}
		hw->subs = ns;
		hw->cap_subs = ncap;
	}
	hw->subs[hw->n_subs++] = (struct hub_sub){.g = g, .mask = mask};
	return wd;
fail:
	/* A watch nobody else holds (a new one) is not left behind. */
	if (!found)
		inotify_rm_watch(w->fd, wd);
	return -ENOMEM;
}

static void hub_join(struct ward__watches *w, struct ward__guard *g)
{
	g->hub = w;
	g->hub_prev = NULL;
	g->hub_next = w->guards;
	if (w->guards)
		w->guards->hub_prev = g;
	w->guards = g;
}

/* Drops every interest of g; a watch nobody holds any more is removed from the instance. */
static void hub_leave(struct ward__guard *g)
{
	struct ward__watches *w = g->hub;

	if (!w)
		return;
	for (size_t i = 0; i < w->n;) {
		struct hub_watch *hw = &w->w[i];
		uint32_t k = 0;

		for (uint32_t j = 0; j < hw->n_subs; j++)
			if (hw->subs[j].g != g)
				hw->subs[k++] = hw->subs[j];
		hw->n_subs = k;
		if (k == 0) {
			inotify_rm_watch(w->fd, hw->wd);
			hub_delete(w, i);
			continue;
		}
		i++;
	}
	if (g->notify_pending)
		w->n_pending--;
	g->notify_pending = false;
	if (g->hub_prev)
		g->hub_prev->hub_next = g->hub_next;
	else
		w->guards = g->hub_next;
	if (g->hub_next)
		g->hub_next->hub_prev = g->hub_prev;
	g->hub_prev = g->hub_next = NULL;
	g->hub = NULL;
}

static void hub_mark(struct ward__watches *w, struct ward__guard *g)
{
	if (!g->notify_pending) {
		g->notify_pending = true;
		w->n_pending++;
	}
}

/* One event of the shared instance for one guard that watches its inode. */
static void hub_event(struct ward__watches *w, struct ward__guard *g,
		      const struct inotify_event *ev)
{
	char path[PATH_MAX + 256];
	const char *a;

	if (g->tripped || g->pend_path)
		return; /* the first change is the one reported; after a trip the restoration tells */
	if (!event_matches(g, ev, &a, path, sizeof(path)))
		return;
	g->pend_path = strdup(path);
	if (!g->pend_path) {
		/* No memory to say what changed: say that something may have (fails closed). */
		g->pend_lost = true;
	}
	g->pend_access = a;
	hub_mark(w, g);
}

int ward__watches_dispatch(struct ward__watches *w)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	int r = 0;

	for (;;) {
		ssize_t n = read(w->fd, buf, sizeof(buf));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				r = -errno;
			break;
		}
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			bool found;
			size_t i;

			p += sizeof(*ev) + ev->len;
			if (ev->mask & IN_Q_OVERFLOW) {
				/* Lost events could have been anyone's: every guard looks for itself. */
				for (struct ward__guard *g = w->guards; g; g = g->hub_next) {
					g->pend_lost = true;
					hub_mark(w, g);
				}
				continue;
			}
			i = hub_find(w, ev->wd, &found);
			if (!found)
				continue;
			/*
			 * Only to the guards that asked for this kind of event: the union
			 * of the masks must not show a guard what it would not have seen
			 * on an instance of its own.
			 */
			for (uint32_t j = 0; j < w->w[i].n_subs; j++) {
				const struct hub_sub *sub = &w->w[i].subs[j];

				if (sub->mask & ev->mask & IN_ALL_EVENTS)
					hub_event(w, sub->g, ev);
			}
			/* The inode is gone (or its filesystem): the kernel dropped the watch itself. */
			if (ev->mask & IN_IGNORED)
				hub_delete(w, i);
		}
	}
	/*
	 * Then the owners are told, one by one, from the head again after each:
	 * a notification may free any guard (a proc freed from its callbacks).
	 */
	while (w->n_pending > 0) {
		struct ward__guard *g = w->guards;

		while (g && !g->notify_pending)
			g = g->hub_next;
		if (!g) {
			w->n_pending = 0;
			break;
		}
		g->notify_pending = false;
		w->n_pending--;
		if (g->notify)
			g->notify(g->notify_userdata);
	}
	return r;
}

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

/* Opens a directory by an absolute path without following any symlink on the way. */
static int open_dir_nofollow(const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));

	return fd >= 0 ? (int)fd : -errno;
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
	if (!split(cur, dir, sizeof(dir), &base)) {
		left(c, t->path, "cannot find where the directory went");
		return;
	}
	dfd = open_dir_nofollow(dir);
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
