/* SPDX-License-Identifier: MIT */
/*
 * The guard of autorun names (see guard.c and policy/autorun.c): the
 * directories the launch scan looked into are watched for names appearing
 * in them. An autorun name appearing (.vscode, .mcp.json, a missing PATH
 * directory) is a change: the sandbox is killed and the name removed. A
 * directory appearing where names still matter (two levels beneath a root,
 * .config on the way to .config/fish) is watched in turn and then looked
 * into, watch first: whatever the command put in it before the watch is seen
 * by the look, whatever after by the watch. So "mkdir -p a/b && echo x >
 * a/b/.vscode/tasks.json" is caught however fast it runs, and so is a tree
 * prepared deep down and renamed into place.
 *
 * Bounds, failing closed: at most WARD_AUTORUN_MAX_WATCHES directories per
 * guard, AUTORUN_MAX_PENDING waiting at once and AUTORUN_MAX_ENTRIES entries
 * read after the start. Past one of them, or when the kernel refuses a watch
 * (fs.inotify.max_user_watches), the run is stopped as if a name had been
 * planted ("autorun: guard limit"): a directory that is not watched could
 * hide one. When events were lost (the inotify queue overflowed) every
 * watched directory is looked into again.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
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
#include "sandbox/guard-state.h"

/* IN_MOVED_FROM, IN_MOVE_SELF: a watched directory's renames (guard-watch.c). */
#define AUTORUN_MASK \
	(IN_CREATE | IN_MOVED_FROM | IN_MOVED_TO | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)

static const char reason_limit[] = "autorun: guard limit";

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static void merge_point(struct ward__autorun_point *into, const struct ward__autorun_point *from)
{
	for (size_t k = 0; k < WARD_AUTORUN_MAX_COMPONENTS; k++)
		for (size_t w = 0; w < WARD_AUTORUN_MASK_WORDS; w++)
			into->m[k][w] |= from->m[k][w];
	into->depth = MAX(into->depth, from->depth);
	into->paths |= from->paths;
}

/*
 * Watches the directory at path (or, with fd >= 0, the directory fd is open
 * on: the one about to be looked into, whatever its path names by now) and
 * records it, with path copied (a new directory's) or, for the policy's
 * own (which outlives the guard), as it is. A directory watched already (another name for it, or
 * watched again after lost events) has its points merged. -E2BIG past the
 * bound, -ENOSPC when the kernel refuses, -ENOENT/-ENOTDIR when it is gone.
 */
static int watch_dir(struct ward__guard *g, int fd, const char *path, int parent,
		     const struct ward__autorun_point *at, bool copy, bool unread)
{
	struct autorun_watch *w;
	char proc[64];
	const char *target = path;
	uint32_t mask = AUTORUN_MASK;
	size_t i;
	int wd;

	if (fd >= 0) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		target = proc;
	}
	/*
	 * Through /proc/self/fd the link must be followed (it leads to the
	 * directory opened with O_NOFOLLOW); by path, a symlink is not watched.
	 */
	if (fd >= 0)
		mask &= ~(uint32_t)IN_DONT_FOLLOW;
	if (g->hub) {
		wd = ward__watches_add(g->hub, g, target, mask);
	} else {
		wd = inotify_add_watch(g->fd, target, mask | IN_MASK_ADD);
		if (wd < 0)
			wd = -errno;
	}
	if (wd < 0)
		return wd;
	w = ward__guard_autorun_find(g, wd);
	if (w) {
		merge_point(&w->at, at);
		/*
		 * A new name for a watched directory: it came back from where no
		 * names matter (astray), or its rename's events were not all seen.
		 * Where it was just found is where it is.
		 */
		if (copy && strcmp(w->path, path) != 0) {
			const char *slash = strrchr(path, '/');
			char *name = slash ? strdup(slash + 1) : NULL;

			if (!name)
				return -ENOMEM;
			/* The scan's directories beneath it learn it is their parent first. */
			ward__guard_autorun_paths(g);
			w = ward__guard_autorun_find(g, wd);
			free(w->name);
			w->name = name;
			w->parent = parent;
			if (parent < 0) {
				char *np = strdup(path);

				if (!np)
					return -ENOMEM;
				if (w->own)
					free(w->path);
				w->path = np;
				w->own = true;
			}
			w->astray = false;
			ward__guard_autorun_paths(g);
		}
		return wd;
	}
	if (g->n_aw >= WARD_AUTORUN_MAX_WATCHES)
		return -E2BIG;
	if (g->n_aw == g->cap_aw) {
		size_t cap = g->cap_aw ? g->cap_aw * 2 : 64;
		struct autorun_watch *nw = reallocarray(g->aw, cap, sizeof(*nw));

		if (!nw)
			return -ENOMEM;
		g->aw = nw;
		g->cap_aw = cap;
	}
	for (i = g->n_aw; i > 0 && g->aw[i - 1].wd > wd; i--)
		;
	memmove(&g->aw[i + 1], &g->aw[i], (g->n_aw - i) * sizeof(*g->aw));
	g->aw[i] = (struct autorun_watch){.wd = wd,
					  .parent = parent,
					  .path = copy ? strdup(path) : (char *)path,
					  .own = copy,
					  .unread = unread,
					  .gen = g->ar_gen,
					  .at = *at};
	if (copy && parent >= 0) {
		const char *slash = strrchr(path, '/');

		g->aw[i].name = slash ? strdup(slash + 1) : NULL;
		if (!g->aw[i].name)
			g->aw[i].parent = AUTORUN_NO_PARENT;
	}
	if (!g->aw[i].path) {
		free(g->aw[i].name);
		memmove(&g->aw[i], &g->aw[i + 1], (g->n_aw - i) * sizeof(*g->aw));
		return -ENOMEM;
	}
	g->n_aw++;
	return wd;
}

