/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's mount view, built inside a fresh user + mount namespace:
 *
 *   1. every mount is made private, so nothing we do propagates to the host and
 *      nothing the host mounts later shows up writable inside;
 *   2. each writable root is cloned (open_tree, recursive, still read-write)
 *      before anything is changed, together with the few device nodes /dev needs;
 *      read-only mounts inside a root stay read-only;
 *   3. the whole tree is made read-only, nosuid and nodev in one recursive
 *      mount_setattr() (Linux 5.12), so no submount is forgotten;
 *   4. the writable clones are attached over their own paths, parents first;
 *   5. protected paths are bound over themselves: read-only, or "pinned"
 *      read-write (a mount point cannot be renamed or removed: EBUSY);
 *   6. a private tmpfs becomes /dev with bind mounts of the host's null, zero,
 *      full, random, urandom and tty, a new devpts instance and a tmpfs /dev/shm;
 *   7. deny-read paths are covered by an inaccessible (mode 000, read-only)
 *      directory or file taken from that tmpfs, then unlinked from /dev;
 *   8. a fresh /proc for the new pid namespace, or, in a container that
 *      masks parts of its own /proc (where the kernel refuses a fresh one),
 *      the container's /proc kept read-only (see mount_proc).
 *
 * With layers (review and undo, src/changes), step 2 makes an overlayfs
 * mount instead of a clone for each layered root: its lower layer is the
 * root as the host has it, its upper layer a directory of ward's own, so
 * the command's writes stay off the host. The overlay is made detached
 * (fsopen/fsmount) while every mount is still writable, and attached in
 * step 4 like a clone; the mounts beneath a layered root, which an overlay's
 * lower layer never shows, are cloned read-only and attached over it.
 *
 * Nothing here creates a file or directory on the host: every mount target
 * already exists, and every object we create lives on our own tmpfs.
 */
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "sandbox/sandbox.h"

#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#endif

#ifndef FSOPEN_CLOEXEC
#define FSOPEN_CLOEXEC 0x00000001
#define FSMOUNT_CLOEXEC 0x00000001
#define FSCONFIG_SET_FLAG 0
#define FSCONFIG_SET_STRING 1
#define FSCONFIG_CMD_CREATE 6
#endif

static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};

static int setattr_fd(int fd, uint64_t set, uint64_t clr)
{
	struct mount_attr attr = {.attr_set = set, .attr_clr = clr};

	return RET_NERRNO(mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)));
}

static int clone_tree(const char *path, int *ret_fd)
{
	int fd = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);

	if (fd < 0)
		return -errno;
	*ret_fd = fd;
	return 0;
}

static int attach(int fd, const char *path)
{
	return RET_NERRNO(move_mount(fd, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH));
}

/* Binds path over itself, read-only or read-write (a pin). */
static int bind_self(const char *path, bool readonly, struct ward_error *err)
{
	_cleanup_close_ int fd = -1;
	int r;

	r = clone_tree(path, &fd);
	if (r < 0)
		return ward__error(err, r, "mount", "cannot clone '%s': %m", path);
	r = setattr_fd(
		fd, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (readonly ? MOUNT_ATTR_RDONLY : 0), 0);
	if (r < 0)
		return ward__error(err, r, "mount", "cannot make '%s' %s: %m", path,
				   readonly ? "read-only" : "nosuid");
	r = attach(fd, path);
	if (r < 0)
		return ward__error(err, r, "mount", "cannot bind '%s' %s: %m", path,
				   readonly ? "read-only" : "over itself");
	return 0;
}

