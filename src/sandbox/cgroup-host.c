/* SPDX-License-Identifier: MIT */
/*
 * What the host offers for limits: which cgroup hierarchies are mounted
 * (v2, v1 per controller, or both: the hybrid layout of older distributions,
 * many VMs and CI runners, where memory, pids and cpu sit on v1 and the v2
 * mount has none of them), where this process is in each, what it may
 * write, and whether systemd could delegate a subtree to it.
 *
 * DESIGN: the text is parsed by pure functions (tests feed them the layouts
 * of a hybrid host, a systemd machine and a container), and the filesystem
 * is asked only what the text cannot say. A controller is on v1 when a v1
 * hierarchy carries it (the kernel binds each controller to one hierarchy),
 * else on v2 when the v2 root lists it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/util.h"
#include "sandbox/limits.h"

static const char *const ctrl_names[WARD_CG_N] = {
	[WARD_CG_MEMORY] = "memory",
	[WARD_CG_PIDS] = "pids",
	[WARD_CG_CPU] = "cpu",
};

const char *ward__cg_ctrl_name(enum ward__cg_ctrl c)
{
	return (unsigned)c < WARD_CG_N ? ctrl_names[c] : "?";
}

const char *ward__cg_layout_name(enum ward__cg_layout l)
{
	switch (l) {
	case WARD_CG_LAYOUT_UNIFIED:
		return "unified (cgroup v2)";
	case WARD_CG_LAYOUT_HYBRID:
		return "hybrid (cgroup v1 controllers beside cgroup v2)";
	case WARD_CG_LAYOUT_LEGACY:
		return "legacy (cgroup v1)";
	case WARD_CG_LAYOUT_NONE:
		break;
	}
	return "none";
}

const char *ward__enforce_name(enum ward__enforce e)
{
	switch (e) {
	case WARD_ENFORCE_CGROUP2:
		return "cgroup-v2";
	case WARD_ENFORCE_CGROUP1:
		return "cgroup-v1";
	case WARD_ENFORCE_RLIMIT:
		return "rlimit";
	case WARD_ENFORCE_NONE:
		break;
	}
	return "none";
}

/* Whether word is one of the comma-separated items of list[0..len). */
static bool list_has(const char *list, size_t len, const char *word)
{
	size_t wl = strlen(word);
	const char *p = list, *end = list + len;

	while (p < end) {
		const char *q = memchr(p, ',', (size_t)(end - p));

		if (!q)
			q = end;
		if ((size_t)(q - p) == wl && memcmp(p, word, wl) == 0)
			return true;
		p = q + 1;
	}
	return false;
}

