/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The seccomp supervisor's own state and plumbing (supervise-notify.c),
 * shared by its parts: the loop (supervise.c), the network calls
 * (supervise-net.c) and the filesystem observation (supervise-fs.c). Not for
 * use outside them.
 */
#include <limits.h>
#include <linux/seccomp.h>
#include <sys/socket.h>

#include "sandbox/sandbox.h"

#ifndef SECCOMP_USER_NOTIF_FLAG_CONTINUE
#define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)
#endif

#define MAX_PENDING 64 /* blocked connects in progress at once; more are answered EAGAIN */
#define TARGET_MAX 256

enum { TAG_NOTIFY = 0, TAG_TIMER = 1, TAG_PENDING = 2 };

/* One connect() being emulated. */
struct conn {
	uint64_t id;
	int32_t pid;
	int sock; /* our duplicate of the command's socket */
	int opath; /* AF_UNIX pathname: the O_PATH fd of the socket file, else -1 */
	int domain;
	bool report; /* a failure is a denial: non-loopback destination, network off */
	socklen_t len;
	struct sockaddr_storage addr; /* what we connect to (our copy, or /proc/self/fd/N) */
	char target[TARGET_MAX];
};

/*
 * A connect() on a blocking socket that did not complete at once: the command
 * waits in its notification while we wait for the socket in the event loop.
 */
struct pending {
	bool used;
	bool retry; /* AF_UNIX with a full backlog: try again on every tick */
	uint64_t deadline_ns; /* from SO_SNDTIMEO, 0 for none */
	struct conn c;
};

/* The supervisor's state (s->priv): one anonymous mapping, see supervise.c. */
struct ward__supervisor_priv {
	size_t map_size;
	int notify_fd;
	int epoll_fd;
	int timer_fd;
	bool timer_armed;
	int landlock_abi;
	/* The command's credentials, for telling its own permission failures from the sandbox's. */
	uid_t uid;
	gid_t gid;
	gid_t groups[64];
	int n_groups;
	bool ids_ambiguous; /* in a user namespace where our uid/gid is also the overflow id */
	uid_t overflow_uid;
	gid_t overflow_gid;
	struct seccomp_notif_sizes sizes;
	struct seccomp_notif *req;
	struct seccomp_notif_resp *resp;
	unsigned n_pending;
	struct pending pending[MAX_PENDING];
	/* The pool listeners made so far (the network by domain): address and port, host order. */
	struct {
		uint32_t addr;
		uint16_t port;
	} pool[WARD_NET_MAX_POOL_LISTENERS];
	unsigned n_pool;
	int8_t mask_state[WARD_POLICY_MAX_PATHS]; /* deny-read mask in force: -1 unknown, 0, 1 */
	bool have_last;
	struct ward__msg_denial last;
	struct ward__msg_denial msg;
	char str[2][PATH_MAX]; /* path arguments read from the command */
	char lex[PATH_MAX]; /* lexical absolute path */
	char canon[PATH_MAX];
	char tmp[PATH_MAX];
	char nlbuf[32768] __attribute__((aligned(8)));
	/* The kernel's seccomp_notif and seccomp_notif_resp follow, sized at run time. */
};

/* ------------------------------------------------------------ plumbing (supervise-notify.c) */

/* Copies src into dst, cut to size (always NUL-terminated). */
WARD_INTERNAL void ward__supervisor_copy_str(char *dst, size_t size, const char *src);
/* Reports a denial (WARD_MSG_DENIAL); the last one again, or one past the cap, is not sent. */
WARD_INTERNAL void ward__supervisor_report_denial(struct ward__supervisor *s, const char *access,
						  int nr, int error, int32_t pid,
						  const char *target);

/* Whether the notification id still waits for an answer. */
WARD_INTERNAL bool ward__notif_id_valid(struct ward__supervisor_priv *pv, uint64_t id);
/* Answers the notification id: error (negative errno or 0), flags (CONTINUE). */
WARD_INTERNAL void ward__notif_respond(struct ward__supervisor_priv *pv, uint64_t id, int error,
				       uint32_t flags);
/* Reads the command's memory; check the notification is still valid afterwards. */
WARD_INTERNAL int ward__notif_read_mem(pid_t pid, uint64_t addr, void *buf, size_t len);
/* Reads a NUL-terminated string of the command's. */
WARD_INTERNAL int ward__notif_read_str(pid_t pid, uint64_t addr, char *buf, size_t size);
/* The command's fd duplicated: the fd, -ESRCH when the call is gone, or -errno to answer. */
WARD_INTERNAL int ward__notif_target_fd(struct ward__supervisor_priv *pv, uint64_t id, pid_t pid,
					int fd);
/* Opens the command's cwd (AT_FDCWD) or dirfd as the base of a relative path (O_PATH). */
WARD_INTERNAL int ward__notif_target_dir(pid_t pid, int dirfd);
/* The path of one of our fds, through /proc/self/fd. */
WARD_INTERNAL int ward__notif_fd_path(int fd, char *buf, size_t size);

/* ------------------------------------------------------------ network (supervise-net.c) */

/* connect(): emulated, never continued; answered now or, when it blocks, from the loop. */
WARD_INTERNAL void ward__supervisor_connect(struct ward__supervisor *s,
					    const struct seccomp_notif *req);
/* sendto() with an address: reported when unreachable because of the sandbox, then continued. */
WARD_INTERNAL void ward__supervisor_sendto(struct ward__supervisor *s,
					   const struct seccomp_notif *req);
/* Pending connect i became writable (or failed): answers it. */
WARD_INTERNAL void ward__supervisor_pending_complete(struct ward__supervisor *s, unsigned i);
/* The timer's tick: retries, deadlines, and connects whose command is gone. */
WARD_INTERNAL void ward__supervisor_pending_tick(struct ward__supervisor *s);
/* Answers every pending connect ECONNABORTED and drops it (the supervisor ends). */
WARD_INTERNAL void ward__supervisor_pending_abort(struct ward__supervisor_priv *pv);

/* ------------------------------------------------------------ filesystem (supervise-fs.c) */

/*
 * Observes req when it is a filesystem call (true) and reports the refusals
 * predicted; the caller answers it.
 */
WARD_INTERNAL bool ward__supervisor_observe_fs(struct ward__supervisor *s,
					       const struct seccomp_notif *req);
/* Learns the command's credentials (init's, which the command keeps). */
WARD_INTERNAL void ward__supervisor_init_ids(struct ward__supervisor_priv *pv);
