/* SPDX-License-Identifier: MIT */
/*
 * fs/walk (see fswalk.h; its caps are in fsreq.h): breadth-first from the
 * root, the names of each directory sorted, each directory entered once (by
 * device and inode, so a symlink loop or a bind mount of an ancestor is
 * listed but not entered), within Codex's limits (depth, directories read,
 * entries counted) and its answer budget. A directory that cannot be read
 * becomes an entry of "errors" and the walk goes on.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/cleanup.h"
#include "execserver/fsreq.h"
#include "execserver/fswalk.h"
#include "execserver/fswire.h"

static void closep_dir(DIR **d)
{
	if (*d)
		closedir(*d);
}

struct walk_dir {
	char *path;
	unsigned depth;
};

struct walk {
	const struct ward__xfs_req *rq;
	json_t *entries, *errors;
	struct walk_dir *queue;
	size_t q_head, q_len, q_cap;
	dev_t *vdev;
	ino_t *vino;
	size_t n_visited, visited_cap;
	uint64_t counted, dirs_read;
	size_t budget;
	bool truncated;
};

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool visited(struct walk *w, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < w->n_visited; i++)
		if (w->vdev[i] == dev && w->vino[i] == ino)
			return true;
	return false;
}

static int visit(struct walk *w, dev_t dev, ino_t ino)
{
	if (w->n_visited == w->visited_cap) {
		size_t cap = w->visited_cap ? w->visited_cap * 2 : 64;
		dev_t *d = reallocarray(w->vdev, cap, sizeof(*d));
		ino_t *i;

		if (!d)
			return -ENOMEM;
		w->vdev = d;
		i = reallocarray(w->vino, cap, sizeof(*i));
		if (!i)
			return -ENOMEM;
		w->vino = i;
		w->visited_cap = cap;
	}
	w->vdev[w->n_visited] = dev;
	w->vino[w->n_visited++] = ino;
	return 0;
}

static int enqueue(struct walk *w, char *path, unsigned depth)
{
	if (w->q_len == w->q_cap) {
		size_t cap = w->q_cap ? w->q_cap * 2 : 64;
		struct walk_dir *q = calloc(cap, sizeof(*q));

		if (!q)
			return -ENOMEM;
		for (size_t i = 0; i < w->q_len; i++)
			q[i] = w->queue[(w->q_head + i) % w->q_cap];
		free(w->queue);
		w->queue = q;
		w->q_cap = cap;
		w->q_head = 0;
	}
	w->queue[(w->q_head + w->q_len++) % w->q_cap] = (struct walk_dir){path, depth};
	return 0;
}

/* Adds an entry or an error within the answer's budget; false once it is spent. */
static bool walk_add(struct walk *w, json_t *array, const char *path, const char *key2,
		     const char *val2)
{
	_cleanup_free_ char *uri = ward__xfs_path_to_uri(path);
	size_t cost;
	json_t *e;

	if (!uri)
		return false;
	/* Codex charges an entry its URI and 64 bytes (an error its message too). */
	cost = strlen(uri) + 64 + (array == w->errors ? strlen(val2) : 0);
	if (w->budget + cost > WARD_XFS_WALK_BUDGET) {
		w->truncated = true;
		return false;
	}
	w->budget += cost;
	e = json_pack("{s:s, s:s}", "path", uri, key2, val2);
	return e && json_array_append_new(array, e) == 0;
}

