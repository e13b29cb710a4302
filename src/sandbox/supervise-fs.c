/* SPDX-License-Identifier: MIT */
/*
 * The seccomp supervisor's filesystem observation (see supervise.c): each
 * observed call's paths resolved as the kernel will resolve them, and the
 * refusals the sandbox causes (a read-only mount, a deny-read mask, Landlock,
 * a protected mount point) predicted and reported. The kernel decides.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/util.h"
#include "sandbox/supervise-notify.h"

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif
#ifndef __O_TMPFILE
#define __O_TMPFILE 020000000
#endif
#if defined(__x86_64__) || defined(__aarch64__)
#define NR_FCHMODAT2 452 /* Linux 6.6; seccomp.c observes it by number */
#endif

/* ------------------------------------------------------------------ filesystem observation */

enum fs_op {
	FS_OPEN, /* open/openat: flags decide */
	FS_OPENAT2, /* flags in struct open_how */
	FS_CREAT,
	FS_CREATE, /* mkdir, mknod, symlink: a new directory entry */
	FS_DELETE, /* unlink, rmdir */
	FS_RENAME,
	FS_LINK,
	FS_TRUNCATE,
	FS_SETATTR, /* chmod, chown, utimes, xattrs: the inode, not Landlock's business */
};

struct fs_call {
	enum fs_op op;
	int dirfd_arg; /* -1: AT_FDCWD */
	int path_arg;
	int dirfd2_arg;
	int path2_arg; /* -1: none */
	int flags_arg; /* open flags, or at-flags (AT_SYMLINK_NOFOLLOW); -1: none */
	bool nofollow;
};

static bool fs_call_for(int nr, struct fs_call *ret)
{
	struct fs_call c = {.dirfd_arg = -1, .dirfd2_arg = -1, .path2_arg = -1, .flags_arg = -1};

	switch (nr) {
#ifdef SYS_open
	case SYS_open:
		c.op = FS_OPEN, c.path_arg = 0, c.flags_arg = 1;
		break;
#endif
	case SYS_openat:
		c.op = FS_OPEN, c.dirfd_arg = 0, c.path_arg = 1, c.flags_arg = 2;
		break;
	case SYS_openat2:
		c.op = FS_OPENAT2, c.dirfd_arg = 0, c.path_arg = 1, c.flags_arg = 2;
		break;
#ifdef SYS_creat
	case SYS_creat:
		c.op = FS_CREAT, c.path_arg = 0;
		break;
#endif
#if defined(SYS_mkdir) && defined(SYS_mknod)
	case SYS_mkdir:
	case SYS_mknod:
		c.op = FS_CREATE, c.path_arg = 0;
		break;
#endif
	case SYS_mkdirat:
	case SYS_mknodat:
		c.op = FS_CREATE, c.dirfd_arg = 0, c.path_arg = 1;
		break;
#ifdef SYS_symlink
	case SYS_symlink:
		c.op = FS_CREATE, c.path_arg = 1;
		break;
#endif
	case SYS_symlinkat:
		c.op = FS_CREATE, c.dirfd_arg = 1, c.path_arg = 2;
		break;
#if defined(SYS_unlink) && defined(SYS_rmdir)
	case SYS_unlink:
	case SYS_rmdir:
		c.op = FS_DELETE, c.path_arg = 0;
		break;
#endif
	case SYS_unlinkat:
		c.op = FS_DELETE, c.dirfd_arg = 0, c.path_arg = 1;
		break;
#ifdef SYS_rename
	case SYS_rename:
		c.op = FS_RENAME, c.path_arg = 0, c.path2_arg = 1;
		break;
#endif
#ifdef SYS_renameat
	case SYS_renameat:
#endif
	case SYS_renameat2:
		c.op = FS_RENAME, c.dirfd_arg = 0, c.path_arg = 1, c.dirfd2_arg = 2,
		c.path2_arg = 3;
		break;
#ifdef SYS_link
	case SYS_link:
		c.op = FS_LINK, c.path_arg = 0, c.path2_arg = 1;
		break;
#endif
	case SYS_linkat:
		c.op = FS_LINK, c.dirfd_arg = 0, c.path_arg = 1, c.dirfd2_arg = 2, c.path2_arg = 3;
		break;
	case SYS_truncate:
		c.op = FS_TRUNCATE, c.path_arg = 0;
		break;
#ifdef SYS_chmod
	case SYS_chmod:
#endif
#ifdef SYS_chown
	case SYS_chown:
#endif
#ifdef SYS_utime
	case SYS_utime:
#endif
#ifdef SYS_utimes
	case SYS_utimes:
#endif
	case SYS_setxattr:
	case SYS_removexattr:
		c.op = FS_SETATTR, c.path_arg = 0;
		break;
#ifdef SYS_lchown
	case SYS_lchown:
#endif
	case SYS_lsetxattr:
	case SYS_lremovexattr:
		c.op = FS_SETATTR, c.path_arg = 0, c.nofollow = true;
		break;
	case SYS_fchmodat:
#ifdef SYS_futimesat
	case SYS_futimesat:
#endif
		c.op = FS_SETATTR, c.dirfd_arg = 0, c.path_arg = 1;
		break;
#ifdef NR_FCHMODAT2
	case NR_FCHMODAT2:
#endif
	case SYS_utimensat:
		c.op = FS_SETATTR, c.dirfd_arg = 0, c.path_arg = 1, c.flags_arg = 3;
		break;
	case SYS_fchownat:
		c.op = FS_SETATTR, c.dirfd_arg = 0, c.path_arg = 1, c.flags_arg = 4;
		break;
	default:
		return false;
	}
	*ret = c;
	return true;
}

