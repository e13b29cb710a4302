/* SPDX-License-Identifier: MIT */
/*
 * The MCP server (see mcp.h): lifecycle (initialize with version
 * negotiation, initialized, ping), tools/list, tools/call on the session
 * store, notifications/cancelled and progress notifications. This file
 * holds the lifecycle and the connection; mcpserver.h lists the others.
 *
 * Everything runs on one event loop: a tool call starts a session call and
 * returns; its result is sent when the session layer completes it, so any
 * number of calls (up to WARD_MCP_MAX_IN_FLIGHT) wait at once, each on its
 * own session, and ping or a cancellation is answered meanwhile.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "approval/approval.h"
#include "basic/error.h"
#include "basic/loop.h"
#include "basic/util.h"
#include "mcp/mcp.h"
#include "mcp/mcpserver.h"
#include "rpc/jsonrpc.h"
#include "session/session.h"
#include "transport/lineconn.h"
#include "ward-config.h"

static const char *const supported_versions[] = {
	"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07",
};

/* ------------------------------------------------------------ lifecycle */

static void handle_initialize(struct mcp *m, const struct ward__rpc_msg *msg)
{
	json_t *v = msg->params ? json_object_get(msg->params, "protocolVersion") : NULL;
	const char *want = json_is_string(v) ? json_string_value(v) : NULL;
	json_t *res;

	if (!want) {
		ward__mcp_send_error(m, &msg->id, WARD_RPC_INVALID_PARAMS,
				     "initialize needs params.protocolVersion");
		return;
	}
	/* The client's revision when ward speaks it, else ward's latest (the client decides). */
	m->version = supported_versions[0];
	for (size_t i = 0; i < ELEMENTSOF(supported_versions); i++)
		if (strcmp(want, supported_versions[i]) == 0)
			m->version = supported_versions[i];
	m->structured = strcmp(m->version, "2025-06-18") >= 0;
	m->initialized = true;
	snprintf(m->client, sizeof(m->client), "%s",
		 json_string_value(
			 json_object_get(json_object_get(msg->params, "clientInfo"), "name"))
			 ?: "");
	/*
	 * Form elicitation: since 2025-06-18; an empty object means form, else
	 * "form" must be listed (2025-11-25 added URL mode).
	 */
	{
		json_t *caps = json_object_get(msg->params, "capabilities");
		json_t *el = json_object_get(caps, "elicitation");

		m->elicitation = strcmp(m->version, "2025-06-18") >= 0 && json_is_object(el) &&
			(json_object_size(el) == 0 || json_object_get(el, "form"));
	}
	res = json_pack(
		"{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", m->version,
		"capabilities", "tools", "listChanged", 0, "serverInfo", "name", "ward", "title",
		"ward: sandboxed command execution", "version", WARD_VERSION, "instructions",
		"Run shell commands with exec_command: each runs in a fresh sandbox that can "
		"write only in the workspace and /tmp and cannot reach the network unless allowed. "
		"Long-running or interactive commands return a session_id; continue them with "
		"write_stdin (empty chars to wait for more output, \"\\u0003\" to interrupt) and "
		"end them with kill_session. A result's denials list says exactly what the "
		"sandbox refused.");
	ward__mcp_send_result(m, &msg->id, res);
}

static void handle_cancelled(struct mcp *m, const struct ward__rpc_msg *msg)
{
	json_t *rid = msg->params ? json_object_get(msg->params, "requestId") : NULL;

	if (!rid)
		return;
	for (struct pending *p = m->pending; p; p = p->next)
		if (ward__mcp_id_matches(&p->id, rid)) {
			/* A question of ours for it is withdrawn (and logged as unanswered). */
			if (p->ap && p->ap->asking) {
				struct ward_error e = {0};

				ward__mcp_withdraw_question(m, p->ap,
							    "the tool call was cancelled");
				ward__mcp_no_answer(m, p, "the tool call was cancelled", &e);
			}
			/* No answer for a cancelled request; a session it started stays, as in Codex. */
			if (p->call)
				ward__sessions_cancel(m->sessions, p->call);
			ward__mcp_pending_free(m, p);
			return;
		}
	/* Unknown or already answered: ignored, as the specification asks. */
}

