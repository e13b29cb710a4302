/* SPDX-License-Identifier: MIT */
/*
 * Undo: an applied run taken back (changes.h).
 *
 * DESIGN: the mirror of apply.c, one rename per entry: a replaced entry's
 * before-image (kept in the layer by the apply) is exchanged with what the
 * host has (RENAME_EXCHANGE), a deleted one is renamed back
 * (RENAME_NOREPLACE), an added one is moved out of the host into the layer;
 * a directory gets its mode back. Before anything moves, each entry is
 * checked: what the host has must be what the apply left (inode, size,
 * ctime, and for a tree its largest ctime), else the entry was changed
 * again since and is a conflict; a before-image must be there and match
 * its checksum, else the journal is damaged. Nothing is undone unless
 * every entry can be (or the person said --force: the before-image wins,
 * or --partial: conflicts and entries without a before-image are left as
 * they are). The same record states as apply ("undoing" while switching)
 * let a rerun finish or roll back an undo ward was stopped in, and a
 * failed step rolls back the steps made.
 */
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

struct ufds {
	int host;
	int upper;
	bool same_fs;
};

struct uctx {
	struct ward__changes_run *run;
	struct ufds *fds;
	bool *take, *done;
	bool *exch; /* per entry: switched by exchange (else a plain rename) */
	struct ward_error *err;
};

static void tmp_name(const struct uctx *x, size_t i, char *out, size_t size)
{
	snprintf(out, size, ".ward-undo-%" PRIu64 "-%zu", x->run->id, i);
}

static void release(struct uctx *x)
{
	for (size_t i = 0; x->fds && i < x->run->n_roots; i++) {
		if (x->fds[i].host >= 0)
			close(x->fds[i].host);
		if (x->fds[i].upper >= 0)
			close(x->fds[i].upper);
	}
	free(x->fds);
	free(x->take);
	free(x->done);
	free(x->exch);
}

