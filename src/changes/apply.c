/* SPDX-License-Identifier: MIT */
/*
 * Apply: a held run's changes onto the host (changes.h).
 *
 * DESIGN: every entry is one rename(2), so that no reader of the host ever
 * sees half a file and a ward killed at any instant leaves each entry
 * either before or after:
 *
 *   add      renameat2(upper, host, RENAME_NOREPLACE): a path the host made
 *            meanwhile is never overwritten;
 *   replace  renameat2(upper, host, RENAME_EXCHANGE): the host's entry
 *            lands where the new one was, in the layer, which so becomes
 *            the before-image (zero copies);
 *   delete   renameat2(host, upper, RENAME_NOREPLACE): the removed entry
 *            (a file, or a whole tree) moves into the layer;
 *   dirmode  a chmod of the host's directory, after its entries.
 *
 * When the layer is not on the root's filesystem, each new entry is first
 * copied beside its target under a temporary name (".ward-<run>-<entry>"),
 * and the same renames are made there; the replaced entries are copied into
 * the layer at the end. Before anything moves, every entry is checked
 * against the host: an entry the host changed since the run started (its
 * ctime is after the start, it is another inode, a path the run adds
 * exists) is a conflict. The switch runs with the record saved as
 * "applying": if ward dies, the next apply finds which renames happened by
 * the inode numbers (each entry's new inode travels to the host with it)
 * and finishes, or rolls them back. A step that fails rolls back the steps
 * made, in reverse: the host is left as it was. Bounds are applied last:
 * a before-image past a bound is removed, and its entry listed as
 * "cannot be undone".
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "changes/changes.h"
#include "changes/fsops.h"

struct root_fds {
	int host; /* O_PATH of the root, or -1 */
	int upper; /* O_PATH of the layer's upper directory, or -1 */
	bool same_fs;
};

struct ctx {
	struct ward__changes_run *run;
	struct root_fds *fds;
	enum ward__side side;
	struct ward_error *err;
	bool *done; /* per entry: switched */
	bool *take; /* per entry: part of this apply */
	bool *exch; /* per entry: switched by exchange (else a plain rename) */
};

static bool is_step(const struct ward__change *c)
{
	return c->kind == WARD_CHANGE_ADD || c->kind == WARD_CHANGE_REPLACE ||
		c->kind == WARD_CHANGE_DELETE || c->kind == WARD_CHANGE_DIRMODE;
}

static void tmp_name(const struct ctx *x, size_t i, char *out, size_t size)
{
	snprintf(out, size, ".ward-%" PRIu64 "-%zu", x->run->id, i);
}

static void close_fds(struct ctx *x)
{
	for (size_t i = 0; x->fds && i < x->run->n_roots; i++) {
		if (x->fds[i].host >= 0)
			close(x->fds[i].host);
		if (x->fds[i].upper >= 0)
			close(x->fds[i].upper);
	}
	free(x->fds);
	free(x->done);
	free(x->take);
	free(x->exch);
	x->fds = NULL;
	x->done = x->take = x->exch = NULL;
}