static void handle_message(struct mcp *m, const struct ward__rpc_msg *msg)
{
	if (msg->kind == WARD_RPC_NOTIFICATION) {
		if (strcmp(msg->method, "notifications/cancelled") == 0)
			handle_cancelled(m, msg);
		/* notifications/initialized and everything else: nothing to do. */
		return;
	}
	if (msg->kind == WARD_RPC_RESULT || msg->kind == WARD_RPC_ERROR) {
		/* To a question of ours: an apply of held changes, or an approval's. */
		if (!ward__mcp_changes_response(m, msg))
			ward__mcp_handle_response(m, msg);
		return;
	}
	if (msg->params && !json_is_object(msg->params)) {
		ward__mcp_send_error(m, &msg->id, WARD_RPC_INVALID_PARAMS,
				     "params must be an object");
		return;
	}
	if (strcmp(msg->method, "initialize") == 0)
		handle_initialize(m, msg);
	else if (strcmp(msg->method, "ping") == 0)
		ward__mcp_send_result(m, &msg->id, json_object());
	else if (!m->initialized)
		ward__mcp_send_error(m, &msg->id, WARD_RPC_INVALID_REQUEST,
				     "the server is not initialized: send initialize first");
	else if (strcmp(msg->method, "tools/list") == 0)
		ward__mcp_send_result(m, &msg->id, ward__mcp_tools_list(m));
	else if (strcmp(msg->method, "tools/call") == 0)
		ward__mcp_handle_tools_call(m, msg);
	else {
		char why[WARD_RPC_MAX_METHOD_LEN + 32];

		snprintf(why, sizeof(why), "Method not found: %s", msg->method);
		ward__mcp_send_error(m, &msg->id, WARD_RPC_METHOD_NOT_FOUND, why);
	}
}

/* ------------------------------------------------------------ the connection */

