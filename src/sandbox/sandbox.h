/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: src/sandbox owns the sandbox itself, below any notion of a run's
 * output or of who asked for it: what the host gives (features.c), the
 * clone into new namespaces or the fallback without them (spawn.c, child.c,
 * prepare.c), the mount view (mounts.c), Landlock (landlock.c), the seccomp
 * filter and its supervisor (seccomp*.c, supervise*.c), the guard of
 * protected paths no mount protects (guard*.c), the sandbox's init (init.c)
 * and ward's handle on a started sandbox: reports, kill, wait, release
 * (handle.c, kill-tree.c, fdpass.c), and beside the namespaces the limits:
 * cgroups and rlimits (limits.h: cgroup-host.c, cgroup-base.c, cgroup.c,
 * rlimit.c, enforce.c).
 *
 * It may call src/policy and src/basic only (and use the types of
 * include/ward/ward.h). src/exec and everything above call it; it calls none
 * of them (the one-way rule of DESIGN.md). Inside the folder no two files
 * call each other either: what a group of files shares sits one floor down
 * (spawn-state.h and handle.c, guard-state.h, supervise-notify.c).
 */
#pragma once

#include <limits.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <termios.h>

#include "basic/macro.h"
#include "policy/policy.h"
#include "sandbox/limits.h"
#include "ward/ward.h"

/* ------------------------------------------------------------ host features (features.c) */

/* How the sandbox is isolated. */
enum ward__isolation {
	WARD_ISOLATION_NONE = 0, /* the Landlock+seccomp fallback (or danger-full-access) */
	WARD_ISOLATION_USERNS = 1, /* a user namespace and the mount, pid, ipc, uts, net ones */
	/*
	 * The same namespaces without a user namespace, created with the
	 * CAP_SYS_ADMIN of a root caller where user namespaces are refused; init
	 * drops every privilege before the command starts.
	 */
	WARD_ISOLATION_ROOT = 2,
};

struct ward__features {
	bool userns; /* an unprivileged user namespace with a mount namespace can be created */
	int userns_errno; /* why not (positive errno), when !userns */
	char userns_why
		[160]; /* one-line reason, e.g. "kernel.apparmor_restrict_unprivileged_userns=1" */
	/*
	 * Without user namespaces: the caller holds CAP_SYS_ADMIN (root) and the
	 * mount, pid, ipc, uts and network namespaces can be created directly.
	 */
	bool rootns;
	bool apparmor_restricts_userns; /* kernel.apparmor_restrict_unprivileged_userns=1 */
	/*
	 * With user namespaces: a fresh /proc is refused in them (a container
	 * that masks parts of its own); sandboxes keep the container's
	 * (WARD_HOST_PROC_LOST), or refuse to run without Landlock.
	 */
	bool proc_masked;
	int landlock_abi; /* 0 when Landlock is unavailable */
	int landlock_errno;
	bool seccomp; /* seccomp filters can be installed */
	bool seccomp_user_notif; /* SECCOMP_RET_USER_NOTIF + pidfd_getfd usable */
	bool mount_api; /* open_tree/move_mount/mount_setattr */
	bool pidfd;
};

/*
 * Probes the host once per process and caches the answer; cheap afterwards.
 * The userns probe is a clone() of a tiny child, about 100 us. Never fails:
 * what cannot be probed is reported as absent.
 */
WARD_INTERNAL const struct ward__features *ward__features_get(void);
/*
 * Tells the probe what a launch already learnt by trying, before the first
 * ward__features_get() (spawn's fallback, for its messages): user namespaces
 * refused with this errno at this step, and whether namespaces as root were
 * refused too. The probe then spends no process of its own on them.
 */
WARD_INTERNAL void ward__features_note_refused(int userns_errno, const char *how,
					       bool rootns_refused);
/*
 * Writes into buf a "; "-separated list of the guarantees `ward run` cannot
 * give for this policy without namespaces (the Landlock+seccomp fallback).
 * Returns the length written.
 */
WARD_INTERNAL size_t ward__features_missing_guarantees(const struct ward__features *f,
						       const struct ward_policy *p, char *buf,
						       size_t size);

/* ------------------------------------------------------------ Landlock (landlock.c) */

/*
 * Builds a Landlock ruleset for the policy as the sandbox sees it: read and
 * execute everywhere, full access beneath every writable root and beneath
 * /dev (ward's own tmpfs), read and write-file beneath /proc. With
 * restrict_net (the fallback mode without a network namespace, ABI >= 4) TCP
 * connect and bind are refused too. With ABI >= 6 signals and abstract unix
 * sockets are scoped to the sandbox. Returns the ruleset fd (O_CLOEXEC) and
 * the ABI actually used. Must be called where the final mount view is visible.
 */
