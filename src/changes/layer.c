/* SPDX-License-Identifier: MIT */
/*
 * A run's layer, from its start to its end (changes.h): the directories
 * the sandbox's overlay writes to, the mounts beneath the roots, the scan
 * once the sandbox is gone, and what follows: held for review, or applied
 * at once (recording).
 *
 * DESIGN: a layer per writable root that is not beneath another root on the
 * same mount (the outer overlay shows and holds the inner root); a root
 * that is a mount of its own inside another gets its own layer. The
 * layer's directories live in the journal (layer/<root>/upper, .../work),
 * created here before the sandbox and named to it by path; when the state
 * directory is on the root's filesystem an apply moves entries instead of
 * copying them, which is what makes holding and recording cheap for a
 * build. Mounts beneath a layered root (submounts) are not part of the
 * overlay's lower layer: they are bound read-only over it (mounts.c), and
 * the run says so.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "changes/changes.h"
#include "changes/fsops.h"

/* Decodes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape_octal(char *s)
{
	char *o = s;

	for (char *p = s; *p; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '7' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			*o++ = (char)((p[1] - '0') << 6 | (p[2] - '0') << 3 | (p[3] - '0'));
			p += 3;
			continue;
		}
		*o++ = *p;
	}
	*o = '\0';
}

static int cmp_depth(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t dx = ward__path_depth(x), dy = ward__path_depth(y);

	return dx != dy ? (dx < dy ? -1 : 1) : strcmp(x, y);
}

/* The mount points of this process, parents first. */
static int mount_points(char ***ret, size_t *ret_n)
{
	_cleanup_free_ char *data = NULL;
	char **v = NULL;
	size_t len, n = 0;
	int r;

	r = ward__read_file("/proc/self/mountinfo", (size_t)4 << 20, &data, &len);
	if (r < 0)
		return r;
	for (char *line = data, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		char *f[5];
		int k = 0;

		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		for (char *p = line; k < 5 && p;) {
			f[k++] = p;
			p = strchr(p, ' ');
			if (p)
				*p++ = '\0';
		}
		if (k < 5)
			continue;
		unescape_octal(f[4]);
		if (n % 64 == 0) {
			char **nv = realloc(v, (n + 64) * sizeof(*nv));

			if (!nv)
				goto nomem;
			v = nv;
		}
		v[n] = strdup(f[4]);
		if (!v[n])
			goto nomem;
		n++;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_depth);
	*ret = v;
	*ret_n = n;
	return 0;
nomem:
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return -ENOMEM;
}

static bool same_mount(const char *a, const char *b)
{
	struct statx x, y;

	return statx(AT_FDCWD, a, AT_NO_AUTOMOUNT, STATX_MNT_ID, &x) == 0 &&
		statx(AT_FDCWD, b, AT_NO_AUTOMOUNT, STATX_MNT_ID, &y) == 0 &&
		(x.stx_mask & STATX_MNT_ID) && x.stx_mnt_id == y.stx_mnt_id;
}

/* Which roots get a layer: those not beneath another root on the same mount. */
static int plan_roots(struct ward__changes_run *run, const struct ward_policy *p,
		      struct ward_error *err)
{
	run->roots = calloc(p->roots.n ? p->roots.n : 1, sizeof(*run->roots));
	if (!run->roots)
		return -ENOMEM;
	for (size_t i = 0; i < p->roots.n; i++) {
		struct ward__changes_root *rt = &run->roots[i];
		struct stat st;

		rt->path = strdup(p->roots.v[i]);
		if (!rt->path)
			return -ENOMEM;
		run->n_roots++;
		if (stat(rt->path, &st) < 0)
			return ward__error(err, -errno, "changes",
					   "cannot look at writable root '%s': %m", rt->path);
		rt->dev = (uint64_t)st.st_dev;
		rt->ino = (uint64_t)st.st_ino;
		rt->layered = true;
		/* Roots are sorted parents first: an outer layered root is already planned. */
		for (size_t j = 0; j < i; j++)
			if (run->roots[j].layered &&
			    ward__path_under(rt->path, run->roots[j].path) &&
			    same_mount(rt->path, run->roots[j].path))
				rt->layered = false;
	}
	return 0;
}

