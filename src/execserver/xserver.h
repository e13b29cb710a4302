/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>

#include "basic/buf.h"
#include "basic/loop.h"
#include "basic/macro.h"
#include "exec/proc.h"
#include "execserver/execserver.h"
#include "execserver/fsops.h"
#include "net/proxy.h"
#include "rpc/jsonrpc.h"
#include "transport/transport.h"
#include "ward/ward.h"

/*
 * The exec server's objects (server.c describes them) and what its files
 * share. The files stand one above the other, never calling back up:
 *   server.c       sessions, initialize, dispatch, connections, the server
 *   procmethods.c  process/start, process/read, write, signal, terminate
 *   procs.c        a process: retained output, waiting reads, notifications
 *   send.c         replies and notifications to a connection
 *   changes.c      review and undo: a process's run, the ward/changes methods
 * (the filesystem methods are fsops.c's, which server.c calls).
 */

struct xsession;
struct xproc;

struct xconn {
	struct ward__xserver *srv;
	struct ward__conn *c;
	struct xsession *sess;
	bool initialize_answered;
	bool initialized; /* the initialized notification arrived */
	bool overflowed; /* a reply did not fit in the send queue: the connection goes */
	size_t n_reads; /* its process/read calls waiting (WARD_XS_CONN_READS) */
	uint64_t abort_timer;
	struct ward__xfs *fs; /* open file handles */
	struct xfsop *fsops; /* filesystem requests being answered */
	struct xconn *prev, *next;
	/*
	 * The connection's budget: its processes' cgroups are made beneath it
	 * (inactive without cgroups, or without a connection total).
	 */
	struct ward__cgroup group;
	bool group_tried;
};

/* A filesystem request running (in a sandbox) while its connection may go. */
struct xfsop {
	struct xfsop *next;
	struct xconn *conn; /* NULL once the connection is gone */
	struct ward__rpc_id id;
};

/* A process/read waiting for output. */
struct xread {
	struct xread *next;
	struct xproc *proc;
	struct xconn *conn;
	struct ward__rpc_id id; /* str owned */
	uint64_t after_seq;
	size_t max_bytes;
	uint64_t timer;
};

/* One retained output event: one allocation, its bytes inline. */
/*
 * A writeId a process accepted, in two lists: its process's and its
 * session's (the session forgets its oldest first when over its budget).
 */
struct xwid {
	struct xwid *p_prev, *p_next;
	struct xwid *s_prev, *s_next;
	struct xproc *proc;
	size_t cost; /* charged to the session's wid_bytes */
	char id[];
};

struct chunk {
	struct chunk *next; /* the next newer one */
	uint64_t seq;
	uint32_t len;
	uint8_t stream; /* enum ward__proc_stream */
	uint8_t data[];
};

/*
 * What a retained chunk costs: its bytes, its header and malloc's own (a
 * header and rounding to 16 bytes, never more than 24 beyond the request).
 * Retention charges this, not only the bytes: a command writing one byte at
 * a time made 50,000 chunks of 56 bytes each charged as 50 KB.
 */
#define XS_CHUNK_COST(len) ((size_t)(len) + sizeof(struct chunk) + 24)

struct xproc {
	struct xsession *sess;
	char *id;
	char *id_json; /* the id as a JSON string, for the hand-built notifications */
	/* The proc and its policy, until its output closed (then its status is all that stays). */
	struct ward__proc *proc;
	struct ward_policy *policy;
	size_t policy_weight; /* charged to the session's policy_bytes */
	char *thread, *tool_call; /* Codex's metadata, or NULL */
	struct ward_net_hooks net_hooks; /* the proxy's events, to the audit log (audit.c) */
	bool sandboxed;
	bool tty, pipe_stdin;
	uint64_t seq; /* the last seq used */
	/* Retention: chunks oldest first, their seqs increasing; XS_CHUNK_COST each. */
	struct chunk *oldest, *newest;
	size_t n_chunks;
	size_t retained_bytes;
	struct xproc *lru_prev, *lru_next; /* in the server's retention order, while it retains */
	bool in_lru;
	bool exited, closed;
	int exit_code;
	int denied;
	char *failure;
	uint64_t remove_timer;
	bool paused;
	struct xread *reads;
	size_t n_reads;
	/* The writeIds accepted, oldest first (at most WARD_XS_WRITE_IDS). */
	struct xwid *wids_oldest, *wids_newest;
	size_t n_wids;
	/* Review and undo: the run holding or recording its changes, then what they were. */
	struct ward__changes_run *crun;
	json_t *changes;
	struct xproc *prev, *next;
};

/* The runs of this server the ward/changes methods act on (the most recent ones). */
#define WARD_XS_MAX_RUNS 4096

struct xsession {
	struct ward__xserver *srv;
	char id[37];
	char client
		[65]; /* the clientName of its last initialize, cut to 64 bytes, for the audit log */
	struct xconn *conn;
	/* Sandboxes prepared for this session's policies, while one connection holds it. */
	struct ward__proc_pool *pool;
	uint64_t ttl_timer;
	uint64_t detached_at; /* ward__now_ns() when its connection went, 0 while attached */
	struct xproc *procs;
	size_t n_procs;
	size_t policy_bytes; /* the policies of its processes not yet closed (WARD_XS_SESSION_POLICIES) */
	/* Every writeId its processes remember, oldest first, and their cost (WARD_XS_SESSION_WRITE_IDS). */
	struct xwid *wids_oldest, *wids_newest;
	size_t wid_bytes;
	struct xsession *prev, *next;
};