int ward__guard_autorun_init(struct ward__guard *g, struct ward_error *err)
{
	const struct ward_policy *p = g->policy;

	/* One allocation for the scan's directories, and room for new ones. */
	if (g->cap_aw < p->n_watches + 64) {
		struct autorun_watch *nw = reallocarray(g->aw, p->n_watches + 64, sizeof(*nw));

		if (!nw)
			return ward__error(err, -ENOMEM, "guard", "out of memory");
		g->aw = nw;
		g->cap_aw = p->n_watches + 64;
	}
	g->ar_follows = AUTORUN_MAX_FOLLOWS;
	/* Before the command exists: the paths are the directories the scan read. */
	for (size_t i = 0; i < p->n_watches; i++) {
		int r;

		/* A symlink the scan followed: where it leads has a watch of its own. */
		if (p->watches[i].link)
			continue;
		r = watch_dir(g, -1, p->watches[i].path, AUTORUN_UNLINKED, &p->watches[i].at, false,
			      p->watches[i].unread);

		if (r == -ENOENT || r == -ENOTDIR)
			continue;
		/*
		 * Another user's directory ward's user cannot read (as /run/sudo
		 * under a root of /): nor can the command, of the same user,
		 * create anything in it unless it may write there.
		 */
		if ((r == -EACCES || r == -EPERM) && access(p->watches[i].path, W_OK) < 0)
			continue;
		if (r < 0) {
			ward__error(err, r, "guard", "cannot watch '%s' for autorun names: %m",
				    p->watches[i].path);
			if (r == -ENOSPC)
				ward__error_hint(err, "raise fs.inotify.max_user_watches");
			return r;
		}
	}
	return 0;
}

void ward__guard_autorun_release(struct ward__guard *g)
{
	for (size_t i = 0; i < g->n_aw; i++) {
		if (g->aw[i].own)
			free(g->aw[i].path);
		free(g->aw[i].name);
	}
	free(g->aw);
	g->aw = NULL;
	g->n_aw = g->cap_aw = 0;
	for (size_t i = 0; g->ap && i < g->n_ap; i++)
		free(g->ap[(g->ap_head + i) % AUTORUN_MAX_PENDING].path);
	free(g->ap);
	g->ap = NULL;
	g->n_ap = 0;
	for (size_t i = 0; i < g->n_created; i++)
		free(g->created[i]);
	g->n_created = 0;
	free(g->ar_full_path);
	g->ar_full_path = NULL;
	free(g->ar_to_name);
	g->ar_to_name = NULL;
}

/* A protected name that was there at the start (bound read-only, or kept): not the command's. */
static bool existed(const struct ward__guard *g, const char *path)
{
	const struct ward_policy *p = g->policy;

	for (size_t i = 0; i < p->n_protected; i++)
		if (p->protected[i].kind == WARD_PROTECT_READONLY &&
		    strcmp(p->protected[i].path, path) == 0)
			return true;
	return false;
}

static void changed(char *access, size_t asize, char *path, size_t psize, const char *what,
		    const char *reason, const char **ret_reason, bool *ret_changed)
{
	snprintf(access, asize, "%s", "create");
	snprintf(path, psize, "%s", what);
	*ret_reason = reason;
	*ret_changed = true;
}

/*
 * Looks into the directory at it->path (opened without following a
 * symlink), watching it first unless it is watched already (again): an
 * autorun name in it is a change (found), a directory where names matter is
 * queued. Returns -errno for a bound (fail closed), 0 otherwise.
 */