static int open_fds(struct ctx *x)
{
	struct ward__changes_run *run = x->run;

	x->fds = calloc(run->n_roots ? run->n_roots : 1, sizeof(*x->fds));
	x->done = calloc(run->n ? run->n : 1, sizeof(bool));
	x->take = calloc(run->n ? run->n : 1, sizeof(bool));
	x->exch = calloc(run->n ? run->n : 1, sizeof(bool));
	if (!x->fds || !x->done || !x->take || !x->exch)
		return ward__error(x->err, -ENOMEM, "changes", "out of memory");
	for (size_t i = 0; i < run->n_roots; i++)
		x->fds[i].host = x->fds[i].upper = -1;
	for (size_t i = 0; i < run->n_roots; i++) {
		const struct ward__changes_root *rt = &run->roots[i];
		_cleanup_free_ char *upper = NULL;
		struct stat a, b;

		if (!rt->layered)
			continue;
		x->fds[i].host = ward__fs_open_root(rt->path, rt->dev, rt->ino);
		if (x->fds[i].host < 0) {
			int r = x->fds[i].host;

			x->fds[i].host = -1;
			if (r == -ESTALE)
				return ward__error(x->err, r, "changes",
						   "writable root '%s' was replaced since the run",
						   rt->path);
			return ward__error(x->err, r, "changes",
					   "cannot open writable root '%s': %m", rt->path);
		}
		upper = ward__journal_upper(run, (unsigned)i);
		if (!upper)
			return -ENOMEM;
		x->fds[i].upper = open(upper, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (x->fds[i].upper < 0)
			return ward__error(x->err, -errno, "changes",
					   "the layer of run %" PRIu64 " is missing ('%s'): %m",
					   run->id, upper);
		x->fds[i].same_fs = fstat(x->fds[i].host, &a) == 0 &&
			fstat(x->fds[i].upper, &b) == 0 && a.st_dev == b.st_dev;
	}
	return 0;
}

/* Opens the host's and the layer's directories holding c. */
static int parents(struct ctx *x, const struct ward__change *c, int *ret_h, int *ret_u,
		   const char **ret_name)
{
	const struct root_fds *f = &x->fds[c->root];
	const char *name;
	int h, u;

	if (f->host < 0)
		return -ENOENT;
	h = ward__fs_open_parent(f->host, c->path, &name);
	if (h < 0)
		return h;
	u = ward__fs_make_parent(f->upper, c->path, &name);
	if (u < 0) {
		close(h);
		return u;
	}
	*ret_h = h;
	*ret_u = u;
	*ret_name = name;
	return 0;
}

/* ------------------------------------------------------------------ conflicts */

/* Why the host's entry is not what the run found (static), or NULL. */
static const char *conflict_of(struct ctx *x, const struct ward__change *c)
{
	_cleanup_close_ int h = -1;
	const char *name;
	struct stat st;
	bool have;

	if (c->kind == WARD_CHANGE_DIRMODE) {
		_cleanup_close_ int d = ward__fs_open_beneath(x->fds[c->root].host, c->path,
							      O_PATH | O_DIRECTORY, 0);

		if (d < 0 || fstat(d, &st) < 0 || (uint64_t)st.st_ino != c->old_ino)
			return "the directory was replaced";
		return (st.st_mode & 07777) != c->old_mode ? "its mode changed" : NULL;
	}
	h = ward__fs_open_parent(x->fds[c->root].host, c->path, &name);
	if (h < 0)
		return h == -ELOOP    ? "a symlink is on its way"
			: h == -EXDEV ? "a mount is on its way"
				      : "its directory is gone or was replaced";
	have = fstatat(h, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (c->kind == WARD_CHANGE_ADD)
		return have ? "the host made it meanwhile" : NULL;
	if (!have)
		return "the host removed it meanwhile";
	if ((uint64_t)st.st_ino != c->old_ino || ward__fs_type(st.st_mode) != c->old_type)
		return "the host replaced it meanwhile";
	if (ward__fs_ctime_ns(&st) >= x->run->started_ns)
		return "the host changed it during the run";
	if (S_ISDIR(st.st_mode)) {
		struct ward__tree_stats ts;

		if (ward__fs_tree_stats(h, name, &ts) < 0 || ts.max_ctime_ns >= x->run->started_ns)
			return "the host changed something in it during the run";
	}
	return NULL;
}

/* ------------------------------------------------------------------ the switch */

/* Copies the layer's entry beside its target (the layer on another filesystem). */
static int stage(struct ctx *x, size_t i)
{
	struct ward__change *c = &x->run->v[i];
	_cleanup_close_ int h = -1, u = -1;
	const char *name;
	char tmp[64];
	struct stat st;
	int r;

	if (c->kind == WARD_CHANGE_DELETE || c->kind == WARD_CHANGE_DIRMODE)
		return 0;
	r = parents(x, c, &h, &u, &name);
	if (r < 0)
		return r;
	tmp_name(x, i, tmp, sizeof(tmp));
	(void)ward__fs_remove_at(h, tmp); /* a leftover of an apply ward was stopped in */
	r = ward__fs_copy_at(u, name, h, tmp);
	if (r < 0)
		return r;
	if (fstatat(h, tmp, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	c->new_ino = (uint64_t)st.st_ino;
	return 0;
}

/* Records what now stands on the host for c (undo's check). */
static void note_after(struct ctx *x, struct ward__change *c, int h, const char *name)
{
	struct stat st;

	if (c->kind == WARD_CHANGE_DELETE || fstatat(h, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		c->after_ino = 0;
		c->after_size = 0;
		c->after_ctime_ns = 0;
		return;
	}
	c->after_ino = (uint64_t)st.st_ino;
	c->after_size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
	c->after_ctime_ns = ward__fs_ctime_ns(&st);
	if (S_ISDIR(st.st_mode) && c->kind != WARD_CHANGE_DIRMODE) {
		struct ward__tree_stats ts;

		if (ward__fs_tree_stats(h, name, &ts) >= 0) {
			c->after_size = ts.bytes;
			c->after_ctime_ns = ts.max_ctime_ns;
		}
	}
	(void)x;
}

/* One entry's rename (forward), or its reverse. */
static int flip(struct ctx *x, size_t i, bool forward)
{
	struct ward__change *c = &x->run->v[i];
	const struct root_fds *f = &x->fds[c->root];
	_cleanup_close_ int h = -1, u = -1;
	const char *name;
	char tmp[64];
	int sdir, r;
	const char *sname;

	r = parents(x, c, &h, &u, &name);
	if (r < 0)
		return r;
	if (c->kind == WARD_CHANGE_DIRMODE) {
		return ward__fs_chmod_at(h, name, forward ? c->new_mode : c->old_mode);
	}
	/* The slot: the layer's entry, or its staged copy beside the target. */
	tmp_name(x, i, tmp, sizeof(tmp));
	sdir = f->same_fs ? u : h;
	sname = f->same_fs ? name : tmp;
	if (c->kind == WARD_CHANGE_DELETE) {
		if (forward) {
			struct stat st;

			/* The whiteout is only a marker: the record says what was removed. */
			if (f->same_fs && fstatat(u, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    ward__fs_whiteout(&st))
				(void)unlinkat(u, name, 0);
			r = RET_NERRNO(renameat2(h, name, sdir, sname, RENAME_NOREPLACE));
		} else {
			r = RET_NERRNO(renameat2(sdir, sname, h, name, RENAME_NOREPLACE));
		}
		return r;
	}
	if (forward) {
		struct stat st;
		bool have = fstatat(h, name, &st, AT_SYMLINK_NOFOLLOW) == 0;

		/*
		 * Whatever stands there now is exchanged (and becomes the before-image):
		 * without a conflict that is the entry a replacement replaces; with the
		 * run's side winning, it is whatever the host made meanwhile.
		 */
		x->exch[i] = have;
		return RET_NERRNO(renameat2(sdir, sname, h, name,
					    x->exch[i] ? RENAME_EXCHANGE : RENAME_NOREPLACE));
	}
	return RET_NERRNO(
		renameat2(h, name, sdir, sname, x->exch[i] ? RENAME_EXCHANGE : RENAME_NOREPLACE));
}

/* The order of the switch: removals, then additions and replacements, then directory modes. */
static int phase_of(const struct ward__change *c)
{
	return c->kind == WARD_CHANGE_DELETE ? 0 : c->kind == WARD_CHANGE_DIRMODE ? 2 : 1;
}

/* Removes the copies staged beside the targets (the layer on another filesystem). */
static void unstage(struct ctx *x)
{
	for (size_t i = 0; i < x->run->n; i++) {
		const struct ward__change *c = &x->run->v[i];
		_cleanup_close_ int h = -1;
		const char *name;
		char tmp[64];

		/* Only copies of the layer's entries: a switched entry's slot holds the host's. */
		if (!x->take[i] || x->done[i] || x->fds[c->root].same_fs ||
		    x->fds[c->root].host < 0 || c->kind == WARD_CHANGE_DELETE ||
		    c->kind == WARD_CHANGE_DIRMODE)
			continue;
		h = ward__fs_open_parent(x->fds[c->root].host, c->path, &name);
		if (h < 0)
			continue;
		tmp_name(x, i, tmp, sizeof(tmp));
		(void)ward__fs_remove_at(h, tmp);
	}
}

static void rollback(struct ctx *x)
{
	for (int phase = 2; phase >= 0; phase--)
		for (size_t i = x->run->n; i-- > 0;) {
			if (!x->done[i] || phase_of(&x->run->v[i]) != phase)
				continue;
			if (flip(x, i, false) >= 0)
				x->done[i] = false;
		}
}

/*
 * For an apply ward was stopped in: which entries were switched, by the
 * inodes. An added or replaced entry's new inode stands on the host; a
 * deleted entry's old inode is in its slot; a directory has its new mode.
 */
static void find_done(struct ctx *x)
{
	for (size_t i = 0; i < x->run->n; i++) {
		struct ward__change *c = &x->run->v[i];
		const struct root_fds *f = &x->fds[c->root];
		_cleanup_close_ int h = -1, u = -1;
		const char *name;
		struct stat st;
		char tmp[64];

		if (!x->take[i] || parents(x, c, &h, &u, &name) < 0)
			continue;
		tmp_name(x, i, tmp, sizeof(tmp));
		switch (c->kind) {
		case WARD_CHANGE_ADD:
		case WARD_CHANGE_REPLACE:
			if (fstatat(h, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    (uint64_t)st.st_ino == c->new_ino) {
				x->done[i] = true;
				x->exch[i] = c->kind == WARD_CHANGE_REPLACE;
			}
			break;
		case WARD_CHANGE_DELETE:
			if (f->same_fs ? fstatat(u, name, &st, AT_SYMLINK_NOFOLLOW) == 0
				       : fstatat(h, tmp, &st, AT_SYMLINK_NOFOLLOW) == 0)
				x->done[i] = (uint64_t)st.st_ino == c->old_ino;
			break;
		case WARD_CHANGE_DIRMODE:
			if (fstatat(h, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
				x->done[i] = (st.st_mode & 07777) == c->new_mode;
			break;
		case WARD_CHANGE_MEMBER:
			break;
		}
	}
}

/* ------------------------------------------------------------------ the commit */

/* The bytes a before-image of c holds. */
static uint64_t old_bytes(const struct ward__change *c)
{
	return c->old_size;
}

/*
 * After the switch: the replaced entries become before-images in the layer
 * (copied there from beside their targets when the layer is elsewhere),
 * within the bounds; the staged copies and the layer's emptied directories
 * go.
 */
static void commit(struct ctx *x)
{
	struct ward__changes_run *run = x->run;
	const struct ward__changes_cfg *cfg = run->cfg;
	uint64_t kept = 0;

	for (size_t i = 0; i < run->n; i++) {
		struct ward__change *c = &run->v[i];
		const struct root_fds *f = &x->fds[c->root];
		_cleanup_close_ int h = -1, u = -1;
		const char *name;
		char tmp[64];
		bool keep;

		if (!x->take[i] || !x->done[i] || c->kind == WARD_CHANGE_DIRMODE)
			continue;
		if (parents(x, c, &h, &u, &name) < 0)
			continue;
		tmp_name(x, i, tmp, sizeof(tmp));
		keep = c->kind == WARD_CHANGE_DELETE || x->exch[i];
		if (keep) {
			uint64_t b = old_bytes(c);

			if ((c->flags & WARD_CF_IGNORED) && !cfg->keep_ignored)
				c->unkept = WARD_UNKEPT_IGNORED;
			else if (c->old_type == WARD_FT_REG && b > cfg->max_file)
				c->unkept = WARD_UNKEPT_FILE_BOUND;
			else if (kept + b > cfg->max_run)
				c->unkept = WARD_UNKEPT_RUN_BOUND;
			else
				kept += b;
		}
		if (!f->same_fs) {
			/* The layer still holds the run's version: the before-image takes its place. */
			(void)ward__fs_remove_at(u, name);
			if (keep && c->unkept == WARD_UNKEPT_NONE &&
			    ward__fs_copy_at(h, tmp, u, name) < 0)
				c->unkept = WARD_UNKEPT_RUN_BOUND;
			(void)ward__fs_remove_at(h, tmp);
		} else if (keep && c->unkept != WARD_UNKEPT_NONE) {
			(void)ward__fs_remove_at(u, name);
		}
		if (keep && c->unkept == WARD_UNKEPT_NONE && c->old_type == WARD_FT_REG) {
			_cleanup_close_ int fd = openat(u, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

			if (fd < 0 || ward__fs_sha256(fd, c->sum) < 0)
				c->sum[0] = '\0';
		}
	}
}

/* Whether rel (under root) is an entry's before-image kept in the layer. */
static bool is_image(const struct ward__changes_run *run, unsigned root, const char *rel)
{
	for (size_t i = 0; i < run->n; i++) {
		const struct ward__change *c = &run->v[i];

		if (c->root == root && c->state == WARD_CS_APPLIED &&
		    (c->kind == WARD_CHANGE_DELETE || c->kind == WARD_CHANGE_REPLACE) &&
		    c->unkept == WARD_UNKEPT_NONE && strcmp(c->path, rel) == 0)
			return true;
	}
	return false;
}

/*
 * Removes the layer's directories the apply left empty (bottom up): the
 * merged directories' skeleton. A before-image (an empty directory the run
 * removed, too) stays.
 */
static void prune_empty(const struct ward__changes_run *run, unsigned root, int at,
			const char *name, const char *rel, unsigned depth)
{
	_cleanup_close_ int fd = -1;
	char **names = NULL;
	size_t n = 0, cap = 0;
	DIR *d;
	struct dirent *e;

	if (depth > WARD_CHANGES_MAX_DEPTH)
		return;
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d)
		return;
	fd = -1;
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR || strcmp(e->d_name, ".") == 0 ||
		    strcmp(e->d_name, "..") == 0)
			continue;
		if (n == cap) {
			char **v = realloc(names, (cap ? cap * 2 : 8) * sizeof(*v));

			if (!v)
				break;
			names = v;
			cap = cap ? cap * 2 : 8;
		}
		names[n] = strdup(e->d_name);
		if (names[n])
			n++;
	}
	for (size_t i = 0; i < n; i++) {
		char sub[PATH_MAX];

		if ((size_t)snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", names[i]) <
			    sizeof(sub) &&
		    !is_image(run, root, sub)) {
			prune_empty(run, root, dirfd(d), names[i], sub, depth + 1);
			(void)unlinkat(dirfd(d), names[i], AT_REMOVEDIR);
		}
		free(names[i]);
	}
	free(names);
	closedir(d);
}

/* ------------------------------------------------------------------ apply */

static int save_state(struct ctx *x, enum ward__run_state s, bool commit_pending)
{
	x->run->state = s;
	x->run->commit_pending = commit_pending;
	return ward__journal_save(x->run, x->err);
}

/*
 * For the tests of an apply or undo ward is killed in (tests/integration/
 * test-changes.sh): WARD_CHANGES_TEST_KILL_AFTER=N makes ward SIGKILL itself
 * after N switched entries, as a person's kill -9 would at that instant.
 */
static void test_kill_point(size_t *count)
{
	static long after = -2;

	if (after == -2) {
		const char *v = getenv("WARD_CHANGES_TEST_KILL_AFTER");

		after = v ? strtol(v, NULL, 10) : -1;
	}
	if (after >= 0 && (long)++*count > after)
		raise(SIGKILL);
}

static int do_switch(struct ctx *x, size_t *ret_failed)
{
	size_t count = 0;

	for (int phase = 0; phase <= 2; phase++)
		for (size_t i = 0; i < x->run->n; i++) {
			int r;

			if (!x->take[i] || x->done[i] || phase_of(&x->run->v[i]) != phase)
				continue;
			test_kill_point(&count);
			r = flip(x, i, true);
			if (r < 0) {
				*ret_failed = i;
				return r;
			}
			x->done[i] = true;
		}
	return 0;
}

int ward__changes_apply(struct ward__changes_run *run, enum ward__side side,
			struct ward__apply_report *rep, struct ward_error *err)
{
	struct ctx x = {.run = run, .side = side, .err = err};
	bool recovering = run->state == WARD_RS_APPLYING;
	size_t failed = 0;
	int r;

	*rep = (struct ward__apply_report){0};
	if (run->state != WARD_RS_HELD && !recovering) {
		if (run->state == WARD_RS_RUNNING)
			return ward__error(err, -EINVAL, "changes",
					   "run %" PRIu64 " ended before its changes were read: "
					   "nothing to apply (discard it)",
					   run->id);
		return ward__error(err, -EINVAL, "changes",
				   "run %" PRIu64 " is %s, not held: nothing to apply", run->id,
				   ward__run_state_name(run->state));
	}
	r = open_fds(&x);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < run->n; i++) {
		struct ward__change *c = &run->v[i];

		if (!is_step(c))
			continue;
		if (c->state == WARD_CS_REFUSED) {
			rep->refused++;
			continue;
		}
		if (c->state == WARD_CS_PENDING || c->state == WARD_CS_CONFLICT)
			x.take[i] = x.fds[c->root].host >= 0;
	}
	if (recovering)
		find_done(&x);

	/* Conflicts, before anything moves. */
	for (size_t i = 0; i < run->n; i++) {
		struct ward__change *c = &run->v[i];
		const char *why;

		if (!x.take[i] || x.done[i])
			continue;
		why = conflict_of(&x, c);
		if (!why) {
			c->state = WARD_CS_PENDING;
			continue;
		}
		rep->conflicts++;
		if (!rep->first_conflict[0])
			snprintf(rep->first_conflict, sizeof(rep->first_conflict), "%s%s%s (%s)",
				 run->roots[c->root].path,
				 strcmp(run->roots[c->root].path, "/") == 0 ? "" : "/", c->path,
				 why);
		c->state = WARD_CS_CONFLICT;
		if (side == WARD_SIDE_HOST)
			x.take[i] = false;
	}
	if (rep->conflicts > 0 && side == WARD_SIDE_NONE) {
		bool any_done = false;

		for (size_t i = 0; i < run->n; i++)
			any_done |= x.done[i];
		if (any_done) {
			/* A stopped apply that can no longer finish cleanly: back to held. */
			rollback(&x);
			unstage(&x);
			for (size_t i = 0; i < run->n; i++)
				if (run->v[i].state == WARD_CS_APPLIED)
					run->v[i].state = WARD_CS_PENDING;
			(void)save_state(&x, WARD_RS_HELD, false);
		}
		r = ward__error(err, -EBUSY, "changes",
				"%zu change%s of run %" PRIu64
				" conflict%s with the host (first: %s); nothing was applied",
				rep->conflicts, rep->conflicts == 1 ? "" : "s", run->id,
				rep->conflicts == 1 ? "s" : "", rep->first_conflict);
		goto out;
	}
	/* The run's side wins: the host's current entries are what undo brings back. */
	if (side == WARD_SIDE_RUN)
		for (size_t i = 0; i < run->n; i++)
			if (x.take[i] && run->v[i].state == WARD_CS_CONFLICT) {
				struct ward__change *c = &run->v[i];
				_cleanup_close_ int h = -1;
				const char *name;
				struct stat st;

				h = ward__fs_open_parent(x.fds[c->root].host, c->path, &name);
				if (h < 0) {
					x.take[i] = false;
					continue;
				}
				if (fstatat(h, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
					c->old_ino = (uint64_t)st.st_ino;
					c->old_type = ward__fs_type(st.st_mode);
					c->old_mode = st.st_mode & 07777;
					c->old_size =
						S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
					if (c->kind == WARD_CHANGE_ADD)
						c->kind = WARD_CHANGE_REPLACE;
				} else if (c->kind == WARD_CHANGE_REPLACE) {
					c->kind = WARD_CHANGE_ADD;
					c->old_type = WARD_FT_NONE;
				} else if (c->kind != WARD_CHANGE_ADD) {
					x.take[i] = false; /* nothing left to delete or chmod */
				}
			}

	/* The layer on another filesystem: copies beside the targets first (a full disk fails here). */
	for (size_t i = 0; i < run->n; i++) {
		if (!x.take[i] || x.done[i] || x.fds[run->v[i].root].same_fs)
			continue;
		r = stage(&x, i);
		if (r < 0) {
			unstage(&x);
			r = ward__error(err, r, "changes", "cannot copy '%s' next to its place: %m",
					run->v[i].path);
			goto out;
		}
	}

	r = save_state(&x, WARD_RS_APPLYING, false);
	if (r < 0)
		goto out;
	r = do_switch(&x, &failed);
	if (r < 0) {
		int code = r;

		rollback(&x);
		unstage(&x);
		for (size_t i = 0; i < run->n; i++)
			if (x.take[i])
				run->v[i].state = WARD_CS_PENDING;
		(void)save_state(&x, WARD_RS_HELD, false);
		r = ward__error(
			err, code, "changes",
			"cannot apply '%s': %m; nothing was applied (the host is as it was)",
			run->v[failed].path);
		goto out;
	}
	/*
	 * What stands on the host now, for undo's check: once every entry is in
	 * place (a second name of an inode changes the first one's ctime).
	 */
	for (size_t i = 0; i < run->n; i++) {
		struct ward__change *c = &run->v[i];
		_cleanup_close_ int h = -1;
		const char *name;

		if (!x.take[i])
			continue;
		c->state = WARD_CS_APPLIED;
		rep->applied++;
		h = ward__fs_open_parent(x.fds[c->root].host, c->path, &name);
		if (h >= 0)
			note_after(&x, c, h, name);
	}
	/* Switched: from here on the apply only ever finishes. */
	r = save_state(&x, WARD_RS_APPLIED, true);
	if (r < 0)
		goto out;
	commit(&x);
	for (size_t i = 0; i < run->n_roots; i++) {
		_cleanup_free_ char *upper = ward__journal_upper(run, (unsigned)i);
		_cleanup_close_ int fd = -1;
		const char *slash;

		if (!upper || !run->roots[i].layered)
			continue;
		slash = strrchr(upper, '/');
		*(char *)slash = '\0';
		fd = open(upper, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			prune_empty(run, (unsigned)i, fd, "upper", "", 0);
	}
	for (size_t i = 0; i < run->n; i++)
		if (run->v[i].state == WARD_CS_APPLIED && run->v[i].unkept != WARD_UNKEPT_NONE)
			rep->unkept++;
	r = save_state(&x, WARD_RS_APPLIED, false);
out:
	close_fds(&x);
	return r;
}

int ward__changes_apply_rollback(struct ward__changes_run *run, struct ward_error *err)
{
	struct ctx x = {.run = run, .side = WARD_SIDE_NONE, .err = err};
	int r;

	if (run->state != WARD_RS_APPLYING)
		return 0;
	r = open_fds(&x);
	if (r >= 0) {
		for (size_t i = 0; i < run->n; i++)
			x.take[i] = is_step(&run->v[i]) &&
				(run->v[i].state == WARD_CS_PENDING ||
				 run->v[i].state == WARD_CS_CONFLICT) &&
				x.fds[run->v[i].root].host >= 0;
		find_done(&x);
		rollback(&x);
		unstage(&x);
		for (size_t i = 0; i < run->n; i++)
			if (x.done[i])
				r = ward__error(
					err, -EIO, "changes",
					"cannot take back the apply of '%s' in run %" PRIu64,
					run->v[i].path, run->id);
		if (r >= 0)
			r = save_state(&x, WARD_RS_HELD, false);
	}
	close_fds(&x);
	return r;
}