struct ward__xserver {
	struct ward__loop *loop;
	/*
	 * Where process/output notifications are built, kept from one to the
	 * next: a stream's chunks are hundreds of KiB, and a fresh buffer each
	 * time is fresh pages each time.
	 */
	struct ward__buf notify_buf;
	struct ward__xserver_config cfg;
	struct ward_policy *policy;
	struct ward_run_options *env;
	struct ward__rpc_codec codec;
	struct xconn *conns;
	size_t n_conns;
	struct xsession *sessions;
	size_t n_sessions;
	size_t n_procs;
	/* Retained output of every process; processes that retain, least recent output first. */
	size_t retained_total;
	struct xproc *lru_head, *lru_tail;
	char *cwd;
	bool audit_failed; /* the audit log could not be written (said once) */
	struct ward__xfs_orphans fs_orphans; /* fs operations whose connection went */
	uint64_t runs[WARD_XS_MAX_RUNS]; /* review and undo: this server's runs, oldest first */
	size_t n_runs;
};

/* send.c: what goes to a connection (x may be NULL: nothing is sent). */
WARD_INTERNAL void ward__xs_send_bytes(struct xconn *x, const struct ward__buf *b);
WARD_INTERNAL void ward__xs_reply(struct xconn *x, const struct ward__rpc_id *id, json_t *result);
WARD_INTERNAL void ward__xs_reply_error(struct xconn *x, const struct ward__rpc_id *id, int code,
					const char *fmt, ...) _printf_(4, 5);
WARD_INTERNAL void ward__xs_notify(struct xconn *x, const char *method, json_t *params);
/* The loop timer that aborts a connection whose send queue overflowed. */
WARD_INTERNAL void ward__xs_on_abort(struct ward__loop *l, void *userdata);

/* procs.c: a process's life, from its proc's callbacks. */
WARD_INTERNAL extern const struct ward__proc_ops ward__xs_proc_ops;
WARD_INTERNAL struct xproc *ward__xs_proc_find(struct xsession *se, const char *id);
/* Answers the reads still waiting, then frees everything of the process. */
WARD_INTERNAL void ward__xs_proc_free(struct xproc *p);
/* Whether the process accepted this writeId before (and still remembers it). */
WARD_INTERNAL bool ward__xs_write_id_seen(const struct xproc *p, const char *wid);
/* Remembers an accepted writeId, forgetting the oldest beyond the limits. */
WARD_INTERNAL void ward__xs_write_id_remember(struct xproc *p, const char *wid);
/* Stops (or resumes) reading the output of every process of a session. */
WARD_INTERNAL void ward__xs_procs_pause(struct xsession *se, bool pause);
/* Whether a process/read after after_seq has something to return now. */
WARD_INTERNAL bool ward__xs_read_ready(struct xproc *p, uint64_t after_seq);
/* The process/read result after after_seq, within max_bytes (0: no limit). */
WARD_INTERNAL json_t *ward__xs_read_result(struct xproc *p, uint64_t after_seq, size_t max_bytes);
/* The loop timer of a waiting read: it answers with what there is. */
WARD_INTERNAL void ward__xs_on_read_timeout(struct ward__loop *l, void *userdata);
WARD_INTERNAL void ward__xs_read_free(struct xread *r);

/* audit.c: the hooks that send a process's network events to the audit log. */
WARD_INTERNAL void ward__xs_audit_net_hooks(struct xproc *p);
/* audit.c: a started process in the audit log (nothing when the server keeps none). */
WARD_INTERNAL void ward__xs_audit_start(struct ward__xserver *s, const struct xproc *p,
					char *const *argv, const char *cwd);

/*
 * changes.c: review and undo. begin: the run of a process about to start
 * (process/start's "hold", the server's recording), its layers into spec;
 * -errno with e when a hold asked for cannot be had. end: the process
 * ended, its changes read into p->changes (once its sandbox is gone). The
 * ward/changes methods.
 */
struct ward__proc_spec;
WARD_INTERNAL int ward__xs_changes_begin(struct ward__xserver *s, struct xproc *p, json_t *params,
					 char *const *argv, struct ward__proc_spec *spec,
					 struct ward_error *e);
WARD_INTERNAL void ward__xs_changes_end(struct ward__xserver *s, struct xproc *p);
WARD_INTERNAL void ward__xs_handle_changes(struct xconn *x, const struct ward__rpc_msg *m);

/* procmethods.c: the process methods, on an initialized connection. */
WARD_INTERNAL void ward__xs_handle_start(struct xconn *x, const struct ward__rpc_msg *m);
WARD_INTERNAL void ward__xs_handle_read(struct xconn *x, const struct ward__rpc_msg *m);
WARD_INTERNAL void ward__xs_handle_write(struct xconn *x, const struct ward__rpc_msg *m);
WARD_INTERNAL void ward__xs_handle_signal(struct xconn *x, const struct ward__rpc_msg *m);
WARD_INTERNAL void ward__xs_handle_terminate(struct xconn *x, const struct ward__rpc_msg *m);
