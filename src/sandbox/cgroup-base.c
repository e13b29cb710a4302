/* SPDX-License-Identifier: MIT */
/*
 * Ward's own cgroup subtree: where a process's sandboxes get their cgroups.
 *
 * cgroup v2 (the kernel's cgroup-v2.rst, systemd's CGROUP_DELEGATION.md):
 *   - A process may make cgroups beneath its own only when that cgroup is
 *     delegated to it (it may write the directory, cgroup.procs and
 *     cgroup.subtree_control). As root every cgroup is writable, but one
 *     that systemd manages is not ward's to rearrange either: ward uses its
 *     own cgroup only when nothing but ward is in it.
 *   - The no-internal-process rule: a cgroup that enables controllers for
 *     its children may hold no process itself (the root aside). So ward
 *     moves itself into a leaf, "supervisor", beside the sandboxes' cgroups,
 *     and enables memory, pids and cpu in its cgroup's subtree_control.
 *   - Otherwise (ward shares its cgroup with its shell, or its cgroup is not
 *     writable), systemd makes one: a transient scope unit with
 *     Delegate=yes, holding ward's process, from the user's manager (whose
 *     user@.service delegates memory, pids and cpu) or, as root, from the
 *     system's. That is a D-Bus call, made by the ward-scope helper
 *     (scope.c, libsystemd's sd-bus): the ward executable is linked
 *     statically for its start-up time, and Debian ships libsystemd as a
 *     shared library only. Then the scope is ward's own cgroup, with
 *     nothing else in it, and the first case applies.
 * cgroup v1 (hybrid and legacy hosts), as root: the memory, pids and cpu
 *   hierarchies each have ward's own cgroup; the sandboxes' cgroups go
 *   beneath it, never beside it or at a hierarchy's root. v1 has no
 *   no-internal-process rule: ward stays where it is.
 *
 * DESIGN: acquired once per process, lazily (the first sandbox with a limit,
 * or a server's start), because it may move the process. A controller that
 * cannot be had is left out with the reason in `why`, and the per-resource
 * report says so (enforce.c): nothing here fails a run by itself.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/util.h"
#include "sandbox/limits.h"
#include "ward-config.h"

/* How long systemd may take to make a scope (a loaded machine's manager is slow). */
#define SCOPE_TIMEOUT_MS 15000

static struct ward__cg_base base = {
	.v2_fd = -1,
	.v2_leave_fd = -1,
	.v1_fd = {-1, -1, -1},
	.v1_leave_fd = {-1, -1, -1},
};
static bool base_done;
/* The own cgroup ward left for its supervisor leaf (to go back at exit), or "". */
static char restore_own[WARD_CG_PATH_MAX];
static unsigned restore_ctrls;