WARD_INTERNAL int ward__landlock_build(const struct ward_policy *p, int abi, bool restrict_net,
				       int *ret_ruleset_fd, struct ward_error *err);
/* landlock_restrict_self() on the calling thread; no_new_privs must be set. */
WARD_INTERNAL int ward__landlock_enforce(int ruleset_fd, struct ward_error *err);

/* ------------------------------------------------------------ seccomp (seccomp.c) */

struct ward__seccomp_opts {
	bool network_off; /* the network is off for this run */
	bool netns; /* a private network namespace is in force */
	/*
	 * Route connect() through the supervisor (seccomp user notification) so
	 * host pathname unix sockets stay unreachable; also refuses AF_UNIX
	 * SOCK_DGRAM sockets whose sendto() could address host sockets.
	 */
	bool supervise_connect;
	/* Report filesystem write attempts to the supervisor (captured runs). */
	bool observe_fs;
	/* Also observe opens for reading (when deny-read paths exist). */
	bool observe_reads;
	/*
	 * Send the filter's refusals to the supervisor, which answers them with
	 * the same errno and reports them. Only where init is PID 1 of a pid
	 * namespace: no filtered process can outlive the supervisor's listener
	 * there (once it is closed, a process could install a listener of its
	 * own and answer its own notifications).
	 */
	bool notify_refusals;
};

#define WARD_SECCOMP_COMBINATIONS 64

/*
 * init's parent-death signal without a pid namespace (where SIGKILL would end
 * init alone and leave the command running): init kills every process of the
 * sandbox when it arrives. Never forwarded to the command.
 */
#define WARD_SIG_PARENT_DIED (SIGRTMIN + 2)

/* A compiled filter: BPF instructions, built before fork so the child only loads it. */
struct ward__seccomp_prog {
	void *insns; /* struct sock_filter[] */
	unsigned short len;
	bool has_notify; /* contains SECCOMP_RET_USER_NOTIF actions */
};

WARD_INTERNAL int ward__seccomp_build(const struct ward__seccomp_opts *o,
				      struct ward__seccomp_prog *ret, struct ward_error *err);
WARD_INTERNAL void ward__seccomp_prog_release(struct ward__seccomp_prog *prog);
/* Always generates the filter with libseccomp (what _build does when no precompiled one exists). */
WARD_INTERNAL int ward__seccomp_compile(const struct ward__seccomp_opts *o,
					struct ward__seccomp_prog *ret, struct ward_error *err);
/* The options as an index 0..31 into the precompiled filters. */
WARD_INTERNAL unsigned ward__seccomp_opts_index(const struct ward__seccomp_opts *o);

/* One filter compiled at build time (seccomp-gen.c writes the table). */
struct ward__seccomp_precompiled {
	const void *insns;
	unsigned short len; /* 0: not precompiled, compile at run time */
	bool has_notify;
};
/*
 * Loads the filter on the calling thread (no_new_privs must be set). When the
 * program has notify actions, *ret_listener_fd receives the notification fd,
 * otherwise -1. Async-signal-safe: only syscalls.
 */
WARD_INTERNAL int ward__seccomp_load(const struct ward__seccomp_prog *prog, int *ret_listener_fd);
/* Name of a syscall number on the native arch ("connect"), static storage or NULL. */
WARD_INTERNAL const char *ward__seccomp_syscall_name(int nr);

/* ------------------------------------------------------------ reports (init -> parent) */

/*
 * Messages written by the sandbox's processes into the report pipe. Each is one
 * write() no larger than PIPE_BUF, so writers never interleave.
 */
enum ward__msg_type {
	WARD_MSG_ERROR = 1, /* payload: struct ward__msg_error */
	WARD_MSG_STATUS = 2, /* payload: struct ward__msg_status; the command ended */
	WARD_MSG_DENIAL = 3, /* payload: struct ward__msg_denial */
	WARD_MSG_READY = 4, /* payload: struct ward__msg_ready; the command was exec()ed */
	WARD_MSG_DENIALS_DROPPED =
		5, /* payload: struct ward__msg_dropped; once, from the supervisor */
	WARD_MSG_GUARD = 6, /* payload: struct ward__msg_guard; init killed the sandbox */
	WARD_MSG_NOTE = 7, /* payload: struct ward__msg_note; before READY, set-up gave less */
};

struct ward__msg_hdr {
	uint32_t type;
	uint32_t len; /* payload bytes */
};

struct ward__msg_error {
	struct ward_error error;
	int32_t exit_code; /* 125 setup, 126 cannot execute, 127 not found */
};

struct ward__msg_status {
	int32_t wait_status; /* as from waitpid() */
	uint32_t flags; /* WARD_STATUS_* */
	struct ward__init_usage usage; /* of every process init reaped */
};
/*
 * init killed the sandbox because its v1 memory cgroup ran out (the OOM
 * eventfd): the kernel's own count may have missed it, its victim being
 * already dead of init's kill.
 */
