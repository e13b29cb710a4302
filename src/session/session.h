/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * DESIGN. src/session/ owns interactive sessions, Codex's unified exec: the
 * store of sessions (store.c on top), each session's life and its calls
 * from the queue to the reply (calls.c, its objects in calls.h), the login
 * shell's snapshot that login commands read instead of the profile
 * (snapshot.c), and the forms of a reply (reply.c).
 * One-way rule: it calls src/exec, src/policy and src/basic; never a
 * server. src/mcp calls it, and hears from it only through the callbacks
 * a call carries (ward__session_done_fn, ward__session_progress_fn).
 */

#include <jansson.h>

#include "basic/loop.h"
#include "basic/macro.h"
#include "exec/proc.h"

/*
 * Interactive sessions: Codex's unified exec (exec_command / write_stdin)
 * over sandboxed procs, in one event loop. Every session is its own sandbox
 * under the policy it was started with (the store's policy with the call's
 * workdir as cwd), and ending a session kills everything in it.
 *
 * Calls are asynchronous: ward__sessions_exec() and ward__sessions_write()
 * start a call and return; its done callback runs from the loop when the
 * command exits (and its output is closed) or the yield window ends, with the
 * output produced since the previous call. Any number of calls may be in
 * flight on different sessions; calls on one session run one after the
 * other, in order.
 */

/* Codex's numbers (../shared/reference/codex.md §5). */
#define WARD_SESSIONS_DEFAULT_MAX 64
#define WARD_SESSIONS_MAX 50000 /* hard cap on the store's size; ids span 1000-99999 */
#define WARD_SESSION_ID_MIN 1000
#define WARD_SESSION_ID_MAX 99999
#define WARD_SESSION_PROTECTED_MRU 8 /* never evicted: the most recently used */
#define WARD_SESSION_OUTPUT_MAX ((size_t)1 << 20) /* head+tail per session between calls */
#define WARD_SESSION_PENDING_MAX 16 /* calls queued behind a running one, per session */
/* Bytes of a command line: the kernel's limit for one argument (MAX_ARG_STRLEN) less its NUL. */
#define WARD_SESSION_CMD_MAX (((size_t)128 << 10) - 1)
/* Bytes of the command a session keeps for list_sessions. */
#define WARD_SESSION_LISTED_CMD ((size_t)1024)
/*
 * Unread output and unwritten input the whole store holds: past it, sessions
 * without a call waiting stop being read (their commands block in write())
 * and writes are refused, until the model collects or ends some.
 */
#define WARD_SESSIONS_BYTES_BUDGET ((size_t)64 << 20)
#define WARD_SESSION_CHARS_MAX ((size_t)1 << 20) /* bytes of one write_stdin */

#define WARD_EXEC_YIELD_DEFAULT_MS 10000
#define WARD_EXEC_YIELD_MIN_MS 250
#define WARD_EXEC_YIELD_MAX_MS 30000
#define WARD_WRITE_YIELD_DEFAULT_MS 250
#define WARD_POLL_YIELD_MIN_MS 5000
#define WARD_POLL_YIELD_MAX_MS 300000
#define WARD_MAX_OUTPUT_TOKENS_DEFAULT 10000
#define WARD_MAX_OUTPUT_TOKENS_MAX 1000000
/* After the command exited, how long a call still waits for its output to close (Codex: 50 ms). */
#define WARD_SESSION_POST_EXIT_WAIT_MS 50

struct ward__sessions;