/*
 * DESIGN: the copy-on-write layer is overlayfs because the kernel then does
 * the copying: a file is copied up whole the first time it is opened for
 * writing (or its metadata changes), a deletion becomes a whiteout, a
 * directory removed and made again becomes opaque, and nothing the command
 * does, racing or not, can write past the layer. Unprivileged overlay
 * mounts exist since Linux 5.11 (userxattr: the layer's own attributes are
 * user.overlay.*). The options keep the upper directory simple to read:
 * redirect_dir=nofollow (renaming a directory that came from the host fails
 * with EXDEV, and mv(1) falls back to copying), metacopy=off (copied-up
 * files hold their data), index=off (copying up a file with several names
 * breaks the link, as the command then sees it), volatile (the unmount at
 * the sandbox's end does not sync the upper filesystem, which is the whole
 * filesystem the state directory is on: hundreds of milliseconds on a busy
 * disk; the layer is never mounted again, and an apply makes its own
 * record durable). The layers are named
 * through /proc/self/fd so that no path needs overlayfs' escaping of ':'
 * and ','; lower and upper are opened here, in the new mount namespace,
 * where overlayfs accepts them.
 */
static int make_overlay(const struct ward__layer *l, bool user_ns, int *ret_fd,
			struct ward_error *err)
{
	_cleanup_close_ int lower = -1, upper = -1, work = -1, fs = -1;
	char lp[40], up[40], wp[40];
	int fd;

	lower = open(l->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	upper = open(l->upper, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	work = open(l->work, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (lower < 0 || upper < 0 || work < 0)
		return ward__error(err, -errno, "layer", "cannot open the layer of '%s': %m",
				   l->root);
	snprintf(lp, sizeof(lp), "/proc/self/fd/%d", lower);
	snprintf(up, sizeof(up), "/proc/self/fd/%d", upper);
	snprintf(wp, sizeof(wp), "/proc/self/fd/%d", work);
	fs = fsopen("overlay", FSOPEN_CLOEXEC);
	if (fs < 0) {
		ward__error(err, -errno, "layer", "cannot layer '%s': overlayfs: %m", l->root);
		ward__error_hint(err,
				 "--hold and recording need overlayfs in a user namespace "
				 "(Linux 5.11 or later)");
		return -EOPNOTSUPP;
	}
	if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir", lp, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", up, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "workdir", wp, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "redirect_dir", "nofollow", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "metacopy", "off", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "index", "off", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_FLAG, "volatile", NULL, 0) < 0 ||
	    (user_ns && fsconfig(fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0) ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		ward__error(err, -errno, "layer", "cannot layer '%s': overlayfs refused: %m",
			    l->root);
		ward__error_hint(
			err,
			"the state directory must be on a filesystem with extended attributes (ext4, xfs, btrfs, tmpfs since Linux 6.6); set WARD_CHANGES_DIR elsewhere");
		return -EOPNOTSUPP;
	}
	fd = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (fd < 0)
		return ward__error(err, -errno, "layer", "cannot mount the layer of '%s': %m",
				   l->root);
	*ret_fd = fd;
	return 0;
}

static const struct ward__layer *layer_of(const struct ward__layer *layers, size_t n,
					  const char *root)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(layers[i].root, root) == 0)
			return &layers[i];
	return NULL;
}

/*
 * With layers, a root that has none must lie beneath a layered root on the
 * same mount (the parent's overlay shows it, and holds its changes): it is
 * then not attached at all. Anything else could write to the host past the
 * layers: refused.
 */
static int covered_root(const struct ward_policy *p, const struct ward__layer *layers, size_t n,
			size_t i, struct ward_error *err)
{
	const char *root = p->roots.v[i];
	struct statx a, b;

	for (size_t j = 0; j < n; j++) {
		if (!ward__path_under(root, layers[j].root))
			continue;
		if (statx(AT_FDCWD, root, AT_NO_AUTOMOUNT, STATX_MNT_ID, &a) == 0 &&
		    statx(AT_FDCWD, layers[j].root, AT_NO_AUTOMOUNT, STATX_MNT_ID, &b) == 0 &&
		    (a.stx_mask & STATX_MNT_ID) && a.stx_mnt_id == b.stx_mnt_id)
			return 0;
	}
	return ward__error(err, -EINVAL, "layer", "writable root '%s' has no layer", root);
}