/* A path argument resolved the way the command's kernel call will resolve it. */
struct resolved {
	int parent; /* O_PATH of the containing directory, or -1 */
	int obj; /* O_PATH of the object itself, or -1 when it does not exist */
	struct stat st; /* of obj */
	const char *last; /* final component, inside the caller's buffer */
};

static void resolved_release(struct resolved *r)
{
	if (r->parent >= 0)
		close(r->parent);
	if (r->obj >= 0)
		close(r->obj);
	r->parent = r->obj = -1;
}

/* Appends path to the absolute base in out, removing ".", ".." and "//" lexically. */
static int lexical(const char *base, const char *path, char *out, size_t size)
{
	size_t o = 0;
	const char *parts[2] = {path[0] == '/' ? "" : base, path};

	out[o++] = '/';
	for (int k = 0; k < 2; k++) {
		const char *p = parts[k];

		while (*p) {
			const char *e;
			size_t n;

			while (*p == '/')
				p++;
			e = strchrnul(p, '/');
			n = (size_t)(e - p);
			if (n == 0 || (n == 1 && p[0] == '.')) {
				/* nothing */
			} else if (n == 2 && p[0] == '.' && p[1] == '.') {
				while (o > 1 && out[o - 1] != '/')
					o--;
				if (o > 1)
					o--;
			} else {
				if (o + (o > 1) + n + 1 > size)
					return -ENAMETOOLONG;
				if (o > 1)
					out[o++] = '/';
				memcpy(out + o, p, n);
				o += n;
			}
			p = e;
		}
	}
	out[o] = '\0';
	return 0;
}

/*
 * Resolves one path argument: opens the base (the command's cwd or dirfd),
 * the parent directory and, when it exists, the object (following a final
 * symlink or not). Fills pv->lex with the lexical absolute path. Returns 0,
 * -ESRCH when the notification is gone, or -errno when the parent cannot be
 * resolved (the kernel call fails for ordinary reasons then).
 */
