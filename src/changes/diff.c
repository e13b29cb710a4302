/* SPDX-License-Identifier: MIT */
/*
 * The diff of a run (changes.h): a real diff implementation over a view of
 * the run's before and after.
 *
 * DESIGN: git diff --no-index (or diff -ruN where git is missing) compares
 * two directories, a/ and b/, built in the run's journal directory from
 * hard links to the files themselves (copies where a link is refused: another
 * filesystem, a file of someone else's): before is the host's entry (or,
 * once applied, the before-image the journal kept), after the layer's (or,
 * once applied, the host's). git then decides text or binary, renames and
 * modes, pages and colours for a terminal, and the output is git's own.
 * --no-ext-diff and --no-textconv keep a diff driver of the person's
 * configuration out of it; GIT_CEILING_DIRECTORIES keeps git from finding
 * a repository around the journal. The view is bounded in files and bytes
 * copied, and removed afterwards.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "changes/changes.h"
#include "changes/fsops.h"

extern char **environ;

#define VIEW_MAX_FILES 20000
#define VIEW_MAX_COPY ((uint64_t)256 << 20) /* bytes copied (not linked) into a view */

struct view {
	int a, b; /* the view's before and after directories */
	size_t files;
	uint64_t copied;
	bool cut;
};

/*
 * Puts src (under sdir) into the view at rel, a directory tree whole: linked
 * when src is the journal's own (link), copied when it is the host's (a hard
 * link would change the host file's ctime, and the next apply would take
 * that for the host's own change).
 */
static int place(struct view *v, int sdir, const char *sname, int root, const char *rel, bool link,
		 unsigned depth)
{
	_cleanup_close_ int dst = -1;
	const char *name;
	struct stat st;

	if (v->files >= VIEW_MAX_FILES || depth > WARD_CHANGES_MAX_DEPTH) {
		v->cut = true;
		return 0;
	}
	if (fstatat(sdir, sname, &st, AT_SYMLINK_NOFOLLOW) < 0 || ward__fs_whiteout(&st))
		return 0;
	dst = ward__fs_make_parent(root, rel, &name);
	if (dst < 0)
		return dst;
	v->files++;
	if (S_ISDIR(st.st_mode)) {
		_cleanup_close_ int fd =
			openat(sdir, sname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *d;
		struct dirent *e;
		int r = 0;

		if (fd < 0)
			return 0;
		if (mkdirat(dst, name, 0700) < 0 && errno != EEXIST)
			return -errno;
		d = fdopendir(fd);
		if (!d)
			return -errno;
		fd = -1;
		while ((e = readdir(d)) && r >= 0) {
			char sub[PATH_MAX];

			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", rel, e->d_name) >=
			    sizeof(sub))
				continue;
			r = place(v, dirfd(d), e->d_name, root, sub, link, depth + 1);
		}
		closedir(d);
		return r;
	}
	if (link && S_ISREG(st.st_mode) && linkat(sdir, sname, dst, name, 0) == 0)
		return 0;
	if (S_ISREG(st.st_mode) && v->copied + (uint64_t)st.st_size > VIEW_MAX_COPY) {
		v->cut = true;
		return 0;
	}
	if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
		return 0; /* a FIFO or socket has no content to show */
	v->copied += S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
	return ward__fs_copy_at(sdir, sname, dst, name);
}

/* The view's relative path of c: its root's index when the run has several. */
static void view_path(const struct ward__changes_run *run, const struct ward__change *c, char *out,
		      size_t size)
{
	bool several = false;

	/* Paths as the run's root has them, unless the changes span several roots. */
	for (size_t i = 0; i < run->n && !several; i++)
		several = run->v[i].root != c->root;
	if (several)
		snprintf(out, size, "%s/%s", run->roots[c->root].path + 1, c->path);
	else
		snprintf(out, size, "%s", c->path);
}

static int build_view(struct ward__changes_run *run, const char *dir, struct view *v,
		      struct ward_error *err)
{
	_cleanup_close_ int vfd = -1;
	bool applied = run->state == WARD_RS_APPLIED;