static void why_add(struct ward__cg_base *b, const char *fmt, ...) _printf_(2, 3);
static void why_add(struct ward__cg_base *b, const char *fmt, ...)
{
	size_t n = strlen(b->why);
	va_list ap;

	if (n + 3 >= sizeof(b->why))
		return;
	if (n > 0) {
		memcpy(b->why + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(b->why + n, sizeof(b->why) - n, fmt, ap);
	va_end(ap);
}

/* Writes s into dir/file (a cgroup interface file). */
static int write_at(const char *dir, const char *file, const char *s)
{
	char path[WARD_CG_PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return ward__write_file(path, s);
}

/* Whether the cgroup dir holds no process but this one (cgroup.procs lists thread-group ids). */
static int alone_in(const char *dir)
{
	char path[WARD_CG_PATH_MAX + 32];
	_cleanup_free_ char *buf = NULL;
	size_t len;
	pid_t self = getpid();
	int r;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	r = ward__read_file(path, 1 << 20, &buf, &len);
	if (r < 0)
		return r;
	for (char *p = buf; *p;) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		if (v != self)
			return 0;
		p = end;
		while (*p == '\n')
			p++;
	}
	return 1;
}

/* Enables the controllers of mask in dir's subtree_control, each alone; returns those enabled. */
static unsigned enable(const char *dir, unsigned mask)
{
	char buf[512];
	unsigned on = 0;

	for (int c = 0; c < WARD_CG_N; c++) {
		char cmd[32];

		if (!(mask & (1u << c)))
			continue;
		snprintf(cmd, sizeof(cmd), "+%s", ward__cg_ctrl_name(c));
		if (write_at(dir, "cgroup.subtree_control", cmd) >= 0)
			on |= 1u << c;
	}
	/* What the file says counts, not what the writes returned. */
	snprintf(buf, sizeof(buf), "%s/cgroup.subtree_control", dir);
	{
		char line[512];

		if (ward__read_small(buf, line, sizeof(line)) >= 0)
			on = ward__cg_ctrl_mask(line) & mask;
	}
	return on;
}

/*
 * cgroup v2 in the process's own cgroup, when it may: the root cgroup
 * (which may hold processes and enable controllers at once), or a
 * delegated cgroup holding nothing but this process, which then moves into
 * the supervisor leaf. Returns the controllers enabled (0: not usable).
 */
static unsigned v2_own(struct ward__cg_base *b, const struct ward__cg_host *h, unsigned want)
{
	char leaf[WARD_CG_PATH_MAX + 16], pid[32];
	unsigned on;
	int r;

	if (!h->v2_writable) {
		why_add(b, "cgroup v2: '%s' is not writable by this user", h->v2_own);
		return 0;
	}
	want &= h->v2_own_is_root ? h->v2_root_ctrls : h->v2_own_ctrls;
	if (!want) {
		why_add(b, "cgroup v2: '%s' offers none of memory, pids, cpu", h->v2_own);
		return 0;
	}
	if (h->v2_own_is_root) {
		on = enable(h->v2_own, want);
		snprintf(leaf, sizeof(leaf), "%s", h->v2_own);
	} else {
		r = alone_in(h->v2_own);
		if (r <= 0) {
			why_add(b,
				"cgroup v2: '%s' holds other processes than ward (the no-internal-process rule)",
				h->v2_own);
			return 0;
		}
		snprintf(leaf, sizeof(leaf), "%s/supervisor", h->v2_own);
		if (mkdir(leaf, 0755) < 0 && errno != EEXIST) {
			why_add(b, "cgroup v2: cannot make '%s': %s", leaf, strerror(errno));
			return 0;
		}
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		r = write_at(leaf, "cgroup.procs", pid);
		if (r < 0) {
			why_add(b, "cgroup v2: cannot move ward into '%s': %s", leaf, strerror(-r));
			rmdir(leaf);
			return 0;
		}
		on = enable(h->v2_own, want);
		snprintf(restore_own, sizeof(restore_own), "%s", h->v2_own);
		restore_ctrls = on;
	}
	if (!on) {
		why_add(b, "cgroup v2: cannot enable memory, pids, cpu in '%s'", h->v2_own);
		return 0;
	}
	b->v2_fd = open(h->v2_own, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	{
		char procs[WARD_CG_PATH_MAX + 32];

		snprintf(procs, sizeof(procs), "%s/cgroup.procs", leaf);
		b->v2_leave_fd = open(procs, O_WRONLY | O_CLOEXEC);
	}
	if (b->v2_fd < 0 || b->v2_leave_fd < 0) {
		why_add(b, "cgroup v2: cannot open '%s': %s", h->v2_own, strerror(errno));
		return 0;
	}
	snprintf(b->v2_path, sizeof(b->v2_path), "%s", h->v2_own);
	return on;
}

/* The ward-scope helper: beside this executable (a build tree, libexec), else installed. */
static int scope_helper(char *path, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			if ((size_t)snprintf(path, size, "%.*s/ward-scope", (int)(size - 16),
					     self) < size &&
			    access(path, X_OK) == 0)
				return 0;
		}
	}
	snprintf(path, size, "%s/ward-scope", WARD_HELPER_DIR);
	return access(path, X_OK) == 0 ? 0 : -ENOENT;
}

/*
 * Runs `ward-scope PID` for this process and waits for it (bounded): on
 * success this process is in a new delegated scope and unit has its name;
 * otherwise out has the helper's last words.
 */
static int run_scope_helper(char *unit, size_t usize, char *out, size_t osize)
{
	char helper[PATH_MAX], pid[32];
	int pfd[2];
	size_t len = 0;
	uint64_t deadline = ward__now_ms() + SCOPE_TIMEOUT_MS;
	pid_t child;
	int st = 0;

	out[0] = '\0';
	if (scope_helper(helper, sizeof(helper)) < 0) {
		snprintf(out, osize, "the ward-scope helper is not installed");
		return -ENOENT;
	}
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	child = fork();
	if (child < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (child == 0) {
		char *argv[] = {(char *)"ward-scope", pid, NULL};
		int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		execv(helper, argv);
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		uint64_t now = ward__now_ms();
		ssize_t n;

		if (now >= deadline) {
			kill(child, SIGKILL);
			snprintf(out, osize, "systemd did not answer in %d s",
				 SCOPE_TIMEOUT_MS / 1000);
			break;
		}
		if (poll(&p, 1, (int)(deadline - now)) < 0 && errno != EINTR)
			break;
		if (!p.revents)
			continue;
		n = read(pfd[0], out + len, osize - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len >= osize - 1)
			len = 0; /* keep the last words only */
	}
	out[len] = '\0';
	close(pfd[0]);
	while (waitpid(child, &st, 0) < 0 && errno == EINTR)
		;
	/* One line, without its newline. */
	while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == ' '))
		out[--len] = '\0';
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		char *nl = strrchr(out, '\n');

		if (nl)
			memmove(out, nl + 1, strlen(nl + 1) + 1);
		if (!out[0])
			snprintf(out, osize, "ward-scope failed");
		return -EIO;
	}
	snprintf(unit, usize, "%s", out);
	return 0;
}