static int resolve(struct ward__supervisor_priv *pv, uint64_t id, pid_t pid, int dirfd, char *path,
		   bool follow, struct resolved *ret)
{
	_cleanup_close_ int base = -1;
	char *slash;
	size_t n = strlen(path);
	int r;

	ret->parent = ret->obj = -1;
	pv->lex[0] = '\0';
	if (n == 0)
		return -ENOENT;
	if (path[0] != '/') {
		base = ward__notif_target_dir(pid, dirfd);
		if (!ward__notif_id_valid(pv, id))
			return -ESRCH;
		if (base < 0)
			return base;
		r = ward__notif_fd_path(base, pv->canon, sizeof(pv->canon));
		if (r < 0)
			return r;
	} else {
		pv->canon[0] = '\0';
	}
	r = lexical(pv->canon, path, pv->lex, sizeof(pv->lex));
	if (r < 0)
		return r;

	/* Split into parent and last component; trailing slashes belong to the last. */
	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
	slash = strrchr(path, '/');
	if (!slash) {
		ret->last = path;
		ret->parent =
			openat(base >= 0 ? base : AT_FDCWD, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	} else {
		ret->last = slash + 1;
		if (slash == path) {
			ret->parent = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		} else {
			*slash = '\0';
			ret->parent = openat(base >= 0 ? base : AT_FDCWD, path,
					     O_PATH | O_DIRECTORY | O_CLOEXEC);
		}
	}
	if (ret->parent < 0)
		return -errno;
	if (ret->last[0] == '\0' || strcmp(ret->last, ".") == 0 || strcmp(ret->last, "..") == 0) {
		/* "/", "." and "..": no directory entry of their own to create, remove or rename. */
		resolved_release(ret);
		return -EINVAL;
	}
	ret->obj = openat(ret->parent, ret->last, O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	if (ret->obj >= 0 && fstat(ret->obj, &ret->st) < 0) {
		close(ret->obj);
		ret->obj = -1;
	}
	return 0;
}

/* The canonical path of the entry (parent's path + last), into buf. */
static int entry_path(const struct resolved *r, char *buf, size_t size)
{
	int k = ward__notif_fd_path(r->parent, buf, size);
	size_t n;

	if (k < 0)
		return k;
	n = strlen(buf);
	if (n + 1 + strlen(r->last) + 1 > size)
		return -ENAMETOOLONG;
	if (n > 1)
		buf[n++] = '/';
	ward__supervisor_copy_str(buf + n, size - n, r->last);
	return 0;
}

static bool fd_readonly(int fd)
{
	struct statvfs sv;

	return fstatvfs(fd, &sv) == 0 && (sv.f_flag & ST_RDONLY);
}

/* The mount an fd lies on (its id); 0 when unknown. */
static uint64_t fd_mnt_id(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) < 0 ||
	    !(stx.stx_mask & STATX_MNT_ID))
		return 0;
	return stx.stx_mnt_id;
}