#define WARD_STATUS_OOM 1u
/* usage.cg holds the cgroup's counts, and init removes the cgroup (ward need not). */
#define WARD_STATUS_CGROUP 2u

struct ward__msg_ready {
	int32_t pid; /* the command's pid inside */
};

#define WARD_DENIAL_TARGET_MAX 3072
struct ward__msg_denial {
	char access
		[16]; /* "write", "create", "read", "connect", "sendto", "socket", "syscall", "delete", "rename" */
	char syscall[24]; /* "openat", "connect", ... */
	int32_t error; /* positive errno the command got */
	int32_t pid; /* inside the sandbox */
	char target
		[WARD_DENIAL_TARGET_MAX]; /* path, address, or syscall arguments; NUL-terminated */
};

/*
 * init broke off the run: a protected file's lease was broken (the command
 * opened it for writing or truncated it). Every process is being killed.
 */
struct ward__msg_guard {
	char access[16];
	char target[WARD_DENIAL_TARGET_MAX];
};

/*
 * What the set-up could not give (the child, once, before READY):
 * WARD_NOTE_HOST_PROC, the container's /proc instead of a fresh one.
 */
enum { WARD_NOTE_HOST_PROC = 1 };
struct ward__msg_note {
	uint32_t what;
};

/*
 * The guarantee lost with WARD_NOTE_HOST_PROC, as sb->fallback_missing and
 * `ward doctor` say it.
 */
#define WARD_HOST_PROC_LOST                                                                      \
	"a private /proc (this container masks parts of its own, so the kernel refuses a fresh " \
	"one): the command sees the container's other processes in /proc, their command lines "  \
	"and status, not their memory, environment or descriptors (Landlock), and still cannot " \
	"signal them (own pid namespace)"

/* What ward run does instead there without Landlock, or with --require-isolation. */
#define WARD_HOST_PROC_REFUSED                                                                   \
	"every sandbox: this container masks parts of its /proc, so the kernel refuses a fresh " \
	"one, and ward keeps the container's only under Landlock and without --require-isolation"

/* Denials the supervisor did not send because WARD_MAX_DENIALS were sent already. */
struct ward__msg_dropped {
	uint32_t count;
};

/*
 * Writes one message (supervise-notify.c); async-signal-safe. Errors are
 * ignored (the reader may be gone).
 */
WARD_INTERNAL void ward__report(int fd, uint32_t type, const void *payload, uint32_t len);

/* ------------------------------------------------------------ guard (guard*.c) */

/*
 * Bounds of what the fallback's guard keeps to restore protected paths: a
 * protected file over WARD_GUARD_MAX_FILE (or protected paths over the other
 * bounds) makes ward refuse to run without namespaces, with a clear error.
 */
#define WARD_GUARD_MAX_ENTRIES 1024 /* files, directories and links kept */
#define WARD_GUARD_MAX_FILE (8 << 20) /* bytes of one protected file */
#define WARD_GUARD_MAX_BYTES (64 << 20) /* bytes of all of them */
#define WARD_GUARD_MAX_DEPTH 16 /* levels beneath a protected directory */
#define WARD_GUARD_MAX_LEASES 256 /* protected files init holds a lease on; the rest are watched */
/* The signal a broken lease sends to init (F_SETSIG); SIGIO when the queue is full. */
#define WARD_SIG_LEASE (SIGRTMIN + 3)

struct ward__guard;
typedef void (*ward__guard_report_fn)(void *userdata, const char *access, const char *path);
typedef void (*ward__guard_notify_fn)(void *userdata);

/*
 * One inotify instance shared by the guards of a long-running process (a
 * server's sandboxes): the kernel counts inotify instances per user
 * (fs.inotify.max_user_instances, 128 by default), not watches, so one
 * instance per sandbox stops a server at about a hundred sandboxes. An inode
 * watched by many guards has one watch, held as long as one of them holds it.
 * Its owner polls ward__watches_fd() and calls ward__watches_dispatch(),
 * which hands each guard the events about its own paths and then calls the
 * guard's notify function (ward__guard_set_notify) if something concerned it;
 * the guard's owner then calls ward__guard_read() as with an instance of its
 * own. A queue overflow (events lost) concerns every guard.
 */
struct ward__watches;
WARD_INTERNAL int ward__watches_new(struct ward__watches **ret, struct ward_error *err);
/* Closes the instance; guards still on it see no more events. Accepts NULL. */
WARD_INTERNAL void ward__watches_free(struct ward__watches *w);
WARD_INTERNAL int ward__watches_fd(const struct ward__watches *w);
/* Reads what is pending and notifies the guards concerned; notify functions may free guards. */
WARD_INTERNAL int ward__watches_dispatch(struct ward__watches *w);
/*
 * Reads every event queued at the call, however many (dispatch reads a bounded
 * number), and notifies as dispatch does. An owner calls it when a sandbox
 * ended: the events of what its processes did are queued by then (inotify
 * queues an event in the syscall that made the change), but the loop may
 * see the end first (an fd epoll already held ready is handed out first).
 */
