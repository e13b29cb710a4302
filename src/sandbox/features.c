/* SPDX-License-Identifier: MIT */
/*
 * What the host offers: user namespaces, Landlock, seccomp user notification,
 * the mount API, pidfds (the cgroups of the limits: cgroup-host.c). Probed
 * once per process. `ward run` does not need this on its fast path (spawn.c
 * tries namespaces and falls back); it is for `ward doctor`, `ward policy
 * show` and the fallback's messages.
 */
#include <fcntl.h>
#include <jansson.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "sandbox/sandbox.h"

static struct ward__features features;
static pthread_once_t features_once = PTHREAD_ONCE_INIT;
/* What ward run learnt by trying (ward__features_note_refused): no probe process needed then. */
static int noted_userns_errno;
static const char *noted_userns_how;
static bool noted_rootns_refused;

static int read_int(const char *path, long *ret)
{
	char buf[64];
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	*ret = strtol(buf, NULL, 10);
	return 0;
}

static bool self_has_seccomp_filter(void)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
	char line[256];

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "Seccomp:", 8) == 0)
			return strtol(line + 8, NULL, 10) == 2;
	return false;
}

/*
 * The probe child: a user and mount namespace, our own id maps, one mount.
 * uid is the caller's, taken before the clone: inside the new namespace,
 * before the maps are written, geteuid() answers the overflow uid.
 */
static int probe_child(uid_t uid)
{
	char line[64];

	snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (ward__write_file("/proc/self/setgroups", "deny") < 0 && errno != ENOENT)
		_exit(10);
	if (ward__write_file("/proc/self/uid_map", line) < 0)
		_exit(11);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		_exit(12);
	/* A container that masks parts of its /proc: the kernel refuses a fresh one (mounts.c). */
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		_exit(errno == EPERM ? 13 : 14);
	_exit(0);
}

static bool have_cap(int cap)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {0};

	return syscall(SYS_capget, &hdr, data) == 0 &&
		(data[CAP_TO_INDEX(cap)].effective & CAP_TO_MASK(cap));
}

static void why_userns(struct ward__features *f, const char *how)
{
	long v;

	if (read_int("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", &v) == 0 && v == 1 &&
	    geteuid() != 0)
		snprintf(
			f->userns_why, sizeof(f->userns_why),
			"AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1)");
	else if (read_int("/proc/sys/user/max_user_namespaces", &v) == 0 && v == 0)
		snprintf(f->userns_why, sizeof(f->userns_why), "user.max_user_namespaces is 0");
	else if (read_int("/proc/sys/kernel/unprivileged_userns_clone", &v) == 0 && v == 0 &&
		 geteuid() != 0)
		snprintf(f->userns_why, sizeof(f->userns_why),
			 "kernel.unprivileged_userns_clone is 0");
	/*
	 * The namespace was made, but root may map uid 0 into it only with
	 * CAP_SETFCAP (Linux 5.12): a container's root without capabilities.
	 */
	else if (geteuid() == 0 && strcmp(how, "clone(CLONE_NEWUSER)") != 0 &&
		 !have_cap(CAP_SETFCAP))
		snprintf(f->userns_why, sizeof(f->userns_why),
			 "ward runs as root without CAP_SETFCAP, which mapping uid 0 into a user "
			 "namespace needs (%s: %s)",
			 how, strerror(f->userns_errno));
	else if (self_has_seccomp_filter())
		snprintf(f->userns_why, sizeof(f->userns_why),
			 "a seccomp filter refuses them (%s: %s; e.g. Docker's default profile)",
			 how, strerror(f->userns_errno));
	else
		snprintf(f->userns_why, sizeof(f->userns_why), "%s: %s", how,
			 strerror(f->userns_errno));
}