unsigned ward__cg_ctrl_mask(const char *line)
{
	unsigned mask = 0;
	const char *p = line;

	/* Space-separated names, a newline at the end. */
	while (*p) {
		size_t n;

		while (*p == ' ' || *p == '\n')
			p++;
		n = strcspn(p, " \n");
		for (int c = 0; c < WARD_CG_N; c++)
			if (n == strlen(ctrl_names[c]) && memcmp(p, ctrl_names[c], n) == 0)
				mask |= 1u << c;
		p += n;
	}
	return mask;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/*
 * The directory of the cgroup rel (as /proc/self/cgroup gives it) through a
 * mount of root at mnt: mnt + the part of rel beneath root. False when rel
 * is not beneath root (that mount shows another part of the hierarchy).
 */
static bool own_dir(const char *mnt, const char *root, const char *rel, char *out, size_t size)
{
	size_t rl = strlen(root);
	const char *rest;
	int n;

	if (strcmp(root, "/") == 0)
		rest = rel;
	else if (strncmp(rel, root, rl) == 0 && (rel[rl] == '/' || rel[rl] == '\0'))
		rest = rel + rl;
	else
		return false;
	if (strcmp(rest, "/") == 0 || !*rest)
		n = snprintf(out, size, "%s", mnt);
	else
		n = snprintf(out, size, "%s%s", mnt, rest);
	return n > 0 && (size_t)n < size;
}

struct self_line {
	char ctrls[256]; /* "" for v2 */
	char path[WARD_CG_PATH_MAX];
};

int ward__cg_host_parse(const char *self_cgroup, const char *mountinfo, struct ward__cg_host *h)
{
	struct self_line v1[16];
	size_t n_v1 = 0;
	char v2_rel[WARD_CG_PATH_MAX] = "";
	bool have_v2_rel = false, have_v1_mount = false;
	const char *p;

	*h = (struct ward__cg_host){0};
	if (!self_cgroup || !mountinfo)
		return -EINVAL;

	/* /proc/self/cgroup: "ID:CONTROLLERS:PATH" per hierarchy; "0::PATH" is v2. */
	for (p = self_cgroup; *p;) {
		const char *eol = strchrnul(p, '\n'), *c1 = memchr(p, ':', (size_t)(eol - p)), *c2;

		if (c1 && (c2 = memchr(c1 + 1, ':', (size_t)(eol - c1 - 1)))) {
			size_t cl = (size_t)(c2 - c1 - 1), pl = (size_t)(eol - c2 - 1);

			if (pl >= WARD_CG_PATH_MAX)
				pl = 0; /* too long to use: as if unknown */
			if (cl == 0 && c1 - p == 1 && p[0] == '0') {
				memcpy(v2_rel, c2 + 1, pl);
				v2_rel[pl] = '\0';
				have_v2_rel = pl > 0;
			} else if (n_v1 < ELEMENTSOF(v1) && cl < sizeof(v1[0].ctrls) && pl > 0) {
				memcpy(v1[n_v1].ctrls, c1 + 1, cl);
				v1[n_v1].ctrls[cl] = '\0';
				memcpy(v1[n_v1].path, c2 + 1, pl);
				v1[n_v1].path[pl] = '\0';
				n_v1++;
			}
		}
		p = *eol ? eol + 1 : eol;
	}
	snprintf(h->v2_rel, sizeof(h->v2_rel), "%s", v2_rel);

	/* mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS */
	for (p = mountinfo; *p;) {
		const char *eol = strchrnul(p, '\n');
		char line[2048], *f[6], *sep, *fstype, *super, *save = NULL;
		size_t len = (size_t)(eol - p);
		int nf = 0;

		if (len < sizeof(line)) {
			memcpy(line, p, len);
			line[len] = '\0';
			sep = strstr(line, " - ");
			if (sep) {
				*sep = '\0';
				for (char *t = strtok_r(line, " ", &save); t && nf < 6;
				     t = strtok_r(NULL, " ", &save))
					f[nf++] = t;
				fstype = strtok_r(sep + 3, " ", &save);
				strtok_r(NULL, " ", &save); /* source */
				super = strtok_r(NULL, " ", &save);
			}
			if (sep && nf >= 5 && fstype && super) {
				char *root = f[3], *mnt = f[4];

				unescape(root);
				unescape(mnt);
				if (strcmp(fstype, "cgroup2") == 0 && !h->v2_mount[0] &&
				    have_v2_rel &&
				    own_dir(mnt, root, v2_rel, h->v2_own, sizeof(h->v2_own))) {
					snprintf(h->v2_mount, sizeof(h->v2_mount), "%s", mnt);
					h->v2_own_is_root = strcmp(v2_rel, "/") == 0;
				} else if (strcmp(fstype, "cgroup") == 0) {
					size_t sl = strlen(super);

					have_v1_mount = true;
					for (int c = 0; c < WARD_CG_N; c++) {
						if (h->v1_mount[c][0] ||
						    !list_has(super, sl, ctrl_names[c]))
							continue;
						/* This process's cgroup in that hierarchy. */
						for (size_t i = 0; i < n_v1; i++)
							if (list_has(v1[i].ctrls,
								     strlen(v1[i].ctrls),
								     ctrl_names[c]) &&
							    own_dir(mnt, root, v1[i].path,
								    h->v1_own[c],
								    sizeof(h->v1_own[c]))) {
								snprintf(h->v1_mount[c],
									 sizeof(h->v1_mount[c]),
									 "%s", mnt);
								break;
							}
					}
				}
			}
		}
		p = *eol ? eol + 1 : eol;
	}
	if (h->v2_mount[0] && have_v1_mount)
		h->layout = WARD_CG_LAYOUT_HYBRID;
	else if (h->v2_mount[0])
		h->layout = WARD_CG_LAYOUT_UNIFIED;
	else if (have_v1_mount)
		h->layout = WARD_CG_LAYOUT_LEGACY;
	return 0;
}

static unsigned read_ctrls(const char *dir)
{
	char path[WARD_CG_PATH_MAX + 32], buf[512];

	snprintf(path, sizeof(path), "%s/cgroup.controllers", dir);
	if (ward__read_small(path, buf, sizeof(buf)) < 0)
		return 0;
	return ward__cg_ctrl_mask(buf);
}

static bool writable(const char *dir, const char *const *files)
{
	char path[WARD_CG_PATH_MAX + 32];

	/* access() answers for the real ids; ward runs with real = effective. */
	if (access(dir, W_OK | X_OK) < 0)
		return false;
	for (; *files; files++) {
		snprintf(path, sizeof(path), "%s/%s", dir, *files);
		if (access(path, W_OK) < 0)
			return false;
	}
	return true;
}

static bool user_manager_reachable(void)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");
	char path[PATH_MAX];

	if (geteuid() == 0)
		return false;
	if (rt && rt[0] == '/')
		snprintf(path, sizeof(path), "%s/systemd/private", rt);
	else
		snprintf(path, sizeof(path), "/run/user/%u/systemd/private", (unsigned)geteuid());
	if (access(path, F_OK) == 0)
		return true;
	/* The user's bus, where a bus daemon runs for it: the manager is on it. */
	if (getenv("DBUS_SESSION_BUS_ADDRESS"))
		return true;
	if (rt && rt[0] == '/') {
		snprintf(path, sizeof(path), "%s/bus", rt);
		return access(path, F_OK) == 0;
	}
	return false;
}