static int look_into(struct ward__guard *g, const struct autorun_pending *it, char *found,
		     size_t fsize, const char **ret_reason)
{
	/*
	 * A directory the command made unreadable (mode 0300) is given its
	 * owner's read back first: skipped, it could hide a planted name, and
	 * inotify cannot watch it. Still refused (the command changed the mode
	 * back, or the directory is another user's that ward's user may write
	 * in): fails closed.
	 */
	_cleanup_close_ int fd = ward__open_dir_readable(AT_FDCWD, it->path);
	char buf[8192] __attribute__((aligned(8)));
	int r, wd;

	if ((fd == -EACCES || fd == -EPERM) && faccessat(AT_FDCWD, it->path, W_OK, AT_EACCESS) == 0)
		return -EACCES;
	/* Gone or replaced by a link: where it went is watched, or does not matter. */
	if (fd < 0)
		return 0;
	if (!it->again) {
		r = watch_dir(g, fd, it->path, it->parent, &it->at, true, false);
		if (r == -ENOENT || r == -ENOTDIR)
			return 0;
		if (r < 0)
			return r;
		wd = r;
	} else {
		wd = it->parent;
	}
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		for (long off = 0; off < n;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			struct ward__autorun_point child;
			const char *reason = NULL, *name = d->d_name;
			bool is_dir = d->d_type == DT_DIR, is_link = d->d_type == DT_LNK;

			off += d->d_reclen;
			if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
				continue;
			if (++g->ar_entries > AUTORUN_MAX_ENTRIES)
				return -E2BIG;
			if (d->d_type == DT_UNKNOWN) {
				struct stat st;
				bool ok = fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;

				is_dir = ok && S_ISDIR(st.st_mode);
				is_link = ok && S_ISLNK(st.st_mode);
			}
			switch (ward__autorun_match(g->policy, &it->at, it->path, name, is_dir,
						    &child, &reason)) {
			case WARD_AUTORUN_NONE:
				if (is_link &&
				    ward__guard_autorun_link(g, it->path, name, &it->at, found,
							     fsize, ret_reason) == 1)
					return 0;
				break;
			case WARD_AUTORUN_PROTECTED:
				snprintf(found, fsize, "%s/%s",
					 strcmp(it->path, "/") == 0 ? "" : it->path, name);
				if (existed(g, found)) {
					found[0] = '\0';
					break;
				}
				ward__guard_autorun_created(g, found);
				*ret_reason = reason;
				return 0;
			case WARD_AUTORUN_DESCEND:
				if (!ward__guard_autorun_queue(g, it->path, name, wd, &child))
					return -E2BIG;
				break;
			}
		}
	}
}

int ward__guard_settle(struct ward__guard *g, char *access, size_t asize, char *path, size_t psize,
		       const char **ret_reason, bool *ret_changed)
{
	char found[PATH_MAX + 256];

	*ret_changed = false;
	*ret_reason = NULL;
	if (!g || g->tripped)
		return 0;
	if (g->ar_lost) {
		g->ar_lost = false;
		for (size_t i = 0; i < g->n_aw; i++) {
			struct autorun_watch *w = &g->aw[i];

			/* Astray: where it is now, names do not matter. */
			if (w->lost)
				continue;
			/*
			 * An unread directory cannot be looked into again: what is
			 * in it may be the person's, or planted unseen. Fails closed.
			 */
			if (w->unread) {
				if (!g->ar_full) {
					g->ar_full = true;
					g->ar_full_path = strdup(w->path);
				}
				break;
			}
			if (!ward__guard_autorun_queue(g, w->path, NULL, w->wd, &w->at))
				break;
		}
	}
	while (g->n_ap > 0 && !g->ar_full) {
		struct autorun_pending it = g->ap[g->ap_head];
		int r;

		g->ap_head = (g->ap_head + 1) % AUTORUN_MAX_PENDING;
		g->n_ap--;
		found[0] = '\0';
		r = look_into(g, &it, found, sizeof(found), ret_reason);
		if (r < 0 && !g->ar_full) {
			g->ar_full = true;
			g->ar_full_path = it.path;
			it.path = NULL;
		}
		free(it.path);
		if (found[0]) {
			changed(access, asize, path, psize, found, *ret_reason, ret_reason,
				ret_changed);
			return 0;
		}
	}
	if (g->ar_full) {
		/* Not watched is not guarded: the run stops. */
		changed(access, asize, path, psize, g->ar_full_path ? g->ar_full_path : "",
			reason_limit, ret_reason, ret_changed);
		return 0;
	}
	return 0;
}

/* ------------------------------------------------------------------ after the kill */

struct sweep {
	struct ward__guard *g;
	ward__guard_report_fn report;
	void *userdata;
	char *left;
	size_t left_size;
	unsigned removed;
};

