/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>

#include "approval/approval.h"
#include "basic/buf.h"
#include "basic/loop.h"
#include "basic/macro.h"
#include "mcp/mcp.h"
#include "rpc/jsonrpc.h"
#include "session/session.h"
#include "transport/lineconn.h"
#include "ward/ward.h"

/*
 * The MCP server's state (server.c describes the server) and what its
 * files share. The files stand one above the other, never calling back up:
 *   server.c     lifecycle, dispatch, the connection, ward__mcp_serve()
 *   calls.c      tools/call: the arguments, the session calls
 *   approvals.c  exec_command through the approver, elicitation
 *   schemas.c    tools/list
 *   pending.c    the calls in flight, progress, the end once none is left
 *   send.c       results, errors, notifications to the client
 */

enum tool {
	TOOL_EXEC = 1,
	TOOL_WRITE,
	TOOL_LIST,
	TOOL_KILL,
	TOOL_CHANGES_LIST,
	TOOL_CHANGES_SHOW,
	TOOL_CHANGES_APPLY,
	TOOL_CHANGES_DISCARD,
	TOOL_CHANGES_UNDO,
};

/* The runs of this server the changes tools act on (the most recent ones). */
#define WARD_MCP_MAX_RUNS 4096

struct mcp;
struct netq;
struct chq;

/* An exec_command going through the approver (see "approvals" below). */
struct approval {
	struct ward__approval_step *step;
	struct ward__approval_action act;
	struct ward_approval_request *req;
	/* The call's arguments, kept for the runs. */
	char *cmd, *workdir, *shell, *until;
	size_t until_len;
	bool tty, until_any_output;
	int64_t yield_ms, max_tokens;
	int login;
	int hold; /* review and undo: as exec_command's hold (-1: the server's default) */
	/* The question being asked (an elicitation request of ours). */
	bool asking;
	int64_t elicit_id;
	uint64_t elicit_timer;
	uint64_t asked_at_ns, ask_progress_timer; /* progress while the person decides */
	char *asked_reason; /* what the last question said, for the fallback's text */
	bool asked_unsandboxed;
	/* The last run's reply, kept while a retry outside the sandbox is asked. */
	struct ward__session_reply *reply;
	bool retried;
	char *notes; /* notices for the result */
};

/* A tools/call waiting for its session call (or a person's answer). */
struct pending {
	struct pending *prev, *next;
	struct mcp *m;
	struct ward__rpc_id id; /* str owned */
	uint64_t call;
	enum tool tool;
	json_t *progress_token;
	/* Who asked, from the call's _meta, for the audit log: the client's thread and tool call. */
	char *thread, *tool_call;
	uint64_t last_progress;
	struct approval *ap;
};

struct mcp {
	const struct ward__mcp_config *cfg;
	struct ward__loop *loop;
	struct ward__sessions *sessions;
	struct ward__lineconn *conn;
	struct ward__rpc_codec codec;
	bool initialized; /* the initialize request was answered */
	const char *version;
	bool structured; /* the negotiated revision has structuredContent and outputSchema */
	struct pending *pending;
	size_t n_pending;
	bool draining; /* the input ended or a signal came: answer what is in flight, then stop */
	bool killing; /* draining, the grace is over: every session was killed */
	bool shutting_down;
	uint64_t drain_timer;
	bool elicitation; /* the client can ask its user (form elicitation) */
	char client[65]; /* initialize's clientInfo.name, cut to 64 bytes, for the audit log */
	bool audit_failed; /* the audit log could not be written (said once) */
	int64_t next_request_id; /* ids of ward's own requests to the client */
	struct netq *netqs; /* network questions in flight (netask.c) */
	unsigned n_netqs;
	/* Review and undo (changes.c): this server's runs, oldest first, and applies being asked. */
	uint64_t runs[WARD_MCP_MAX_RUNS];
	size_t n_runs;
	struct chq *chqs;
	unsigned n_chqs;
};

/*
 * netask.c: the network by domain under approvals. The proxies' hooks: the
 * approver's rules and session answers, questions through elicitation while
 * a connection waits, the audit log. A response of the client to one of
 * those questions is taken (true), or not one of them (false). drop
 * forgets every question (the server is going).
 */
struct ward_net_hooks;
WARD_INTERNAL void ward__mcp_net_hooks(struct mcp *m, struct ward_net_hooks *ret);
WARD_INTERNAL bool ward__mcp_net_response(struct mcp *m, const struct ward__rpc_msg *msg);
WARD_INTERNAL void ward__mcp_net_drop(struct mcp *m);