/* Goes back to the cgroup ward was in, and removes the supervisor leaf (best effort). */
static void restore_at_exit(void)
{
	char pid[32];

	if (!restore_own[0])
		return;
	for (int c = 0; c < WARD_CG_N; c++)
		if (restore_ctrls & (1u << c)) {
			char cmd[32];

			snprintf(cmd, sizeof(cmd), "-%s", ward__cg_ctrl_name(c));
			write_at(restore_own, "cgroup.subtree_control", cmd);
		}
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (write_at(restore_own, "cgroup.procs", pid) >= 0) {
		char leaf[WARD_CG_PATH_MAX + 16];

		snprintf(leaf, sizeof(leaf), "%s/supervisor", restore_own);
		rmdir(leaf);
	}
}

/* "memory, pids" for the controllers of mask. */
static const char *mask_names(unsigned mask, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int c = 0; c < WARD_CG_N && n < size; c++)
		if (mask & (1u << c))
			n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? ", " : "",
					      ward__cg_ctrl_name(c));
	return buf;
}

/*
 * Removes what a ward that is gone left beneath dirfd: "ward-PID-..."
 * directories whose PID no longer runs (a ward killed with SIGKILL could not
 * remove its cgroups; its processes died with it). Depth-first, a few levels
 * (a server's total, a connection's, a sandbox's); only empty directories go
 * (rmdir), so a cgroup still in use is never touched.
 */
static void remove_tree(int dirfd, const char *name, unsigned depth)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *de;

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while (depth > 0 && (de = readdir(d)))
		if (de->d_type == DT_DIR && strncmp(de->d_name, "ward-", 5) == 0)
			remove_tree(fd, de->d_name, depth - 1);
	closedir(d);
	unlinkat(dirfd, name, AT_REMOVEDIR);
}

static void sweep_stale(int dirfd)
{
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	unsigned n = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) && n < 4096) {
		long pid;
		char *end;

		if (de->d_type != DT_DIR || strncmp(de->d_name, "ward-", 5) != 0)
			continue;
		pid = strtol(de->d_name + 5, &end, 10);
		if (pid <= 0 || *end != '-' || pid == getpid() ||
		    !(kill((pid_t)pid, 0) < 0 && errno == ESRCH))
			continue;
		remove_tree(dirfd, de->d_name, 3);
		n++;
	}
	closedir(d);
}

