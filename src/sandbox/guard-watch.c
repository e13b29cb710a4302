/* SPDX-License-Identifier: MIT */
/*
 * The guard's watching (see guard.c): what an inotify event means for the
 * protected paths, read from a guard's own instance or dispatched from the
 * instance a server's guards share.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/util.h"
#include "sandbox/guard-state.h"

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

/* ------------------------------------------------------------------ autorun state */

struct autorun_watch *ward__guard_autorun_find(struct ward__guard *g, int wd)
{
	size_t lo = 0, hi = g->n_aw;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (g->aw[mid].wd == wd)
			return &g->aw[mid];
		if (g->aw[mid].wd < wd)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The queue is a ring of AUTORUN_MAX_PENDING items, allocated on first use. */
bool ward__guard_autorun_queue(struct ward__guard *g, const char *dir, const char *name, int parent,
			       const struct ward__autorun_point *at)
{
	struct autorun_pending *it;
	char *path = name ? ward__path_join(dir, name) : strdup(dir);

	if (!path || g->n_ap >= AUTORUN_MAX_PENDING)
		goto full;
	if (!g->ap) {
		g->ap = calloc(AUTORUN_MAX_PENDING, sizeof(*g->ap));
		if (!g->ap)
			goto full;
	}
	it = &g->ap[(g->ap_head + g->n_ap++) % AUTORUN_MAX_PENDING];
	*it = (struct autorun_pending){.path = path, .parent = parent, .at = *at, .again = !name};
	return true;
full:
	/* Fails closed: a directory not looked into could hide a planted name. */
	if (!g->ar_full) {
		g->ar_full = true;
		g->ar_full_path = path ? path : strdup(dir);
		return false;
	}
	free(path);
	return false;
}

static void link_parents(struct ward__guard *g);

/* The path of w from its parent's (derived first) and its name. */
static void derive(struct ward__guard *g, struct autorun_watch *w, unsigned depth)
{
	struct autorun_watch *p;
	char *np;

	if (w->gen == g->ar_gen)
		return;
	w->gen = g->ar_gen;
	if (w->parent < 0) {
		w->lost = w->astray;
		return;
	}
	p = ward__guard_autorun_find(g, w->parent);
	/* Not found, or a loop (that no real tree has): not believed. */
	if (!p || depth > 256) {
		w->lost = true;
		return;
	}
	derive(g, p, depth + 1);
	w->lost = w->astray || p->lost;
	if (w->lost)
		return;
	np = ward__path_join(p->path, w->name);
	if (!np) {
		w->lost = true;
		return;
	}
	if (strcmp(np, w->path) == 0) {
		free(np);
		return;
	}
	if (w->own)
		free(w->path);
	w->path = np;
	w->own = true;
}

void ward__guard_autorun_paths(struct ward__guard *g)
{
	if (!g->ar_linked)
		link_parents(g);
	g->ar_gen++;
	for (size_t i = 0; i < g->n_aw; i++)
		derive(g, &g->aw[i], 0);
}

struct by_path {
	const char *path;
	int wd;
};

static int by_path_cmp(const void *a, const void *b)
{
	return strcmp(((const struct by_path *)a)->path, ((const struct by_path *)b)->path);
}

/*
 * The scan's directories learn their parents at the first rename of a
 * watched directory, not at the start: the launch does not pay for what
 * few runs need. A directory whose parent is not watched keeps its
 * absolute path (a start).
 */
static void link_parents(struct ward__guard *g)
{
	struct by_path *v;

	g->ar_linked = true;
	v = calloc(g->n_aw + 1, sizeof(*v));
	for (size_t i = 0; v && i < g->n_aw; i++)
		v[i] = (struct by_path){g->aw[i].path, g->aw[i].wd};
	if (v)
		qsort(v, g->n_aw, sizeof(*v), by_path_cmp);
	for (size_t i = 0; i < g->n_aw; i++) {
		struct autorun_watch *w = &g->aw[i];
		const char *slash = strrchr(w->path, '/');
		char dir[PATH_MAX];
		struct by_path key = {dir, 0}, *found;

		if (w->parent != AUTORUN_UNLINKED)
			continue;
		w->parent = AUTORUN_NO_PARENT;
		if (!v || !slash || !slash[1] || (size_t)(slash - w->path) >= sizeof(dir))
			continue;
		memcpy(dir, w->path, (size_t)(slash - w->path));
		dir[slash == w->path ? 1 : slash - w->path] = '\0';
		found = bsearch(&key, v, g->n_aw, sizeof(*v), by_path_cmp);
		w->name = found ? strdup(slash + 1) : NULL;
		if (w->name)
			w->parent = found->wd;
	}
	free(v);
}

/*
 * A watched directory renamed (finding 14 of the autorun review: with
 * --unprotect W/a/b/.vscode, `mv a/b c && mkdir c/.vscode` was asked about
 * as W/a/b/.vscode, lifted, and stayed). The kernel reports a rename as
 * IN_MOVED_FROM in the old parent and IN_MOVED_TO in the new (with one
 * cookie), then IN_MOVE_SELF on the directory itself: that last one says
 * which watch moved, even when two watched directories swap places
 * (RENAME_EXCHANGE). Its parent and name are the IN_MOVED_TO's, and its
 * path and every watched one's beneath it are derived again before any
 * later event is read. Without an IN_MOVED_TO (its new parent is not
 * watched: names do not matter there), it is astray until it comes back,
 * which is an IN_MOVED_TO in a watched directory: a new directory to look
 * into, and its own IN_MOVE_SELF.
 */
static void autorun_moved(struct ward__guard *g, const struct inotify_event *ev)
{
	struct autorun_watch *w;

	if ((ev->mask & (IN_MOVED_FROM | IN_MOVED_TO)) && (ev->mask & IN_ISDIR) && ev->len) {
		if (!ward__guard_autorun_find(g, ev->wd))
			return;
		if (ev->mask & IN_MOVED_FROM) {
			g->ar_from = true;
			g->ar_from_cookie = ev->cookie;
			g->ar_to = false;
			return;
		}
		/* An IN_MOVED_FROM of another rename is no part of this one. */
		if (g->ar_from && g->ar_from_cookie != ev->cookie)
			g->ar_from = false;
		free(g->ar_to_name);
		g->ar_to_name = strdup(ev->name);
		g->ar_to = g->ar_to_name != NULL;
		g->ar_to_cookie = ev->cookie;
		g->ar_to_wd = ev->wd;
		return;
	}
	if (!(ev->mask & IN_MOVE_SELF)) {
		/* Whatever came between is of another rename (or none). */
		g->ar_from = g->ar_to = false;
		return;
	}
	w = ward__guard_autorun_find(g, ev->wd);
	if (w) {
		if (!g->ar_linked)
			link_parents(g);
		w = ward__guard_autorun_find(g, ev->wd);
		if (g->ar_to && (!g->ar_from || g->ar_from_cookie == g->ar_to_cookie)) {
			free(w->name);
			w->name = g->ar_to_name;
			g->ar_to_name = NULL;
			w->parent = g->ar_to_wd;
			w->astray = false;
		} else {
			w->astray = true;
		}
		ward__guard_autorun_paths(g);
	}
	g->ar_from = g->ar_to = false;
}

void ward__guard_autorun_created(struct ward__guard *g, const char *path)
{
	for (size_t i = 0; i < g->n_created; i++)
		if (strcmp(g->created[i], path) == 0)
			return;
	/* Beyond the record, the last look after the kill finds the rest. */
	if (g->n_created < AUTORUN_MAX_CREATED) {
		g->created[g->n_created] = strdup(path);
		if (g->created[g->n_created])
			g->n_created++;
	}
}

int ward__guard_autorun_link(struct ward__guard *g, const char *dir, const char *name,
			     const struct ward__autorun_point *at, char *path, size_t size,
			     const char **ret_reason)
{
	struct ward__autorun_point child;
	const char *reason = NULL;
	char target[PATH_MAX], *slash;

	switch (ward__autorun_match_link(g->policy, at, dir, name, &g->ar_follows, &child, target,
					 &reason)) {
	case WARD_AUTORUN_NONE:
		return 0;
	case WARD_AUTORUN_PROTECTED:
		snprintf(path, size, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name);
		ward__guard_autorun_created(g, path);
		*ret_reason = reason;
		return 1;
	case WARD_AUTORUN_DESCEND:
		/* Watched and looked into as a new directory: by its parent and name. */
		slash = strrchr(target, '/');
		if (!slash || !slash[1])
			return 0;
		*slash = '\0';
		ward__guard_autorun_queue(g, target[0] ? target : "/", slash + 1, AUTORUN_UNLINKED,
					  &child);
		return 2;
	}
	return 0;
}

/*
 * An entry appeared in a directory watched for autorun names: an autorun
 * name is a change (the command planted it); a directory where names
 * matter is queued, to be watched and looked into (ward__guard_settle).
 * Returns 1 for a change, 2 when something was queued, 0 otherwise.
 */
static int autorun_event(struct ward__guard *g, const struct inotify_event *ev, char *path,
			 size_t size, const char **ret_reason)
{
	struct ward__autorun_point child;
	struct autorun_watch *w;
	const char *reason = NULL;

	if (!g->n_aw || !ev->len || !(ev->mask & (IN_CREATE | IN_MOVED_TO)))
		return 0;
	w = ward__guard_autorun_find(g, ev->wd);
	if (!w || w->lost)
		return 0;
	switch (ward__autorun_match(g->policy, &w->at, w->path, ev->name,
				    (ev->mask & IN_ISDIR) != 0, &child, &reason)) {
	case WARD_AUTORUN_NONE:
		/* Not a directory: a symlink leading where names would matter? */
		if (!(ev->mask & IN_ISDIR))
			return ward__guard_autorun_link(g, w->path, ev->name, &w->at, path, size,
							ret_reason);
		return 0;
	case WARD_AUTORUN_PROTECTED:
		snprintf(path, size, "%s/%s", strcmp(w->path, "/") == 0 ? "" : w->path, ev->name);
		ward__guard_autorun_created(g, path);
		*ret_reason = reason;
		return 1;
	case WARD_AUTORUN_DESCEND:
		ward__guard_autorun_queue(g, w->path, ev->name, w->wd, &child);
		return 2;
	}
	return 0;
}

/*
 * What one event means: 1 (and access, path and reason) when it changed a
 * protected path, 2 when a new directory waits to be looked into, else 0.
 */
static int event_matches(struct ward__guard *g, const struct inotify_event *ev,
			 const char **ret_access, char *path, size_t size, const char **ret_reason)
{
	const char *where;

	if (ev->mask & IN_IGNORED)
		return 0;
	if (g->n_aw)
		autorun_moved(g, ev);
	for (size_t i = 0; i < g->n; i++) {
		struct target *t = &g->t[i];

		if (ev->len && t->parent_wd == ev->wd && (ev->mask & NAME_EVENTS) &&
		    strcmp(t->name, ev->name) == 0) {
			*ret_access = event_access(ev->mask);
			*ret_reason = t->reason;
			snprintf(path, size, "%s", t->path);
			return 1;
		}
		if (t->kind == T_SNAPSHOT && node_event(&t->root, ev->wd, &where)) {
			*ret_access = event_access(ev->mask);
			*ret_reason = t->reason;
			if (ev->len && S_ISDIR(t->root.st.st_mode) &&
			    !(ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)))
				snprintf(path, size, "%s/%s", where, ev->name);
			else
				snprintf(path, size, "%s", where);
			return 1;
		}
	}
	*ret_access = "create";
	return autorun_event(g, ev, path, size, ret_reason);
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