struct ward__sessions_config {
	/* The template of every session's policy (copied; the call's workdir becomes its cwd). */
	const struct ward_policy *policy;
	/* The environment policy (inherit, excludes, sets; copied), or NULL for the defaults. */
	const struct ward_run_options *env;
	size_t max_sessions; /* 0: WARD_SESSIONS_DEFAULT_MAX */
	const char *shell; /* default shell; NULL: $SHELL, else /bin/bash, else /bin/sh */
	int login; /* default for `login`: 1 (bash -lc), 0 (-c); -1: 1 */
	/*
	 * The network by domain: the proxies' hooks (the approver's rules and
	 * audit log) and whether they may ask; NULL: the patterns alone. Must
	 * outlive the store.
	 */
	const struct ward_net_hooks *net_hooks;
	bool net_ask;
	/*
	 * Login commands run as `SHELL -c CMD` after a snapshot of their login
	 * shell, taken once per shell (snapshot.h); with this set they run
	 * `SHELL -lc CMD`, the profile in every command.
	 */
	bool no_login_snapshot;
	/*
	 * Review and undo (src/changes): with a configuration, every sandboxed
	 * session's changes go through a layer and are recorded (applied when
	 * the command ends, kept for undo) or, with hold, held for
	 * ward__changes_apply(). NULL: off. Must outlive the store.
	 */
	struct ward__changes_cfg *changes;
	bool hold;
	/*
	 * The budget group every session's sandbox is made beneath (the
	 * server's total, src/sandbox/limits.h), or NULL. A start is refused
	 * while its totals are spent.
	 */
	const struct ward__cgroup *cg_parent;
};

struct ward__exec_args {
	/*
	 * Run as SHELL -lc CMD (or -c): a login command of bash, zsh or sh waits
	 * for its shell's snapshot (its first time; bounded by the capture's 10 s)
	 * and runs as SHELL -c CMD after reading it (snapshot.h).
	 */
	const char *cmd;
	const char *workdir; /* NULL: the store's cwd; relative: against it */
	bool tty;
	int64_t yield_ms; /* < 0: default */
	int64_t max_output_tokens; /* < 0: default */
	const char *shell; /* NULL: the store's */
	int login; /* < 0: the store's default */
	unsigned short rows, cols; /* tty size; 0: 24x80 */
	bool unsandboxed; /* approved to run outside the sandbox (danger-full-access) */
	int hold; /* review and undo: -1 the store's default, 0 record, 1 hold */
	/*
	 * The policy to run under instead of the store's (an approval granted
	 * more); copied, so it may go after the call. Its cwd is the workspace,
	 * not workdir.
	 */
	const struct ward_policy *policy;
	/* ward's extensions (see struct ward__yield_until). */
	const char *until;
	size_t until_len;
	bool until_any_output;
};

struct ward__write_args {
	int session_id;
	const char *chars; /* may hold NULs; empty: a poll */
	size_t len;
	int64_t yield_ms;
	int64_t max_output_tokens;
	/*
	 * ward's extensions, not Codex's: the call also ends as soon as the output
	 * produced during it contains until (a prompt, "Listening on"), or as soon
	 * as any output came with until_any_output; the yield window is then only
	 * the longest wait. Codex always waits the whole window.
	 */
	const char *until;
	size_t until_len;
	bool until_any_output;
};

/* Longest `until` text. */
#define WARD_SESSION_UNTIL_MAX 4096

/* What a call returns: Codex's result fields, plus the denials seen during the call. */
struct ward__session_reply {
	char chunk_id[8]; /* six hex digits */
	uint64_t wall_ns; /* this call's duration */
	bool exited;
	int exit_code; /* when exited */
	int session_id; /* the session's id; 0 when a command exited before its first yield */
	uint64_t original_token_count; /* ceil(bytes / 4) of the output since the previous call */
	char *output; /* truncated to the token budget, NUL-terminated */
	size_t output_len;
	bool truncated;
	struct ward__denial *denials; /* new in this call (owned) */
	size_t n_denials;
	size_t denials_dropped;
	int denied; /* 1, 0, or -ENODATA (this host gives no exact answer) */
	char *note; /* a line for the reader (setup error, fallback warning), or NULL */
	bool killed; /* ended by kill_session */
	/* What the command changed (src/changes' JSON), with the exit that ends it; else NULL. */
	json_t *changes;
	/* When exited: its limits, how enforced, what it used and the limit it hit. */
	struct ward__limits_report limits;
	/* Set when the call failed after it was accepted (the session ended under it): a tool error. */
	char *error;
};

