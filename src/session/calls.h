/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/loop.h"
#include "basic/macro.h"
#include "exec/proc.h"
#include "session/session.h"
#include "ward/ward.h"

/*
 * The session store's objects (a call, a session, the store; store.c
 * describes them) and what calls.c offers store.c. The files of the folder
 * stand one above the other, never calling back up, all on session.h:
 *   store.c    the store: its creation and end, pruning, the calls' entry points,
 *              login commands waiting for their shell's snapshot
 *   calls.c    a session's life and its calls, from the queue to the reply
 *   snapshot.c login shell snapshots and the commands run through them
 *   reply.c    a reply's text and JSON forms, the token budget
 */

enum call_kind {
	CALL_EXEC = 1,
	CALL_WRITE,
	CALL_KILL,
};

struct session;
struct deferred;
struct ward__snapshot;

/* Shells with a snapshot in one store (a call may name its own shell). */
#define WARD_SESSION_SNAPSHOT_SHELLS 8
/* Login commands waiting for a snapshot at once, in one store. */
#define WARD_SESSION_DEFERRED_MAX 256

struct call {
	struct ward__sessions *store;
	uint64_t id;
	enum call_kind kind;
	struct session *sess;
	ward__session_done_fn done;
	void *userdata;
	bool cancelled;
	bool started;
	bool deferred; /* an exec waiting for its shell's snapshot: no session yet */
	uint64_t start_ns;
	uint64_t yield_ns;
	int64_t max_tokens;
	char *chars; /* a queued write's bytes */
	size_t len;
	char *until; /* end the call once the output since its start contains this */
	size_t until_len;
	bool until_any_output;
	bool until_met_at_begin; /* the output waiting when the call began met until */
	/* The last until_len - 1 bytes seen, so that a match split across reads is found. */
	char *window;
	size_t window_len;
	uint64_t yield_timer, post_exit_timer, progress_timer, kick_timer;
	uint64_t progress_interval_ms;
	ward__session_progress_fn progress;
	void *progress_userdata;
	struct call *next_in_session; /* the session's queue */
	struct call *prev_all, *next_all;
};

struct session {
	int id;
	struct ward__sessions *store;
	struct ward__proc *proc;
	struct ward_policy *policy;
	struct ward__capture out;
	uint64_t last_used;
	size_t denials_reported;
	bool tty;
	bool exited;
	bool closed;
	bool killed;
	bool fallback_noted; /* the missing isolation was told (once per session) */
	bool paused; /* output not read: the store's byte budget is spent */
	char *login_note; /* said once, in the next reply: how its login shell ran */
	char *command;
	char *workdir;
	time_t started;
	struct call *active;
	struct call *queue_head, *queue_tail;
	size_t n_queued;
	struct call *kill_call; /* a kill_session waiting for the call in flight */
	/* Review and undo: the run holding or recording the changes, until the command ends. */
	struct ward__changes_run *crun;
	json_t *changes; /* what it changed, for the reply that reports the exit */
	char *changes_note; /* why the changes are not recorded, said once */
	struct session *prev, *next;
};

struct ward__sessions {
	struct ward__loop *loop;
	struct ward_policy *policy;
	struct ward__proc_pool *pool; /* sandboxes prepared for the sessions to come */
	struct ward_run_options *env_opts, *env_opts_pipes; /* tty, pipes */
	char **envp_pipes, **envp_tty;
	char *cwd;
	char *shell;
	bool login;
	const struct ward_net_hooks *net_hooks;
	bool net_ask;
	struct ward__changes_cfg *changes; /* review and undo (session.h), or NULL */
	bool hold;
	bool snapshots; /* login commands run through a snapshot of their shell (snapshot.h) */
	bool ending; /* terminate_all was called: nothing more starts */
	struct ward__snapshot *snaps[WARD_SESSION_SNAPSHOT_SHELLS];
	size_t n_snaps;
	char **env_names; /* the variables ward sets, which win over a snapshot's */
	struct deferred *deferred_head, *deferred_tail; /* execs waiting for a snapshot, in order */
	size_t n_deferred;
	size_t max;
	struct session **by_id; /* indexed by id - WARD_SESSION_ID_MIN */
	struct session *head; /* every session, newest first */
	size_t count;
	struct call *calls; /* every call not yet completed */
	size_t n_calls;
	uint64_t next_call_id;
	uint64_t use_clock;
	size_t held; /* bytes of unread output in every session's capture */
	size_t n_paused;
	const struct ward__cgroup *cg_parent; /* the budget the sandboxes are made in, or NULL */
};

#define ID_SLOTS (WARD_SESSION_ID_MAX - WARD_SESSION_ID_MIN + 1)

/* calls.c: sessions. */
WARD_INTERNAL struct session *ward__session_lookup(struct ward__sessions *s, int id);
/* A free session id (-ENOSPC when every one is taken). */
WARD_INTERNAL int ward__session_allocate_id(struct ward__sessions *s);
/* The session was used now (pruning spares the most recently used). */
WARD_INTERNAL void ward__session_touch(struct session *se);
/* Removes a session: its processes die; calls still waiting on it get why as an error. */
WARD_INTERNAL void ward__session_free(struct session *se, const char *why);
/* The callbacks of a session's proc (userdata: the session). */
WARD_INTERNAL extern const struct ward__proc_ops ward__session_proc_ops;

/* calls.c: calls. */
WARD_INTERNAL struct call *ward__session_call_new(struct ward__sessions *s, enum call_kind kind,
						  ward__session_done_fn done, void *userdata);
WARD_INTERNAL int ward__session_call_set_until(struct call *c, const char *until, size_t len,
					       bool any, struct ward_error *err);
/* Queues a call behind the running one, or begins it. */
WARD_INTERNAL int ward__session_call_enqueue(struct session *se, struct call *c,
					     struct ward_error *err);
/* The call becomes the session's active one: deliver its input, arm its window. */
WARD_INTERNAL void ward__session_call_begin(struct call *c);
/* The next call becomes the active one (a kill_session waiting first). */
WARD_INTERNAL void ward__session_begin_next(struct session *se);
WARD_INTERNAL void ward__session_call_free(struct ward__sessions *s, struct call *c);
/* Ends a call that never got a session: done gets msg as a tool error. */
WARD_INTERNAL void ward__session_call_fail(struct call *c, const char *msg);
/* The loop timer of a call's progress notifications (userdata: the call). */
WARD_INTERNAL void ward__session_on_progress(struct ward__loop *l, void *userdata);
