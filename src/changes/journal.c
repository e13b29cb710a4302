/* SPDX-License-Identifier: MIT */
/*
 * The journal of changes: one directory per run under ward's state
 * directory, <dir>/runs/<id>/, holding the run's record (record.c) and its
 * layer, layer/<root>/upper: the command's changes while the run is held,
 * the host's replaced entries (the before-images) once it is applied.
 *
 * DESIGN: the state directory is the person's own (0700), outside every
 * sandbox: each sandbox's mount view masks it (src/policy/resolve.c adds it
 * to the deny-read paths), so no command, this run's or another sandbox's,
 * can read a before-image or plant a record. Ids are numbers from a
 * counter (<dir>/seq) under the journal's lock (<dir>/lock, flock), so that
 * "ward undo 17" means one run for as long as the journal keeps it. A run
 * being worked on (running, applied, undone) is locked by the ward doing it
 * (<run>/lock): a second ward gets "busy", never a half-done state. Bounds:
 * past the total, the least recent runs lose their before-images first (the
 * record stays and lists those entries as "cannot be undone"); past the
 * number of runs, the least recent records go too. A held run, whose
 * changes exist nowhere else, is never dropped.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "changes/changes.h"
#include "changes/fsops.h"
#include "changes/record.h"

/* ------------------------------------------------------------------ configuration */

char *ward__changes_dir_default(void)
{
	return ward__changes_dir_path();
}

static uint64_t env_size(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);
	uint64_t n;

	return v && ward__parse_size(v, &n) >= 0 ? n : dflt;
}

int ward__changes_cfg_init(struct ward__changes_cfg *cfg, struct ward_error *err)
{
	*cfg = (struct ward__changes_cfg){
		.max_file = env_size("WARD_CHANGES_MAX_FILE", WARD_CHANGES_MAX_FILE_DEFAULT),
		.max_run = env_size("WARD_CHANGES_MAX_RUN", WARD_CHANGES_MAX_RUN_DEFAULT),
		.max_total = env_size("WARD_CHANGES_MAX_TOTAL", WARD_CHANGES_MAX_TOTAL_DEFAULT),
		.max_runs = (unsigned)MIN(
			env_size("WARD_CHANGES_MAX_RUNS", WARD_CHANGES_MAX_RUNS_DEFAULT), 100000),
	};
	if (cfg->max_runs < 1)
		cfg->max_runs = 1;
	cfg->dir = ward__changes_dir_default();
	if (!cfg->dir)
		return ward__error(err, -ENOENT, "changes",
				   "no place for the journal of changes (set WARD_CHANGES_DIR, "
				   "XDG_STATE_HOME or HOME)");
	return 0;
}

void ward__changes_cfg_release(struct ward__changes_cfg *cfg)
{
	free(cfg->dir);
	cfg->dir = NULL;
}

/* ------------------------------------------------------------------ runs in memory */

void ward__changes_run_free(struct ward__changes_run *run)
{
	if (!run)
		return;
	for (size_t i = 0; i < run->n; i++) {
		free(run->v[i].path);
		free(run->v[i].refused);
	}
	free(run->v);
	for (size_t i = 0; i < run->n_roots; i++) {
		free(run->roots[i].path);
		for (size_t k = 0; k < run->roots[i].n_submounts; k++)
			free(run->roots[i].submounts[k]);
		free(run->roots[i].submounts);
	}
	free(run->roots);
	for (size_t i = 0; i < run->n_notes; i++)
		free(run->notes[i]);
	free(run->notes);
	for (size_t i = 0; i < 2 * run->n_layers; i++)
		free(run->layer_paths[i]);
	free(run->layer_paths);
	free(run->layers);
	free(run->cwd);
	free(run->command);
	free(run->dir);
	if (run->lock_fd >= 0)
		close(run->lock_fd);
	free(run);
}

char *ward__journal_upper(const struct ward__changes_run *run, unsigned root)
{
	char *p;

	if (asprintf(&p, "%s/layer/%u/upper", run->dir, root) < 0)
		return NULL;
	return p;
}

static struct ward__changes_run *run_new(struct ward__changes_cfg *cfg, uint64_t id)
{
	struct ward__changes_run *run = calloc(1, sizeof(*run));

	if (!run)
		return NULL;
	run->cfg = cfg;
	run->id = id;
	run->lock_fd = -1;
	run->exit_code = -1;
	if (asprintf(&run->dir, "%s/runs/%" PRIu64, cfg->dir, id) < 0) {
		run->dir = NULL;
		ward__changes_run_free(run);
		return NULL;
	}
	return run;
}

