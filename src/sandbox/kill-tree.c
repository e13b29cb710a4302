/* SPDX-License-Identifier: MIT */
/*
 * Killing a sandbox's processes where no pid namespace holds them (the
 * Landlock+seccomp fallback): every descendant of init, found through /proc.
 * Used by init when the command ends and by ward when it kills the sandbox.
 * No malloc(): init may be the fork of a threaded program.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/util.h"
#include "sandbox/sandbox.h"

/*
 * The set of processes kill_tree() has seen: a list in discovery order and a
 * bitmap by pid, in anonymous mappings (no malloc: init may be the fork of a
 * threaded program) sized by the kernel's pid_max, touched only as far as used.
 */
struct pidset {
	pid_t *list;
	size_t n, cap;
	uint8_t *seen;
	size_t max_pid;
};

static bool pidset_add(struct pidset *s, long v)
{
	if (v <= 0 || (size_t)v >= s->max_pid || s->n >= s->cap)
		return false;
	if (s->seen[v / 8] & (1u << (v % 8)))
		return false;
	s->seen[v / 8] |= (uint8_t)(1u << (v % 8));
	s->list[s->n++] = (pid_t)v;
	return true;
}

/* Adds the children of every thread of pid; returns how many were new. */
static size_t add_children(struct pidset *s, pid_t pid)
{
	char path[64];
	size_t added = 0;
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char cpath[128], buf[8192];
		_cleanup_close_ int fd = -1;
		size_t keep = 0;
		ssize_t len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(cpath, sizeof(cpath), "/proc/%d/task/%.16s/children", (int)pid,
			 de->d_name);
		fd = open(cpath, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* The list can be long: read it all, a number cut at a chunk's end carried over. */
		while ((len = read(fd, buf + keep, sizeof(buf) - 1 - keep)) > 0) {
			char *p = buf, *end = buf + keep + (size_t)len;

			*end = '\0';
			for (;;) {
				char *q;
				long v;

				while (p < end && *p == ' ')
					p++;
				q = p;
				while (q < end && *q >= '0' && *q <= '9')
					q++;
				if (q == end) {
					/* Maybe cut: keep the digits for the next read. */
					keep = (size_t)(end - p);
					memmove(buf, p, keep);
					break;
				}
				v = strtol(p, NULL, 10);
				if (q > p && pidset_add(s, v))
					added++;
				p = q + 1;
			}
		}
		if (keep > 0) {
			buf[keep] = '\0';
			if (pidset_add(s, strtol(buf, NULL, 10)))
				added++;
		}
	}
	closedir(d);
	return added;
}

void ward__kill_tree(pid_t root)
{
	struct pidset s = {0};
	size_t list_size, map_size;

	/*
	 * Without a pid namespace there is no single kill that reaches
	 * everything. Stop the whole tree first, breadth-first through
	 * /proc/PID/task/TID/children, until a pass finds nothing new: a stopped
	 * process cannot fork, so the set becomes complete. Then kill it all.
	 * Repeated until root has no children left (a process that was between
	 * fork and our scan).
	 */
	s.max_pid = (size_t)ward__read_pid_max();
	s.cap = MIN(s.max_pid, (size_t)1 << 22);
	list_size = s.cap * sizeof(pid_t);
	map_size = s.max_pid / 8 + 1;
	s.list = mmap(NULL, list_size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	s.seen = mmap(NULL, map_size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (s.list == MAP_FAILED || s.seen == MAP_FAILED) {
		/* No memory for the walk: the children of root at least. */
		if (s.list != MAP_FAILED)
			munmap(s.list, list_size);
		if (s.seen != MAP_FAILED)
			munmap(s.seen, map_size);
		return;
	}
	for (int round = 0; round < 16; round++) {
		size_t first = s.n;

		for (int pass = 0; pass < 4096; pass++) {
			size_t before = s.n;

			add_children(&s, root);
			for (size_t scan = first; scan < s.n; scan++)
				add_children(&s, s.list[scan]);
			for (size_t i = before; i < s.n; i++)
				kill(s.list[i], SIGSTOP);
			if (s.n == before)
				break;
		}
		for (size_t i = first; i < s.n; i++)
			kill(s.list[i], SIGKILL);
		if (s.n == first)
			break;
	}
	munmap(s.list, list_size);
	munmap(s.seen, map_size);
}