static void probe_userns(struct ward__features *f)
{
	int status = 0;
	uid_t uid = geteuid();
	/* A pid namespace of its own too: procfs is mounted by who owns the pid namespace. */
	long pid = syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | SIGCHLD, NULL,
			   NULL, NULL, 0);

	if (pid < 0) {
		f->userns_errno = errno;
		why_userns(f, "clone(CLONE_NEWUSER)");
		return;
	}
	if (pid == 0)
		probe_child(uid);
	while (waitpid((pid_t)pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) >= 13)) {
		f->userns = true;
		f->proc_masked = WEXITSTATUS(status) == 13;
		return;
	}
	f->userns_errno = EPERM;
	why_userns(f,
		   WIFEXITED(status) && WEXITSTATUS(status) == 12
			   ? "mount in a new user namespace"
			   : "writing the id maps of a new user namespace");
}

/*
 * Root where user namespaces are refused: can the other namespaces be created
 * directly? One clone, as ward run would make it, whose child makes the mount
 * tree private (an AppArmor or seccomp profile of a container may still refuse
 * that).
 */
static void probe_rootns(struct ward__features *f)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {0};
	int status = 0;
	long pid;

	if (syscall(SYS_capget, &hdr, data) < 0 ||
	    !(data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective & CAP_TO_MASK(CAP_SYS_ADMIN)))
		return;
	pid = syscall(SYS_clone,
		      CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET |
			      SIGCHLD,
		      NULL, NULL, NULL, 0);
	if (pid < 0)
		return;
	if (pid == 0)
		_exit(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ? 1 : 0);
	while (waitpid((pid_t)pid, &status, 0) < 0 && errno == EINTR)
		;
	f->rootns = WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void probe(void)
{
	struct ward__features *f = &features;
	uint32_t action = SECCOMP_RET_USER_NOTIF;
	long abi, v;
	int fd;

	if (noted_userns_errno) {
		f->userns_errno = noted_userns_errno;
		why_userns(f, noted_userns_how);
	} else {
		probe_userns(f);
	}
	if (!f->userns && !noted_rootns_refused)
		probe_rootns(f);
	f->apparmor_restricts_userns =
		read_int("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", &v) == 0 &&
		v == 1;
	abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
		      1U /* LANDLOCK_CREATE_RULESET_VERSION */);
	f->landlock_abi = abi > 0 ? (int)abi : 0;
	f->landlock_errno = abi > 0 ? 0 : errno;
	f->seccomp = prctl(PR_GET_SECCOMP) >= 0;
	f->seccomp_user_notif = syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0 &&
		syscall(SYS_pidfd_getfd, -1, 0, 0) < 0 && errno == EBADF;
	/* open_tree with a bad fd: EBADF when the syscall exists, ENOSYS otherwise. */
	f->mount_api = syscall(SYS_open_tree, -1, "", 0) < 0 && errno != ENOSYS;
	fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	f->pidfd = fd >= 0;
	if (fd >= 0)
		close(fd);
}

void ward__features_note_refused(int userns_errno, const char *how, bool rootns_refused)
{
	noted_userns_errno = userns_errno > 0 ? userns_errno : EPERM;
	noted_userns_how = how;
	noted_rootns_refused = rootns_refused;
}

const struct ward__features *ward__features_get(void)
{
	pthread_once(&features_once, probe);
	return &features;
}

size_t ward__features_missing_guarantees(const struct ward__features *f,
					 const struct ward_policy *p, char *buf, size_t size)
{
	size_t n = 0;

#define ADD(...)                                                                       \
	do {                                                                           \
		if (n < size)                                                          \
			n += (size_t)snprintf(buf + n, size - n, "%s", n ? "; " : ""); \
		if (n < size)                                                          \
			n += (size_t)snprintf(buf + n, size - n, __VA_ARGS__);         \
	} while (0)

	if (size)
		buf[0] = '\0';
	if (p->mode == WARD_MODE_DANGER_FULL_ACCESS)
		return 0;
	/* Landlock grants rights to whole hierarchies; it cannot take a subpath back out of a root. */
	if (p->mode == WARD_MODE_WORKSPACE_WRITE)
		ADD("read-only protection of .git/hooks, .git/config, autorun names (.vscode, .bashrc, .mcp.json, ...), PATH directories and --protect paths inside writable roots (guarded instead: a change kills the sandbox and is undone; see ward(1))");
	if (p->n_deny > 0)
		ADD("hiding of --deny-read paths");
	ADD("a private /proc and pid isolation (host processes are visible)");
	if (!p->network) {
		if (f->landlock_abi >= 4)
			ADD("loopback networking inside (TCP and UDP are refused altogether)");
		else
			ADD("loopback networking inside (UDP refused; TCP is NOT restricted: Landlock ABI %d < 4)",
			    f->landlock_abi);
	}
	if (f->landlock_abi < 6)
		ADD("scoping of signals and abstract unix sockets (Landlock ABI %d < 6)",
		    f->landlock_abi);
	ADD("killing processes that leave ward's process tree");
#undef ADD
	return n < size ? n : size ? size - 1 : 0;
}

