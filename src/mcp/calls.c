/* SPDX-License-Identifier: MIT */
/*
 * tools/call (see mcpserver.h): the arguments of each tool checked, then the
 * call started on the session store (or, with an approver, handed to the
 * approvals); its result is sent when the session layer completes it.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcpserver.h"
#include "rpc/args.h"
#include "session/session.h"

/* ------------------------------------------------------------ tools: calls */

static void on_session_done(struct ward__session_reply *r, void *userdata)
{
	struct pending *p = userdata;
	struct mcp *m = p->m;
	json_t *res;

	if (!r)
		res = ward__mcp_tool_error(m, "out of memory building the result");
	else if (r->error)
		res = ward__mcp_tool_error(m, "%s", r->error);
	else
		res = ward__mcp_tool_result(m, ward__session_reply_text(r),
					    ward__session_reply_json(r), false);
	if (r && r->changes)
		ward__mcp_changes_note_run(m, r->changes);
	ward__mcp_send_result(m, &p->id, res);
	ward__session_reply_free(r);
	ward__mcp_pending_free(m, p);
	if (m->draining && m->n_pending == 0)
		ward__mcp_begin_shutdown(m);
}

static json_t *call_exec(struct mcp *m, struct pending *p, const json_t *args)
{
	struct ward__exec_args a = {
		.yield_ms = -1, .max_output_tokens = -1, .login = -1, .hold = -1};
	struct ward_error e = {0};
	const char *sp = NULL;
	char why[160];
	bool login = true, hold = false;
	int q, qh;

	if (ward__arg_str(args, "cmd", &a.cmd, NULL, why, sizeof(why)) < 0 ||
	    ward__arg_str(args, "workdir", &a.workdir, NULL, why, sizeof(why)) < 0 ||
	    ward__arg_bool(args, "tty", &a.tty, why, sizeof(why)) < 0 ||
	    ward__arg_int(args, "yield_time_ms", 0, INT32_MAX, &a.yield_ms, why, sizeof(why)) < 0 ||
	    ward__arg_int(args, "max_output_tokens", 0, INT32_MAX, &a.max_output_tokens, why,
			  sizeof(why)) < 0 ||
	    ward__arg_str(args, "until", &a.until, &a.until_len, why, sizeof(why)) < 0 ||
	    ward__arg_bool(args, "until_any_output", &a.until_any_output, why, sizeof(why)) < 0 ||
	    ward__arg_str(args, "shell", &a.shell, NULL, why, sizeof(why)) < 0 ||
	    ward__arg_str(args, "sandbox_permissions", &sp, NULL, why, sizeof(why)) < 0 ||
	    (q = ward__arg_bool(args, "login", &login, why, sizeof(why))) < 0 ||
	    (qh = ward__arg_bool(args, "hold", &hold, why, sizeof(why))) < 0)
		return ward__mcp_tool_error(m, "invalid arguments: %s", why);
	if (!a.cmd)
		return ward__mcp_tool_error(m, "invalid arguments: 'cmd' is required");
	/*
	 * The session layer's limits, checked before anything keeps a copy: an
	 * approval keeps the call's strings (several copies of cmd) while the
	 * person is asked, for up to 10 minutes; twenty 8 MB commands waiting
	 * for an answer held 1 GB.
	 */
	if (strlen(a.cmd) > WARD_SESSION_CMD_MAX)
		return ward__mcp_tool_error(
			m,
			"cmd is longer than %zu bytes (the kernel's limit for one "
			"argument): write the script to a file and run that",
			WARD_SESSION_CMD_MAX);
	if ((a.workdir && strlen(a.workdir) >= PATH_MAX) ||
	    (a.shell && strlen(a.shell) >= PATH_MAX))
		return ward__mcp_tool_error(
			m, "invalid arguments: '%s' is longer than %d bytes",
			a.shell && strlen(a.shell) >= PATH_MAX ? "shell" : "workdir", PATH_MAX - 1);
	if (a.until && a.until_len > WARD_SESSION_UNTIL_MAX)
		return ward__mcp_tool_error(m, "invalid arguments: 'until' is longer than %d bytes",
					    WARD_SESSION_UNTIL_MAX);
	if (q > 0)
		a.login = login;
	if (qh > 0)
		a.hold = hold;
	if (m->cfg->approver)
		return ward__mcp_approval_start(m, p, &a, args);
	/* Without an approver nothing leaves the sandbox: say so rather than ignore the ask. */
	if ((sp && strcmp(sp, "use_default") != 0) || json_object_get(args, "justification") ||
	    json_object_get(args, "prefix_rule") || json_object_get(args, "additional_permissions"))
		return ward__mcp_tool_error(
			m,
			"this server runs every command in its sandbox and asks nobody (it was "
			"started without --ask-for-approval): sandbox_permissions, justification, "
			"prefix_rule and additional_permissions are not available; run the command "
			"as it is, or ask the person to run it");
	if (ward__sessions_exec(m->sessions, &a, on_session_done, p, &p->call, &e) < 0)
		return ward__mcp_tool_error(m, "%s", e.message);
	ward__mcp_audit_start(m, p, a.cmd, a.workdir,
			      m->cfg->policy->mode != WARD_MODE_DANGER_FULL_ACCESS);
	return NULL;
}