WARD_INTERNAL void ward__session_reply_free(struct ward__session_reply *r);
/* The reply as text in Codex's layout ("Chunk ID: ...\nWall time: ..."). malloc()ed. */
WARD_INTERNAL char *ward__session_reply_text(const struct ward__session_reply *r);
/* The reply's structured form (chunk_id, wall_time_seconds, exit_code|session_id, ...). */
WARD_INTERNAL json_t *ward__session_reply_json(const struct ward__session_reply *r);

/*
 * reply is the callee's (free it with ward__session_reply_free); NULL when
 * memory ran out building it.
 */
typedef void (*ward__session_done_fn)(struct ward__session_reply *reply, void *userdata);
/* Progress of a waiting call: elapsed and total milliseconds, output bytes so far. */
typedef void (*ward__session_progress_fn)(uint64_t elapsed_ms, uint64_t total_ms, uint64_t bytes,
					  void *userdata);

WARD_INTERNAL int ward__sessions_new(struct ward__loop *l, const struct ward__sessions_config *c,
				     struct ward__sessions **ret, struct ward_error *err);
/* Kills every session; done callbacks of calls in flight are not called. Accepts NULL. */
WARD_INTERNAL void ward__sessions_free(struct ward__sessions *s);

/*
 * Starts exec_command. Errors a model can act on (bad arguments, a full
 * store, a command that could not be started) return -errno with err's
 * message; otherwise done runs later (never from within this call).
 * *ret_call identifies the call for cancellation and progress.
 */
WARD_INTERNAL int ward__sessions_exec(struct ward__sessions *s, const struct ward__exec_args *a,
				      ward__session_done_fn done, void *userdata,
				      uint64_t *ret_call, struct ward_error *err);
/* Starts write_stdin (see ward__sessions_exec). -ENOENT: unknown session; -EPIPE: stdin closed. */
WARD_INTERNAL int ward__sessions_write(struct ward__sessions *s, const struct ward__write_args *a,
				       ward__session_done_fn done, void *userdata,
				       uint64_t *ret_call, struct ward_error *err);
/* Kills a session; done gets what it printed since the last call and its end. */
WARD_INTERNAL int ward__sessions_kill(struct ward__sessions *s, int session_id,
				      ward__session_done_fn done, void *userdata,
				      uint64_t *ret_call, struct ward_error *err);
/*
 * Forgets a call: its done callback will not run. A session it started stays
 * (as Codex keeps a process whose turn was interrupted); a kill still happens.
 */
WARD_INTERNAL void ward__sessions_cancel(struct ward__sessions *s, uint64_t call);
/* Calls fn about every interval_ms while the call waits. */
WARD_INTERNAL int ward__sessions_set_progress(struct ward__sessions *s, uint64_t call,
					      uint64_t interval_ms, ward__session_progress_fn fn,
					      void *userdata);
/* The sessions as a JSON array of objects (id, command, workdir, tty, running, exit_code, ...). */
WARD_INTERNAL json_t *ward__sessions_list(struct ward__sessions *s);
WARD_INTERNAL size_t ward__sessions_count(const struct ward__sessions *s);
/* The shell commands run with when a call names none. */
WARD_INTERNAL const char *ward__sessions_shell(const struct ward__sessions *s);
/* The directory relative workdirs start from (the policy's cwd). */
WARD_INTERNAL const char *ward__sessions_cwd(const struct ward__sessions *s);
/* Kills every session's processes; calls waiting on them complete with what they printed. */
WARD_INTERNAL void ward__sessions_terminate_all(struct ward__sessions *s);
WARD_INTERNAL size_t ward__sessions_calls_in_flight(const struct ward__sessions *s);

/* Middle truncation to a token budget (4 bytes a token), on UTF-8 boundaries, Codex's marker. */
WARD_INTERNAL char *ward__truncate_tokens(const char *s, size_t len, uint64_t max_tokens,
					  size_t *ret_len, bool *ret_truncated);