static int setup_dev(int dev_fds[], const struct ward_policy *p, struct ward_error *err)
{
	int r;

	if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC,
		  "mode=0755,size=1m,nr_inodes=256") < 0)
		return ward__error(err, -errno, "mount", "cannot mount a tmpfs on '/dev': %m");
	for (size_t i = 0; i < ELEMENTSOF(dev_nodes); i++) {
		_cleanup_free_ char *path = ward__path_join("/dev", dev_nodes[i]);

		if (!path)
			return ward__error(err, -ENOMEM, "mount", "out of memory");
		if (dev_fds[i] < 0)
			continue;
		/* An empty regular file as the mount point: one syscall, no fd (no CAP_MKNOD needed). */
		if (mknod(path, S_IFREG | 0666, 0) < 0)
			return ward__error(err, -errno, "mount", "cannot create '%s': %m", path);
		r = attach(dev_fds[i], path);
		if (r < 0)
			return ward__error(err, r, "mount", "cannot bind '%s': %m", path);
	}
	if (mkdir("/dev/pts", 0755) < 0 || mkdir("/dev/shm", 01777) < 0)
		return ward__error(err, -errno, "mount", "cannot populate '/dev': %m");
	/* A private devpts instance: the command's own ptys, none of the host's. */
	if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=0620") < 0)
		return ward__error(err, -errno, "mount", "cannot mount devpts on '/dev/pts': %m");
	if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=01777") < 0)
		return ward__error(err, -errno, "mount", "cannot mount a tmpfs on '/dev/shm': %m");
	if (symlink("pts/ptmx", "/dev/ptmx") < 0 || symlink("/proc/self/fd", "/dev/fd") < 0 ||
	    symlink("/proc/self/fd/0", "/dev/stdin") < 0 ||
	    symlink("/proc/self/fd/1", "/dev/stdout") < 0 ||
	    symlink("/proc/self/fd/2", "/dev/stderr") < 0)
		return ward__error(err, -errno, "mount", "cannot populate '/dev': %m");

	/*
	 * Masks for deny-read paths are made here, on our own tmpfs, so that
	 * nothing is ever created on the host to hide something. After they are
	 * bound their names are removed from /dev; the mounts keep the inodes.
	 */
	if (p->n_deny > 0 || p->journal) {
		int fd;

		if (mkdir("/dev/.ward-mask-dir", 0000) < 0)
			return ward__error(err, -errno, "mount",
					   "cannot create a deny-read mask: %m");
		fd = open("/dev/.ward-mask-file", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0000);
		if (fd < 0)
			return ward__error(err, -errno, "mount",
					   "cannot create a deny-read mask: %m");
		close(fd);
	}
	return 0;
}

static int mask_deny(const struct ward_policy *p, struct ward_error *err)
{
	int r;

	for (size_t i = 0; i < p->n_deny; i++) {
		const struct ward__deny *d = &p->deny[i];
		_cleanup_close_ int fd = -1;

		r = clone_tree(d->is_dir ? "/dev/.ward-mask-dir" : "/dev/.ward-mask-file", &fd);
		if (r < 0)
			return ward__error(err, r, "mount", "cannot clone the deny-read mask: %m");
		r = setattr_fd(fd, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0);
		if (r < 0)
			return ward__error(err, r, "mount",
					   "cannot make the deny-read mask read-only: %m");
		r = attach(fd, d->path);
		if (r < 0)
			return ward__error(err, r, "mount", "cannot hide '%s': %m", d->path);
	}
	/* ward's journal of changes: out of every sandbox's reach (src/policy/resolve.c). */
	if (p->journal) {
		_cleanup_close_ int fd = -1;

		r = clone_tree("/dev/.ward-mask-dir", &fd);
		if (r >= 0)
			r = setattr_fd(fd, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
				       0);
		if (r >= 0)
			r = attach(fd, p->journal);
		/* Beneath a deny-read path (masked already) it cannot be reached anyway. */
		if (r < 0 && !ward__policy_deny_for(p, p->journal))
			return ward__error(err, r, "mount", "cannot hide ward's journal '%s': %m",
					   p->journal);
	}
	if (p->n_deny > 0 || p->journal) {
		if (rmdir("/dev/.ward-mask-dir") < 0 || unlink("/dev/.ward-mask-file") < 0)
			return ward__error(err, -errno, "mount",
					   "cannot remove the deny-read mask names: %m");
	}
	return 0;
}