static json_t *call_write(struct mcp *m, struct pending *p, const json_t *args)
{
	struct ward__write_args a = {.chars = "", .yield_ms = -1, .max_output_tokens = -1};
	struct ward_error e = {0};
	int64_t id = -1;
	char why[160];

	if (ward__arg_int(args, "session_id", 0, INT32_MAX, &id, why, sizeof(why)) < 0 ||
	    ward__arg_str(args, "until", &a.until, &a.until_len, why, sizeof(why)) < 0 ||
	    ward__arg_bool(args, "until_any_output", &a.until_any_output, why, sizeof(why)) < 0 ||
	    ward__arg_str(args, "chars", &a.chars, &a.len, why, sizeof(why)) < 0 ||
	    ward__arg_int(args, "yield_time_ms", 0, INT32_MAX, &a.yield_ms, why, sizeof(why)) < 0 ||
	    ward__arg_int(args, "max_output_tokens", 0, INT32_MAX, &a.max_output_tokens, why,
			  sizeof(why)) < 0)
		return ward__mcp_tool_error(m, "invalid arguments: %s", why);
	if (id < 0)
		return ward__mcp_tool_error(m, "invalid arguments: 'session_id' is required");
	a.session_id = (int)id;
	if (ward__sessions_write(m->sessions, &a, on_session_done, p, &p->call, &e) < 0)
		return ward__mcp_tool_error(m, "%s", e.message);
	return NULL;
}

static json_t *call_kill(struct mcp *m, struct pending *p, const json_t *args)
{
	struct ward_error e = {0};
	int64_t id = -1;
	char why[160];

	if (ward__arg_int(args, "session_id", 0, INT32_MAX, &id, why, sizeof(why)) < 0)
		return ward__mcp_tool_error(m, "invalid arguments: %s", why);
	if (id < 0)
		return ward__mcp_tool_error(m, "invalid arguments: 'session_id' is required");
	if (ward__sessions_kill(m->sessions, (int)id, on_session_done, p, &p->call, &e) < 0)
		return ward__mcp_tool_error(m, "%s", e.message);
	return NULL;
}