static int open_all(struct uctx *x)
{
	struct ward__changes_run *run = x->run;

	x->fds = calloc(run->n_roots ? run->n_roots : 1, sizeof(*x->fds));
	x->take = calloc(run->n ? run->n : 1, sizeof(bool));
	x->done = calloc(run->n ? run->n : 1, sizeof(bool));
	x->exch = calloc(run->n ? run->n : 1, sizeof(bool));
	if (!x->fds || !x->take || !x->done || !x->exch)
		return ward__error(x->err, -ENOMEM, "changes", "out of memory");
	for (size_t i = 0; i < run->n_roots; i++)
		x->fds[i].host = x->fds[i].upper = -1;
	for (size_t i = 0; i < run->n_roots; i++) {
		const struct ward__changes_root *rt = &run->roots[i];
		_cleanup_free_ char *upper = NULL;
		struct stat a, b;
		int r;

		if (!rt->layered)
			continue;
		r = ward__fs_open_root(rt->path, rt->dev, rt->ino);
		if (r < 0)
			return ward__error(x->err, r, "changes",
					   r == -ESTALE
						   ? "writable root '%s' was replaced since the run"
						   : "cannot open writable root '%s': %m",
					   rt->path);
		x->fds[i].host = r;
		upper = ward__journal_upper(run, (unsigned)i);
		if (!upper)
			return -ENOMEM;
		(void)ward__mkdir_parents(upper, 0700);
		x->fds[i].upper = open(upper, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (x->fds[i].upper < 0)
			return ward__error(x->err, -errno, "changes",
					   "the journal of run %" PRIu64
					   " is incomplete ('%s'): %m",
					   run->id, upper);
		x->fds[i].same_fs = fstat(x->fds[i].host, &a) == 0 &&
			fstat(x->fds[i].upper, &b) == 0 && a.st_dev == b.st_dev;
	}
	return 0;
}

static int parents(struct uctx *x, const struct ward__change *c, int *ret_h, int *ret_u,
		   const char **ret_name)
{
	const char *name;
	int h, u;

	h = ward__fs_open_parent(x->fds[c->root].host, c->path, &name);
	if (h < 0)
		return h;
	u = ward__fs_make_parent(x->fds[c->root].upper, c->path, &name);
	if (u < 0) {
		close(h);
		return u;
	}
	*ret_h = h;
	*ret_u = u;
	*ret_name = name;
	return 0;
}

/* Whether what the host has at c is what the apply left there. */
static bool unchanged(int h, const char *name, const struct ward__change *c)
{
	struct stat st;

	if (c->kind == WARD_CHANGE_DELETE)
		return fstatat(h, name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT;
	if (fstatat(h, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	if (c->kind == WARD_CHANGE_DIRMODE)
		return S_ISDIR(st.st_mode) && (st.st_mode & 07777) == c->new_mode;
	if ((uint64_t)st.st_ino != c->after_ino)
		return false;
	if (S_ISDIR(st.st_mode)) {
		struct ward__tree_stats ts;

		return ward__fs_tree_stats(h, name, &ts) >= 0 && ts.bytes == c->after_size &&
			ts.max_ctime_ns == c->after_ctime_ns;
	}
	return ward__fs_ctime_ns(&st) == c->after_ctime_ns &&
		(!S_ISREG(st.st_mode) || (uint64_t)st.st_size == c->after_size);
}

/* Whether the before-image of c is in the layer, whole. */
static const char *image_problem(int u, const char *name, const struct ward__change *c)
{
	struct stat st;

	if (fstatat(u, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return "its before-image is missing";
	if (ward__fs_type(st.st_mode) != c->old_type)
		return "its before-image is of another type";
	if (S_ISREG(st.st_mode)) {
		_cleanup_close_ int fd = -1;
		char sum[65];

		if ((uint64_t)st.st_size != c->old_size)
			return "its before-image has another size";
		if (!c->sum[0])
			return NULL;
		fd = openat(u, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || ward__fs_sha256(fd, sum) < 0 || strcmp(sum, c->sum) != 0)
			return "its before-image does not match its checksum";
	}
	return NULL;
}

/* One entry's step back (forward = undo), or its reverse. */
static int flip(struct uctx *x, size_t i, bool forward)
{
	struct ward__change *c = &x->run->v[i];
	bool same = x->fds[c->root].same_fs;
	_cleanup_close_ int h = -1, u = -1;
	const char *name;
	char tmp[64];
	int sdir, r;
	const char *sname;
	struct stat st;

	r = parents(x, c, &h, &u, &name);
	if (r < 0)
		return r;
	if (c->kind == WARD_CHANGE_DIRMODE)
		return ward__fs_chmod_at(h, name, forward ? c->old_mode : c->new_mode);
	tmp_name(x, i, tmp, sizeof(tmp));
	sdir = same ? u : h;
	sname = same ? name : tmp;
	switch (c->kind) {
	case WARD_CHANGE_ADD:
		/* Out of the host, into the slot (removed once the whole undo is through). */
		return forward ? RET_NERRNO(renameat2(h, name, sdir, sname, RENAME_NOREPLACE))
			       : RET_NERRNO(renameat2(sdir, sname, h, name, RENAME_NOREPLACE));
	case WARD_CHANGE_REPLACE:
	case WARD_CHANGE_DELETE:
		/*
		 * The before-image goes back in; what the host has there (the run's
		 * entry, or with --force whatever stands there now) goes to the slot.
		 */
		if (forward)
			x->exch[i] = fstatat(h, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
		if (x->exch[i])
			return RET_NERRNO(renameat2(sdir, sname, h, name, RENAME_EXCHANGE));
		return forward ? RET_NERRNO(renameat2(sdir, sname, h, name, RENAME_NOREPLACE))
			       : RET_NERRNO(renameat2(h, name, sdir, sname, RENAME_NOREPLACE));
	case WARD_CHANGE_DIRMODE:
	case WARD_CHANGE_MEMBER:
		break;
	}
	return 0;
}

static int phase_of(const struct ward__change *c)
{
	/* Directory modes first (an entry may need its directory writable), additions last. */
	return c->kind == WARD_CHANGE_DIRMODE ? 0 : c->kind == WARD_CHANGE_ADD ? 1 : 2;
}

static void roll_back(struct uctx *x)
{
	for (int phase = 2; phase >= 0; phase--)
		for (size_t i = x->run->n; i-- > 0;)
			if (x->done[i] && phase_of(&x->run->v[i]) == phase &&
			    flip(x, i, false) >= 0)
				x->done[i] = false;
}

/* Copies the before-images beside their targets (the layer on another filesystem). */
static int stage(struct uctx *x, size_t i)
{
	struct ward__change *c = &x->run->v[i];
	_cleanup_close_ int h = -1, u = -1;
	const char *name;
	char tmp[64];
	struct stat st;
	int r;

	if (x->fds[c->root].same_fs ||
	    (c->kind != WARD_CHANGE_REPLACE && c->kind != WARD_CHANGE_DELETE))
		return 0;
	r = parents(x, c, &h, &u, &name);
	if (r < 0)
		return r;
	tmp_name(x, i, tmp, sizeof(tmp));
	(void)ward__fs_remove_at(h, tmp);
	r = ward__fs_copy_at(u, name, h, tmp);
	if (r < 0)
		return r;
	if (fstatat(h, tmp, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	c->old_ino = (uint64_t)st.st_ino;
	return 0;
}

static void unstage(struct uctx *x)
{
	for (size_t i = 0; i < x->run->n; i++) {
		const struct ward__change *c = &x->run->v[i];
		_cleanup_close_ int h = -1;
		const char *name;
		char tmp[64];

		if (!x->take[i] || x->done[i] || x->fds[c->root].same_fs ||
		    c->kind == WARD_CHANGE_ADD || c->kind == WARD_CHANGE_DIRMODE)
			continue;
		h = ward__fs_open_parent(x->fds[c->root].host, c->path, &name);
		if (h < 0)
			continue;
		tmp_name(x, i, tmp, sizeof(tmp));
		(void)ward__fs_remove_at(h, tmp);
	}
}

/* For an undo ward was stopped in: which entries are back already, by their inodes. */
static void find_done(struct uctx *x)
{
	for (size_t i = 0; i < x->run->n; i++) {
		struct ward__change *c = &x->run->v[i];
		_cleanup_close_ int h = -1, u = -1;
		const char *name;
		struct stat st;
		char tmp[64];

		if (!x->take[i] || parents(x, c, &h, &u, &name) < 0)
			continue;
		tmp_name(x, i, tmp, sizeof(tmp));
		switch (c->kind) {
		case WARD_CHANGE_ADD:
			x->done[i] = fstatat(h, name, &st, AT_SYMLINK_NOFOLLOW) < 0 &&
				(x->fds[c->root].same_fs
					 ? fstatat(u, name, &st, AT_SYMLINK_NOFOLLOW) == 0
					 : fstatat(h, tmp, &st, AT_SYMLINK_NOFOLLOW) == 0) &&
				(uint64_t)st.st_ino == c->after_ino;
			break;
		case WARD_CHANGE_REPLACE:
		case WARD_CHANGE_DELETE:
			x->done[i] = fstatat(h, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				(uint64_t)st.st_ino == c->old_ino;
			if (x->done[i])
				x->exch[i] = x->fds[c->root].same_fs
					? fstatat(u, name, &st, AT_SYMLINK_NOFOLLOW) == 0
					: fstatat(h, tmp, &st, AT_SYMLINK_NOFOLLOW) == 0;
			break;
		case WARD_CHANGE_DIRMODE:
			x->done[i] = fstatat(h, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				(st.st_mode & 07777) == c->old_mode;
			break;
		case WARD_CHANGE_MEMBER:
			break;
		}
	}
}

/* After the switch: the run's versions, now in the slots, go. */
static void finish(struct uctx *x)
{
	for (size_t i = 0; i < x->run->n; i++) {
		struct ward__change *c = &x->run->v[i];
		_cleanup_close_ int h = -1, u = -1;
		const char *name;
		char tmp[64];

		if (!x->take[i] || !x->done[i] || c->kind == WARD_CHANGE_DIRMODE)
			continue;
		if (parents(x, c, &h, &u, &name) < 0)
			continue;
		tmp_name(x, i, tmp, sizeof(tmp));
		if (x->fds[c->root].same_fs)
			(void)ward__fs_remove_at(u, name);
		else
			(void)ward__fs_remove_at(h, tmp);
	}
}

static int save(struct uctx *x, enum ward__run_state s)
{
	x->run->state = s;
	return ward__journal_save(x->run, x->err);
}

static void where(const struct ward__changes_run *run, const struct ward__change *c,
		  const char *why, char *out, size_t size)
{
	const char *root = run->roots[c->root].path;

	snprintf(out, size, "%s%s%s (%s)", root, strcmp(root, "/") == 0 ? "" : "/", c->path, why);
}

int ward__changes_undo(struct ward__changes_run *run, bool force, bool skip,
		       struct ward__undo_report *rep, struct ward_error *err)
{
	struct uctx x = {.run = run, .err = err};
	bool recovering = run->state == WARD_RS_UNDOING;
	const char *ka = getenv("WARD_CHANGES_TEST_KILL_AFTER");
	long kill_after = ka ? strtol(ka, NULL, 10) : -1, switched = 0;
	size_t failed = 0;
	int r;

	*rep = (struct ward__undo_report){0};
	if (run->state != WARD_RS_APPLIED && !recovering) {
		if (run->state == WARD_RS_HELD)
			return ward__error(err, -EINVAL, "changes",
					   "run %" PRIu64
					   " is held, not applied: discard it instead",
					   run->id);
		return ward__error(err, -EINVAL, "changes",
				   "run %" PRIu64 " is %s: nothing to undo", run->id,
				   ward__run_state_name(run->state));
	}
	if (run->commit_pending)
		return ward__error(err, -EBADMSG, "changes",
				   "run %" PRIu64 " is incomplete in the journal (ward was stopped "
				   "while it finished the apply)",
				   run->id);
	r = open_all(&x);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < run->n; i++) {
		struct ward__change *c = &run->v[i];

		x.take[i] = (c->state == WARD_CS_APPLIED ||
			     (recovering && c->state == WARD_CS_UNDONE)) &&
			c->kind != WARD_CHANGE_MEMBER && x.fds[c->root].host >= 0;
	}
	if (recovering)
		find_done(&x);

	for (size_t i = 0; i < run->n; i++) {
		struct ward__change *c = &run->v[i];
		_cleanup_close_ int h = -1, u = -1;
		const char *name, *why = NULL;

		if (!x.take[i] || x.done[i])
			continue;
		if ((c->kind == WARD_CHANGE_REPLACE || c->kind == WARD_CHANGE_DELETE) &&
		    c->unkept != WARD_UNKEPT_NONE) {
			rep->unkept++;
			if (!rep->first_unkept[0])
				where(run, c, ward__unkept_reason(c->unkept), rep->first_unkept,
				      sizeof(rep->first_unkept));
			x.take[i] = false;
			continue;
		}
		r = parents(&x, c, &h, &u, &name);
		if (r < 0) {
			why = r == -ELOOP ? "a symlink is on its way" : "its directory is gone";
		} else if (!unchanged(h, name, c)) {
			why = c->kind == WARD_CHANGE_DELETE ? "the host made it again"
							    : "changed again since";
		}
		if (why) {
			rep->conflicts++;
			if (!rep->first_conflict[0])
				where(run, c, why, rep->first_conflict,
				      sizeof(rep->first_conflict));
			if (!force || r < 0)
				x.take[i] = false;
			if (r < 0 || !force)
				continue;
		}
		if (c->kind == WARD_CHANGE_REPLACE || c->kind == WARD_CHANGE_DELETE) {
			const char *problem = image_problem(u, name, c);

			if (problem) {
				char w[PATH_MAX + 96];

				where(run, c, problem, w, sizeof(w));
				r = ward__error(err, -EBADMSG, "changes",
						"the journal of run %" PRIu64
						" is damaged: %s; nothing was undone",
						run->id, w);
				goto out;
			}
		}
	}
	if ((rep->conflicts > 0 && !force && !skip) || (rep->unkept > 0 && !skip)) {
		if (rep->unkept > 0)
			r = ward__error(err, -ENODATA, "changes",
					"%zu change%s of run %" PRIu64
					" cannot be undone (first: %s); nothing was undone",
					rep->unkept, rep->unkept == 1 ? "" : "s", run->id,
					rep->first_unkept);
		else
			r = ward__error(err, -EBUSY, "changes",
					"%zu change%s of run %" PRIu64
					" changed again since (first: %s); nothing was undone",
					rep->conflicts, rep->conflicts == 1 ? "" : "s", run->id,
					rep->first_conflict);
		if (recovering) {
			roll_back(&x);
			unstage(&x);
			for (size_t i = 0; i < run->n; i++)
				if (run->v[i].state == WARD_CS_UNDONE)
					run->v[i].state = WARD_CS_APPLIED;
			(void)save(&x, WARD_RS_APPLIED);
		}
		goto out;
	}

	for (size_t i = 0; i < run->n; i++) {
		if (!x.take[i] || x.done[i])
			continue;
		r = stage(&x, i);
		if (r < 0) {
			unstage(&x);
			r = ward__error(
				err, r, "changes",
				"cannot copy the before-image of '%s' back: %m; nothing was undone",
				run->v[i].path);
			goto out;
		}
	}
	r = save(&x, WARD_RS_UNDOING);
	if (r < 0)
		goto out;
	for (int phase = 0; phase <= 2 && r >= 0; phase++)
		for (size_t i = 0; i < run->n; i++) {
			if (!x.take[i] || x.done[i] || phase_of(&run->v[i]) != phase)
				continue;
			/* The tests' kill point (apply.c says more). */
			if (kill_after >= 0 && (long)++switched > kill_after)
				raise(SIGKILL);
			r = flip(&x, i, true);
			if (r < 0) {
				failed = i;
				break;
			}
			x.done[i] = true;
		}
	if (r < 0) {
		int code = r;

		roll_back(&x);
		unstage(&x);
		(void)save(&x, WARD_RS_APPLIED);
		r = ward__error(err, code, "changes",
				"cannot undo '%s': %m; nothing was undone (the host is as it was)",
				run->v[failed].path);
		goto out;
	}
	for (size_t i = 0; i < run->n; i++) {
		if (x.take[i]) {
			run->v[i].state = WARD_CS_UNDONE;
			rep->undone++;
		} else if (run->v[i].state == WARD_CS_APPLIED &&
			   run->v[i].kind != WARD_CHANGE_MEMBER) {
			run->v[i].state = WARD_CS_KEPT_HOST;
		}
	}
	r = save(&x, WARD_RS_UNDONE);
	if (r >= 0)
		finish(&x);
out:
	release(&x);
	return r;
}