/*
 * Parts of /proc that act on the whole host rather than on the sandbox. Most
 * sysctls check only that the writer's euid is the host's root, not a
 * capability, so when ward runs as root (uid 0 mapped to itself) a writable
 * /proc/sys would let the command set kernel.core_pattern and run code as root
 * outside. They are bound read-only over themselves, as bubblewrap does.
 */
static const char *const proc_readonly[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq",
					    "/proc/bus", "/proc/fs"};

/*
 * Whether the sandbox may keep the container's /proc when the kernel refuses
 * a fresh one. The kernel mounts a new procfs in a user namespace only if a
 * procfs already in the mount namespace is fully visible; a container runtime
 * (Docker, podman, Kubernetes' default procMount) hides parts of its /proc
 * (kcore, keys, timer_list...) under other mounts, so every sandbox made in
 * such a container meets that refusal.
 *
 * What keeping the container's /proc (read-only, its masks in place) gives
 * up: the command still has its own pid namespace, so it cannot signal,
 * trace or even name a process outside by its pid, and everything in the
 * sandbox still dies with init. But /proc counts in the container's pid
 * namespace: the command sees the container's other processes there, their
 * command lines and status. The files that would give more (memory,
 * environment, descriptors, cwd) are guarded by the kernel's ptrace access
 * check, which lets a process of the same uid through unless an LSM stops
 * it: Landlock does (a sandboxed process may not reach a process outside its
 * domain, from ABI 1), so without Landlock the container's /proc would open
 * the memory of ward itself and of every other sandbox. It is never kept
 * then, nor under --require-isolation. danger-full-access promises nothing.
 */
static bool may_keep_host_proc(const struct ward_policy *p)
{
	long abi;

	if (p->require_isolation)
		return false;
	if (p->mode == WARD_MODE_DANGER_FULL_ACCESS)
		return true;
	abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
		      1U /* LANDLOCK_CREATE_RULESET_VERSION */);
	return abi >= 1;
}

/* Returns 0 with a fresh /proc, 1 when the container's was kept, or -errno. */
static int mount_proc(const struct ward_policy *p, struct ward_error *err)
{
	bool kept = false;
	int r;

	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
		r = -errno;
		if (r != -EPERM || !may_keep_host_proc(p)) {
			ward__error(err, r, "mount",
				    "cannot mount a fresh '/proc' for the pid namespace: %m");
			if (r == -EPERM && p->require_isolation)
				ward__error_hint(
					err,
					"this container masks parts of its /proc; podman, docker: --security-opt systempaths=unconfined; Kubernetes: procMount: Unmasked; without --require-isolation ward keeps the container's /proc");
			else if (r == -EPERM)
				ward__error_hint(
					err,
					"this container masks parts of its /proc, and without Landlock its /proc cannot be kept safely; podman, docker: --security-opt systempaths=unconfined; Kubernetes: procMount: Unmasked");
			return r;
		}
		/* The container's /proc is in the view already (read-only with the host, but for danger-full-access). */
		kept = true;
	}
	for (size_t i = 0; i < ELEMENTSOF(proc_readonly); i++) {
		_cleanup_close_ int fd = -1;

		/* A part this kernel does not have (sysrq-trigger without CONFIG_MAGIC_SYSRQ) is skipped. */
		r = clone_tree(proc_readonly[i], &fd);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			return ward__error(err, r, "mount", "cannot clone '%s': %m",
					   proc_readonly[i]);
		r = setattr_fd(fd, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0);
		if (r < 0)
			return ward__error(err, r, "mount", "cannot make '%s' read-only: %m",
					   proc_readonly[i]);
		r = attach(fd, proc_readonly[i]);
		if (r < 0)
			return ward__error(err, r, "mount", "cannot bind '%s' read-only: %m",
					   proc_readonly[i]);
	}
	return kept ? 1 : 0;
}