	(void)mkdir(dir, 0700);
	vfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (vfd < 0)
		return ward__error(err, -errno, "changes", "cannot create '%s': %m", dir);
	if ((mkdirat(vfd, "a", 0700) < 0 && errno != EEXIST) ||
	    (mkdirat(vfd, "b", 0700) < 0 && errno != EEXIST))
		return ward__error(err, -errno, "changes", "cannot create a view in '%s': %m", dir);
	v->a = openat(vfd, "a", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	v->b = openat(vfd, "b", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (v->a < 0 || v->b < 0)
		return ward__error(err, -errno, "changes", "cannot open the view in '%s': %m", dir);
	for (size_t i = 0; i < run->n; i++) {
		const struct ward__change *c = &run->v[i];
		_cleanup_close_ int host = -1, upper = -1, hp = -1, up = -1;
		_cleanup_free_ char *upath = NULL;
		const struct ward__changes_root *rt = &run->roots[c->root];
		const char *name;
		char rel[PATH_MAX];
		int before_dir, after_dir;
		int r;

		if (c->kind == WARD_CHANGE_MEMBER || c->kind == WARD_CHANGE_DIRMODE || !rt->layered)
			continue;
		if (c->state != WARD_CS_PENDING && c->state != WARD_CS_CONFLICT &&
		    c->state != WARD_CS_REFUSED && c->state != WARD_CS_APPLIED)
			continue;
		if ((c->flags & WARD_CF_IGNORED) && (c->flags & WARD_CF_TREE)) {
			v->cut = true;
			continue;
		}
		host = ward__fs_open_root(rt->path, 0, 0);
		upath = ward__journal_upper(run, c->root);
		upper = upath ? open(upath, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
		if (host < 0 || upper < 0)
			continue;
		hp = ward__fs_open_parent(host, c->path, &name);
		up = ward__fs_open_parent(upper, c->path, &name);
		view_path(run, c, rel, sizeof(rel));
		/* Held: before is the host's, after the layer's. Applied: the other way round. */
		before_dir = applied ? up : hp;
		after_dir = applied ? hp : up;
		r = 0;
		if (c->kind != WARD_CHANGE_ADD && before_dir >= 0 &&
		    !(applied && c->unkept != WARD_UNKEPT_NONE))
			r = place(v, before_dir, name, v->a, rel, applied, 0);
		if (r >= 0 && c->kind != WARD_CHANGE_DELETE && after_dir >= 0)
			r = place(v, after_dir, name, v->b, rel, !applied, 0);
		if (r < 0)
			return ward__error(err, r, "changes", "cannot show '%s': %m", c->path);
	}
	return 0;
}

static const char *find_program(const char *name)
{
	static char buf[PATH_MAX];
	const char *path = getenv("PATH");

	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, ":");

		if (n > 0 && n + strlen(name) + 2 < sizeof(buf)) {
			memcpy(buf, p, n);
			snprintf(buf + n, sizeof(buf) - n, "/%s", name);
			if (access(buf, X_OK) == 0)
				return buf;
		}
		p += n;
		if (*p == ':')
			p++;
	}
	return NULL;
}

/* Runs the diff program in dir with stdout on out_fd; its exit status, or -errno. */
static int run_diff(const char *dir, int out_fd, bool pager, bool color, struct ward_error *err)
{
	posix_spawn_file_actions_t fa;
	const char *git = find_program("git"), *diff = git ? NULL : find_program("diff");
	char *argv[16];
	char ceiling[PATH_MAX + 32];
	char **envp = NULL;
	size_t n = 0, ne = 0;
	pid_t pid;
	int status, r;

	if (!git && !diff)
		return ward__error(err, -ENOENT, "changes",
				   "cannot show a diff: neither git nor diff is installed");
	if (git) {
		argv[n++] = (char *)"git";
		if (!pager)
			argv[n++] = (char *)"--no-pager";
		argv[n++] = (char *)"diff";
		argv[n++] = (char *)"--no-index";
		argv[n++] = (char *)"--no-prefix";
		argv[n++] = (char *)"--no-ext-diff";
		argv[n++] = (char *)"--no-textconv";
		argv[n++] = (char *)"-M";
		argv[n++] = (char *)(color ? "--color=always" : "--color=never");
	} else {
		argv[n++] = (char *)"diff";
		argv[n++] = (char *)"-ruN";
	}
	argv[n++] = (char *)"a";
	argv[n++] = (char *)"b";
	argv[n] = NULL;
	/* The caller's environment, and a ceiling that keeps git from finding a repository. */
	for (char **e = environ; e && *e; e++)
		ne++;
	envp = calloc(ne + 2, sizeof(char *));
	if (!envp)
		return -ENOMEM;
	ne = 0;
	for (char **e = environ; e && *e; e++)
		if (strncmp(*e, "GIT_CEILING_DIRECTORIES=", 24) != 0 &&
		    strncmp(*e, "GIT_DIR=", 8) != 0)
			envp[ne++] = *e;
	snprintf(ceiling, sizeof(ceiling), "GIT_CEILING_DIRECTORIES=%s", dir);
	envp[ne++] = ceiling;
	envp[ne] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addchdir_np(&fa, dir);
	if (out_fd != STDOUT_FILENO)
		posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
	r = posix_spawn(&pid, git ? git : diff, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	free(envp);
	if (r != 0)
		return ward__error(err, -r, "changes", "cannot run %s: %m", git ? "git" : "diff");
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return ward__error(err, -errno, "changes", "cannot wait for %s: %m",
					   git ? "git" : "diff");
	/* git diff and diff exit 1 when the trees differ: that is the point here. */
	if (!WIFEXITED(status) || WEXITSTATUS(status) > 1)
		return ward__error(err, -EIO, "changes", "%s failed to show the diff",
				   git ? "git" : "diff");
	return 0;
}

static void remove_view(const char *dir)
{
	const char *slash = strrchr(dir, '/');
	_cleanup_free_ char *parent = strndup(dir, (size_t)(slash - dir));
	_cleanup_close_ int fd = parent ? open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;

	if (fd >= 0)
		(void)ward__fs_remove_at(fd, slash + 1);
}

static int with_view(struct ward__changes_run *run, int out_fd, bool pager, bool color,
		     bool *ret_cut, struct ward_error *err)
{
	struct view v = {.a = -1, .b = -1};
	_cleanup_free_ char *dir = NULL;
	int r;

	if (run->state == WARD_RS_UNDONE || run->state == WARD_RS_DISCARDED ||
	    run->state == WARD_RS_RUNNING)
		return ward__error(err, -ENODATA, "changes",
				   "run %" PRIu64 " is %s: its changes are not kept to show",
				   run->id, ward__run_state_name(run->state));
	if (asprintf(&dir, "%s/view-%d", run->dir, (int)getpid()) < 0)
		return -ENOMEM;
	remove_view(dir);
	r = build_view(run, dir, &v, err);
	if (v.a >= 0)
		close(v.a);
	if (v.b >= 0)
		close(v.b);
	if (r >= 0)
		r = run_diff(dir, out_fd, pager, color, err);
	remove_view(dir);
	*ret_cut = v.cut;
	return r;
}

int ward__changes_diff(struct ward__changes_run *run, int out_fd, bool pager, bool color,
		       struct ward_error *err)
{
	bool cut = false;
	int r = with_view(run, out_fd, pager, color, &cut, err);

	if (r >= 0 && cut) {
		static const char msg[] =
			"(ignored trees and files past the view's bounds are not shown)\n";

		(void)ward__write_all(out_fd, msg, sizeof(msg) - 1);
	}
	return r;
}

int ward__changes_diff_text(struct ward__changes_run *run, size_t max, char **ret,
			    struct ward_error *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	char tmpl[] = "/tmp/ward-diff-XXXXXX";
	struct stat st;
	bool cut = false;
	ssize_t n;
	int r;

	/* A file, not a pipe: git writes all of it without ward reading along. */
	fd = memfd_create("ward-diff", MFD_CLOEXEC);
	if (fd < 0) {
		fd = mkostemp(tmpl, O_CLOEXEC);
		if (fd < 0)
			return ward__error(err, -errno, "changes",
					   "cannot make room for a diff: %m");
		unlink(tmpl);
	}
	r = with_view(run, fd, false, false, &cut, err);
	if (r < 0)
		return r;
	if (fstat(fd, &st) < 0)
		return -errno;
	buf = malloc(max + 128);
	if (!buf)
		return -ENOMEM;
	n = pread(fd, buf, MIN((size_t)st.st_size, max), 0);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	if ((size_t)st.st_size > max)
		snprintf(buf + n, 128, "\n... %" PRIu64 " more bytes of diff not shown\n",
			 (uint64_t)st.st_size - (uint64_t)n);
	else if (cut)
		snprintf(buf + n, 128,
			 "(ignored trees and files past the view's bounds are not shown)\n");
	*ret = TAKE_PTR(buf);
	return 0;
}
