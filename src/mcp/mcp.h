/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * DESIGN. src/mcp/ is `ward mcp`, the Model Context Protocol server:
 * lifecycle, dispatch and the connection (server.c on top), tools/call
 * (calls.c), exec_command through the approver with its questions asked by
 * elicitation (approvals.c), tools/list (schemas.c), the calls in flight
 * (pending.c), what goes to the client (send.c) and the changes tools
 * (changes.c, on src/changes); the state they share is in mcpserver.h.
 * One-way rule: it calls src/transport (the line connection), src/session,
 * src/approval, src/rpc and src/basic; never src/execserver, its sibling.
 * Only src/cli calls it.
 */

#include "basic/macro.h"
#include "ward/ward.h"

/*
 * `ward mcp`: a Model Context Protocol server over stdio (JSON-RPC 2.0, one
 * message per line) whose tools are Codex's unified exec (exec_command,
 * write_stdin) plus list_sessions and kill_session, every command in a
 * sandbox of its own under the configured policy (src/session).
 */

/* Protocol revisions spoken, newest first (the official SDKs negotiate these). */
#define WARD_MCP_LATEST_VERSION "2025-11-25"

/* Limits of one connection. */
#define WARD_MCP_MAX_MESSAGE ((size_t)16 << 20) /* bytes of one incoming message */
#define WARD_MCP_MAX_QUEUE ((size_t)64 << 20) /* bytes of replies waiting for the client */
#define WARD_MCP_HIGH_WATER ((size_t)8 << 20) /* stop reading requests above this */
#define WARD_MCP_MAX_IN_FLIGHT 256 /* tool calls waiting for their result */
#define WARD_MCP_MAX_PROGRESS_TOKEN 1024 /* bytes of a string progressToken (as ids) */
/*
 * Approval questions waiting for the person at once: each keeps its call's
 * command several times over (about 1 MiB for one of 128 KiB) for up to 10
 * minutes, and a person answers one at a time.
 */
#define WARD_MCP_MAX_QUESTIONS 16

struct ward__mcp_config {
	const struct ward_policy *policy; /* the template of every command's sandbox */
	const struct ward_run_options *env; /* environment policy, or NULL */
	size_t max_sessions; /* 0: the default (64) */
	const char *shell; /* NULL: the user's */
	int login; /* -1: default (login shell) */
	bool no_login_snapshot; /* login commands run -lc, without a snapshot (session.h) */
	int progress_interval_ms; /* 0: 1000 */
	/*
	 * Approvals (docs/approvals.md): exec_command goes through it, questions
	 * going to the person through MCP elicitation. NULL: none (every command
	 * runs in its sandbox). policy must then be resolved after
	 * ward_approver_protect().
	 */
	struct ward_approver *approver;
	/* Every command started goes to this audit log (approval/audit.c), or NULL: none. */
	const char *audit_path;
	/*
	 * Review and undo (src/changes): every sandboxed command's changes are
	 * recorded (or, with hold, held until changes_apply), and the changes
	 * tools act on them. NULL: off (--record off).
	 */
	struct ward__changes_cfg *changes;
	bool hold;
	/* The server's budget group (every sandbox is made beneath it), or NULL. */
	const struct ward__cgroup *cg_parent;
};

/*
 * Serves one client on in_fd/out_fd until its input ends (or SIGTERM, SIGINT,
 * SIGHUP); every session is killed before it returns. Returns 0 after a clean
 * end, -errno (err filled) when the server could not start or its loop failed.
 */
WARD_INTERNAL int ward__mcp_serve(const struct ward__mcp_config *cfg, int in_fd, int out_fd,
				  struct ward_error *err);