int ward__mounts_setup(const struct ward_policy *p, const struct ward__layer *layers,
		       size_t n_layers, bool user_ns, struct ward_error *err)
{
	int root_fds[WARD_POLICY_MAX_PATHS + 4];
	int sub_fds[WARD_LAYER_MAX_SUBMOUNTS]; /* of all layers, in the order of the roots */
	size_t n_sub = 0;
	int dev_fds[ELEMENTSOF(dev_nodes)];
	struct mount_attr ro = {
		.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
	};
	size_t n_roots = p->roots.n;
	int r = 0;

	for (size_t i = 0; i < ELEMENTSOF(root_fds); i++)
		root_fds[i] = -1;
	for (size_t i = 0; i < ELEMENTSOF(sub_fds); i++)
		sub_fds[i] = -1;
	for (size_t i = 0; i < ELEMENTSOF(dev_fds); i++)
		dev_fds[i] = -1;
	if (n_roots > ELEMENTSOF(root_fds))
		return ward__error(err, -E2BIG, "mount", "too many writable roots");
	if (n_layers > 0 && p->mode == WARD_MODE_DANGER_FULL_ACCESS)
		return ward__error(err, -EINVAL, "layer",
				   "danger-full-access has no writable roots to layer");

	/* Private: our mounts never reach the host, the host's never reach us. */
	/* The first mount: failing here means the namespace has no capabilities (AppArmor's restriction). */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return ward__error(err, -errno, "userns",
				   "cannot make '/' private in the new mount namespace: %m");

	if (p->mode == WARD_MODE_DANGER_FULL_ACCESS)
		return mount_proc(p, err);

	for (size_t i = 0; i < n_roots; i++) {
		const struct ward__layer *l = layer_of(layers, n_layers, p->roots.v[i]);
		struct statvfs sv;

		/*
		 * A root on a read-only mount of the host stays read-only: in a user
		 * namespace the kernel refuses to clear the flag (the mount is
		 * locked), and without one (root) ward must not lift it either.
		 */
		if (statvfs(p->roots.v[i], &sv) == 0 && (sv.f_flag & ST_RDONLY)) {
			r = ward__error(err, -EROFS, "mount",
					"writable root '%s' is on a read-only mount of the host",
					p->roots.v[i]);
			goto out;
		}
		if (n_layers > 0 && !l) {
			r = covered_root(p, layers, n_layers, i, err);
			if (r < 0)
				goto out;
			continue;
		}
		if (l) {
			if (l->n_submounts > WARD_LAYER_MAX_SUBMOUNTS - n_sub) {
				r = ward__error(err, -E2BIG, "layer",
						"too many mounts beneath writable root '%s'",
						l->root);
				goto out;
			}
			/* Before the overlay: a submount's path is then still the host's. */
			for (size_t k = 0; k < l->n_submounts; k++) {
				r = clone_tree(l->submounts[k], &sub_fds[n_sub]);
				if (r >= 0)
					r = setattr_fd(sub_fds[n_sub++],
						       MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
							       MOUNT_ATTR_NODEV,
						       0);
				if (r < 0) {
					ward__error(err, r, "layer", "cannot clone mount '%s': %m",
						    l->submounts[k]);
					goto out;
				}
			}
			r = make_overlay(l, user_ns, &root_fds[i], err);
			if (r < 0)
				goto out;
			continue;
		}
		r = clone_tree(p->roots.v[i], &root_fds[i]);
		if (r < 0) {
			ward__error(err, r, "mount", "cannot clone writable root '%s': %m",
				    p->roots.v[i]);
			goto out;
		}
		/*
		 * nosuid and nodev everywhere beneath; writable only the root's own
		 * mount: a read-only mount inside a writable root stays read-only
		 * (and, inherited into our user namespace, is locked that way).
		 */
		r = setattr_fd(root_fds[i], MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0);
		if (r >= 0) {
			struct mount_attr rw = {.attr_clr = MOUNT_ATTR_RDONLY};

			r = RET_NERRNO(
				mount_setattr(root_fds[i], "", AT_EMPTY_PATH, &rw, sizeof(rw)));
		}
		if (r < 0) {
			ward__error(err, r, "mount", "cannot make writable root '%s' writable: %m",
				    p->roots.v[i]);
			goto out;
		}
	}
	for (size_t i = 0; i < ELEMENTSOF(dev_nodes); i++) {
		_cleanup_free_ char *path = ward__path_join("/dev", dev_nodes[i]);

		/* A missing node (no /dev/tty in some containers) is simply left out. */
		if (path && clone_tree(path, &dev_fds[i]) < 0)
			dev_fds[i] = -1;
	}

	if (mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &ro, sizeof(ro)) < 0) {
		r = ward__error(err, -errno, "mount", "cannot make '/' read-only: %m");
		goto out;
	}

	n_sub = 0;
	for (size_t i = 0; i < n_roots; i++) {
		const struct ward__layer *l = layer_of(layers, n_layers, p->roots.v[i]);

		if (root_fds[i] < 0)
			continue; /* beneath a layered root, which shows it */
		r = attach(root_fds[i], p->roots.v[i]);
		if (r < 0) {
			ward__error(err, r, "mount", "cannot bind writable root '%s': %m",
				    p->roots.v[i]);
			goto out;
		}
		for (size_t k = 0; l && k < l->n_submounts; k++) {
			r = attach(sub_fds[n_sub++], l->submounts[k]);
			if (r < 0) {
				ward__error(err, r, "layer", "cannot bind mount '%s' read-only: %m",
					    l->submounts[k]);
				goto out;
			}
		}
	}

	/* Pins first (parents come first in the list), then read-only binds on top. */
	for (size_t i = 0; i < p->n_protected; i++) {
		const struct ward__protected *e = &p->protected[i];

		if (e->kind != WARD_PROTECT_PIN)
			continue;
		r = bind_self(e->path, false, err);
		if (r < 0)
			goto out;
	}
	for (size_t i = 0; i < p->n_protected; i++) {
		const struct ward__protected *e = &p->protected[i];

		if (e->kind != WARD_PROTECT_READONLY)
			continue;
		r = bind_self(e->path, true, err);
		if (r < 0)
			goto out;
	}

	r = setup_dev(dev_fds, p, err);
	if (r < 0)
		goto out;
	r = mask_deny(p, err);
	if (r < 0)
		goto out;
	r = mount_proc(p, err);