/* The mounts strictly beneath each layered root (not roots themselves), parents first. */
static int plan_submounts(struct ward__changes_run *run, struct ward_error *err)
{
	char **mp = NULL;
	size_t n = 0;
	int r;

	r = mount_points(&mp, &n);
	if (r < 0)
		return ward__error(err, r, "changes", "cannot read '/proc/self/mountinfo': %m");
	for (size_t k = 0; k < n && r >= 0; k++) {
		struct ward__changes_root *owner = NULL;
		bool is_root = false, nested = false;

		for (size_t i = 0; i < run->n_roots; i++) {
			struct ward__changes_root *rt = &run->roots[i];

			if (strcmp(mp[k], rt->path) == 0)
				is_root = true;
			else if (rt->layered && ward__path_under(mp[k], rt->path) &&
				 (!owner || strlen(rt->path) > strlen(owner->path)))
				owner = rt;
		}
		if (is_root || !owner)
			continue;
		/* A mount beneath a submount comes with it (the clone is recursive). */
		for (size_t s = 0; s < owner->n_submounts; s++)
			nested |= ward__path_under(mp[k], owner->submounts[s]);
		if (nested)
			continue;
		if (owner->n_submounts >= WARD_LAYER_MAX_SUBMOUNTS) {
			r = ward__error(err, -E2BIG, "changes",
					"too many mounts beneath writable root '%s' to layer it",
					owner->path);
			break;
		}
		if (owner->n_submounts % 8 == 0) {
			char **v = realloc(owner->submounts, (owner->n_submounts + 8) * sizeof(*v));

			if (!v) {
				r = -ENOMEM;
				break;
			}
			owner->submounts = v;
		}
		owner->submounts[owner->n_submounts] = strdup(mp[k]);
		if (!owner->submounts[owner->n_submounts]) {
			r = -ENOMEM;
			break;
		}
		owner->n_submounts++;
		r = ward__changes_run_note(run,
					   "'%s' is a separate mount: it is not layered, and it "
					   "was read-only during the run",
					   mp[k]);
	}
	for (size_t k = 0; k < n; k++)
		free(mp[k]);
	free(mp);
	return r;
}

int ward__changes_begin(struct ward__changes_cfg *cfg, const struct ward_policy *p,
			enum ward__run_mode mode, char *const *argv, struct ward__changes_run **ret,
			struct ward_error *err)
{
	struct ward__changes_run *run = NULL;
	size_t nl = 0;
	int r;

	if (!p->resolved)
		return ward__error(err, -EINVAL, "changes", "the policy was not resolved");
	if (p->mode == WARD_MODE_DANGER_FULL_ACCESS)
		return ward__error(err, -EINVAL, "changes",
				   "danger-full-access runs without a sandbox: its changes cannot "
				   "be held or recorded");
	r = ward__journal_create(cfg, mode, p->resolved_cwd, argv, &run, err);
	if (r < 0)
		return r;
	r = plan_roots(run, p, err);
	if (r >= 0)
		r = plan_submounts(run, err);
	if (r < 0)
		goto fail;
	for (size_t i = 0; i < run->n_roots; i++)
		nl += run->roots[i].layered;
	run->layers = calloc(nl ? nl : 1, sizeof(*run->layers));
	run->layer_paths = calloc(2 * (nl ? nl : 1), sizeof(char *));
	if (!run->layers || !run->layer_paths) {
		r = ward__error(err, -ENOMEM, "changes", "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < run->n_roots; i++) {
		struct ward__changes_root *rt = &run->roots[i];
		struct ward__layer *l = &run->layers[run->n_layers];
		char **paths = &run->layer_paths[2 * run->n_layers];
		struct stat st;

		if (!rt->layered)
			continue;
		if (asprintf(&paths[0], "%s/layer/%zu/upper", run->dir, i) < 0 ||
		    asprintf(&paths[1], "%s/layer/%zu/work", run->dir, i) < 0) {
			paths[0] = paths[1] = NULL;
			r = ward__error(err, -ENOMEM, "changes", "out of memory");
			goto fail;
		}
		run->n_layers++;
		r = ward__mkdir_parents(paths[0], 0700);
		if (r >= 0)
			r = ward__mkdir_parents(paths[1], 0700);
		if (r < 0) {
			ward__error(err, r, "changes", "cannot create the layer '%s': %m",
				    paths[0]);
			goto fail;
		}
		/*
		 * The root of a merged directory shows the upper directory's mode and
		 * times: the layer's root takes the root's, so that the command sees
		 * its workspace as the host has it (not ward's 0700).
		 */
		if (stat(rt->path, &st) == 0) {
			struct timespec ts[2] = {st.st_atim, st.st_mtim};

			(void)chmod(paths[0], st.st_mode & 07777);
			(void)utimensat(AT_FDCWD, paths[0], ts, 0);
		}
		if (stat(paths[0], &st) == 0 && (uint64_t)st.st_dev != rt->dev) {
			r = ward__changes_run_note(
				run,
				"the journal is not on the filesystem of '%s': applying copies its changes",
				rt->path);
			if (r < 0)
				goto fail;
		}
		*l = (struct ward__layer){
			.root = rt->path,
			.upper = paths[0],
			.work = paths[1],
			.submounts = rt->submounts,
			.n_submounts = rt->n_submounts,
		};
	}
	*ret = run;
	return 0;
fail:
	(void)ward__journal_remove(run);
	ward__changes_run_free(run);
	return r;
}

/* The overlay's work directories go once the sandbox is gone (they hold nothing of the run's). */
static void remove_work(struct ward__changes_run *run)
{
	for (size_t i = 0; i < run->n_roots; i++) {
		_cleanup_free_ char *dir = NULL;
		_cleanup_close_ int fd = -1;

		if (!run->roots[i].layered || asprintf(&dir, "%s/layer/%zu", run->dir, i) < 0)
			continue;
		fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			(void)ward__fs_remove_at(fd, "work");
	}
}

int ward__changes_end(struct ward__changes_run *run, const struct ward_policy *p, int exit_code,
		      struct ward_error *err)
{
	struct timespec ts;
	int r;