/* ------------------------------------------------------------------ the journal on disk */

static int lock_file(const char *path, bool wait, int *ret_fd)
{
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	while (flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0) {
		int r = errno == EWOULDBLOCK ? -EBUSY : -errno;

		if (errno == EINTR)
			continue;
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

static int journal_lock(struct ward__changes_cfg *cfg, int *ret_fd, struct ward_error *err)
{
	_cleanup_free_ char *runs = ward__path_join(cfg->dir, "runs");
	_cleanup_free_ char *lock = ward__path_join(cfg->dir, "lock");
	int r;

	if (!runs || !lock)
		return -ENOMEM;
	r = ward__mkdir_parents(runs, 0700);
	if (r < 0)
		return ward__error(err, r, "changes", "cannot create the journal '%s': %m", runs);
	r = lock_file(lock, true, ret_fd);
	if (r < 0)
		return ward__error(err, r, "changes", "cannot lock the journal '%s': %m", lock);
	return 0;
}

/*
 * Writes a file whole: a temporary file renamed over it, so that a reader
 * (or a crash) sees the old or the new one, never half. durable: fsync'd,
 * file and directory, before returning (the records an interrupted apply or
 * undo is finished from); else the page cache is enough (a killed ward
 * loses nothing the kernel has).
 */
static int write_whole(const char *dir, const char *name, const void *data, size_t len,
		       bool durable)
{
	_cleanup_free_ char *tmp = NULL, *path = NULL;
	_cleanup_close_ int fd = -1, dfd = -1;

	if (asprintf(&tmp, "%s/.%s.tmp", dir, name) < 0 || asprintf(&path, "%s/%s", dir, name) < 0)
		return -ENOMEM;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (ward__write_all(fd, data, len) < 0 || (durable && fsync(fd) < 0)) {
		int r = -errno;

		unlink(tmp);
		return r;
	}
	if (rename(tmp, path) < 0) {
		int r = -errno;

		unlink(tmp);
		return r;
	}
	if (!durable)
		return 0;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		(void)fsync(dfd);
	return 0;
}

static uint64_t next_id(struct ward__changes_cfg *cfg)
{
	_cleanup_free_ char *path = ward__path_join(cfg->dir, "seq");
	char buf[32];
	uint64_t v = 0;
	ssize_t n;

	if (!path)
		return 0;
	n = ward__read_small(path, buf, sizeof(buf));
	if (n > 0) {
		buf[strcspn(buf, "\n")] = '\0';
		if (ward__parse_u64(buf, &v) < 0)
			v = 0;
	}
	/* A counter lost or damaged: never reuse an id still in the journal. */
	if (v == 0) {
		_cleanup_free_ uint64_t *ids = NULL;
		size_t nid = 0;

		if (ward__journal_list(cfg, &ids, &nid, NULL) >= 0 && nid > 0)
			v = ids[0];
	}
	v++;
	n = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", v);
	/* Not durable: after a crash a lower counter only makes the creator try the next. */
	if (write_whole(cfg->dir, "seq", buf, (size_t)n, false) < 0)
		return 0;
	return v;
}

int ward__journal_save(struct ward__changes_run *run, struct ward_error *err)
{
	struct ward__buf b;
	int r;

	r = ward__buf_init(&b, WARD_CHANGES_MAX_RECORD);
	if (r >= 0)
		r = ward__record_write(run, &b);
	/* What a stopped apply or undo is finished from, and their outcome, must survive a crash. */
	if (r >= 0)
		r = write_whole(run->dir, "record", b.data, b.len,
				run->state != WARD_RS_RUNNING && run->state != WARD_RS_HELD);
	ward__buf_release(&b);
	if (r < 0)
		return ward__error(err, r, "changes",
				   "cannot write the record of run %" PRIu64 ": %m", run->id);
	return 0;
}

static char *join_argv(char *const *argv)
{
	struct ward__buf b;
	char *s;

	if (ward__buf_init(&b, 4096) < 0)
		return NULL;
	for (size_t i = 0; argv && argv[i]; i++) {
		bool plain = argv[i][0] != '\0' &&
			strpbrk(argv[i], " \t\n'\"\\$`*?[]{}()<>|&;#~!") == NULL;

		if (i > 0 && ward__buf_append_byte(&b, ' ') < 0)
			break;
		if (plain) {
			if (ward__buf_append_str(&b, argv[i]) < 0)
				break;
			continue;
		}
		if (ward__buf_append_byte(&b, '\'') < 0)
			break;
		for (const char *p = argv[i]; *p; p++)
			if ((*p == '\'' ? ward__buf_append_str(&b, "'\\''")
					: ward__buf_append_byte(&b, (uint8_t)*p)) < 0)
				goto out;
		if (ward__buf_append_byte(&b, '\'') < 0)
			break;
	}
out:
	s = (char *)ward__buf_steal(&b, NULL);
	ward__buf_release(&b);
	return s;
}

int ward__journal_create(struct ward__changes_cfg *cfg, enum ward__run_mode mode, const char *cwd,
			 char *const *argv, struct ward__changes_run **ret, struct ward_error *err)
{
	static unsigned counter;
	_cleanup_free_ char *runs = ward__path_join(cfg->dir, "runs"), *lock = NULL;
	struct ward__changes_run *run = NULL;
	struct timespec ts;
	uint32_t rnd = 0;
	int r;

	if (!runs)
		return ward__error(err, -ENOMEM, "changes", "out of memory");
	r = ward__mkdir_parents(runs, 0700);
	if (r < 0)
		return ward__error(err, r, "changes", "cannot create the journal '%s': %m", runs);
	run = run_new(cfg, 0);
	if (!run)
		return ward__error(err, -ENOMEM, "changes", "out of memory");
	/*
	 * No number yet: most runs change nothing and leave no trace. The run
	 * is numbered (and shows in the journal) once it changed something
	 * (ward__journal_number).
	 */
	free(run->dir);
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
		rnd = (uint32_t)ward__now_ns();
	if (asprintf(&run->dir, "%s/.run-%d-%u-%08x", runs, (int)getpid(), ++counter, rnd) < 0) {
		run->dir = NULL;
		ward__changes_run_free(run);
		return ward__error(err, -ENOMEM, "changes", "out of memory");
	}
	if (mkdir(run->dir, 0700) < 0) {
		r = ward__error(err, -errno, "changes", "cannot create '%s': %m", run->dir);
		ward__changes_run_free(run);
		return r;
	}
	lock = ward__path_join(run->dir, "lock");
	r = lock ? lock_file(lock, false, &run->lock_fd) : -ENOMEM;
	if (r < 0) {
		ward__error(err, r, "changes", "cannot lock a new run: %m");
		(void)ward__journal_remove(run);
		ward__changes_run_free(run);
		return r;
	}
	/*
	 * The line after which a change of the host is the host's own (a
	 * conflict): the coarse clock, the one most filesystems stamp ctime
	 * with, so that a change right after this point is never dated before.
	 */
	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	run->started_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	run->mode = mode;
	run->state = WARD_RS_RUNNING;
	run->cwd = strdup(cwd ? cwd : "/");
	run->command = join_argv(argv);
	if (!run->cwd || !run->command) {
		(void)ward__journal_remove(run);
		ward__changes_run_free(run);
		return ward__error(err, -ENOMEM, "changes", "out of memory");
	}
	*ret = run;
	return 0;
}

int ward__journal_number(struct ward__changes_run *run, struct ward_error *err)
{
	struct ward__changes_cfg *cfg = run->cfg;
	_cleanup_close_ int jlock = -1;
	char *dir = NULL;
	uint64_t id;
	int r;

	if (run->id != 0)
		return 0;
	r = journal_lock(cfg, &jlock, err);
	if (r < 0)
		return r;
	for (int tries = 0;; tries++) {
		id = next_id(cfg);
		if (id == 0)
			return ward__error(err, -EIO, "changes", "cannot number a new run in '%s'",
					   cfg->dir);
		if (asprintf(&dir, "%s/runs/%" PRIu64, cfg->dir, id) < 0)
			return ward__error(err, -ENOMEM, "changes", "out of memory");
		/* NOREPLACE: a counter behind the journal (lost in a crash) takes the next number. */
		if (renameat2(AT_FDCWD, run->dir, AT_FDCWD, dir, RENAME_NOREPLACE) == 0)
			break;
		r = -errno;
		free(dir);
		if (r != -EEXIST || tries >= 64)
			return ward__error(err, r, "changes", "cannot number the run in '%s': %m",
					   cfg->dir);
	}
	free(run->dir);
	run->dir = dir;
	run->id = id;
	return 0;
}

static int read_record(struct ward__changes_run *run, struct ward_error *err)
{
	_cleanup_free_ char *path = ward__path_join(run->dir, "record"), *data = NULL;
	char why[96] = "";
	size_t len;
	uint64_t want = run->id;
	int r;

	if (!path)
		return -ENOMEM;
	r = ward__read_regular_file(path, WARD_CHANGES_MAX_RECORD, &data, &len);
	if (r == -ENOENT)
		return ward__error(err, -EBADMSG, "changes",
				   "run %" PRIu64 " is incomplete in the journal (no record)",
				   want);
	if (r < 0)
		return ward__error(err, r, "changes",
				   "cannot read the record of run %" PRIu64 ": %m", want);
	r = ward__record_read(run, data, len, why, sizeof(why));
	if (r == -EBADMSG || (r >= 0 && run->id != want)) {
		ward__error(err, -EBADMSG, "changes", "the record of run %" PRIu64 " is %s", want,
			    r >= 0 ? "damaged (another run's id)" : why);
		ward__error_hint(
			err, "'ward changes --drop %" PRIu64 "' removes it from the journal", want);
		return -EBADMSG;
	}
	if (r < 0)
		return ward__error(err, r, "changes",
				   "cannot read the record of run %" PRIu64 ": %m", want);
	return 0;
}

static int cmp_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

int ward__journal_list(struct ward__changes_cfg *cfg, uint64_t **ret_ids, size_t *ret_n,
		       struct ward_error *err)
{
	_cleanup_free_ char *runs = ward__path_join(cfg->dir, "runs");
	uint64_t *ids = NULL;
	size_t n = 0, cap = 0;
	DIR *d;
	struct dirent *e;

	if (!runs)
		return -ENOMEM;
	d = opendir(runs);
	if (!d) {
		if (errno == ENOENT) {
			*ret_ids = NULL;
			*ret_n = 0;
			return 0;
		}
		return ward__error(err, -errno, "changes", "cannot read the journal '%s': %m",
				   runs);
	}
	while ((e = readdir(d))) {
		uint64_t id;

		if (ward__parse_u64(e->d_name, &id) < 0 || id == 0)
			continue;
		if (n == cap) {
			uint64_t *v = realloc(ids, (cap ? cap * 2 : 32) * sizeof(*v));

			if (!v) {
				closedir(d);
				free(ids);
				return -ENOMEM;
			}
			ids = v;
			cap = cap ? cap * 2 : 32;
		}
		ids[n++] = id;
	}
	closedir(d);
	if (n > 1)
		qsort(ids, n, sizeof(*ids), cmp_desc);
	*ret_ids = ids;
	*ret_n = n;
	return 0;
}

int ward__journal_open(struct ward__changes_cfg *cfg, const char *id, bool lock,
		       struct ward__changes_run **ret, struct ward_error *err)
{
	struct ward__changes_run *run;
	struct stat st;
	uint64_t n;
	int r;

	if (!id || strcmp(id, "last") == 0) {
		_cleanup_free_ uint64_t *ids = NULL;
		size_t nid = 0;

		r = ward__journal_list(cfg, &ids, &nid, err);
		if (r < 0)
			return r;
		if (nid == 0)
			return ward__error(err, -ENOENT, "changes", "the journal has no runs");
		n = ids[0];
	} else if (ward__parse_u64(id, &n) < 0 || n == 0) {
		return ward__error(err, -EINVAL, "changes", "'%s' is not a run (runs are numbers)",
				   id);
	}
	run = run_new(cfg, n);
	if (!run)
		return -ENOMEM;
	if (lstat(run->dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		ward__changes_run_free(run);
		return ward__error(err, -ENOENT, "changes",
				   "no run %" PRIu64 " in the journal (see 'ward changes')", n);
	}
	if (lock) {
		_cleanup_free_ char *path = ward__path_join(run->dir, "lock");

		r = path ? lock_file(path, false, &run->lock_fd) : -ENOMEM;
		if (r < 0) {
			ward__changes_run_free(run);
			if (r == -EBUSY)
				return ward__error(
					err, r, "changes",
					"run %" PRIu64
					" is busy (its command still runs, or another ward applies or undoes it)",
					n);
			return ward__error(err, r, "changes", "cannot lock run %" PRIu64 ": %m", n);
		}
	}
	r = read_record(run, err);
	if (r < 0) {
		ward__changes_run_free(run);
		return r;
	}
	*ret = run;
	return 0;
}

int ward__journal_remove(struct ward__changes_run *run)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *runs = NULL;
	const char *slash;

	if (!run->dir)
		return 0;
	slash = strrchr(run->dir, '/');
	runs = strndup(run->dir, (size_t)(slash - run->dir));
	if (!runs)
		return -ENOMEM;
	fd = open(runs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return ward__fs_remove_at(fd, slash + 1);
}

uint64_t ward__journal_run_bytes(const struct ward__changes_run *run)
{
	_cleanup_close_ int fd = open(run->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct ward__tree_stats s;

	if (fd < 0 || ward__fs_tree_stats(fd, "layer", &s) < 0)
		return 0;
	return s.bytes;
}

/* Drops a run's before-images: its layer goes, its record stays and says so. */
static int drop_layer(struct ward__changes_run *run, struct ward_error *err)
{
	_cleanup_close_ int fd = open(run->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	for (size_t i = 0; i < run->n; i++) {
		struct ward__change *c = &run->v[i];

		if (c->state == WARD_CS_APPLIED && c->unkept == WARD_UNKEPT_NONE &&
		    (c->kind == WARD_CHANGE_REPLACE || c->kind == WARD_CHANGE_DELETE)) {
			c->unkept = WARD_UNKEPT_PRUNED;
			c->sum[0] = '\0';
		}
	}
	r = ward__changes_run_note(run,
				   "its before-images were dropped to keep the journal "
				   "within its bound");
	if (r >= 0)
		r = ward__journal_save(run, err);
	if (r >= 0)
		r = ward__fs_remove_at(fd, "layer");
	return r;
}

/* Unnumbered runs whose ward is gone (killed while its command ran): nothing to keep. */
static void sweep_stale(struct ward__changes_cfg *cfg)
{
	_cleanup_free_ char *runs = ward__path_join(cfg->dir, "runs");
	_cleanup_close_ int fd = -1;
	DIR *d;
	struct dirent *e;

	if (!runs)
		return;
	fd = open(runs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d)
		return;
	fd = -1;
	while ((e = readdir(d))) {
		_cleanup_free_ char *lock = NULL;
		int lfd;

		if (strncmp(e->d_name, ".run-", 5) != 0)
			continue;
		if (asprintf(&lock, "%s/%s/lock", runs, e->d_name) < 0)
			break;
		/* Its lock free: nobody works on it any more (a live ward holds it). */
		if (lock_file(lock, false, &lfd) < 0)
			continue;
		(void)ward__fs_remove_at(dirfd(d), e->d_name);
		close(lfd);
	}
	closedir(d);
}

int ward__journal_prune(struct ward__changes_cfg *cfg, uint64_t keep, struct ward_error *err)
{
	_cleanup_free_ uint64_t *ids = NULL;
	_cleanup_free_ uint64_t *bytes = NULL;
	_cleanup_close_ int jlock = -1;
	uint64_t total = 0;
	size_t n = 0, runs;
	int r;

	r = journal_lock(cfg, &jlock, err);
	if (r < 0)
		return r;
	sweep_stale(cfg);
	r = ward__journal_list(cfg, &ids, &n, err);
	if (r < 0 || n == 0)
		return r;
	bytes = calloc(n, sizeof(*bytes));
	if (!bytes)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct ward__changes_run tmp = {.cfg = cfg, .lock_fd = -1};

		if (asprintf(&tmp.dir, "%s/runs/%" PRIu64, cfg->dir, ids[i]) < 0)
			return -ENOMEM;
		bytes[i] = ward__journal_run_bytes(&tmp);
		free(tmp.dir);
		total += bytes[i];
	}
	/* Oldest first: ids are newest first. */
	runs = n;
	for (size_t k = n; k-- > 0 && (total > cfg->max_total || runs > cfg->max_runs);) {
		struct ward__changes_run *run = NULL;
		char idbuf[24];

		if (ids[k] == keep)
			continue;
		snprintf(idbuf, sizeof(idbuf), "%" PRIu64, ids[k]);
		/* Busy (locked) or unreadable: left alone; a damaged record is the person's to drop. */
		if (ward__journal_open(cfg, idbuf, true, &run, NULL) < 0)
			continue;
		if (run->state == WARD_RS_HELD || run->state == WARD_RS_APPLYING ||
		    run->state == WARD_RS_UNDOING) {
			ward__changes_run_free(run);
			continue;
		}
		if (runs > cfg->max_runs) {
			r = ward__journal_remove(run);
			if (r >= 0) {
				runs--;
				total -= bytes[k];
			}
		} else if (bytes[k] > 0) {
			r = drop_layer(run, NULL);
			if (r >= 0)
				total -= bytes[k];
		}
		ward__changes_run_free(run);
	}
	return 0;
}