static json_t *call_list(struct mcp *m, const json_t *args)
{
	json_t *list, *res;
	char *text;

	list = ward__sessions_list(m->sessions);
	res = list ? json_pack("{s:o}", "sessions", list) : NULL;
	if (!res)
		return ward__mcp_tool_error(m, "out of memory");
	/* One shape: the text is the structured result as JSON, for clients that show text. */
	text = json_dumps(res, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	return ward__mcp_tool_result(m, text, res, false);
}

void ward__mcp_handle_tools_call(struct mcp *m, const struct ward__rpc_msg *msg)
{
	const json_t *params = msg->params;
	json_t *name = params ? json_object_get(params, "name") : NULL;
	json_t *args = params ? json_object_get(params, "arguments") : NULL;
	json_t *empty = NULL;
	struct pending *p;
	enum tool tool;
	json_t *res, *tok;
	const char *n;

	if (!params || !json_is_object(params) || !json_is_string(name)) {
		ward__mcp_send_error(m, &msg->id, WARD_RPC_INVALID_PARAMS,
				     "tools/call needs a tool name");
		return;
	}
	n = json_string_value(name);
	if (strcmp(n, "exec_command") == 0)
		tool = TOOL_EXEC;
	else if (strcmp(n, "write_stdin") == 0)
		tool = TOOL_WRITE;
	else if (strcmp(n, "list_sessions") == 0)
		tool = TOOL_LIST;
	else if (strcmp(n, "kill_session") == 0)
		tool = TOOL_KILL;
	else if (strcmp(n, "changes_list") == 0)
		tool = TOOL_CHANGES_LIST;
	else if (strcmp(n, "changes_show") == 0)
		tool = TOOL_CHANGES_SHOW;
	else if (strcmp(n, "changes_apply") == 0)
		tool = TOOL_CHANGES_APPLY;
	else if (strcmp(n, "changes_discard") == 0)
		tool = TOOL_CHANGES_DISCARD;
	else if (strcmp(n, "changes_undo") == 0)
		tool = TOOL_CHANGES_UNDO;
	else {
		char why[128];

		snprintf(why, sizeof(why), "Unknown tool: %.64s", n);
		ward__mcp_send_error(m, &msg->id, WARD_RPC_INVALID_PARAMS, why);
		return;
	}
	if (!args || json_is_null(args))
		args = empty = json_object();
	if (!json_is_object(args)) {
		ward__mcp_send_result(
			m, &msg->id,
			ward__mcp_tool_error(m, "invalid arguments: expected an object"));
		return;
	}
	if (tool == TOOL_LIST) {
		ward__mcp_send_result(m, &msg->id, call_list(m, args));
		json_decref(empty);
		return;
	}
	/* Review and undo: answered at once, or (an apply put to the person) later. */
	if (tool >= TOOL_CHANGES_LIST) {
		res = ward__mcp_changes_call(m, msg, tool, args);
		if (res)
			ward__mcp_send_result(m, &msg->id, res);
		json_decref(empty);
		return;
	}
	tok = json_object_get(json_object_get(params, "_meta"), "progressToken");
	if (tok && json_is_string(tok) && json_string_length(tok) > WARD_MCP_MAX_PROGRESS_TOKEN) {
		json_decref(empty);
		ward__mcp_send_error(m, &msg->id, WARD_RPC_INVALID_PARAMS,
				     "_meta.progressToken is longer than 1024 bytes");
		return;
	}
	if (m->draining) {
		json_decref(empty);
		ward__mcp_send_result(m, &msg->id,
				      ward__mcp_tool_error(m, "ward is shutting down"));
		return;
	}
	/* Calls the session layer still holds count too (a cancelled kill until it ends). */
	if (m->n_pending >= WARD_MCP_MAX_IN_FLIGHT ||
	    ward__sessions_calls_in_flight(m->sessions) >= WARD_MCP_MAX_IN_FLIGHT) {
		json_decref(empty);
		ward__mcp_send_result(
			m, &msg->id,
			ward__mcp_tool_error(m,
					     "too many tool calls in flight (%d): wait for some to "
					     "return",
					     WARD_MCP_MAX_IN_FLIGHT));
		return;
	}
	p = ward__mcp_pending_new(m, msg, params, tool);
	if (!p) {
		json_decref(empty);
		ward__mcp_send_error(m, &msg->id, WARD_RPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	res = tool == TOOL_EXEC	     ? call_exec(m, p, args)
		: tool == TOOL_WRITE ? call_write(m, p, args)
				     : call_kill(m, p, args);
	json_decref(empty);
	if (res) {
		/* Refused at once: answer now; nothing was started. */
		ward__mcp_send_result(m, &p->id, res);
		ward__mcp_pending_free(m, p);
		return;
	}
	if (p->progress_token)
		ward__sessions_set_progress(m->sessions, p->call, ward__mcp_progress_interval_ms(m),
					    ward__mcp_on_progress, p);
}