WARD_INTERNAL int ward__watches_flush(struct ward__watches *w);

/*
 * Sets up the guard of a policy (*ret NULL when nothing needs one): with
 * namespaces (fallback false) the protected paths that do not exist yet and
 * the directories where autorun names must not appear (p->watches); in
 * the fallback every protected path, kept (content, mode, owner, time;
 * bounded), watched, and pinned directories watched for renames. With shared
 * (or NULL) the guard's watches are on that instance, otherwise on an
 * instance of its own.
 */
/*
 * p must outlive the guard (the sandbox's own copy, ward__policy_dup_resolved).
 * With defer_autorun the directories of p->watches are watched only by
 * ward__guard_arm(), which must return before the command may start.
 */
WARD_INTERNAL int ward__guard_new(const struct ward_policy *p, bool fallback,
				  struct ward__watches *shared, bool defer_autorun,
				  struct ward__guard **ret, struct ward_error *err);
/* Watches what ward__guard_new() deferred (nothing for a NULL guard); -errno with err. */
WARD_INTERNAL int ward__guard_arm(struct ward__guard *g, struct ward_error *err);
WARD_INTERNAL void ward__guard_free(struct ward__guard *g);
/* The inotify fd to poll (owned by the guard), or -1 (none, or a shared instance). */
WARD_INTERNAL int ward__guard_fd(const struct ward__guard *g);
/* With a shared instance: called (from ward__watches_dispatch) when events concern the guard. */
WARD_INTERNAL void ward__guard_set_notify(struct ward__guard *g, ward__guard_notify_fn fn,
					  void *userdata);
/* Read-only descriptors of the kept files, for init's leases, and their paths. */
WARD_INTERNAL size_t ward__guard_leases(const struct ward__guard *g, const int **ret_fds,
					char *const **ret_paths);
/* Closes ward's copies of the lease descriptors (after init has its own). */
WARD_INTERNAL void ward__guard_close_leases(struct ward__guard *g);
/*
 * Reads pending events; *ret_changed with the first change's access, path and
 * reason (static, or NULL when the guard does not know it).
 */
WARD_INTERNAL int ward__guard_read(struct ward__guard *g, char *access, size_t asize, char *path,
				   size_t psize, const char **ret_reason, bool *ret_changed);
/*
 * After ward__guard_read(): watches the directories that appeared where
 * autorun names matter and looks into each (an autorun name already there is
 * a change: the watch came after the command put it there), and looks into
 * every watched directory again when events were lost. A bound reached (too
 * many directories, entries, or a watch the kernel refuses) is a change too:
 * the guard fails closed. *ret_changed as for ward__guard_read().
 */
WARD_INTERNAL int ward__guard_settle(struct ward__guard *g, char *access, size_t asize, char *path,
				     size_t psize, const char **ret_reason, bool *ret_changed);
/*
 * Puts back what was kept, once every process of the sandbox is dead: removes
 * what was created, rewrites what changed, moves a renamed pin back. Calls fn
 * for each path it had to repair; names the first it could not in left.
 * Returns how many it repaired.
 */
WARD_INTERNAL int ward__guard_restore(struct ward__guard *g, ward__guard_report_fn fn,
				      void *userdata, char *left, size_t left_size);
/* Removes name under parent_fd, never following symlinks, only entries owned by ward's user. */
WARD_INTERNAL int ward__remove_tree_at(int parent_fd, const char *name, unsigned depth);

/* What init needs of the guard: the lease descriptors, kept open across the fork. */
struct ward__init_leases {
	const int *fds;
	char *const *paths;
	size_t n;
};

/* ------------------------------------------------------------ supervisor (supervise*.c) */

/*
 * Runs in the sandbox's init (which has no seccomp filter), answering the
 * command's seccomp notifications: emulated connect() that refuses host
 * pathname unix sockets unless allow-listed (race-free: the path is opened
 * O_PATH once and connected through /proc/self/fd), and filesystem observations
 * that become WARD_MSG_DENIAL reports.
 */
struct ward__supervisor {
	/*
	 * The fd to poll for POLLIN: after init, an epoll set over the
	 * notification fd and the supervisor's timers and pending connects.
	 */
	int listener_fd;
	int report_fd;
	const struct ward_policy *policy;
	bool netns;
	/* The net socket (the network by domain): pool listeners go to ward over it; else -1. */
	int net_fd;
	unsigned denials_sent;
	unsigned denials_dropped;
	void *priv; /* implementation state */
};