WARD_PUBLIC int ward_policy_describe_json(const struct ward_policy *p, char **ret_json)
{
	const struct ward__features *f = ward__features_get();
	bool danger = p->mode == WARD_MODE_DANGER_FULL_ACCESS;
	json_t *root, *enf, *missing;
	char buf[1024];
	char *s;

	if (!p->resolved)
		return -EINVAL;
	root = ward__policy_to_json(p);
	if (!root)
		return -ENOMEM;
	enf = json_object();
	missing = json_array();
	json_object_set_new(root, "enforcement", enf);
	json_object_set_new(enf, "isolation",
			    json_string(danger		    ? "none (danger-full-access)"
						: f->userns ? "namespaces"
						: f->rootns
						? "namespaces without a user namespace (root)"
						: "landlock+seccomp fallback"));
	json_object_set_new(enf, "user_namespace", json_boolean(!danger && f->userns));
	json_object_set_new(enf, "mount_namespace",
			    json_boolean(!danger && (f->userns || f->rootns)));
	json_object_set_new(enf, "pid_namespace",
			    json_boolean(!danger && (f->userns || f->rootns)));
	json_object_set_new(enf, "private_proc",
			    json_boolean(!danger && ((f->userns && !f->proc_masked) || f->rootns)));
	json_object_set_new(enf, "network_namespace",
			    json_boolean(!danger && (f->userns || f->rootns) && !p->network));
	json_object_set_new(enf, "landlock_abi", json_integer(danger ? 0 : f->landlock_abi));
	json_object_set_new(enf, "landlock",
			    json_string(danger			  ? "not used"
						: f->landlock_abi ? "enforced"
								  : "unavailable"));
	json_object_set_new(enf, "seccomp", json_boolean(!danger && f->seccomp));
	json_object_set_new(enf, "unix_socket_supervision",
			    json_boolean(!danger && !p->network && f->seccomp_user_notif));
	/*
	 * With the network on there is no network namespace: only Landlock's
	 * scoping (ABI 6) keeps the host's abstract unix sockets out of reach.
	 */
	if (!danger && (f->userns || f->rootns) && p->network && f->landlock_abi < 6) {
		snprintf(
			buf, sizeof(buf),
			"scoping of the host's abstract unix sockets with the network on (Landlock ABI %d < 6)",
			f->landlock_abi);
		json_array_append_new(missing, json_string(buf));
	}
	if (!danger && f->userns && f->proc_masked)
		json_array_append_new(missing,
				      json_string(f->landlock_abi >= 1 && !p->require_isolation
							  ? WARD_HOST_PROC_LOST
							  : WARD_HOST_PROC_REFUSED));
	if (!danger && !f->userns) {
		json_object_set_new(enf, "userns_unavailable_because", json_string(f->userns_why));
		/* Root builds the same sandbox without a user namespace: then nothing is missing. */
		if (!f->rootns) {
			char *save = NULL;

			ward__features_missing_guarantees(f, p, buf, sizeof(buf));
			for (char *tok = strtok_r(buf, ";", &save); tok;
			     tok = strtok_r(NULL, ";", &save))
				json_array_append_new(missing,
						      json_string(tok[0] == ' ' ? tok + 1 : tok));
		}
	}
	json_object_set_new(enf, "missing", missing);
	s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!s)
		return -ENOMEM;
	*ret_json = s;
	return 0;
}