out:
	for (size_t i = 0; i < ELEMENTSOF(root_fds); i++)
		if (root_fds[i] >= 0)
			close(root_fds[i]);
	for (size_t i = 0; i < ELEMENTSOF(sub_fds); i++)
		if (sub_fds[i] >= 0)
			close(sub_fds[i]);
	for (size_t i = 0; i < ELEMENTSOF(dev_fds); i++)
		if (dev_fds[i] >= 0)
			close(dev_fds[i]);
	return r;
}

/*
 * The probe of ward__layer_probe(), in a child of its own: a mount namespace
 * (and a user namespace mapping this user, as a sandbox has one), then the
 * overlay a sandbox would make, never attached anywhere. What went wrong goes
 * to fd as one line.
 */
static _Noreturn void probe_child(const char *dir, const char *base, int fd)
{
	char lower[PATH_MAX + 8], upper[PATH_MAX + 8], work[PATH_MAX + 8], map[64];
	struct ward__layer l = {.root = lower, .upper = upper, .work = work};
	struct ward_error e = {0};
	uid_t uid = geteuid();
	gid_t gid = getegid();
	bool user_ns = uid != 0;
	int mfd, r;

	snprintf(lower, sizeof(lower), "%s/l", base);
	snprintf(upper, sizeof(upper), "%s/u", base);
	snprintf(work, sizeof(work), "%s/w", base);
	if (unshare(CLONE_NEWNS | (user_ns ? CLONE_NEWUSER : 0)) < 0) {
		dprintf(fd, "cannot make a mount namespace: %s", strerror(errno));
		_exit(1);
	}
	if (user_ns) {
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
		r = ward__write_file("/proc/self/setgroups", "deny");
		if (r >= 0)
			r = ward__write_file("/proc/self/uid_map", map);
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
		if (r >= 0)
			r = ward__write_file("/proc/self/gid_map", map);
		if (r < 0) {
			dprintf(fd, "cannot map the user namespace: %s", strerror(-r));
			_exit(1);
		}
	}
	if (make_overlay(&l, user_ns, &mfd, &e) < 0) {
		/* Named by the journal's directory, not by the probe's own. */
		dprintf(fd, "overlayfs refuses a layer kept in '%s': %s%s%s%s", dir,
			strerror(e.code < 0 ? -e.code : EINVAL), e.hint[0] ? " (hint: " : "",
			e.hint[0] ? e.hint : "", e.hint[0] ? ")" : "");
		_exit(1);
	}
	_exit(0);
}