/* Takes ownership of listener_fd, also on failure (closed: notified syscalls then fail, not hang). */
WARD_INTERNAL int ward__supervisor_init(struct ward__supervisor *s, int listener_fd, int report_fd,
					const struct ward_policy *p, bool netns);
/* Handles what is pending on listener_fd (call when it polls readable). -errno on fatal error. */
WARD_INTERNAL int ward__supervisor_handle(struct ward__supervisor *s);
/* Reports the denials it had to drop (WARD_MSG_DENIALS_DROPPED), if any. */
WARD_INTERNAL void ward__supervisor_flush(struct ward__supervisor *s);
WARD_INTERNAL void ward__supervisor_release(struct ward__supervisor *s);

/* ------------------------------------------------------------ spawning (spawn.c, child.c, init.c) */

#define WARD_MAX_KEEP_FDS 64

struct ward__layer; /* a copy-on-write layer over a writable root (below) */
#define WARD_MAX_DENIALS 256 /* per run; more are counted, not kept */
/*
 * Bytes of the denials' targets kept per run (more are counted, not kept): a
 * server keeps a sandbox's denials while its command runs, and 256 targets
 * of 3 KiB each would make 800 KB per command of a hostile one's choosing.
 */
#define WARD_MAX_DENIAL_BYTES ((size_t)64 << 10)

struct ward__spawn_opts {
	const struct ward_policy *policy; /* resolved */
	char *const *argv;
	/* The program to execute (looked up in PATH), when not argv[0] (an arg0 of its own). */
	const char *exec_path;
	/*
	 * The directory the command starts in, when not the policy's cwd: only
	 * the command's, never a writable root (an agent picks it, not the policy).
	 */
	const char *cwd;
	char *const *envp; /* NULL: the caller's environ */
	int stdio[3]; /* fds that become 0, 1, 2 in the command; -1: inherit the same fd */
	int tty_fd; /* a pty slave to make the controlling terminal, or -1 */
	/*
	 * Give the command a new pty from the sandbox's own devpts instance (so
	 * its name resolves inside): the slave becomes its controlling terminal
	 * and the fds of 0-2 marked in pty_stdio; ward__sandbox_spawn() returns
	 * the master in sb->pty_master. termios/winsize are applied to it first.
	 */
	bool pty;
	bool pty_stdio[3];
	bool have_termios;
	struct termios termios;
	struct winsize winsize;
	int keep_fds[WARD_MAX_KEEP_FDS]; /* kept open at the same number */
	size_t n_keep_fds;
	bool observe_fs; /* install the filesystem denial observer */
	bool quiet_fallback; /* do not print the fallback warning (the caller reports it) */
	/*
	 * Every signal at its default action in the command, whatever the caller
	 * ignores: a server's commands are not children of the person's shell
	 * (a server started in the background of a script ignores SIGINT, and
	 * its client's "interrupt" must still interrupt). `ward run` leaves it
	 * off: there the command inherits what its caller ignores, as exec(2)
	 * does (nohup).
	 */
	bool default_signals;
	/*
	 * The inotify instance the guard shares with other sandboxes (a server),
	 * or NULL for one of its own. With a shared one, sb->guard_fd is -1: the
	 * owner of the instance dispatches its events and the sandbox's guard is
	 * told through ward__sandbox_set_guard_notify().
	 */
	struct ward__watches *watches;
	/*
	 * Internal to the sandbox: in the clone's child, its end of the net
	 * socket (the network by domain), or -1. Callers leave it at 0; spawn
	 * sets it.
	 */
	int net_fd;
	/*
	 * Copy-on-write layers over the writable roots (review and undo,
	 * src/changes): the command's changes go to each layer's upper
	 * directory, not to the host. With layers the sandbox must have a
	 * mount namespace: spawn refuses the fallback (-EOPNOTSUPP).
	 */
	const struct ward__layer *layers;
	size_t n_layers;
	/*
	 * The budget group (a server's, a connection's) the sandbox's cgroup is
	 * made beneath, or NULL: ward's subtree itself.
	 */
	const struct ward__cgroup *cg_parent;
	/*
	 * Set by spawn.c and prepare.c for the clone's child, never by callers
	 * (the limits come from the policy): the cgroup to enter and leave, the
	 * rlimits of the command.
	 */
	const struct ward__sb_limits *sb_limits;
};

struct ward__denial {
	char access[16];
	char syscall[24];
	int error;
	char *target;
	/*
	 * Why, when ward knows (a static string): the protected path's reason
	 * ("autorun: editor tasks", ...) or the protection that refused it, or a
	 * network refusal's ("not-allowed", "denied", ...: src/net); else NULL.
	 */
	const char *reason;
};

