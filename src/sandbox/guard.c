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
 *
 * Besides the paths themselves, the directories the policy's scan looked
 * into are watched for autorun names appearing (guard-autorun.c), in both
 * modes.
 *
 * This file keeps and watches (the snapshot and the targets); guard-watch.c
 * reads the events, of a guard's own inotify instance or of one a server's
 * guards share; guard-autorun.c watches for autorun names; guard-restore.c
 * puts back, guard-remove.c removes. Their state is guard-state.h.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "sandbox/guard-state.h"

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

static int watch_fd(struct ward__guard *g, int fd, uint32_t mask, const char *path,
		    struct ward_error *err)
{
	char proc[64];
	int wd;

	/* Watch the inode just opened, not whatever the path names by now. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	wd = g->hub ? ward__watches_add(g->hub, g, proc, mask)
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
		      const char *name, const char *reason, struct ward_error *err)
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

		if (cap > 2 * WARD_POLICY_MAX_PROTECTED + 64)
			return ward__error(err, -E2BIG, "guard", "too many protected paths");
		nt = reallocarray(g->t, cap, sizeof(*nt));
		if (!nt)
			return ward__error(err, -ENOMEM, "guard", "out of memory");
		g->t = nt;
		g->cap = cap;
	}
	t = &g->t[g->n];
	*t = (struct target){
		.kind = kind, .reason = reason, .parent_fd = -1, .parent_wd = -1, .self_fd = -1};
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
		if (!ward__path_split(cur, dir, sizeof(dir), &name))
			return 0;
		snprintf(cur, sizeof(cur), "%s", dir);
	}
	while (strcmp(cur, "/") != 0) {
		if (!ward__path_split(cur, dir, sizeof(dir), &name) ||
		    !ward__policy_path_writable(p, dir))
			break;
		r = target_add(g, T_NAME, dir, name, NULL, err);
		if (r < 0)
			return r;
		snprintf(cur, sizeof(cur), "%s", dir);
	}
	return 0;
}

/* Whether the autorun watch of e's directory refuses e's name with e's reason (see below). */
static bool autorun_watch_catches(const struct ward_policy *p, const struct ward__protected *e)
{
	struct ward__autorun_point child;
	const char *reason = NULL;

	for (size_t i = 0; i < p->n_watches; i++)
		if (strcmp(p->watches[i].path, e->guard_dir) == 0)
			return ward__autorun_match(p, &p->watches[i].at, e->guard_dir,
						   e->guard_name, false, &child,
						   &reason) == WARD_AUTORUN_PROTECTED &&
				reason == e->reason;
	return false;
}

int ward__guard_new(const struct ward_policy *p, bool fallback, struct ward__watches *shared,
		    bool defer_autorun, struct ward__guard **ret, struct ward_error *err)
{
	struct ward__guard *g;
	size_t n_missing = 0;
	int r = 0;

	*ret = NULL;
	for (size_t i = 0; i < p->n_protected; i++)
		if (p->protected[i].kind == WARD_PROTECT_MISSING)
			n_missing++;
	if (!fallback && n_missing == 0 && p->n_watches == 0)
		return 0;
	if (fallback && p->n_protected == 0 && p->n_watches == 0)
		return 0;
	g = calloc(1, sizeof(*g));
	if (!g)
		return ward__error(err, -ENOMEM, "guard", "out of memory");
	g->policy = p;
	g->fallback = fallback;
	g->lease_fds = calloc(WARD_GUARD_MAX_LEASES, sizeof(int));
	g->lease_paths = calloc(WARD_GUARD_MAX_LEASES, sizeof(char *));
	if (!g->lease_fds || !g->lease_paths) {
		ward__guard_free(g);
		return ward__error(err, -ENOMEM, "guard", "out of memory");
	}
	if (shared) {
		g->fd = -1;
		ward__watches_join(shared, g);
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
			/*
			 * A missing autorun name at a directory the scan looked
			 * into is the autorun watch's (guard-autorun.c): the
			 * same event, the same reason, the same removal. With
			 * namespaces that watch is all it needs (dozens of
			 * names at every root); the fallback also pins the way
			 * to it (below).
			 */
			if (!fallback && autorun_watch_catches(p, e))
				break;
			r = target_add(g, T_MISSING, e->guard_dir, e->guard_name, e->reason, err);
			if (r >= 0 && fallback)
				r = pin_chain(g, p, e->guard_dir, true, err);
			break;
		case WARD_PROTECT_READONLY:
			/*
			 * ward's own scan cache is not kept and put back here:
			 * its files are trusted for their key, not their place
			 * (policy/scan-cache.c), and keeping a directory of
			 * them would cost every launch.
			 */
			if (!fallback || e->reason == ward__policy_reason_own)
				break;
			if (!ward__path_split(e->path, dir, sizeof(dir), &name))
				break;
			r = target_add(g, T_SNAPSHOT, dir, name, e->reason, err);
			if (r >= 0)
				r = pin_chain(g, p, e->path, false, err);
			break;
		case WARD_PROTECT_PIN:
			if (fallback)
				r = pin_chain(g, p, e->path, true, err);
			break;
		}
	}
	/* The directories where autorun names must not appear, and those that appear there. */
	g->autorun_deferred = defer_autorun;
	if (r >= 0 && !defer_autorun)
		r = ward__guard_autorun_init(g, err);
	if (r < 0) {
		ward__guard_free(g);
		return r;
	}
	*ret = g;
	return 0;
}

int ward__guard_arm(struct ward__guard *g, struct ward_error *err)
{
	if (!g || !g->autorun_deferred)
		return 0;
	g->autorun_deferred = false;
	return ward__guard_autorun_init(g, err);
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

void ward__guard_free(struct ward__guard *g)
{
	if (!g)
		return;
	ward__watches_leave(g);
	free(g->pend_path);
	ward__guard_autorun_release(g);
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