/*
 * changes.c: the changes tools (review and undo) on this server's runs. A
 * call's result, or NULL when it waits for the person (an apply asked
 * through elicitation; the result goes to msg's id later). note_run takes
 * the run of a session's changes (a reply's "changes") as this server's.
 * A response to one of its questions is taken (true); drop answers every
 * question (the server is going).
 */
WARD_INTERNAL json_t *ward__mcp_changes_call(struct mcp *m, const struct ward__rpc_msg *msg,
					     enum tool tool, const json_t *args);
WARD_INTERNAL void ward__mcp_changes_note_run(struct mcp *m, const json_t *changes);
WARD_INTERNAL bool ward__mcp_changes_response(struct mcp *m, const struct ward__rpc_msg *msg);
WARD_INTERNAL void ward__mcp_changes_drop(struct mcp *m);

/* send.c: what goes to the client. */
WARD_INTERNAL void ward__mcp_send_result(struct mcp *m, const struct ward__rpc_id *id,
					 json_t *result);
WARD_INTERNAL void ward__mcp_send_error(struct mcp *m, const struct ward__rpc_id *id, int code,
					const char *msg);
WARD_INTERNAL void ward__mcp_send_notification(struct mcp *m, const char *method, json_t *params);
/* A tool's result: text content, and the structured form where the revision has it. */
WARD_INTERNAL json_t *ward__mcp_tool_result(struct mcp *m, char *text, json_t *structured,
					    bool is_error);
WARD_INTERNAL json_t *ward__mcp_tool_error(struct mcp *m, const char *fmt, ...) _printf_(2, 3);
/* Whether a JSON value (a cancellation's requestId) names this id. */
WARD_INTERNAL bool ward__mcp_id_matches(const struct ward__rpc_id *id, const json_t *v);

/* pending.c: a command started for a call, in the audit log (nothing without one). */
WARD_INTERNAL void ward__mcp_audit_start(struct mcp *m, const struct pending *p, const char *cmd,
					 const char *workdir, bool sandboxed);

/* pending.c: the calls in flight. */
WARD_INTERNAL struct pending *ward__mcp_pending_new(struct mcp *m, const struct ward__rpc_msg *msg,
						    const json_t *params, enum tool tool);
WARD_INTERNAL void ward__mcp_pending_free(struct mcp *m, struct pending *p);
/* Sends a call's result and forgets the call. */
WARD_INTERNAL void ward__mcp_pending_finish(struct mcp *m, struct pending *p, json_t *res);
WARD_INTERNAL void ward__mcp_send_progress(struct pending *p, uint64_t elapsed_ms,
					   uint64_t total_ms, const char *msg);
/* The progress callback of a session call (userdata: the pending call). */
WARD_INTERNAL void ward__mcp_on_progress(uint64_t elapsed_ms, uint64_t total_ms, uint64_t bytes,
					 void *userdata);
WARD_INTERNAL uint64_t ward__mcp_progress_interval_ms(const struct mcp *m);
/* Stops the loop: ward__mcp_serve() returns. */
WARD_INTERNAL void ward__mcp_begin_shutdown(struct mcp *m);

/* schemas.c: the tools/list result. */
WARD_INTERNAL json_t *ward__mcp_tools_list(struct mcp *m);

/* calls.c: a tools/call request. */
WARD_INTERNAL void ward__mcp_handle_tools_call(struct mcp *m, const struct ward__rpc_msg *msg);

/* approvals.c: exec_command with an approver. */
WARD_INTERNAL json_t *ward__mcp_approval_start(struct mcp *m, struct pending *p,
					       const struct ward__exec_args *a, const json_t *args);
/* A response of the client to a request of ours (an elicitation). */
WARD_INTERNAL void ward__mcp_handle_response(struct mcp *m, const struct ward__rpc_msg *msg);
WARD_INTERNAL int ward__mcp_no_answer(struct mcp *m, struct pending *p, const char *why,
				      struct ward_error *e);
WARD_INTERNAL void ward__mcp_withdraw_question(struct mcp *m, struct approval *ap, const char *why);
/* Draining: nobody will answer a question now, so those commands are not run. */
WARD_INTERNAL void ward__mcp_approvals_abandon(struct mcp *m);