struct ward__sandbox {
	pid_t pid; /* init (or the command itself in fallback mode) */
	int pidfd;
	int ctl_fd; /* a prepared sandbox's socket to its init, until its command is sent; else -1 */
	bool prepared; /* prepared and not launched yet */
	bool launched; /* a prepared sandbox the command was sent to (not built at its start) */
	int report_fd; /* read end of the report pipe, O_NONBLOCK */
	int guard_fd; /* inotify fd watching missing protected paths, or -1 */
	int life_fd; /* write end of the pipe whose closing tells the child ward is gone */
	int pty_master; /* with opts.pty: the master side, O_CLOEXEC, or -1 */
	/*
	 * With the network by domain: ward's end of the net socket, O_NONBLOCK,
	 * on which the sandbox hands out its proxy's listeners (tagged
	 * WARD_NETFD_*, ward__recv_fd_tag()); the holder serves them with its
	 * proxy (src/net) and keeps reading it, for pool listeners come later.
	 * -1 otherwise.
	 */
	int net_fd;
	bool isolated; /* namespaces in force; false in the Landlock+seccomp fallback */
	enum ward__isolation isolation;
	bool netns;
	int landlock_abi; /* in force, 0 if none */
	bool seccomp;
	bool denials_exact; /* the supervisor observes filesystem and network denials */
	bool ready; /* the command was exec()ed */
	bool have_status;
	int wait_status; /* of the command, when have_status */
	bool have_error;
	struct ward__msg_error error;
	struct ward__denial *denials;
	size_t n_denials;
	size_t denial_bytes; /* of the targets kept (WARD_MAX_DENIAL_BYTES) */
	size_t denials_dropped;
	bool guard_tripped; /* a protected path was changed (and restored) */
	char guard_left[PATH_MAX + 64]; /* "path: reason" when a change could not be undone */
	/*
	 * The guarantees not given: in fallback mode, or with namespaces but
	 * without a private /proc (host_proc).
	 */
	char fallback_missing[512];
	bool host_proc; /* the container's /proc is the sandbox's (WARD_NOTE_HOST_PROC) */
	/* The policy's limits: how each is enforced, what the run used and hit (once over). */
	struct ward__limits_report limits;
	void *priv;
};

/*
 * Starts the sandbox: one fork; the child becomes PID 1 of new namespaces,
 * builds the mount view, applies Landlock, forks the command, which applies
 * seccomp and execs. Returns once the child exists (not when the command
 * started); setup failures arrive as a WARD_MSG_ERROR report. Returns -errno
 * (and err) only when nothing was started.
 */
WARD_INTERNAL int ward__sandbox_spawn(const struct ward__spawn_opts *o, struct ward__sandbox *ret,
				      struct ward_error *err);

/* ------------------------------------------------------------ prepared sandboxes (prepare.c) */

/*
 * Prepared sandboxes, for a server: everything of a sandbox but the command
 * is built ahead (namespaces, mount view, loopback, the Landlock ruleset, the
 * seccomp filter, init's signals and privileges, and with opts.pty the
 * terminal), so that starting a process only sends the command to its init,
 * which forks and execs it as the cold path does.
 *
 * ward__sandbox_prepare() clones the sandbox and returns at once: the work is
 * the child's, and the parent does not wait for it. The sandbox is ready when
 * its WARD_MSG_READY report arrives (sb->ready, from
 * ward__sandbox_read_reports()); an error report or EOF instead means it
 * failed. Only the namespaced isolations are prepared: -EOPNOTSUPP in the
 * fallback (whose guard must keep the protected paths right before the
 * command runs) and for danger-full-access. The opts' command fields, stdio
 * and keep_fds are ignored; opts.policy must be resolved and is read only
 * during the call.
 *
 * ward__sandbox_launch() sends the command of opts (argv, exec_path, envp or
 * environ, stdio descriptors, the window size) to a ready prepared sandbox
 * and sets up its guard from opts (watches, policy: the one the sandbox was
 * prepared for). Afterwards the sandbox is an ordinary started one. A stdio
 * descriptor left at -1 is /dev/null in the command (or the terminal with a
 * tty). Returns -errno (the sandbox is then of no use: release it) when the
 * command cannot be handed over.
 */
WARD_INTERNAL int ward__sandbox_prepare(const struct ward__spawn_opts *o, struct ward__sandbox *ret,
					struct ward_error *err);
WARD_INTERNAL int ward__sandbox_launch(struct ward__sandbox *sb, const struct ward__spawn_opts *o,
				       struct ward_error *err);