	/* A lost event could have been a new directory: every watched one is looked into again. */
	g->ar_lost = g->n_aw > 0;
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
		     const char **ret_reason, bool *ret_changed)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));

	*ret_changed = false;
	*ret_reason = NULL;
	if (!g)
		return 0;
	if (g->hub) {
		/* The shared instance's reader (ward__watches_dispatch) kept what concerned us. */
		if (g->pend_path) {
			snprintf(access, asize, "%s", g->pend_access);
			snprintf(path, psize, "%s", g->pend_path);
			*ret_reason = g->pend_reason;
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
			if (g->tripped) {
				/* After a trip the restoration tells what changed, at the paths of now. */
				if (g->n_aw && !(ev->mask & (IN_Q_OVERFLOW | IN_IGNORED)))
					autorun_moved(g, ev);
				continue;
			}
			if (ev->mask & IN_Q_OVERFLOW) {
				overflow(g, access, asize, path, psize, ret_changed);
				continue;
			}
			/* The first change is the one reported: the sandbox stops on it. */
			if (*ret_changed) {
				if (g->n_aw && !(ev->mask & IN_IGNORED))
					autorun_moved(g, ev);
				continue;
			}
			if (event_matches(g, ev, &a, path, psize, ret_reason) == 1) {
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
		ward__watches_leave(w->guards);
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
int ward__watches_add(struct ward__watches *w, struct ward__guard *g, const char *path,
		      uint32_t mask)
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

void ward__watches_join(struct ward__watches *w, struct ward__guard *g)
{
	g->hub = w;
	g->hub_prev = NULL;
	g->hub_next = w->guards;
	if (w->guards)
		w->guards->hub_prev = g;
	w->guards = g;
}

/* Drops every interest of g; a watch nobody holds any more is removed from the instance. */
void ward__watches_leave(struct ward__guard *g)
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
	const char *a, *reason = NULL;
	int k;

	if (g->tripped) {
		/* After a trip the restoration tells, at the paths of now. */
		if (g->n_aw && !(ev->mask & IN_IGNORED))
			autorun_moved(g, ev);
		return;
	}
	k = event_matches(g, ev, &a, path, sizeof(path), &reason);
	if (k == 2)
		hub_mark(w, g);
	/* The first change is the one reported. */
	if (k != 1 || g->pend_path)
		return;
	g->pend_path = strdup(path);
	g->pend_reason = reason;
	if (!g->pend_path) {
		/* No memory to say what changed: say that something may have (fails closed). */
		g->pend_lost = true;
	}
	g->pend_access = a;
	hub_mark(w, g);
}

/*
 * Reads at most max_reads times, and past that on until min_bytes were read
 * (or nothing is left), then notifies the guards concerned.
 */
static int hub_pump(struct ward__watches *w, int max_reads, size_t min_bytes)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	size_t got = 0;
	int r = 0;

	for (int reads = 0; reads < max_reads || got < min_bytes; reads++) {
		ssize_t n = read(w->fd, buf, sizeof(buf));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				r = -errno;
			break;
		}
		got += (size_t)n;
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

int ward__watches_dispatch(struct ward__watches *w)
{
	/*
	 * At most 16 reads (256 KiB of events) a call: the loop watches the
	 * instance level-triggered and comes back, after its other work. A
	 * command making entries as fast as it can in a watched directory
	 * (flipping a symlink) would otherwise keep a shared server's loop here.
	 */
	return hub_pump(w, 16, 0);
}

int ward__watches_flush(struct ward__watches *w)
{
	int queued = 0;

	/*
	 * Everything queued now, however much (the kernel's queue is bounded,
	 * fs.inotify.max_queued_events): what came after is not waited for.
	 */
	if (ioctl(w->fd, FIONREAD, &queued) < 0)
		return -errno;
	return hub_pump(w, 0, queued > 0 ? (size_t)queued : 0);
}