static bool fd_mount_root(int fd)
{
	struct statx stx;

	return statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx) == 0 &&
		(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
		(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* True when the deny-read mask of d is mounted (mode 000), not merely listed in the policy. */
static bool mask_in_force(const struct ward__supervisor *s, struct ward__supervisor_priv *pv,
			  const struct ward__deny *d)
{
	size_t i = (size_t)(d - s->policy->deny);
	struct stat st;

	if (i >= WARD_POLICY_MAX_PATHS)
		return false;
	if (pv->mask_state[i] < 0)
		pv->mask_state[i] = stat(d->path, &st) == 0 && (st.st_mode & 07777) == 0;
	return pv->mask_state[i] == 1;
}

/*
 * A deny-read path reached by name (lexically) or by what it resolves to.
 * exact_ok: the call succeeds on the masked path itself (O_PATH) and only
 * fails beneath it.
 */
static bool denied_read(const struct ward__supervisor *s, struct ward__supervisor_priv *pv,
			const char *lex, int obj, bool exact_ok)
{
	const struct ward__deny *d = ward__policy_deny_for(s->policy, lex);

	if (!d && obj >= 0 && ward__notif_fd_path(obj, pv->tmp, sizeof(pv->tmp)) == 0)
		d = ward__policy_deny_for(s->policy, pv->tmp);
	if (!d || !mask_in_force(s, pv, d))
		return false;
	return !(exact_ok && strcmp(d->path, lex) == 0);
}

/* A protected path bound over itself (read-only or pinned): a mount point of ours. */
static bool protected_mount(const struct ward_policy *p, const char *path)
{
	for (size_t i = 0; i < p->n_protected; i++)
		if (p->protected[i].kind != WARD_PROTECT_MISSING &&
		    strcmp(p->protected[i].path, path) == 0)
			return true;
	return false;
}

void ward__supervisor_init_ids(struct ward__supervisor_priv *pv)
{
	char map[64];
	bool userns;

	pv->uid = geteuid();
	pv->gid = getegid();
	pv->n_groups = getgroups(ELEMENTSOF(pv->groups), pv->groups);
	if (pv->n_groups < 0)
		pv->n_groups = 0;
	pv->overflow_uid = (uid_t)ward__read_proc_long("/proc/sys/kernel/overflowuid", 65534);
	pv->overflow_gid = (gid_t)ward__read_proc_long("/proc/sys/kernel/overflowgid", 65534);
	ward__read_small("/proc/self/uid_map", map, sizeof(map));
	/* The initial namespace maps everything: "0 0 4294967295". */
	userns = !strstr(map, "4294967295");
	/*
	 * Inside our user namespace an unmapped owner shows as the overflow id:
	 * if that is also our own id, a file may be ours or anyone's.
	 */
	pv->ids_ambiguous = userns && (pv->uid == pv->overflow_uid || pv->gid == pv->overflow_gid);
}

enum perm {
	PERM_WRITE, /* write to the inode (an existing file) */
	PERM_DIR, /* add or remove an entry: write and search on the directory */
	PERM_OWNER, /* change attributes: be the owner */
};

/*
 * Would the host's own permission checks let the command do this, sandbox or
 * not? When they would not, the failure is the command's own (an unprivileged
 * user writing /etc/passwd) and is not a denial of the sandbox. ward run as
 * root passes them (root outside has CAP_DAC_OVERRIDE); ACLs are not read
 * (their mask can only narrow group permissions; a refusal they add is
 * reported). Where ids are ambiguous (only for attribute changes, or
 * without faccessat2) the stricter reading is taken.
 */
static bool host_permits(const struct ward__supervisor_priv *pv, int fd, enum perm perm)
{
	struct stat st;
	unsigned need = perm == PERM_DIR ? 3 : 2, owner_bits, group_bits, other_bits;
	bool owner, group = false;

	if (pv->uid == 0 || fd < 0)
		return true;
	if (perm != PERM_OWNER) {
		/*
		 * The kernel's own answer: access(2) without AT_EACCESS checks with
		 * the real ids and, for a non-root uid, without capabilities (as the
		 * command), and reports the permission bits (EACCES) before our
		 * read-only mount (EROFS). Unlike the bits we can stat, it sees the
		 * real owner of files whose owner is not mapped in our namespace.
		 */
		long r = syscall(SYS_faccessat2, fd, "", perm == PERM_DIR ? W_OK | X_OK : W_OK,
				 AT_EMPTY_PATH);

		if (r == 0 || errno == EROFS)
			return true;
		if (errno == EACCES)
			return false;
		/* No faccessat2 (Linux < 5.8): the permission bits below. */
	}
	if (fstat(fd, &st) < 0)
		return true;
	owner = st.st_uid == pv->uid;
	if (owner && pv->ids_ambiguous && st.st_uid == pv->overflow_uid)
		owner = false;
	if (perm == PERM_OWNER)
		return owner;
	if (!owner) {
		group = st.st_gid == pv->gid;
		for (int i = 0; !group && i < pv->n_groups; i++)
			group = st.st_gid == pv->groups[i];
		if (group && pv->ids_ambiguous && st.st_gid == pv->overflow_gid)
			group = false;
	}
	owner_bits = (st.st_mode >> 6) & 7;
	group_bits = (st.st_mode >> 3) & 7;
	other_bits = st.st_mode & 7;
	if (owner)
		return (owner_bits & need) == need;
	if (group)
		return (group_bits & need) == need;
	return (other_bits & need) == need;
}

/*
 * Predicts the sandbox's refusal of a write to path: the errno the command
 * gets, or 0 when the sandbox does not stand in the way. ro: the relevant
 * mount is read-only; busy: the entry is a mount point; landlock: Landlock
 * (ABI >= 1) governs this operation.
 *
 * /dev and /proc are ward's own (a tmpfs, a fresh procfs) and writable as
 * far as the sandbox is concerned; their failures are never reported. A
 * protected path that does not exist yet is not refused by the kernel (the
 * guard in guard.c handles its creation), so it is not predicted here.
 */
static int predict_write(const struct ward__supervisor *s, const struct ward__supervisor_priv *pv,
			 const char *path, bool ro, bool busy, bool landlock, int perm_fd,
			 enum perm perm)
{
	const struct ward__protected *prot;
	bool outside;

	if (ward__path_under(path, "/dev") || ward__path_under(path, "/proc"))
		return 0;
	/* Refused by the host's own permissions anyway: not the sandbox's doing. */
	if (!host_permits(pv, perm_fd, perm))
		return 0;
	prot = ward__policy_protected_for(s->policy, path);
	outside = !prot && !ward__policy_path_writable(s->policy, path);
	/* Our mount view is read-only outside the roots and on protected paths (checked first). */
	if (ro)
		return outside || (prot && prot->kind == WARD_PROTECT_READONLY) ? EROFS : 0;
	/* A protected path is a mount point: renaming or removing it fails with EBUSY. */
	if (busy)
		return protected_mount(s->policy, path) ? EBUSY : 0;
	/* Without a mount namespace, Landlock refuses writes outside the roots. */
	if (landlock && pv->landlock_abi > 0 && outside)
		return EACCES;
	return 0;
}

/* The kind of access an operation needs, as reported. */
static const char *op_access(enum fs_op op, int flags)
{
	switch (op) {
	case FS_CREATE:
	case FS_LINK:
		return "create";
	case FS_DELETE:
		return "delete";
	case FS_RENAME:
		return "rename";
	case FS_OPEN:
	case FS_OPENAT2:
		if (!(flags & (O_ACCMODE | O_CREAT | O_TRUNC)))
			return "read";
		return "write";
	case FS_CREAT:
	case FS_TRUNCATE:
	case FS_SETATTR:
		return "write";
	}
	return "write";
}

static void fs_report(struct ward__supervisor *s, const char *access, int nr, int error,
		      int32_t pid, const char *path)
{
	if (error > 0)
		ward__supervisor_report_denial(s, access, nr, error, pid, path);
}

/* open/openat/openat2/creat: what the flags ask for decides what can be refused. */
static void observe_open(struct ward__supervisor *s, int nr, int32_t pid, const struct resolved *r,
			 int flags)
{
	struct ward__supervisor_priv *pv = s->priv;
	int acc = flags & O_ACCMODE;
	/* O_PATH ignores the access and creation flags. */
	bool write = !(flags & O_PATH) && (acc != O_RDONLY || (flags & O_TRUNC));
	bool creat = !(flags & O_PATH) && (flags & O_CREAT);
	bool tmpfile = (flags & __O_TMPFILE) == __O_TMPFILE;
	int err;

	if (denied_read(s, pv, pv->lex, r->obj, flags & O_PATH)) {
		fs_report(s, write || creat ? "write" : "read", nr, EACCES, pid, pv->lex);
		return;
	}
	if (!write && !creat)
		return;
	if (tmpfile) {
		/* An unnamed file in the directory named by the path. */
		if (r->obj < 0 || !S_ISDIR(r->st.st_mode) ||
		    ward__notif_fd_path(r->obj, pv->canon, sizeof(pv->canon)) < 0)
			return;
		err = predict_write(s, pv, pv->canon, fd_readonly(r->obj), false, true, r->obj,
				    PERM_DIR);
		fs_report(s, "create", nr, err, pid, pv->canon);
		return;
	}
	if (r->obj >= 0) {
		/* EEXIST, EISDIR, and devices/fifos (writable on read-only mounts) are not ours. */
		if ((creat && (flags & O_EXCL)) || !write || !S_ISREG(r->st.st_mode))
			return;
		if (ward__notif_fd_path(r->obj, pv->canon, sizeof(pv->canon)) < 0)
			return;
		err = predict_write(s, pv, pv->canon, fd_readonly(r->obj), false, true, r->obj,
				    PERM_WRITE);
		fs_report(s, "write", nr, err, pid, pv->canon);
		return;
	}
	/* Missing: ENOENT unless created. */
	if (!creat || entry_path(r, pv->canon, sizeof(pv->canon)) < 0)
		return;
	err = predict_write(s, pv, pv->canon, fd_readonly(r->parent), false, true, r->parent,
			    PERM_DIR);
	fs_report(s, "create", nr, err, pid, pv->canon);
}

static void observe_fs(struct ward__supervisor *s, const struct seccomp_notif *req,
		       const struct fs_call *c)
{
	struct ward__supervisor_priv *pv = s->priv;
	pid_t pid = (pid_t)req->pid;
	int nr = req->data.nr;
	struct resolved a = {.parent = -1, .obj = -1}, b = {.parent = -1, .obj = -1};
	int dirfd = c->dirfd_arg >= 0 ? (int)req->data.args[c->dirfd_arg] : AT_FDCWD;
	int flags = 0;
	bool follow = !c->nofollow;
	int err = 0;

	if (ward__notif_read_str(pid, req->data.args[c->path_arg], pv->str[0], sizeof(pv->str[0])) <
	    0)
		return;
	if (c->path2_arg >= 0 &&
	    ward__notif_read_str(pid, req->data.args[c->path2_arg], pv->str[1],
				 sizeof(pv->str[1])) < 0)
		return;
	if (c->op == FS_OPENAT2) {
		uint64_t how_flags;

		/* struct open_how starts with the u64 flags; the size argument is at least 24. */
		if (req->data.args[3] < 24 ||
		    ward__notif_read_mem(pid, req->data.args[2], &how_flags, 8) < 0)
			return;
		flags = (int)(uint32_t)how_flags;
	} else if (c->op == FS_CREAT) {
		flags = O_CREAT | O_WRONLY | O_TRUNC;
	} else if (c->flags_arg >= 0) {
		flags = (int)(uint32_t)req->data.args[c->flags_arg];
	}
	if (c->op == FS_OPEN || c->op == FS_OPENAT2 || c->op == FS_CREAT) {
		/* O_CREAT|O_EXCL does not follow a final symlink (EEXIST instead). */
		follow =
			!(flags & O_NOFOLLOW) && (flags & (O_CREAT | O_EXCL)) != (O_CREAT | O_EXCL);
	} else if (c->flags_arg >= 0 && (flags & AT_SYMLINK_NOFOLLOW)) {
		follow = false;
	}
	/* Entries (create, delete, rename, link) are never followed. */
	if (c->op == FS_CREATE || c->op == FS_DELETE || c->op == FS_RENAME || c->op == FS_LINK)
		follow = false;

	if (c->op == FS_LINK) {
		/* Only the new name is created; the old one is read. */
		memmove(pv->str[0], pv->str[1], sizeof(pv->str[0]));
		dirfd = c->dirfd2_arg >= 0 ? (int)req->data.args[c->dirfd2_arg] : AT_FDCWD;
	}
	err = resolve(pv, req->id, pid, dirfd, pv->str[0], follow, &a);
	if (err == -ESRCH)
		return;
	if (err < 0) {
		/* The command's call fails on its own, unless it ran into a deny-read mask. */
		if (pv->lex[0] == '/' && denied_read(s, pv, pv->lex, -1, false))
			fs_report(s, op_access(c->op, flags), nr, EACCES, pid, pv->lex);
		return;
	}

	switch (c->op) {
	case FS_OPEN:
	case FS_OPENAT2:
	case FS_CREAT:
		observe_open(s, nr, pid, &a, flags);
		break;
	case FS_CREATE:
	case FS_LINK:
		if (denied_read(s, pv, pv->lex, -1, false)) {
			fs_report(s, "create", nr, EACCES, pid, pv->lex);
			break;
		}
		/* EEXIST wins over EROFS for a name that exists. */
		if (a.obj >= 0 || entry_path(&a, pv->canon, sizeof(pv->canon)) < 0)
			break;
		err = predict_write(s, pv, pv->canon, fd_readonly(a.parent), false, true, a.parent,
				    PERM_DIR);
		fs_report(s, "create", nr, err, pid, pv->canon);
		break;
	case FS_DELETE:
		if (denied_read(s, pv, pv->lex, -1, false)) {
			fs_report(s, "delete", nr, EACCES, pid, pv->lex);
			break;
		}
		if (entry_path(&a, pv->canon, sizeof(pv->canon)) < 0)
			break;
		if (a.obj < 0) {
			/* The kernel checks the mount before the lookup: EROFS even for a missing name. */
			err = predict_write(s, pv, pv->canon, fd_readonly(a.parent), false, false,
					    a.parent, PERM_DIR);
			fs_report(s, "delete", nr, err == EROFS ? err : 0, pid, pv->canon);
			break;
		}
		err = predict_write(s, pv, pv->canon, fd_readonly(a.parent), fd_mount_root(a.obj),
				    true, a.parent, PERM_DIR);
		fs_report(s, "delete", nr, err, pid, pv->canon);
		break;
	case FS_RENAME: {
		struct stat pa, pb;

		if (denied_read(s, pv, pv->lex, -1, false)) {
			fs_report(s, "rename", nr, EACCES, pid, pv->lex);
			break;
		}
		err = resolve(pv, req->id, pid,
			      c->dirfd2_arg >= 0 ? (int)req->data.args[c->dirfd2_arg] : AT_FDCWD,
			      pv->str[1], false, &b);
		if (err < 0)
			break;
		if (denied_read(s, pv, pv->lex, -1, false)) {
			fs_report(s, "rename", nr, EACCES, pid, pv->lex);
			break;
		}
		/* Across mounts the kernel answers EXDEV first; not a refusal of the policy. */
		if (fstat(a.parent, &pa) < 0 || fstat(b.parent, &pb) < 0 ||
		    pa.st_dev != pb.st_dev || fd_mnt_id(a.parent) != fd_mnt_id(b.parent))
			break;
		if (entry_path(&a, pv->canon, sizeof(pv->canon)) < 0)
			break;
		err = predict_write(s, pv, pv->canon, fd_readonly(a.parent),
				    a.obj >= 0 && fd_mount_root(a.obj), true, a.parent, PERM_DIR);
		if (a.obj < 0 && err != EROFS)
			break;
		if (err == 0 && entry_path(&b, pv->canon, sizeof(pv->canon)) == 0)
			err = predict_write(s, pv, pv->canon, fd_readonly(b.parent),
					    b.obj >= 0 && fd_mount_root(b.obj), true, b.parent,
					    PERM_DIR);
		fs_report(s, "rename", nr, err, pid, pv->canon);
		break;
	}
	case FS_TRUNCATE:
	case FS_SETATTR:
		if (denied_read(s, pv, pv->lex, a.obj, false)) {
			fs_report(s, "write", nr, EACCES, pid, pv->lex);
			break;
		}
		if (a.obj < 0 || ward__notif_fd_path(a.obj, pv->canon, sizeof(pv->canon)) < 0)
			break;
		if (c->op == FS_TRUNCATE && !S_ISREG(a.st.st_mode))
			break;
		/* Landlock governs truncate() from ABI 3; attribute changes never. */
		err = predict_write(s, pv, pv->canon, fd_readonly(a.obj), false,
				    c->op == FS_TRUNCATE && pv->landlock_abi >= 3, a.obj,
				    c->op == FS_TRUNCATE ? PERM_WRITE : PERM_OWNER);
		fs_report(s, "write", nr, err, pid, pv->canon);
		break;
	}
	resolved_release(&a);
	resolved_release(&b);
}

bool ward__supervisor_observe_fs(struct ward__supervisor *s, const struct seccomp_notif *req)
{
	struct fs_call c;

	if (!fs_call_for(req->data.nr, &c))
		return false;
	observe_fs(s, req, &c);
	return true;
}