static void remove_path(struct sweep *s, const char *path)
{
	char dir[PATH_MAX];
	const char *name;
	_cleanup_close_ int dfd = -1;
	int r;

	if (!ward__path_split(path, dir, sizeof(dir), &name))
		return;
	dfd = ward__open_dir_nofollow(dir);
	r = dfd < 0 ? dfd : ward__remove_tree_at(dfd, name, 0);
	if (r < 0 && r != -ENOENT && s->left && s->left_size && !s->left[0])
		snprintf(s->left, s->left_size, "%s: %s", path,
			 r == -EPERM ? "not owned by ward's user" : strerror(-r));
	s->removed++;
	if (s->report)
		s->report(s->userdata, "create", path);
}

/*
 * One watched directory looked into once more, and the directories the
 * matcher leads to from it that are not watched (renamed in while the kill
 * was on its way): every autorun name that did not exist at the start goes.
 */
static void sweep_dir(struct sweep *s, const char *path, const struct ward__autorun_point *at,
		      unsigned depth, size_t *budget)
{
	_cleanup_close_ int fd = -1;
	char buf[8192] __attribute__((aligned(8)));
	struct stat st;

	if (depth > WARD_AUTORUN_DEPTH + WARD_AUTORUN_MAX_COMPONENTS)
		return;
	{
		int dfd = ward__open_dir_nofollow(path);

		if (dfd < 0)
			return;
		fd = ward__open_dir_readable(dfd, ".");
		close(dfd);
	}
	if (fd < 0 || fstat(fd, &st) < 0)
		return;
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		for (long off = 0; off < n;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			struct ward__autorun_point child;
			const char *reason = NULL, *name = d->d_name;
			_cleanup_free_ char *sub = NULL;
			bool is_dir = d->d_type == DT_DIR, is_link = d->d_type == DT_LNK;
			char target[PATH_MAX];

			off += d->d_reclen;
			if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
				continue;
			if (*budget == 0)
				return;
			(*budget)--;
			if (d->d_type == DT_UNKNOWN) {
				struct stat cst;
				bool ok = fstatat(fd, name, &cst, AT_SYMLINK_NOFOLLOW) == 0;

				is_dir = ok && S_ISDIR(cst.st_mode);
				is_link = ok && S_ISLNK(cst.st_mode);
			}
			switch (ward__autorun_match(s->g->policy, at, path, name, is_dir, &child,
						    &reason)) {
			case WARD_AUTORUN_NONE:
				/* A symlink the command made where names go on goes; where it leads is looked into. */
				if (!is_link)
					break;
				switch (ward__autorun_match_link(s->g->policy, at, path, name,
								 &s->g->ar_follows, &child, target,
								 &reason)) {
				case WARD_AUTORUN_PROTECTED:
					sub = ward__path_join(path, name);
					if (sub)
						remove_path(s, sub);
					break;
				case WARD_AUTORUN_DESCEND:
					sweep_dir(s, target, &child, depth + 1, budget);
					break;
				case WARD_AUTORUN_NONE:
					break;
				}
				break;
			case WARD_AUTORUN_PROTECTED:
				sub = ward__path_join(path, name);
				if (sub && !existed(s->g, sub))
					remove_path(s, sub);
				break;
			case WARD_AUTORUN_DESCEND: {
				bool watched = false;

				sub = ward__path_join(path, name);
				for (size_t i = 0; sub && i < s->g->n_aw && !watched; i++)
					watched = !s->g->aw[i].lost &&
						strcmp(s->g->aw[i].path, sub) == 0;
				/* A watched one is swept on its own. */
				if (sub && !watched)
					sweep_dir(s, sub, &child, depth + 1, budget);
				break;
			}
			}
		}
	}
}

unsigned ward__guard_autorun_restore(struct ward__guard *g, ward__guard_report_fn report,
				     void *userdata, char *left, size_t left_size)
{
	struct sweep s = {g, report, userdata, left, left_size, 0};
	size_t budget = AUTORUN_MAX_ENTRIES;
	struct stat st;

	if (!g || !g->policy)
		return 0;
	/* The renames the command made before it died: the sweep goes where the directories are. */
	if (g->fd >= 0) {
		char a[16], p[PATH_MAX];
		const char *reason;
		bool changed;

		(void)ward__guard_read(g, a, sizeof(a), p, sizeof(p), &reason, &changed);
	}
	for (size_t i = 0; i < g->n_created; i++)
		if (lstat(g->created[i], &st) == 0 && !existed(g, g->created[i]))
			remove_path(&s, g->created[i]);
	/*
	 * An unread directory is not swept: nothing says which of its names
	 * were there before the run. What the command created in it, the
	 * events named (g->created, above).
	 */
	for (size_t i = 0; i < g->n_aw; i++)
		if (!g->aw[i].unread && !g->aw[i].lost)
			sweep_dir(&s, g->aw[i].path, &g->aw[i].at, 0, &budget);
	return s.removed;
}