static void acquire(struct ward__cg_base *b)
{
	const struct ward__cg_host *h = ward__cg_host_get();
	unsigned want_v2 = 0, on = 0, v1_denied = 0;
	char names[64];

	for (int c = 0; c < WARD_CG_N; c++) {
		if (h->v1_mount[c][0]) {
			char file[WARD_CG_PATH_MAX + 32];

			if (!h->v1_writable[c]) {
				v1_denied |= 1u << c;
				continue;
			}
			snprintf(file, sizeof(file), "%s/cgroup.procs", h->v1_own[c]);
			b->v1_fd[c] = open(h->v1_own[c], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			b->v1_leave_fd[c] = open(file, O_WRONLY | O_CLOEXEC);
			if (b->v1_fd[c] < 0 || b->v1_leave_fd[c] < 0) {
				why_add(b, "cgroup v1 %s: cannot open '%s': %s",
					ward__cg_ctrl_name(c), h->v1_own[c], strerror(errno));
				continue;
			}
			snprintf(b->v1_path[c], sizeof(b->v1_path[c]), "%s", h->v1_own[c]);
			b->how[c] = WARD_ENFORCE_CGROUP1;
		} else if (h->v2_root_ctrls & (1u << c)) {
			want_v2 |= 1u << c;
		} else {
			why_add(b, "no %s controller on this host", ward__cg_ctrl_name(c));
		}
	}
	if (v1_denied)
		why_add(b, "cgroup v1 %s: not writable by this user%s",
			mask_names(v1_denied, names, sizeof(names)),
			geteuid() == 0 ? "" : " (the v1 hierarchies are root's)");
	if (want_v2) {
		char unit[128], out[512];
		bool tried_scope = false;
		size_t keep = strlen(b->why);

		on = v2_own(b, h, want_v2);
		if (!on && h->systemd && (geteuid() == 0 || h->user_manager)) {
			int r;

			tried_scope = true;
			r = run_scope_helper(unit, sizeof(unit), out, sizeof(out));
			if (r < 0) {
				why_add(b, "systemd scope: %s", out);
			} else {
				snprintf(b->scope, sizeof(b->scope), "%s", unit);
				ward__cg_host_reprobe();
				h = ward__cg_host_get();
				/* The reasons the own cgroup failed no longer hold: say what holds now. */
				b->why[keep] = '\0';
				on = v2_own(b, h, want_v2);
			}
		}
		if (!on && !tried_scope && !h->systemd)
			why_add(b, "no systemd to delegate a cgroup");
		else if (!on && !tried_scope)
			why_add(b, "no systemd user manager reachable (XDG_RUNTIME_DIR)");
		for (int c = 0; c < WARD_CG_N; c++)
			if (on & (1u << c))
				b->how[c] = WARD_ENFORCE_CGROUP2;
			else if (want_v2 & (1u << c) && on)
				why_add(b, "cgroup v2: %s not delegated", ward__cg_ctrl_name(c));
		if (restore_own[0])
			atexit(restore_at_exit);
	}
	/* What wards killed before they could clean up left behind, in the places this one uses. */
	if (b->v2_fd >= 0)
		sweep_stale(b->v2_fd);
	for (int c = 0; c < WARD_CG_N; c++)
		if (b->v1_fd[c] >= 0 && (c == 0 || strcmp(b->v1_path[c], b->v1_path[c - 1]) != 0))
			sweep_stale(b->v1_fd[c]);
}

const struct ward__cg_base *ward__cg_base_get(void)
{
	if (!base_done) {
		acquire(&base);
		base_done = true;
	}
	return &base;
}

bool ward__cg_base_acquired(void)
{
	return base_done;
}

void ward__cg_base_preview(struct ward__cg_base *b)
{
	const struct ward__cg_host *h = ward__cg_host_get();

	*b = (struct ward__cg_base){.v2_fd = -1, .v2_leave_fd = -1};
	for (int c = 0; c < WARD_CG_N; c++) {
		b->v1_fd[c] = b->v1_leave_fd[c] = -1;
		if (h->v1_mount[c][0]) {
			if (h->v1_writable[c])
				b->how[c] = WARD_ENFORCE_CGROUP1;
			else
				why_add(b, "cgroup v1 %s: '%s' is not writable",
					ward__cg_ctrl_name(c), h->v1_own[c]);
		} else if (h->v2_root_ctrls & (1u << c)) {
			bool own = h->v2_writable &&
				((h->v2_own_is_root ? h->v2_root_ctrls : h->v2_own_ctrls) &
				 (1u << c)) &&
				(h->v2_own_is_root || alone_in(h->v2_own) > 0);
			bool scope = h->systemd && (geteuid() == 0 || h->user_manager);

			if (own || scope)
				b->how[c] = WARD_ENFORCE_CGROUP2;
			else
				why_add(b,
					"cgroup v2 %s: no delegated cgroup and no systemd to ask",
					ward__cg_ctrl_name(c));
		}
	}
}