/* The command a prepared sandbox's init receives over its socket (init.c). */
#define WARD_LAUNCH_MAGIC 0x3157524cu
/* Commands larger than this travel in a memfd sent with the message. */
#define WARD_LAUNCH_INLINE_MAX ((size_t)32 << 10)
#define WARD_LAUNCH_MAX ((size_t)16 << 20) /* bytes of strings */
#define WARD_LAUNCH_MAX_STRINGS (1u << 20) /* arguments, and environment entries */
enum {
	WARD_LAUNCH_EXEC_PATH = 1, /* the blob starts with the program's path */
	WARD_LAUNCH_STDIN = 2, /* a descriptor for stdin comes (then stdout, stderr, in order) */
	WARD_LAUNCH_STDOUT = 4,
	WARD_LAUNCH_STDERR = 8,
	WARD_LAUNCH_MEMFD = 16, /* the blob is in a memfd, the last descriptor */
	WARD_LAUNCH_CWD =
		32, /* the command's directory follows the program's path (or starts the blob) */
};
struct ward__launch_msg {
	uint32_t magic;
	uint32_t flags;
	uint32_t argc;
	uint32_t envc;
	uint32_t blob_len; /* [exec_path] [cwd] argv... envp..., each NUL-terminated */
	uint16_t rows, cols; /* a tty's window size, 0: as prepared */
	/* the blob follows, unless WARD_LAUNCH_MEMFD */
};

/* ------------------------------------------------------------ a started sandbox (handle.c) */

/*
 * A refusal of the sandbox's network proxy (the network by domain), kept
 * with the others: access "network", target "host:port", reason.
 */
WARD_INTERNAL void ward__sandbox_add_net_denial(struct ward__sandbox *sb, const char *target,
						const char *reason);
/* Reads pending report messages (non-blocking). Returns 0, or -errno. EOF sets *ret_eof. */
WARD_INTERNAL int ward__sandbox_read_reports(struct ward__sandbox *sb, bool *ret_eof);
/* Handles pending events on guard_fd: removes created protected paths, kills the sandbox. */
WARD_INTERNAL int ward__sandbox_handle_guard(struct ward__sandbox *sb);
/* With a shared inotify instance: fn is called when the guard has events (then handle them). */
WARD_INTERNAL void ward__sandbox_set_guard_notify(struct ward__sandbox *sb,
						  ward__guard_notify_fn fn, void *userdata);
/* Forwards a signal to the command's process group (through init). */
WARD_INTERNAL int ward__sandbox_signal(struct ward__sandbox *sb, int sig);
/* Kills every process of the sandbox. Idempotent. */
WARD_INTERNAL void ward__sandbox_kill(struct ward__sandbox *sb);
/*
 * Waits for init to exit (blocking), drains the reports, and computes the
 * command's exit code as `ward run` reports it (125 when setup failed).
 */
WARD_INTERNAL int ward__sandbox_wait(struct ward__sandbox *sb, int *ret_exit_code);
WARD_INTERNAL void ward__sandbox_release(struct ward__sandbox *sb);
/*
 * Gives back every kernel resource of a finished sandbox (its descriptors,
 * the guard's watches or instance) and keeps what was learnt (status, error,
 * denials, the fields above): for a server that keeps finished processes
 * readable for a while. Only once init is reaped (ward__sandbox_wait());
 * does nothing before. release() is still needed for the memory.
 */
WARD_INTERNAL void ward__sandbox_close(struct ward__sandbox *sb);
/*
 * Like release, but does not wait for init to finish exiting: for a caller
 * that exits right after (the CLI), whose own parent reaps what is left.
 * Only valid once ward__sandbox_wait() has seen the command's status (every
 * process of the sandbox is dead by then).
 */
WARD_INTERNAL void ward__sandbox_release_exiting(struct ward__sandbox *sb);

/*
 * kill-tree.c: kills every descendant of root (not root itself) found through
 * /proc, a few rounds to catch forks in between. Used only without a pid
 * namespace.
 */
WARD_INTERNAL void ward__kill_tree(pid_t root);

/* fdpass.c: passes one fd over a unix socket (SCM_RIGHTS). Async-signal-safe. */
WARD_INTERNAL int ward__send_fd(int sock, int fd);
/* Receives one fd (made O_CLOEXEC); -EPIPE when the peer closed without sending. */
WARD_INTERNAL int ward__recv_fd(int sock);
/* The same with a one-byte tag saying what the descriptor is. */
WARD_INTERNAL int ward__send_fd_tag(int sock, int fd, char tag);
/* -EAGAIN on a non-blocking socket with nothing to read. */
WARD_INTERNAL int ward__recv_fd_tag(int sock, char *ret_tag);

/* ------------------------------------------------------------ the network by domain (netns.c) */

/*
 * Where the sandbox's loopback has ward's proxy (the proxy variables name
 * them) and the pool the DNS stub hands addresses from (src/net).
 */