int ward__layer_probe(const char *dir, struct ward_error *err)
{
	char base[PATH_MAX], sub[PATH_MAX + 64], msg[1024];
	int pfd[2], st, r = 0;
	ssize_t n = 0, k;
	pid_t pid;

	if (ward__mkdir_parents(dir, 0700) < 0)
		return ward__error(err, -errno, "changes", "cannot make '%s': %m", dir);
	if (snprintf(base, sizeof(base), "%s/.probe-XXXXXX", dir) >= (int)sizeof(base))
		return ward__error(err, -ENAMETOOLONG, "changes", "'%s': path too long", dir);
	if (!mkdtemp(base))
		return ward__error(err, -errno, "changes", "cannot write in '%s': %m", dir);
	for (const char *d = "luw"; *d && r == 0; d++) {
		snprintf(sub, sizeof(sub), "%s/%c", base, *d);
		if (mkdir(sub, 0700) < 0)
			r = ward__error(err, -errno, "changes", "cannot write in '%s': %m", dir);
	}
	if (r == 0 && pipe2(pfd, O_CLOEXEC) < 0)
		r = ward__error(err, -errno, "changes", "cannot make a pipe: %m");
	if (r == 0) {
		pid = fork();
		if (pid == 0) {
			close(pfd[0]);
			probe_child(dir, base, pfd[1]);
		}
		close(pfd[1]);
		if (pid < 0) {
			r = ward__error(err, -errno, "changes", "cannot fork: %m");
		} else {
			while (n < (ssize_t)sizeof(msg) - 1 &&
			       (k = read(pfd[0], msg + n, sizeof(msg) - 1 - n)) != 0) {
				if (k < 0 && errno == EINTR)
					continue;
				if (k < 0)
					break;
				n += k;
			}
			msg[n] = 0;
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				r = ward__error(err, -EOPNOTSUPP, "changes", "%s",
						n > 0 ? msg : "the layer probe failed");
		}
		close(pfd[0]);
	}
	/*
	 * The overlay was never attached; what it made in its work directory
	 * (mode 0: opened up first) is work/incompat/volatile/dirty, for the
	 * volatile option.
	 */
	static const char *const made[] = {"w/work", "w/work/incompat", "w/work/incompat/volatile"};
	for (size_t i = 0; i < ELEMENTSOF(made); i++) {
		snprintf(sub, sizeof(sub), "%s/%s", base, made[i]);
		(void)chmod(sub, 0700);
	}
	snprintf(sub, sizeof(sub), "%s/w/work/incompat/volatile/dirty", base);
	(void)unlink(sub);
	for (size_t i = ELEMENTSOF(made); i > 0; i--) {
		snprintf(sub, sizeof(sub), "%s/%s", base, made[i - 1]);
		(void)rmdir(sub);
	}
	for (const char *d = "luw"; *d; d++) {
		snprintf(sub, sizeof(sub), "%s/%c", base, *d);
		(void)rmdir(sub);
	}
	(void)rmdir(base);
	return r;
}
