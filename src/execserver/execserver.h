/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * DESIGN. src/execserver/ is `ward serve`: Codex's exec-server methods, the
 * process methods (server.c on top, then procmethods.c, procs.c, send.c;
 * the objects in xserver.h) and the filesystem methods (fsops.c, then
 * fsargs.c, fshelper.c, fsimpl.c, fswalk.c, fsreq.c, fswire.c), the policy
 * a request names (xpolicy.c), and ward's extensions to the protocol.
 * One-way rule: it calls src/transport, src/rpc, src/exec, src/sandbox,
 * src/policy and src/basic; never src/mcp, its sibling (what both need
 * moves one floor down, as the checked arguments did to src/rpc). Only
 * src/cli (ward-serve) calls it.
 */

#include "basic/loop.h"
#include "basic/macro.h"
#include "transport/transport.h"
#include "ward/ward.h"

/*
 * `ward serve`: Codex's exec-server protocol (docs/protocol.md) on any number
 * of connections. A connection initializes an exec session; the session owns
 * processes (each in a sandbox of its own) and survives its connection for a
 * while, so that a client that reconnects can resume it.
 */

/* Codex's numbers (reference codex.md §7), and ward's caps. */
#define WARD_XS_RETAIN_BYTES ((size_t)1 << 20) /* output kept per process */
#define WARD_XS_RETAIN_CHUNKS 50000u
/* output kept across every process of the server */
#define WARD_XS_RETAIN_TOTAL ((size_t)256 << 20)
#define WARD_XS_DETACHED_TTL_MS 30000u /* a session without a connection */
#define WARD_XS_EXITED_TTL_MS 30000u /* an exited process after it closed */
#define WARD_XS_WRITE_IDS 4096u /* remembered writeIds per process */
/* Input queued for the processes of one session and not read by them yet (1 MiB each at most). */
#define WARD_XS_SESSION_STDIN ((size_t)8 << 20)
/* The writeIds a session remembers, each charged its bytes and 72: past it, its oldest go. */
#define WARD_XS_SESSION_WRITE_IDS ((size_t)1 << 20)
#define WARD_XS_DEFAULT_MAX_CONNECTIONS 64u
#define WARD_XS_DEFAULT_MAX_PROCESSES 4096u /* per session */
#define WARD_XS_MAX_READ_WAIT_MS 300000u /* longest process/read long-poll */
/*
 * process/read calls waiting at once, per process and per connection (each
 * keeps its id, up to 1 KiB): more are answered at once with what there is.
 * Without the second, 64 per process of a session of 4,096 made 288 MiB.
 */
#define WARD_XS_PROC_READS 64u
#define WARD_XS_CONN_READS 1024u
#define WARD_XS_MAX_PROCESS_ID 256u /* bytes of a processId */
#define WARD_XS_MAX_METADATA 256 /* bytes of metadata.threadId and metadata.toolCallId */
#define WARD_XS_MAX_ARGV ((size_t)1 << 20) /* bytes of argv (and of env) */
/*
 * The policy a process runs under is kept until its output is closed, with
 * the sandbox's copy and its guard: one process may hold at most this much
 * of it (a sandbox naming 200 long writable paths held 7 MB), and the
 * processes of one session not yet closed at most WARD_XS_SESSION_POLICIES
 * together.
 */
#define WARD_XS_MAX_POLICY ((size_t)8 << 20)
#define WARD_XS_SESSION_POLICIES ((size_t)64 << 20)

struct ward__xserver;

struct ward__xserver_config {
	/* The template of every process's policy when a request names no sandbox (copied). */
	const struct ward_policy *policy;
	/* Environment policy applied when a request has envPolicy (copied), or NULL. */
	const struct ward_run_options *env;
	bool allow_unsandboxed; /* requests may run processes without a sandbox */
	size_t max_connections; /* 0: default */
	size_t max_message; /* bytes of one message the JSON reader takes; 0: 16 MiB */
	size_t max_processes; /* per session; 0: default */
	size_t retain_bytes; /* 0: default */
	unsigned retain_chunks; /* 0: default */
	size_t retain_total; /* every process's retained output together; 0: default */
	unsigned detached_ttl_ms; /* 0: default */
	unsigned exited_ttl_ms; /* 0: default */
	/* The audit log every started process goes to (approval/audit.c), or NULL: none. */
	const char *audit_path;
	/* ward's own directory (the audit log's), read-only in every sandbox that could write it. */
	const char *own_dir;
	/*
	 * Review and undo (src/changes): every sandboxed process's changes are
	 * recorded (or held: process/start's "hold", or hold here); the
	 * ward/changes methods act on them. NULL: off. Must outlive the server.
	 */
	struct ward__changes_cfg *changes;
	bool hold;
	/*
	 * The server's budget group (src/sandbox/limits.h), or NULL; beneath it
	 * each connection gets a group of its own with these totals (0: none).
	 */
	const struct ward__cgroup *cg_total;
	uint64_t connection_memory, connection_pids;
};

WARD_INTERNAL int ward__xserver_new(struct ward__loop *l, const struct ward__xserver_config *c,
				    struct ward__xserver **ret, struct ward_error *err);
/* Kills every process of every session and closes every connection. Accepts NULL. */
WARD_INTERNAL void ward__xserver_free(struct ward__xserver *s);
/* The callbacks to give the transports, with s as their server userdata. */
WARD_INTERNAL const struct ward__conn_handler *ward__xserver_handler(void);
/* Sessions, processes and connections alive (for tests and logs). */
WARD_INTERNAL void ward__xserver_counts(const struct ward__xserver *s, size_t *ret_sessions,
					size_t *ret_processes, size_t *ret_connections);