static void on_line(struct ward__lineconn *c, const char *line, size_t len, void *userdata)
{
	struct mcp *m = userdata;
	struct ward__rpc_msg msg;
	struct ward__rpc_failure f;
	struct ward__buf b;
	size_t i;

	if (m->shutting_down)
		return;
	for (i = 0; i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'); i++)
		;
	if (i == len)
		return; /* An empty line is no message. */
	if (ward__rpc_parse(&m->codec, line, len, &msg, &f) < 0) {
		if (f.batch)
			snprintf(f.message, sizeof(f.message), "batches are not supported");
		ward__buf_init(&b, 64 * 1024);
		if (ward__rpc_encode_failure(&m->codec, &b, &f) >= 0)
			ward__lineconn_send(m->conn, b.data, b.len);
		ward__buf_release(&b);
		return;
	}
	handle_message(m, &msg);
	ward__rpc_msg_release(&msg);
}

static void on_too_large(struct ward__lineconn *c, const char *prefix, size_t len, void *userdata)
{
	struct mcp *m = userdata;
	struct ward__rpc_failure f;
	struct ward__buf b;

	ward__rpc_fail_oversized(&m->codec, prefix, len, &f);
	ward__buf_init(&b, 64 * 1024);
	if (ward__rpc_encode_failure(&m->codec, &b, &f) >= 0)
		ward__lineconn_send(m->conn, b.data, b.len);
	ward__buf_release(&b);
}

static void on_drain_timeout(struct ward__loop *l, void *userdata)
{
	struct mcp *m = userdata;

	m->drain_timer = 0;
	ward__mcp_begin_shutdown(m);
}

/* The grace calls in flight get to finish on their own, then the last wait for the killed. */
#define WARD_MCP_GRACE_NS (3000ULL * 1000000)
#define WARD_MCP_LAST_WAIT_NS (2000ULL * 1000000)

/*
 * Ending: calls in flight may finish on their own for a grace (a scripted
 * client that sent its calls and closed stdin gets their results), then
 * every session is killed and what is still waiting gets what its command
 * printed; ward exits once nothing is in flight.
 */
static void on_grace_over(struct ward__loop *l, void *userdata)
{
	struct mcp *m = userdata;

	m->drain_timer = 0;
	m->killing = true;
	ward__sessions_terminate_all(m->sessions);
	ward__loop_add_timer(m->loop, ward__now_ns() + WARD_MCP_LAST_WAIT_NS, on_drain_timeout, m,
			     &m->drain_timer);
}

static void begin_drain(struct mcp *m, uint64_t grace_ns)
{
	if (m->draining) {
		/* A signal while ending: no more grace; a second one: no more waiting. */
		if (grace_ns == 0 && m->killing) {
			ward__mcp_begin_shutdown(m);
		} else if (grace_ns == 0) {
			ward__loop_del_timer(m->loop, m->drain_timer);
			m->drain_timer = 0;
			on_grace_over(m->loop, m);
		}
		return;
	}
	m->draining = true;
	/* Nobody will answer a question now: those commands are not run, those changes stay held. */
	ward__mcp_approvals_abandon(m);
	ward__mcp_changes_drop(m);
	if (m->n_pending == 0) {
		ward__mcp_begin_shutdown(m);
		return;
	}
	if (grace_ns == 0)
		on_grace_over(m->loop, m);
	else
		ward__loop_add_timer(m->loop, ward__now_ns() + grace_ns, on_grace_over, m,
				     &m->drain_timer);
}

/* The client closed our stdin: that is MCP's way to shut a stdio server down. */
static void on_input_closed(struct ward__lineconn *c, int error, void *userdata)
{
	begin_drain(userdata, WARD_MCP_GRACE_NS);
}

static void on_output_failed(struct ward__lineconn *c, int error, void *userdata)
{
	/* Nobody reads the answers any more: stop, killing every session. */
	ward__mcp_begin_shutdown(userdata);
}

/* A signal ends at once: every session is killed, the calls waiting get what was printed. */
static void on_signal(struct ward__loop *l, const struct signalfd_siginfo *si, void *userdata)
{
	begin_drain(userdata, 0);
}

int ward__mcp_serve(const struct ward__mcp_config *cfg, int in_fd, int out_fd,
		    struct ward_error *err)
{
	static const struct ward__lineconn_ops ops = {
		.message = on_line,
		.too_large = on_too_large,
		.input_closed = on_input_closed,
		.output_failed = on_output_failed,
	};
	const struct ward__lineconn_limits lim = {
		.max_line = WARD_MCP_MAX_MESSAGE,
		.max_queue = WARD_MCP_MAX_QUEUE,
		.high_water = WARD_MCP_HIGH_WATER,
	};
	const struct ward__rpc_limits rl = {
		.max_bytes = WARD_MCP_MAX_MESSAGE,
		.max_depth = WARD_RPC_DEFAULT_MAX_DEPTH,
		.max_values = WARD_RPC_DEFAULT_MAX_VALUES,
	};
	/*
	 * With an approver the network by domain follows its rules, asks the
	 * person through elicitation while a connection waits (netask.c) and
	 * logs every host.
	 */
	struct ward_net_hooks net_hooks;
	struct ward__sessions_config sc = {
		.policy = cfg->policy,
		.env = cfg->env,
		.max_sessions = cfg->max_sessions,
		.shell = cfg->shell,
		.login = cfg->login,
		.net_hooks = cfg->approver ? &net_hooks : NULL,
		.net_ask = cfg->approver && ward__approval_net_may_ask(cfg->approver),
		.no_login_snapshot = cfg->no_login_snapshot,
		.changes = cfg->changes,
		.hold = cfg->hold,
		.cg_parent = cfg->cg_parent,
	};
	struct mcp m = {.cfg = cfg};
	int r;

	ward__mcp_net_hooks(&m, &net_hooks);
	r = ward__rpc_codec_init(&m.codec, WARD_RPC_JSONRPC2, &rl);
	if (r < 0)
		return ward__error(err, r, "mcp", "cannot set up the JSON-RPC codec: %m");
	/* Its only reals are its own rounded wall times: written short, as a model should read them. */
	m.codec.real_digits = 15;
	r = ward__loop_new(&m.loop);
	if (r < 0)
		return ward__error(err, r, "mcp", "cannot create the event loop: %m");
	r = ward__sessions_new(m.loop, &sc, &m.sessions, err);
	if (r < 0)
		goto out;
	r = ward__lineconn_new(m.loop, in_fd, out_fd, false, &lim, &ops, &m, &m.conn);
	if (r < 0) {
		ward__error(err, r, "mcp", "cannot serve stdio: %m");
		goto out;
	}
	ward__loop_set_signal(m.loop, SIGTERM, on_signal, &m);
	ward__loop_set_signal(m.loop, SIGINT, on_signal, &m);
	ward__loop_set_signal(m.loop, SIGHUP, on_signal, &m);
	r = ward__loop_run(m.loop);
	if (r < 0)
		ward__error(err, r, "mcp", "the event loop failed: %m");
out:
	/* Every session dies here; then whatever answers are queued go out. */
	while (m.pending) {
		ward__sessions_cancel(m.sessions, m.pending->call);
		ward__mcp_pending_free(&m, m.pending);
	}
	ward__sessions_free(m.sessions);
	ward__mcp_net_drop(&m);
	ward__mcp_changes_drop(&m);
	ward__loop_del_timer(m.loop, m.drain_timer);
	if (m.conn) {
		ward__lineconn_flush(m.conn, 2000);
		ward__lineconn_free(m.conn);
	}
	/* The sandboxes' inits are reaped before ward goes: nothing is left behind. */
	for (int i = 0; i < 200 && ward__loop_reaping(m.loop) > 0; i++)
		ward__loop_iterate(m.loop, 25);
	ward__loop_free(m.loop);
	return r < 0 ? r : 0;
}