#define WARD_NET_HTTP_PORT 3128
#define WARD_NET_SOCKS5_PORT 1080
#define WARD_NET_POOL_ADDR 0xc6120000u /* 198.18.0.0 */
#define WARD_NET_POOL_BITS 16
/* Pool listeners init makes for one sandbox (an address and port each); past it, refused. */
#define WARD_NET_MAX_POOL_LISTENERS 512
/*
 * The tags of the descriptors the sandbox hands ward over its net socket
 * (struct ward__sandbox net_fd): its proxy's listeners, and later each pool
 * listener init makes when the command connects to a pool address.
 */
enum {
	WARD_NETFD_HTTP = 'H',
	WARD_NETFD_SOCKS5 = 'S',
	WARD_NETFD_DNS_UDP = 'D',
	WARD_NETFD_DNS_TCP = 'T',
	WARD_NETFD_POOL = 'P',
	WARD_NETFD_SOCKS5_UDP = 'U', /* SOCKS5's UDP relay, 127.0.0.1:1080 over UDP */
};
/* In the sandbox's network namespace: the pool's route, the listeners, sent over net_fd. */
WARD_INTERNAL int ward__netns_setup(int net_fd, struct ward_error *err);
/* In its mount namespace, after the mount view: /etc/resolv.conf names the stub. */
WARD_INTERNAL int ward__netns_resolv_conf(struct ward_error *err);

/* ------------------------------------------------------------ the mount view (mounts.c) */

/*
 * A copy-on-write layer over one writable root: an overlayfs mount whose
 * lower layer is the root as the host has it and whose upper layer is a
 * directory of ward's own (src/changes makes it and reads it once the
 * sandbox is gone). The command sees its own writes; the host sees none.
 *
 * The overlay is mounted with redirect_dir=nofollow, metacopy=off and
 * index=off (and userxattr in a user namespace), so that the upper directory
 * holds only what src/changes knows how to read: whole copied-up files,
 * whiteouts (character devices 0/0) and opaque directories. Mount points
 * beneath the root (submounts) are not part of an overlay's lower layer:
 * each is bound read-only over the layer at its own path.
 */
struct ward__layer {
	const char *root; /* canonical: one of the policy's resolved roots */
	const char *upper; /* absolute path of an empty directory ward owns */
	const char *work; /* an empty directory on the same filesystem as upper */
	char *const *submounts; /* mount points strictly beneath root, parents first */
	size_t n_submounts;
};
#define WARD_LAYER_MAX_SUBMOUNTS 64

/*
 * Builds the mount view in the child (new mount namespace). With layers,
 * every writable root is either layered or lies beneath a layered root on
 * the same mount (then the parent's overlay covers it); anything else is
 * refused, so that no write can reach the host past a layer. user_ns: the
 * overlay's extended attributes are user.overlay.* (an unprivileged mount).
 * Returns 0, 1 when the view is complete but for a fresh /proc (a container
 * masks parts of its own: the container's is kept, see WARD_HOST_PROC_LOST),
 * or -errno.
 */
/*
 * Whether a copy-on-write layer can be made with its upper directory in dir
 * (ward's journal, made if missing): the overlay a sandbox would make, in a
 * child of its own. ward serve and ward mcp record by default and check this
 * once at their start: a journal on a filesystem overlayfs cannot take as an
 * upper layer (a container's own overlay root) would otherwise fail every
 * process. -EOPNOTSUPP with overlayfs' refusal in err.
 */
WARD_INTERNAL int ward__layer_probe(const char *dir, struct ward_error *err);

WARD_INTERNAL int ward__mounts_setup(const struct ward_policy *p, const struct ward__layer *layers,
				     size_t n_layers, bool user_ns, struct ward_error *err);

/*
 * init.c: the PID 1 loop. Never returns. hold_fd (or -1): a descriptor init
 * keeps after the command's status is reported, until it is killed (ward's
 * exit, by the parent-death signal, or ward__sandbox_release()).
 */
/*
 * init.c: a prepared sandbox's init. Sets up what does not depend on the
 * command, reports WARD_MSG_READY, waits on ctl_fd for its command (or exits
 * 0 when ward closes it), then is init as ward__init_main().
 */
_noreturn_ WARD_INTERNAL void ward__init_prepared_main(struct ward__spawn_opts *o, int report_fd,
						       int ctl_fd,
						       const struct ward__seccomp_prog *prog,
						       int landlock_fd, enum ward__isolation iso);
/*
 * With arm_fd >= 0, the command starts only once ward wrote a byte there
 * (its guard is armed); at EOF init exits without it.
 */
_noreturn_ WARD_INTERNAL void ward__init_main(const struct ward__spawn_opts *o, int report_fd,
					      int hold_fd, const struct ward__seccomp_prog *prog,
					      int landlock_fd, enum ward__isolation iso,
					      const struct ward__init_leases *leases, int arm_fd);