static void probe(struct ward__cg_host *h)
{
	static const char *const v2_files[] = {"cgroup.procs", "cgroup.subtree_control", NULL};
	static const char *const v1_files[] = {"cgroup.procs", NULL};
	_cleanup_free_ char *self = NULL, *mounts = NULL;
	size_t len;

	if (ward__read_file("/proc/self/cgroup", 1 << 16, &self, &len) < 0 ||
	    ward__read_file("/proc/self/mountinfo", 1 << 22, &mounts, &len) < 0 ||
	    ward__cg_host_parse(self, mounts, h) < 0)
		*h = (struct ward__cg_host){0};
	if (h->v2_mount[0]) {
		h->v2_root_ctrls = read_ctrls(h->v2_mount);
		h->v2_own_ctrls = read_ctrls(h->v2_own);
		h->v2_writable = writable(h->v2_own, v2_files);
	}
	for (int c = 0; c < WARD_CG_N; c++) {
		if (!h->v1_mount[c][0])
			continue;
		h->v1_writable[c] = writable(h->v1_own[c], v1_files);
		/* A controller on v1 is not on v2, whatever a stale file would say. */
		h->v2_root_ctrls &= ~(1u << c);
		h->v2_own_ctrls &= ~(1u << c);
	}
	h->systemd = access("/run/systemd/system", F_OK) == 0;
	h->user_manager = h->systemd && user_manager_reachable();
}

static struct ward__cg_host host;
static bool host_done;

const struct ward__cg_host *ward__cg_host_get(void)
{
	if (!host_done) {
		probe(&host);
		host_done = true;
	}
	return &host;
}

void ward__cg_host_reprobe(void)
{
	host_done = false;
}