/* Reads one directory: its children, sorted by name, listed and the directories queued. */
static int walk_dir(struct walk *w, const struct walk_dir *dir)
{
	__attribute__((cleanup(closep_dir))) DIR *d = opendir(dir->path);
	char **names = NULL;
	size_t n = 0, cap = 0, bytes = 0;
	struct dirent *de;
	int r = 0;

	if (!d) {
		char m[128];

		ward__xfs_errno_message(errno, m, sizeof(m));
		if (!walk_add(w, w->errors, dir->path, "message", m))
			return w->truncated ? 1 : -ENOMEM;
		return 0;
	}
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de)
			break;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n >= WARD_XFS_WALK_DIR_NAMES || bytes > ((size_t)64 << 20)) {
			/* Sorting needs every name: a directory this large is reported, not walked. */
			char m[128];

			snprintf(m, sizeof(m), "the directory has more than %u entries",
				 WARD_XFS_WALK_DIR_NAMES);
			if (!walk_add(w, w->errors, dir->path, "message", m))
				r = w->truncated ? 1 : -ENOMEM;
			goto out;
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			char **nn = reallocarray(names, ncap, sizeof(*nn));

			if (!nn) {
				r = -ENOMEM;
				goto out;
			}
			names = nn;
			cap = ncap;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			r = -ENOMEM;
			goto out;
		}
		bytes += strlen(de->d_name);
		n++;
	}
	if (errno) {
		char m[128];

		ward__xfs_errno_message(errno, m, sizeof(m));
		if (!walk_add(w, w->errors, dir->path, "message", m))
			r = w->truncated ? 1 : -ENOMEM;
		goto out;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *child = NULL;
		struct stat st;
		bool link;

		if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		/* FIFOs, sockets and devices are neither listed nor counted (as Codex). */
		if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
			continue;
		if (w->counted >= w->rq->max_entries) {
			w->truncated = true;
			r = 1;
			goto out;
		}
		w->counted++;
		link = S_ISLNK(st.st_mode);
		/* Only symlinks to directories are listed, and only when they are followed. */
		if (link &&
		    (!w->rq->follow_dirs || fstatat(dirfd(d), names[i], &st, 0) < 0 ||
		     !S_ISDIR(st.st_mode)))
			continue;
		if (asprintf(&child, "%s%s%s", dir->path, strcmp(dir->path, "/") ? "/" : "",
			     names[i]) < 0) {
			r = -ENOMEM;
			goto out;
		}
		if (!walk_add(w, w->entries, child, "kind",
			      S_ISDIR(st.st_mode) ? "directory" : "file")) {
			r = w->truncated ? 1 : -ENOMEM;
			goto out;
		}
		if (!S_ISDIR(st.st_mode) || dir->depth + 1 > w->rq->max_depth)
			continue;
		/* Hidden directories are listed, not entered; an alias of one still is. */
		if (w->rq->prune_hidden && names[i][0] == '.')
			continue;
		if (visited(w, st.st_dev, st.st_ino))
			continue;
		r = visit(w, st.st_dev, st.st_ino);
		if (r >= 0)
			r = enqueue(w, child, dir->depth + 1);
		if (r < 0)
			goto out;
		child = NULL;
	}
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return r;
}

void ward__xfs_walk(const struct ward__xfs_req *rq, struct ward__xfs_res *res)
{
	struct walk w = {.rq = rq};
	struct stat st;
	json_t *result;
	int r = 0;

	if (lstat(rq->path, &st) < 0) {
		ward__xfs_res_errno(res, errno);
		return;
	}
	w.entries = json_array();
	w.errors = json_array();
	result = json_pack("{s:o, s:o}", "entries", w.entries, "errors", w.errors);
	if (!result) {
		ward__xfs_res_errno(res, ENOMEM);
		return;
	}
	/* The root: a symlink to a directory is walked only when directory symlinks are followed. */
	if (S_ISLNK(st.st_mode)) {
		if (!rq->follow_dirs)
			goto done;
		if (stat(rq->path, &st) < 0) {
			r = -errno;
			goto done;
		}
	}
	if (!S_ISDIR(st.st_mode))
		goto done;
	r = visit(&w, st.st_dev, st.st_ino);
	if (r >= 0) {
		char *root = strdup(rq->path);

		r = root ? enqueue(&w, root, 0) : -ENOMEM;
		if (r < 0)
			free(root);
	}
	while (r == 0 && w.q_len > 0) {
		struct walk_dir d = w.queue[w.q_head];

		if (w.dirs_read >= rq->max_dirs) {
			w.truncated = true;
			break;
		}
		w.q_head = (w.q_head + 1) % w.q_cap;
		w.q_len--;
		w.dirs_read++;
		r = walk_dir(&w, &d);
		free(d.path);
	}
done:
	while (w.q_len > 0) {
		free(w.queue[w.q_head].path);
		w.q_head = (w.q_head + 1) % w.q_cap;
		w.q_len--;
	}
	free(w.queue);
	free(w.vdev);
	free(w.vino);
	if (r < 0) {
		json_decref(result);
		ward__xfs_res_errno(res, r);
		return;
	}
	if (json_object_set_new(result, "truncated", json_boolean(w.truncated)) < 0) {
		json_decref(result);
		ward__xfs_res_errno(res, ENOMEM);
		return;
	}
	res->code = 0;
	res->result = result;
}