	remove_work(run);
	clock_gettime(CLOCK_REALTIME, &ts);
	run->ended_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	run->exit_code = exit_code;
	r = ward__changes_scan(run, p, err);
	if (r < 0) {
		/* Kept for the person to look at (and discard): numbered, with why. */
		(void)ward__changes_run_note(run, "its changes could not be read: %s",
					     err ? err->message : "an error");
		if (ward__journal_number(run, NULL) >= 0)
			(void)ward__journal_save(run, NULL);
		return r;
	}
	run->state = WARD_RS_HELD;
	/* Nothing changed: nothing to hold, apply or undo, and no room taken in the journal. */
	if (run->n == 0) {
		(void)ward__journal_remove(run);
		run->id = 0;
		return 0;
	}
	r = ward__journal_number(run, err);
	if (r >= 0)
		r = ward__journal_save(run, err);
	if (r < 0)
		return r;
	if (run->mode == WARD_RUN_RECORD) {
		struct ward__apply_report rep;

		r = ward__changes_apply(run, WARD_SIDE_HOST, &rep, err);
		if (r < 0) {
			ward__error_hint(err,
					 "the changes are held as run %" PRIu64
					 ": 'ward changes apply %" PRIu64
					 "' or 'ward changes discard %" PRIu64 "'",
					 run->id, run->id, run->id);
			return r;
		}
		if (rep.conflicts > 0) {
			(void)ward__changes_run_note(
				run,
				"%zu change%s not applied: the host changed %s during the run (first: %s)",
				rep.conflicts, rep.conflicts == 1 ? " was" : "s were",
				rep.conflicts == 1 ? "it" : "them", rep.first_conflict);
			(void)ward__journal_save(run, NULL);
		}
	}
	/* The bounds: after a run that kept something (an empty one left the journal already). */
	if (run->mode == WARD_RUN_RECORD)
		(void)ward__journal_prune(run->cfg, run->id, NULL);
	return 0;
}

int ward__changes_discard(struct ward__changes_run *run, struct ward_error *err)
{
	_cleanup_close_ int fd = -1;
	int r;

	/* A stopped apply is taken back first: discarding never leaves half of it on the host. */
	r = ward__changes_apply_rollback(run, err);
	if (r < 0)
		return r;
	if (run->state != WARD_RS_HELD && run->state != WARD_RS_RUNNING)
		return ward__error(err, -EINVAL, "changes",
				   "run %" PRIu64 " is %s: only held changes can be discarded%s",
				   run->id, ward__run_state_name(run->state),
				   run->state == WARD_RS_APPLIED ? " ('ward undo' takes it back)"
								 : "");
	fd = open(run->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return ward__error(err, -errno, "changes", "cannot open '%s': %m", run->dir);
	r = ward__fs_remove_at(fd, "layer");
	if (r < 0)
		return ward__error(err, r, "changes",
				   "cannot remove the layer of run %" PRIu64 ": %m", run->id);
	for (size_t i = 0; i < run->n; i++)
		if (run->v[i].state == WARD_CS_PENDING || run->v[i].state == WARD_CS_CONFLICT)
			run->v[i].state = WARD_CS_DISCARDED;
	run->state = WARD_RS_DISCARDED;
	return ward__journal_save(run, err);
}
