/* SPDX-License-Identifier: MIT */
/*
 * The MCP server (see mcp.h): lifecycle (initialize with version
 * negotiation, initialized, ping), tools/list, tools/call on the session
 * store, notifications/cancelled and progress notifications.
 *
 * Everything runs on one event loop: a tool call starts a session call and
 * returns; its result is sent when the session layer completes it, so any
 * number of calls (up to WARD_MCP_MAX_IN_FLIGHT) wait at once, each on its
 * own session, and ping or a cancellation is answered meanwhile.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/loop.h"
#include "basic/util.h"
#include "approval/approval.h"
#include "exec/exec.h"
#include "mcp/mcp.h"
#include "rpc/args.h"
#include "rpc/jsonrpc.h"
#include "session/session.h"
#include "transport/lineconn.h"
#include "ward-config.h"

static const char *const supported_versions[] = {
	"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07",
};

enum tool {
	TOOL_EXEC = 1,
	TOOL_WRITE,
	TOOL_LIST,
	TOOL_KILL,
};

struct mcp;

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
	int64_t next_request_id; /* ids of ward's own requests to the client */
};

static void begin_shutdown(struct mcp *m);

/* ------------------------------------------------------------ sending */

static void send_buf(struct mcp *m, struct ward__buf *b, const struct ward__rpc_id *id)
{
	int r = ward__lineconn_send(m->conn, b->data, b->len);

	if (r == -ENOBUFS && id) {
		/* The client does not read its replies: tell it so, in a reply that fits. */
		struct ward__buf e;

		ward__buf_init(&e, 4096);
		if (ward__rpc_encode_error(&m->codec, &e, id, WARD_RPC_INTERNAL_ERROR,
					   "the reply does not fit in the output queue: the client "
					   "is not reading its replies",
					   NULL) >= 0)
			ward__lineconn_send(m->conn, e.data, e.len);
		ward__buf_release(&e);
	}
}

static void send_result(struct mcp *m, const struct ward__rpc_id *id, json_t *result)
{
	struct ward__buf b;

	ward__buf_init(&b, WARD_MCP_MAX_QUEUE);
	if (ward__rpc_encode_result(&m->codec, &b, id, result) >= 0)
		send_buf(m, &b, id);
	ward__buf_release(&b);
	json_decref(result);
}

static void send_error(struct mcp *m, const struct ward__rpc_id *id, int code, const char *msg)
{
	struct ward__buf b;

	ward__buf_init(&b, 64 * 1024);
	if (ward__rpc_encode_error(&m->codec, &b, id, code, msg, NULL) >= 0)
		send_buf(m, &b, NULL);
	ward__buf_release(&b);
}

static void send_notification(struct mcp *m, const char *method, json_t *params)
{
	struct ward__buf b;

	ward__buf_init(&b, 64 * 1024);
	/* A notification that does not fit is dropped: nobody waits for it. */
	if (ward__rpc_encode_notification(&m->codec, &b, method, params) >= 0)
		ward__lineconn_send(m->conn, b.data, b.len);
	ward__buf_release(&b);
	json_decref(params);
}

/* A tool's result: text content, and the structured form where the revision has it. */
static json_t *tool_result(struct mcp *m, char *text, json_t *structured, bool is_error)
{
	json_t *r = json_object(), *content = json_array(), *t = json_object();

	json_object_set_new(t, "type", json_string("text"));
	json_object_set_new(t, "text",
			    ward__json_string_lossy(text ? text : "", text ? strlen(text) : 0));
	json_array_append_new(content, t);
	json_object_set_new(r, "content", content);
	if (structured && m->structured)
		json_object_set_new(r, "structuredContent", structured);
	else
		json_decref(structured);
	json_object_set_new(r, "isError", json_boolean(is_error));
	free(text);
	return r;
}

static json_t *tool_error(struct mcp *m, const char *fmt, ...) _printf_(2, 3);
static json_t *tool_error(struct mcp *m, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	return tool_result(m, msg, NULL, true);
}

/* Whether a JSON value (a cancellation's requestId) names this id. */
static bool id_matches(const struct ward__rpc_id *id, const json_t *v)
{
	if (id->type == WARD_RPC_ID_INT && json_is_integer(v))
		return json_integer_value(v) == id->num;
	if (id->type == WARD_RPC_ID_STRING && json_is_string(v))
		return json_string_length(v) == id->len &&
			memcmp(json_string_value(v), id->str, id->len) == 0;
	return false;
}

/* ------------------------------------------------------------ tools: schemas */

static json_t *prop(const char *type, const char *description)
{
	return json_pack("{s:s, s:s}", "type", type, "description", description);
}

/* ward's extensions of exec_command and write_stdin: return early on output. */
static void add_until_props(json_t *props)
{
	json_object_set_new(props, "until",
			    prop("string",
				 "Return as soon as the output of this call contains this text "
				 "(a prompt such as \">>> \", or \"Listening on\") instead of "
				 "waiting out yield_time_ms, which stays the longest wait. On a "
				 "poll (empty chars), output already waiting counts; after chars "
				 "are typed, only what comes after them."));
	json_object_set_new(props, "until_any_output",
			    prop("boolean",
				 "Return as soon as any output is there (on a poll, output "
				 "already waiting counts; yield_time_ms stays the longest "
				 "wait)."));
}

/* Codex's per-call approval fields (codex.md 5.1), offered when the server has an approver. */
static void add_approval_props(json_t *props)
{
	json_object_set_new(
		props, "sandbox_permissions",
		json_pack("{s:s, s:[s,s,s], s:s}", "type", "string", "enum", "use_default",
			  "require_escalated", "with_additional_permissions", "description",
			  "use_default (or omitted): run in the sandbox. require_escalated: ask "
			  "the person to run this command outside the sandbox (give a "
			  "justification). with_additional_permissions: ask to run it in the "
			  "sandbox widened by additional_permissions."));
	json_object_set_new(props, "justification",
			    prop("string",
				 "Only with require_escalated or "
				 "with_additional_permissions: one sentence for the "
				 "person, why the command needs it."));
	json_object_set_new(
		props, "prefix_rule",
		json_pack("{s:s, s:{s:s}, s:s}", "type", "array", "items", "type", "string",
			  "description",
			  "Only with require_escalated: a command prefix the person may choose "
			  "to always allow, e.g. [\"git\", \"pull\"] (shells, interpreters "
			  "and git alone are refused)."));
	json_object_set_new(
		props, "additional_permissions",
		json_pack("{s:s, s:s, s:{s:{s:s, s:{s:{s:s}}}, s:{s:s, s:{s:{s:s, s:{s:s}}, "
			  "s:{s:s, s:{s:s}}}}}}",
			  "type", "object", "description",
			  "Only with with_additional_permissions: what to add for this command: "
			  "file_system.write (absolute paths made writable), network.enabled.",
			  "properties", "network", "type", "object", "properties", "enabled",
			  "type", "boolean", "file_system", "type", "object", "properties", "read",
			  "type", "array", "items", "type", "string", "write", "type", "array",
			  "items", "type", "string"));
}

static json_t *reply_output_schema(void)
{
	return json_pack("{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s},"
			 " s:{s:[s,s]}, s:{s:[s,s]}, s:{s:s}, s:{s:s}, s:{s:s}}, s:[s,s]}",
			 "type", "object", "properties", "chunk_id", "type", "string",
			 "wall_time_seconds", "type", "number", "exit_code", "type", "integer",
			 "session_id", "type", "integer", "original_token_count", "type", "integer",
			 "output", "type", "string", "truncated", "type", "boolean",
			 "sandbox_denied", "type", "boolean", "string", "denials", "type", "array",
			 "string", "denials_dropped", "type", "integer", "note", "type", "string",
			 "killed", "type", "boolean", "required", "wall_time_seconds", "output");
}

static json_t *annotations(const char *title, bool read_only, bool destructive, bool idempotent,
			   bool open_world)
{
	return json_pack("{s:s, s:b, s:b, s:b, s:b}", "title", title, "readOnlyHint", read_only,
			 "destructiveHint", destructive, "idempotentHint", idempotent,
			 "openWorldHint", open_world);
}

static json_t *tools_list(struct mcp *m)
{
	bool net = m->cfg->policy->network || m->cfg->policy->mode == WARD_MODE_DANGER_FULL_ACCESS;
	json_t *tools = json_array(), *t, *props;

	/* exec_command */
	props = json_object();
	json_object_set_new(props, "cmd", prop("string", "Shell command to execute."));
	json_object_set_new(
		props, "workdir",
		prop("string",
		     "Working directory of the command (absolute, or relative to the server's "
		     "workspace). It only sets where the command starts: what it may write "
		     "stays the server's workspace. Default: the workspace."));
	json_object_set_new(
		props, "tty",
		prop("boolean",
		     "true allocates a terminal (PTY) so that interactive programs (REPLs, "
		     "prompts, bash -i) work and write_stdin can type into them; false or "
		     "omitted uses plain pipes and closes stdin."));
	json_object_set_new(
		props, "yield_time_ms",
		prop("integer",
		     "How long to wait for the command before returning (default 10000, "
		     "clamped to 250-30000). The call returns as soon as the command exits."));
	json_object_set_new(props, "max_output_tokens",
			    prop("integer",
				 "Most tokens of output to return (about 4 bytes each; default "
				 "10000); longer output is cut in the middle."));
	json_object_set_new(
		props, "shell",
		prop("string", "Shell to run the command with (default: the user's shell)."));
	json_object_set_new(props, "login",
			    prop("boolean",
				 "Run the shell as a login shell (-lc, default "
				 "true) or not (-c)."));
	add_until_props(props);
	if (m->cfg->approver)
		add_approval_props(props);
	t = json_pack(
		"{s:s, s:s, s:s, s:{s:s, s:o, s:[s], s:b}, s:o}", "name", "exec_command", "title",
		"Run a command in a sandbox", "description",
		"Runs a shell command inside an operating-system sandbox and returns what it "
		"printed. Each call gets a fresh sandbox: the command can write only inside "
		"the server's workspace (and /tmp), .git/hooks, .git/config and agent configuration stay "
		"read-only, and the network is unreachable unless the server allows it "
		"(loopback works). If the command finishes within yield_time_ms you get its "
		"exit code and output. If it is still running you get a session_id instead: "
		"the command keeps running (a dev server, a long build, a REPL) and you read "
		"its further output, or type into it, with write_stdin. Use tty=true for "
		"interactive programs. When the sandbox refused something (a write outside the "
		"workspace, a network connection), the result lists exactly what, so you can "
		"tell a sandbox refusal from an ordinary failure.",
		"inputSchema", "type", "object", "properties", props, "required", "cmd",
		"additionalProperties", 0, "annotations",
		annotations("Run a command in a sandbox", false, true, false, net));
	if (m->structured)
		json_object_set_new(t, "outputSchema", reply_output_schema());
	json_array_append_new(tools, t);

	/* write_stdin */
	props = json_object();
	json_object_set_new(props, "session_id",
			    prop("integer", "The session_id that exec_command returned."));
	json_object_set_new(
		props, "chars",
		prop("string",
		     "Characters to write, as typed: include \"\\n\" to press Enter. "
		     "\"\\u0003\" (Ctrl-C) interrupts the foreground process, also in a session "
		     "without a tty. Empty (the default): only wait for and return new output."));
	json_object_set_new(props, "yield_time_ms",
			    prop("integer",
				 "How long to wait for output after writing (default 250, "
				 "250-30000); an empty poll waits 5000-300000. Returns early when "
				 "the process exits."));
	json_object_set_new(props, "max_output_tokens",
			    prop("integer", "Most tokens of output to return (default 10000)."));
	add_until_props(props);
	t = json_pack(
		"{s:s, s:s, s:s, s:{s:s, s:o, s:[s], s:b}, s:o}", "name", "write_stdin", "title",
		"Write to a session", "description",
		"Writes characters to a session that exec_command left running and returns the "
		"output produced since the previous call on it. With empty chars it polls: it "
		"waits up to yield_time_ms for new output and returns early when the process "
		"exits. Typing text needs a session started with tty=true; \"\\u0003\" "
		"interrupts any session. When the result says the process exited, the session "
		"is gone.",
		"inputSchema", "type", "object", "properties", props, "required", "session_id",
		"additionalProperties", 0, "annotations",
		annotations("Write to a session", false, true, false, net));
	if (m->structured)
		json_object_set_new(t, "outputSchema", reply_output_schema());
	json_array_append_new(tools, t);

	/* list_sessions */
	t = json_pack("{s:s, s:s, s:s, s:{s:s, s:{}, s:b}, s:o}", "name", "list_sessions", "title",
		      "List sessions", "description",
		      "Lists the sessions still open: session_id, command, working directory, "
		      "whether it is running or has exited (with its exit code), and how many "
		      "bytes of output wait to be read with write_stdin.",
		      "inputSchema", "type", "object", "properties", "additionalProperties", 0,
		      "annotations", annotations("List sessions", true, false, true, false));
	if (m->structured)
		json_object_set_new(t, "outputSchema",
				    json_pack("{s:s, s:{s:{s:s, s:{s:s}}}, s:[s]}", "type",
					      "object", "properties", "sessions", "type", "array",
					      "items", "type", "object", "required", "sessions"));
	json_array_append_new(tools, t);

	/* kill_session */
	props = json_object();
	json_object_set_new(props, "session_id", prop("integer", "The session to end."));
	t = json_pack("{s:s, s:s, s:s, s:{s:s, s:o, s:[s], s:b}, s:o}", "name", "kill_session",
		      "title", "End a session", "description",
		      "Ends a session: every process in its sandbox is killed. Returns the output "
		      "it printed since the last call and its exit status.",
		      "inputSchema", "type", "object", "properties", props, "required",
		      "session_id", "additionalProperties", 0, "annotations",
		      annotations("End a session", false, true, true, false));
	if (m->structured)
		json_object_set_new(t, "outputSchema", reply_output_schema());
	json_array_append_new(tools, t);
	return json_pack("{s:o}", "tools", tools);
}

/* ------------------------------------------------------------ tools: arguments */

/* ------------------------------------------------------------ tools: calls */

static void approval_free(struct mcp *m, struct approval *ap);

static void pending_free(struct mcp *m, struct pending *p)
{
	approval_free(m, p->ap);
	if (p->prev)
		p->prev->next = p->next;
	else if (m->pending == p)
		m->pending = p->next;
	if (p->next)
		p->next->prev = p->prev;
	m->n_pending--;
	ward__rpc_id_release(&p->id);
	json_decref(p->progress_token);
	free(p);
}

static void on_session_done(struct ward__session_reply *r, void *userdata)
{
	struct pending *p = userdata;
	struct mcp *m = p->m;
	json_t *res;

	if (!r)
		res = tool_error(m, "out of memory building the result");
	else if (r->error)
		res = tool_error(m, "%s", r->error);
	else
		res = tool_result(m, ward__session_reply_text(r), ward__session_reply_json(r),
				  false);
	send_result(m, &p->id, res);
	ward__session_reply_free(r);
	pending_free(m, p);
	if (m->draining && m->n_pending == 0)
		begin_shutdown(m);
}

static void send_progress(struct pending *p, uint64_t elapsed_ms, uint64_t total_ms,
			  const char *msg)
{
	json_t *params;

	/* progress must increase from one notification to the next. */
	if (elapsed_ms <= p->last_progress)
		elapsed_ms = p->last_progress + 1;
	p->last_progress = elapsed_ms;
	params = json_pack("{s:O, s:I, s:I, s:s}", "progressToken", p->progress_token, "progress",
			   (json_int_t)elapsed_ms, "total", (json_int_t)total_ms, "message", msg);
	if (!params)
		return;
	send_notification(p->m, "notifications/progress", params);
}

static void on_progress(uint64_t elapsed_ms, uint64_t total_ms, uint64_t bytes, void *userdata)
{
	char msg[96];

	snprintf(msg, sizeof(msg), "waiting for the command; %llu bytes of output so far",
		 (unsigned long long)bytes);
	send_progress(userdata, elapsed_ms, total_ms, msg);
}

static uint64_t progress_interval_ms(const struct mcp *m)
{
	return m->cfg->progress_interval_ms > 0 ? (uint64_t)m->cfg->progress_interval_ms : 1000;
}

static struct pending *pending_new(struct mcp *m, const struct ward__rpc_msg *msg,
				   const json_t *params, enum tool tool)
{
	struct pending *p = calloc(1, sizeof(*p));
	json_t *meta = json_object_get(params, "_meta");
	json_t *tok = meta ? json_object_get(meta, "progressToken") : NULL;

	if (!p)
		return NULL;
	if (ward__rpc_id_dup(&p->id, &msg->id) < 0) {
		free(p);
		return NULL;
	}
	p->m = m;
	p->tool = tool;
	if (tok && (json_is_string(tok) || json_is_integer(tok)))
		p->progress_token = json_incref(tok);
	p->next = m->pending;
	if (m->pending)
		m->pending->prev = p;
	m->pending = p;
	m->n_pending++;
	return p;
}

static json_t *approval_start(struct mcp *m, struct pending *p, const struct ward__exec_args *a,
			      const json_t *args);

static json_t *call_exec(struct mcp *m, struct pending *p, const json_t *args)
{
	static const char *const keys[] = {"cmd",
					   "workdir",
					   "tty",
					   "yield_time_ms",
					   "max_output_tokens",
					   "shell",
					   "login",
					   "until",
					   "until_any_output",
					   "sandbox_permissions",
					   "justification",
					   "prefix_rule",
					   "additional_permissions",
					   NULL};
	struct ward__exec_args a = {.yield_ms = -1, .max_output_tokens = -1, .login = -1};
	struct ward_error e = {0};
	const char *sp = NULL;
	char why[160];
	bool login = true;
	int q;

	if (!ward__check_keys(args, keys, why, sizeof(why)) ||
	    ward__arg_str(args, "cmd", &a.cmd, NULL, why, sizeof(why)) < 0 ||
	    ward__arg_str(args, "workdir", &a.workdir, NULL, why, sizeof(why)) < 0 ||
	    ward__arg_bool(args, "tty", &a.tty, why, sizeof(why)) < 0 ||
	    ward__arg_int(args, "yield_time_ms", 0, INT32_MAX, &a.yield_ms, why, sizeof(why)) < 0 ||
	    ward__arg_int(args, "max_output_tokens", 0, INT32_MAX, &a.max_output_tokens, why,
			  sizeof(why)) < 0 ||
	    ward__arg_str(args, "until", &a.until, &a.until_len, why, sizeof(why)) < 0 ||
	    ward__arg_bool(args, "until_any_output", &a.until_any_output, why, sizeof(why)) < 0 ||
	    ward__arg_str(args, "shell", &a.shell, NULL, why, sizeof(why)) < 0 ||
	    ward__arg_str(args, "sandbox_permissions", &sp, NULL, why, sizeof(why)) < 0 ||
	    (q = ward__arg_bool(args, "login", &login, why, sizeof(why))) < 0)
		return tool_error(m, "invalid arguments: %s", why);
	if (!a.cmd)
		return tool_error(m, "invalid arguments: 'cmd' is required");
	if (q > 0)
		a.login = login;
	if (m->cfg->approver)
		return approval_start(m, p, &a, args);
	/* Without an approver nothing leaves the sandbox: say so rather than ignore the ask. */
	if ((sp && strcmp(sp, "use_default") != 0) || json_object_get(args, "justification") ||
	    json_object_get(args, "prefix_rule") || json_object_get(args, "additional_permissions"))
		return tool_error(
			m,
			"this server runs every command in its sandbox and asks nobody (it was "
			"started without --ask-for-approval): sandbox_permissions, justification, "
			"prefix_rule and additional_permissions are not available; run the command "
			"as it is, or ask the person to run it");
	if (ward__sessions_exec(m->sessions, &a, on_session_done, p, &p->call, &e) < 0)
		return tool_error(m, "%s", e.message);
	return NULL;
}

static json_t *call_write(struct mcp *m, struct pending *p, const json_t *args)
{
	static const char *const keys[] = {
		"session_id",	    "chars", "yield_time_ms", "max_output_tokens", "until",
		"until_any_output", NULL};
	struct ward__write_args a = {.chars = "", .yield_ms = -1, .max_output_tokens = -1};
	struct ward_error e = {0};
	int64_t id = -1;
	char why[160];

	if (!ward__check_keys(args, keys, why, sizeof(why)) ||
	    ward__arg_int(args, "session_id", 0, INT32_MAX, &id, why, sizeof(why)) < 0 ||
	    ward__arg_str(args, "until", &a.until, &a.until_len, why, sizeof(why)) < 0 ||
	    ward__arg_bool(args, "until_any_output", &a.until_any_output, why, sizeof(why)) < 0 ||
	    ward__arg_str(args, "chars", &a.chars, &a.len, why, sizeof(why)) < 0 ||
	    ward__arg_int(args, "yield_time_ms", 0, INT32_MAX, &a.yield_ms, why, sizeof(why)) < 0 ||
	    ward__arg_int(args, "max_output_tokens", 0, INT32_MAX, &a.max_output_tokens, why,
			  sizeof(why)) < 0)
		return tool_error(m, "invalid arguments: %s", why);
	if (id < 0)
		return tool_error(m, "invalid arguments: 'session_id' is required");
	a.session_id = (int)id;
	if (ward__sessions_write(m->sessions, &a, on_session_done, p, &p->call, &e) < 0)
		return tool_error(m, "%s", e.message);
	return NULL;
}

static json_t *call_kill(struct mcp *m, struct pending *p, const json_t *args)
{
	static const char *const keys[] = {"session_id", NULL};
	struct ward_error e = {0};
	int64_t id = -1;
	char why[160];

	if (!ward__check_keys(args, keys, why, sizeof(why)) ||
	    ward__arg_int(args, "session_id", 0, INT32_MAX, &id, why, sizeof(why)) < 0)
		return tool_error(m, "invalid arguments: %s", why);
	if (id < 0)
		return tool_error(m, "invalid arguments: 'session_id' is required");
	if (ward__sessions_kill(m->sessions, (int)id, on_session_done, p, &p->call, &e) < 0)
		return tool_error(m, "%s", e.message);
	return NULL;
}

/* ------------------------------------------------------------ approvals */

/*
 * With an approver (`ward mcp -a MODE`, --rules...), exec_command goes
 * through libward's approval step machine (src/approval): ASK becomes an MCP
 * elicitation (elicitation/create, the tool call waiting for the person's
 * answer), RUN a session exec under the step's policy, and a sandboxed run
 * that exited denied may be asked about again ("retry without sandbox?") and
 * run outside the sandbox. A client without elicitation gets the mode's
 * fallback: the command is not run and the tool error tells the model what
 * to ask the person.
 */

/* How long a question waits for the person before the command is not run. */
#define WARD_MCP_ELICIT_TIMEOUT_NS (600ULL * 1000000000)

static void approval_free(struct mcp *m, struct approval *ap)
{
	if (!ap)
		return;
	ward__loop_del_timer(m->loop, ap->elicit_timer);
	ward__loop_del_timer(m->loop, ap->ask_progress_timer);
	ward__approval_step_free(ap->step);
	ward_approval_request_free(ap->req);
	ward__session_reply_free(ap->reply);
	free(ap->cmd);
	free(ap->workdir);
	free(ap->shell);
	free(ap->until);
	free(ap->asked_reason);
	free(ap->notes);
	free(ap);
}

/* Sends a call's result and forgets the call. */
static void pending_finish(struct mcp *m, struct pending *p, json_t *res)
{
	send_result(m, &p->id, res);
	pending_free(m, p);
	if (m->draining && m->n_pending == 0)
		begin_shutdown(m);
}

static void add_note(struct approval *ap, const char *note)
{
	char *n;

	if (!note || !note[0] || (ap->notes && strstr(ap->notes, note)))
		return;
	if (asprintf(&n, "%s%s%s", ap->notes ? ap->notes : "", ap->notes ? "; " : "", note) < 0)
		return;
	free(ap->notes);
	ap->notes = n;
}

/*
 * Text a command or a model controls, fit to show a person: control
 * characters (C0, DEL, C1) and bidirectional overrides are written as
 * escapes, so they can neither restyle the question nor hide part of it.
 */
static char *printable(const char *s, size_t max)
{
	struct ward__buf b;
	size_t n = strlen(s);

	ward__buf_init(&b, max * 6 + 16);
	for (size_t i = 0; i < n && b.len < max * 6; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
			ward__buf_append_byte(&b, c);
		} else if (c < 0x20 || c == 0x7f) {
			ward__buf_printf(&b, "\\x%02x", c);
		} else if (c == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
			   (unsigned char)s[i + 1] <= 0x9f) {
			ward__buf_printf(&b, "\\u%04x", (unsigned char)s[i + 1]);
			i++;
		} else if (c == 0xe2 && i + 2 < n && (unsigned char)s[i + 1] == 0x80 &&
			   (unsigned char)s[i + 2] >= 0xaa && (unsigned char)s[i + 2] <= 0xae) {
			ward__buf_printf(&b, "\\u%04x", 0x2000 + ((unsigned char)s[i + 2] - 0x80));
			i += 2;
		} else if (c == 0xe2 && i + 2 < n && (unsigned char)s[i + 1] == 0x81 &&
			   (unsigned char)s[i + 2] >= 0xa6 && (unsigned char)s[i + 2] <= 0xa9) {
			ward__buf_printf(&b, "\\u%04x", 0x2040 + ((unsigned char)s[i + 2] - 0x80));
			i += 2;
		} else {
			ward__buf_append_byte(&b, c);
		}
	}
	if (n > max && b.len >= max * 6)
		ward__buf_append_str(&b, "...");
	ward__buf_append_byte(&b, 0);
	return (char *)ward__buf_steal(&b, NULL);
}

static const char *const decision_titles[] = {
	[WARD_REVIEW_APPROVED] = "Yes, run it this once",
	[WARD_REVIEW_APPROVED_FOR_SESSION] =
		"Yes, and do not ask again for this command in this directory (until ward mcp ends)",
	[WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT] =
		"Yes, and always allow commands starting with",
	[WARD_REVIEW_DENIED] = "No, do not run it (the agent is told)",
	[WARD_REVIEW_ABORT] = "No, and the agent should stop",
};

/* The question as an elicitation: a message and a one-field form (the decision). */
static json_t *elicit_params(struct mcp *m, struct approval *ap,
			     const struct ward_approval_question *q)
{
	_cleanup_free_ char *cmd = printable(ap->cmd, 4096);
	_cleanup_free_ char *cwd = printable(q->cwd ? q->cwd : "", 1024);
	_cleanup_free_ char *reason = printable(q->reason, 2048);
	_cleanup_free_ char *just = q->justification ? printable(q->justification, 2048) : NULL;
	_cleanup_free_ char *prefix = NULL;
	bool titled = strcmp(m->version, "2025-11-25") >= 0;
	json_t *values = json_array(), *names = json_array(), *field, *res;
	bool incomplete = false;
	struct ward__buf b;

	if (q->proposed_prefix_rule) {
		struct ward__buf pb;

		ward__buf_init(&pb, 8192);
		for (size_t i = 0; q->proposed_prefix_rule[i]; i++)
			ward__buf_printf(&pb, "%s%s", i ? " " : "", q->proposed_prefix_rule[i]);
		ward__buf_append_byte(&pb, 0);
		prefix = printable(pb.data ? (char *)pb.data : "", 1024);
		ward__buf_release(&pb);
	}
	/* Room for 64 writable paths of PATH_MAX bytes, each escaped up to 6 times its size. */
	ward__buf_init(&b, 4 << 20);
	ward__buf_printf(&b, "%s\n\n$ %s\n(in %s)\n\nWhy ward asks: %s\n",
			 q->retry ? "The sandbox refused this command. Run it again OUTSIDE the "
				    "sandbox?"
				 : q->unsandboxed
				 ? "Allow this command to run OUTSIDE the sandbox "
				   "(with your full access to files and the network)?"
				 : "Allow this command to run (in the sandbox)?",
			 cmd ? cmd : "?", cwd ? cwd : "?", reason ? reason : "?");
	/*
	 * The program that runs is the call's shell: when the agent chose one,
	 * the person must see it, or "$ ls" could run a planted
	 * /workspace/bash outside the sandbox.
	 */
	if (ap->shell && ap->shell[0] &&
	    strcmp(ap->shell, ward__sessions_shell(m->sessions)) != 0) {
		_cleanup_free_ char *sh = printable(ap->shell, PATH_MAX);

		incomplete |= !sh ||
			ward__buf_printf(&b, "Run by the agent's choice of program: %s\n", sh) < 0;
	}
	/*
	 * What a widened sandbox adds, path by path and uncut: the person
	 * approves these, not "more paths". A question that cannot show them
	 * all is not asked.
	 */
	for (size_t i = 0; ap->req && i < ap->req->n_writable; i++) {
		_cleanup_free_ char *w = printable(ap->req->writable[i], PATH_MAX);

		incomplete |= !w ||
			ward__buf_printf(&b, "%s  %s\n", i == 0 ? "Writable as well:\n" : "", w) <
				0;
	}
	if (ap->req && ap->req->network)
		incomplete |= ward__buf_printf(&b, "With network access.\n") < 0;
	if (just)
		ward__buf_printf(&b, "The agent says: %s\n", just);
	for (size_t i = 0; i < q->n_denials && i < 10; i++) {
		_cleanup_free_ char *t = printable(q->denials[i].target, 512);

		ward__buf_printf(&b, "%s%s %s%s%s\n", i == 0 ? "\nThe sandbox refused:\n" : "",
				 q->denials[i].access, t ? t : "?",
				 q->denials[i].syscall && q->denials[i].syscall[0] ? " by " : "",
				 q->denials[i].syscall ? q->denials[i].syscall : "");
	}
	if (q->n_denials > 10 || q->denials_dropped)
		ward__buf_printf(&b, "and %zu more\n",
				 (q->n_denials > 10 ? q->n_denials - 10 : 0) + q->denials_dropped);
	ward__buf_append_byte(&b, 0);

	for (int d = WARD_REVIEW_APPROVED; d <= WARD_REVIEW_ABORT; d++) {
		char *title = NULL;

		if (!(q->decisions & (1u << d)))
			continue;
		if (d == WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT &&
		    asprintf(&title, "%s `%s`", decision_titles[d], prefix ? prefix : "?") < 0)
			title = NULL;
		if (titled)
			json_array_append_new(values,
					      json_pack("{s:s, s:s}", "const",
							ward_review_decision_to_string(d), "title",
							title ? title : decision_titles[d]));
		else
			json_array_append_new(values,
					      json_string(ward_review_decision_to_string(d)));
		json_array_append_new(names, json_string(title ? title : decision_titles[d]));
		free(title);
	}
	if (titled) {
		field = json_pack("{s:s, s:s, s:o}", "type", "string", "title", "Your decision",
				  "oneOf", values);
		json_decref(names);
	} else {
		field = json_pack("{s:s, s:s, s:o, s:o}", "type", "string", "title",
				  "Your decision", "enum", values, "enumNames", names);
	}
	res = json_pack("{s:s, s:{s:s, s:{s:o}, s:[s]}}", "message", b.data ? (char *)b.data : "",
			"requestedSchema", "type", "object", "properties", "decision", field,
			"required", "decision");
	ward__buf_release(&b);
	if (incomplete) {
		json_decref(res);
		return NULL;
	}
	/* 2025-11-25 names the form mode (it added URL elicitation); earlier revisions have none. */
	if (res && titled)
		json_object_set_new(res, "mode", json_string("form"));
	return res;
}

static json_t *approval_drive(struct mcp *m, struct pending *p);

/* Sends the question of ap->act as elicitation/create; 0, or -errno (then nobody is asked). */
static int elicit(struct mcp *m, struct pending *p);

/* The question is answered or moot: its timers go. */
static void stop_asking(struct mcp *m, struct approval *ap)
{
	ap->asking = false;
	ward__loop_del_timer(m->loop, ap->elicit_timer);
	ap->elicit_timer = 0;
	ward__loop_del_timer(m->loop, ap->ask_progress_timer);
	ap->ask_progress_timer = 0;
}

/* Nobody can answer the question now: the step decides (not run), with why. */
static int no_answer(struct mcp *m, struct pending *p, const char *why, struct ward_error *e)
{
	struct approval *ap = p->ap;

	stop_asking(m, ap);
	return ward__approval_no_answer(ap->step, why, &ap->act, e);
}

/* Tells the client a question of ours is moot (its call went, or it took too long). */
static void withdraw_question(struct mcp *m, struct approval *ap, const char *why)
{
	if (!ap->asking)
		return;
	send_notification(
		m, "notifications/cancelled",
		json_pack("{s:I, s:s}", "requestId", (json_int_t)ap->elicit_id, "reason", why));
}

/* The tool result of a run: its reply in Codex's layout, the approval's notes added. */
static json_t *approval_reply_result(struct mcp *m, struct approval *ap)
{
	struct ward__session_reply *r = ap->reply;
	json_t *res;

	if (ap->notes) {
		char *n = NULL;

		if (asprintf(&n, "%s%s%s", r->note ? r->note : "", r->note ? "; " : "",
			     ap->notes) >= 0) {
			free(r->note);
			r->note = n;
		}
	}
	res = tool_result(m, ward__session_reply_text(r), ward__session_reply_json(r), false);
	ward__session_reply_free(r);
	ap->reply = NULL;
	return res;
}

/* Not run (or not run again): what the model is told. */
static json_t *approval_rejected(struct mcp *m, struct pending *p)
{
	struct approval *ap = p->ap;
	const struct ward__approval_action *act = &ap->act;
	_cleanup_free_ char *cmd = printable(ap->cmd, 1024);

	if (ap->reply) {
		/* The sandboxed run stands; it was not run again outside the sandbox. */
		char *n = NULL;

		if (asprintf(&n, "not run again outside the sandbox: %s", act->reason) >= 0) {
			add_note(ap, n);
			free(n);
		}
		return approval_reply_result(m, ap);
	}
	switch (act->status) {
	case WARD_APPROVAL_ABORTED:
		return tool_error(m,
				  "Not run: %s. The person stopped this: do not run anything "
				  "else; wait for their instructions.",
				  act->reason);
	case WARD_APPROVAL_DENIED:
		if (ap->asked_reason && strstr(act->reason, "nobody could be asked") == NULL &&
		    strncmp(act->reason, "not approved: ", 14) == 0)
			return tool_error(
				m,
				"Not run: it needs the person's approval (%s) and %s. Ask the "
				"person in your reply whether to run `%s`%s; they can run it "
				"themselves, approve it in a client that can ask them, or allow it "
				"with a rule (see ward's docs/rules.md).",
				ap->asked_reason, act->reason + 14, cmd ? cmd : ap->cmd,
				ap->asked_unsandboxed ? " outside the sandbox" : "");
		return tool_error(m,
				  "Not run: %s. Do not try it again as it is; ask the person how "
				  "to proceed.",
				  act->reason);
	case WARD_APPROVAL_REJECTED:
	case WARD_APPROVAL_RAN_SANDBOXED:
	case WARD_APPROVAL_RAN_UNSANDBOXED:
		break;
	}
	return tool_error(m, "Not run: %s", act->reason);
}

static void on_approved_done(struct ward__session_reply *r, void *userdata);

/* Runs the command as RUN says: a session under the step's policy. */
static int approval_run(struct mcp *m, struct pending *p, struct ward_error *e)
{
	struct approval *ap = p->ap;
	struct ward__exec_args a = {
		.cmd = ap->cmd,
		.workdir = ap->workdir,
		.tty = ap->tty,
		.yield_ms = ap->yield_ms,
		.max_output_tokens = ap->max_tokens,
		.shell = ap->shell,
		.login = ap->login,
		.until = ap->until,
		.until_len = ap->until_len,
		.until_any_output = ap->until_any_output,
		.unsandboxed = !ap->act.sandboxed,
		.policy = ap->act.policy != m->cfg->policy ? ap->act.policy : NULL,
	};
	int r;

	if (!ap->act.sandboxed && ap->reply) {
		ap->retried = true;
		add_note(ap,
			 "ran again outside the sandbox: the sandbox had refused it and the "
			 "person approved");
	} else if (!ap->act.sandboxed) {
		add_note(ap, "ran outside the sandbox (approved)");
	}
	r = ward__sessions_exec(m->sessions, &a, on_approved_done, p, &p->call, e);
	/*
	 * A run that starts after a question has no session call when the
	 * tools/call arrives: its progress is attached here, or the client
	 * that asked for progress gets none.
	 */
	if (r >= 0 && p->progress_token)
		ward__sessions_set_progress(m->sessions, p->call, progress_interval_ms(m),
					    on_progress, p);
	return r;
}

/* Performs the step's actions until one has to wait; the result when the call is over. */
static json_t *approval_drive(struct mcp *m, struct pending *p)
{
	struct approval *ap = p->ap;
	struct ward_error e = {0};
	int r;

	for (;;) {
		add_note(ap, ap->act.notice);
		switch (ap->act.kind) {
		case WARD__APPROVAL_ASK:
			free(ap->asked_reason);
			ap->asked_reason = strdup(ap->act.question->reason);
			ap->asked_unsandboxed = ap->act.question->unsandboxed;
			if (m->draining)
				r = no_answer(m, p, "ward is shutting down", &e);
			else if (!m->elicitation)
				r = no_answer(m, p,
					      "this MCP client cannot ask the person (it does not "
					      "support elicitation)",
					      &e);
			else if (elicit(m, p) < 0)
				r = no_answer(m, p, "the question could not be sent to the client",
					      &e);
			else
				return NULL;
			break;
		case WARD__APPROVAL_RUN:
			if (approval_run(m, p, &e) < 0) {
				if (ap->reply)
					return approval_reply_result(m, ap);
				return tool_error(m, "%s", e.message);
			}
			return NULL;
		case WARD__APPROVAL_REJECT:
			return approval_rejected(m, p);
		case WARD__APPROVAL_DONE:
		default:
			if (!ap->reply)
				return tool_error(m, "the command's result was lost");
			return approval_reply_result(m, ap);
		}
		if (r < 0) {
			if (ap->reply)
				return approval_reply_result(m, ap);
			return tool_error(m, "%s", e.message);
		}
	}
}

static void on_approved_done(struct ward__session_reply *r, void *userdata)
{
	struct pending *p = userdata;
	struct mcp *m = p->m;
	struct approval *ap = p->ap;
	struct ward__approval_outcome o;
	struct ward_error e = {0};
	json_t *res;

	p->call = 0;
	if (!r || r->error) {
		if (ap->reply) {
			/* The retry could not run: the sandboxed run's result stands. */
			add_note(ap, r ? r->error : "the run outside the sandbox failed");
			ward__session_reply_free(r);
			pending_finish(m, p, approval_reply_result(m, ap));
			return;
		}
		res = r ? tool_error(m, "%s", r->error)
			: tool_error(m, "out of memory building the result");
		ward__session_reply_free(r);
		pending_finish(m, p, res);
		return;
	}
	ward__session_reply_free(ap->reply);
	ap->reply = r;
	if (!r->exited) {
		/* Still running after its window: a session now; the approval is over. */
		pending_finish(m, p, approval_reply_result(m, ap));
		return;
	}
	o = (struct ward__approval_outcome){
		.exit_code = r->exit_code,
		.denied = r->denied > 0,
		.denials = r->denials,
		.n_denials = r->n_denials,
		.denials_dropped = r->denials_dropped,
	};
	if (ward__approval_ran(ap->step, &o, &ap->act, &e) < 0) {
		add_note(ap, e.message);
		pending_finish(m, p, approval_reply_result(m, ap));
		return;
	}
	res = approval_drive(m, p);
	if (res)
		pending_finish(m, p, res);
}

static void on_elicit_timeout(struct ward__loop *l, void *userdata)
{
	struct pending *p = userdata;
	struct mcp *m = p->m;
	struct ward_error e = {0};
	json_t *res;

	p->ap->elicit_timer = 0;
	withdraw_question(m, p->ap, "no answer in time");
	if (no_answer(m, p, "the person did not answer within 10 minutes", &e) < 0) {
		pending_finish(m, p, tool_error(m, "%s", e.message));
		return;
	}
	res = approval_drive(m, p);
	if (res)
		pending_finish(m, p, res);
}

/*
 * While the person decides, a call that asked for progress hears that it
 * waits for them: clients time a request out unless progress comes (the
 * TypeScript SDK's resetTimeoutOnProgress), and a person may take minutes.
 */
static void on_ask_progress(struct ward__loop *l, void *userdata)
{
	struct pending *p = userdata;
	struct approval *ap = p->ap;
	uint64_t interval = progress_interval_ms(p->m);

	ap->ask_progress_timer = 0;
	send_progress(p, (ward__now_ns() - ap->asked_at_ns) / 1000000,
		      WARD_MCP_ELICIT_TIMEOUT_NS / 1000000, "waiting for the person's answer");
	(void)ward__loop_add_timer(l, ward__now_ns() + interval * 1000000, on_ask_progress, p,
				   &ap->ask_progress_timer);
}

static int elicit(struct mcp *m, struct pending *p)
{
	struct approval *ap = p->ap;
	json_t *params = elicit_params(m, ap, ap->act.question);
	struct ward__rpc_id id = {.type = WARD_RPC_ID_INT};
	struct ward__buf b;
	int r;

	if (!params)
		return -ENOMEM;
	id.num = ap->elicit_id = ++m->next_request_id;
	ward__buf_init(&b, 1 << 20);
	r = ward__rpc_encode_request(&m->codec, &b, &id, "elicitation/create", params);
	if (r >= 0)
		r = ward__lineconn_send(m->conn, b.data, b.len);
	ward__buf_release(&b);
	json_decref(params);
	if (r < 0)
		return r;
	ap->asking = true;
	ap->asked_at_ns = ward__now_ns();
	if (p->progress_token) {
		r = ward__loop_add_timer(m->loop,
					 ap->asked_at_ns + progress_interval_ms(m) * 1000000,
					 on_ask_progress, p, &ap->ask_progress_timer);
		if (r < 0)
			return r;
	}
	return ward__loop_add_timer(m->loop, ap->asked_at_ns + WARD_MCP_ELICIT_TIMEOUT_NS,
				    on_elicit_timeout, p, &ap->elicit_timer);
}

/* The client's answer to one of our questions. */
static void handle_response(struct mcp *m, const struct ward__rpc_msg *msg)
{
	struct pending *p;
	struct approval *ap = NULL;
	struct ward_error e = {0};
	enum ward_review_decision d;
	const char *action, *dec;
	json_t *res;
	int r;

	if (msg->id.type != WARD_RPC_ID_INT)
		return;
	for (p = m->pending; p; p = p->next)
		if (p->ap && p->ap->asking && p->ap->elicit_id == msg->id.num) {
			ap = p->ap;
			break;
		}
	if (!ap)
		return; /* An answer to a question withdrawn meanwhile, or to nothing. */
	stop_asking(m, ap);
	if (msg->kind == WARD_RPC_ERROR) {
		_cleanup_free_ char *why = NULL;

		if (asprintf(&why, "the client could not ask the person (%.200s)",
			     msg->error_message ? msg->error_message : "an error") < 0)
			why = NULL;
		r = no_answer(m, p, why ? why : "the client could not ask the person", &e);
	} else {
		action = json_string_value(json_object_get(msg->result, "action"));
		dec = json_string_value(
			json_object_get(json_object_get(msg->result, "content"), "decision"));
		if (action && strcmp(action, "accept") == 0 && dec &&
		    ward_review_decision_from_string(dec, &d) >= 0 &&
		    (ap->act.question->decisions & (1u << d)))
			r = ward__approval_answer(ap->step, d, &ap->act, &e);
		else if (action && strcmp(action, "decline") == 0)
			r = ward__approval_answer(ap->step, WARD_REVIEW_DENIED, &ap->act, &e);
		else if (action && strcmp(action, "cancel") == 0)
			r = no_answer(m, p, "the person dismissed the question", &e);
		else
			r = no_answer(m, p,
				      "the client's answer was not one of the decisions offered",
				      &e);
	}
	res = r < 0 ? tool_error(m, "%s", e.message) : approval_drive(m, p);
	if (res)
		pending_finish(m, p, res);
}

/* additional_permissions: {network: {enabled}, file_system: {read: [abs], write: [abs]}}. */
static int parse_additional(const json_t *v, struct ward_approval_request *req, char *why,
			    size_t size)
{
	static const char *const top[] = {"network", "file_system", NULL};
	static const char *const net_keys[] = {"enabled", NULL};
	static const char *const fs_keys[] = {"read", "write", NULL};
	json_t *net = json_object_get(v, "network"), *fs = json_object_get(v, "file_system"), *x;
	size_t i;

	if (!json_is_object(v)) {
		snprintf(why, size, "'additional_permissions' must be an object");
		return -1;
	}
	if (!ward__check_keys(v, top, why, size))
		return -1;
	if (net && !json_is_null(net)) {
		bool on = false;

		if (!json_is_object(net) || !ward__check_keys(net, net_keys, why, size) ||
		    ward__arg_bool(net, "enabled", &on, why, size) < 0) {
			if (!json_is_object(net))
				snprintf(why, size,
					 "'additional_permissions.network' must be an object");
			return -1;
		}
		if (on && ward_approval_request_set_network(req, true) < 0) {
			snprintf(why, size, "out of memory");
			return -1;
		}
	}
	if (!fs || json_is_null(fs))
		return 0;
	if (!json_is_object(fs) || !ward__check_keys(fs, fs_keys, why, size)) {
		if (!json_is_object(fs))
			snprintf(why, size,
				 "'additional_permissions.file_system' must be an object");
		return -1;
	}
	for (int w = 0; w < 2; w++) {
		json_t *list = json_object_get(fs, w ? "write" : "read");

		if (!list || json_is_null(list))
			continue;
		if (!json_is_array(list) || json_array_size(list) > WARD_APPROVAL_MAX_WRITABLE) {
			snprintf(why, size,
				 "'additional_permissions.file_system.%s' must be an array of at "
				 "most %d absolute paths",
				 w ? "write" : "read", WARD_APPROVAL_MAX_WRITABLE);
			return -1;
		}
		json_array_foreach(list, i, x)
		{
			const char *path = json_string_value(x);

			if (!path || path[0] != '/' || strlen(path) >= PATH_MAX) {
				snprintf(why, size,
					 "'additional_permissions.file_system.%s[%zu]' must be an "
					 "absolute path",
					 w ? "write" : "read", i);
				return -1;
			}
			/* Reading is allowed everywhere but the deny-read paths, which no call lifts. */
			if (w && ward_approval_request_add_writable(req, path) < 0) {
				snprintf(why, size, "cannot add the writable path '%.200s'", path);
				return -1;
			}
		}
	}
	return 0;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static json_t *approval_start(struct mcp *m, struct pending *p, const struct ward__exec_args *a,
			      const json_t *args)
{
	const json_t *jprefix = json_object_get(args, "prefix_rule");
	const json_t *jadd = json_object_get(args, "additional_permissions");
	const char *sp = NULL, *just = NULL;
	enum ward_sandbox_permissions perms = WARD_SANDBOX_PERMISSIONS_USE_DEFAULT;
	_cleanup_free_ char *workdir = NULL;
	const char *shell = a->shell && a->shell[0] ? a->shell : ward__sessions_shell(m->sessions);
	struct ward_error e = {0};
	struct approval *ap;
	char why[256];
	const char *argv[4];
	int login = a->login < 0 ? m->cfg->login != 0 : a->login;
	int r;

	ap = calloc(1, sizeof(*ap));
	if (!ap)
		return tool_error(m, "out of memory");
	p->ap = ap;
	if (ward__arg_str(args, "sandbox_permissions", &sp, NULL, why, sizeof(why)) < 0 ||
	    ward__arg_str(args, "justification", &just, NULL, why, sizeof(why)) < 0)
		return tool_error(m, "invalid arguments: %s", why);
	if (sp && ward_sandbox_permissions_from_string(sp, &perms) < 0)
		return tool_error(m,
				  "invalid arguments: 'sandbox_permissions' must be use_default, "
				  "require_escalated or with_additional_permissions");
	if (ward_approval_request_new(&ap->req) < 0 ||
	    ward_approval_request_set_sandbox_permissions(ap->req, perms) < 0 ||
	    ward_approval_request_set_tty(ap->req, a->tty) < 0)
		return tool_error(m, "out of memory");
	if (just && ward_approval_request_set_justification(ap->req, just) < 0)
		return tool_error(m, "invalid arguments: 'justification' is too long");
	if (jprefix && !json_is_null(jprefix)) {
		const char *words[WARD_APPROVAL_MAX_PREFIX + 1] = {0};
		size_t i;
		json_t *w;

		if (!json_is_array(jprefix) || json_array_size(jprefix) > WARD_APPROVAL_MAX_PREFIX)
			return tool_error(m,
					  "invalid arguments: 'prefix_rule' must be an array of at "
					  "most %d strings",
					  WARD_APPROVAL_MAX_PREFIX);
		json_array_foreach(jprefix, i, w)
		{
			words[i] = json_string_value(w);
			if (!words[i] || !words[i][0])
				return tool_error(m,
						  "invalid arguments: 'prefix_rule[%zu]' must be a "
						  "non-empty string",
						  i);
		}
		if (ward_approval_request_set_prefix_rule(ap->req, words) < 0)
			return tool_error(m, "invalid arguments: 'prefix_rule' is too long");
	}
	if (jadd && !json_is_null(jadd) && parse_additional(jadd, ap->req, why, sizeof(why)) < 0)
		return tool_error(m, "invalid arguments: %s", why);
	/* The command's directory: the question shows it and the cache is scoped to it. */
	if (a->workdir && a->workdir[0])
		workdir = a->workdir[0] == '/'
			? strdup(a->workdir)
			: ward__path_join(ward__sessions_cwd(m->sessions), a->workdir);
	else
		workdir = strdup(ward__sessions_cwd(m->sessions));
	if (!workdir || ward__approval_request_set_cwd(ap->req, workdir) < 0)
		return tool_error(m, "out of memory");
	ap->cmd = strdup(a->cmd);
	ap->workdir = dup_or_null(a->workdir);
	ap->shell = dup_or_null(a->shell);
	if (a->until) {
		ap->until = malloc(a->until_len + 1);
		if (ap->until) {
			memcpy(ap->until, a->until, a->until_len);
			ap->until[a->until_len] = '\0';
		}
	}
	if (!ap->cmd || (a->workdir && !ap->workdir) || (a->shell && !ap->shell) ||
	    (a->until && !ap->until))
		return tool_error(m, "out of memory");
	ap->until_len = a->until_len;
	ap->tty = a->tty;
	ap->until_any_output = a->until_any_output;
	ap->yield_ms = a->yield_ms;
	ap->max_tokens = a->max_output_tokens;
	ap->login = a->login;
	argv[0] = shell;
	argv[1] = login ? "-lc" : "-c";
	argv[2] = a->cmd;
	argv[3] = NULL;
	r = ward__approval_begin(m->cfg->approver, m->cfg->policy, argv, ap->req, &ap->step,
				 &ap->act, &e);
	if (r < 0)
		return tool_error(m, "%s", e.message);
	return approval_drive(m, p);
}

/* Ending: questions still open are withdrawn; their commands are not run. */
static void approvals_abandon(struct mcp *m)
{
	struct pending *p = m->pending, *next;

	for (; p; p = next) {
		struct ward_error e = {0};
		json_t *res;

		next = p->next;
		if (!p->ap || !p->ap->asking)
			continue;
		withdraw_question(m, p->ap, "ward is shutting down");
		res = no_answer(m, p, "ward is shutting down", &e) < 0
			? tool_error(m, "%s", e.message)
			: approval_drive(m, p);
		if (res)
			pending_finish(m, p, res);
	}
}

static json_t *call_list(struct mcp *m, const json_t *args)
{
	static const char *const keys[] = {NULL};
	json_t *list;
	char why[160], *text;

	if (!ward__check_keys(args, keys, why, sizeof(why)))
		return tool_error(m, "invalid arguments: %s", why);
	list = ward__sessions_list(m->sessions);
	if (!list)
		return tool_error(m, "out of memory");
	text = json_array_size(list) == 0 ? strdup("No sessions are open.")
					  : json_dumps(list, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	return tool_result(m, text, json_pack("{s:o}", "sessions", list), false);
}

static void handle_tools_call(struct mcp *m, const struct ward__rpc_msg *msg)
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
		send_error(m, &msg->id, WARD_RPC_INVALID_PARAMS, "tools/call needs a tool name");
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
	else {
		char why[128];

		snprintf(why, sizeof(why), "Unknown tool: %.64s", n);
		send_error(m, &msg->id, WARD_RPC_INVALID_PARAMS, why);
		return;
	}
	if (!args || json_is_null(args))
		args = empty = json_object();
	if (!json_is_object(args)) {
		send_result(m, &msg->id, tool_error(m, "invalid arguments: expected an object"));
		return;
	}
	if (tool == TOOL_LIST) {
		send_result(m, &msg->id, call_list(m, args));
		json_decref(empty);
		return;
	}
	tok = json_object_get(json_object_get(params, "_meta"), "progressToken");
	if (tok && json_is_string(tok) && json_string_length(tok) > WARD_MCP_MAX_PROGRESS_TOKEN) {
		json_decref(empty);
		send_error(m, &msg->id, WARD_RPC_INVALID_PARAMS,
			   "_meta.progressToken is longer than 1024 bytes");
		return;
	}
	if (m->draining) {
		json_decref(empty);
		send_result(m, &msg->id, tool_error(m, "ward is shutting down"));
		return;
	}
	/* Calls the session layer still holds count too (a cancelled kill until it ends). */
	if (m->n_pending >= WARD_MCP_MAX_IN_FLIGHT ||
	    ward__sessions_calls_in_flight(m->sessions) >= WARD_MCP_MAX_IN_FLIGHT) {
		json_decref(empty);
		send_result(m, &msg->id,
			    tool_error(m,
				       "too many tool calls in flight (%d): wait for some to "
				       "return",
				       WARD_MCP_MAX_IN_FLIGHT));
		return;
	}
	p = pending_new(m, msg, params, tool);
	if (!p) {
		json_decref(empty);
		send_error(m, &msg->id, WARD_RPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	res = tool == TOOL_EXEC	     ? call_exec(m, p, args)
		: tool == TOOL_WRITE ? call_write(m, p, args)
				     : call_kill(m, p, args);
	json_decref(empty);
	if (res) {
		/* Refused at once: answer now; nothing was started. */
		send_result(m, &p->id, res);
		pending_free(m, p);
		return;
	}
	if (p->progress_token)
		ward__sessions_set_progress(m->sessions, p->call, progress_interval_ms(m),
					    on_progress, p);
}

/* ------------------------------------------------------------ lifecycle */

static void handle_initialize(struct mcp *m, const struct ward__rpc_msg *msg)
{
	json_t *v = msg->params ? json_object_get(msg->params, "protocolVersion") : NULL;
	const char *want = json_is_string(v) ? json_string_value(v) : NULL;
	json_t *res;

	if (!want) {
		send_error(m, &msg->id, WARD_RPC_INVALID_PARAMS,
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
	send_result(m, &msg->id, res);
}

static void handle_cancelled(struct mcp *m, const struct ward__rpc_msg *msg)
{
	json_t *rid = msg->params ? json_object_get(msg->params, "requestId") : NULL;

	if (!rid)
		return;
	for (struct pending *p = m->pending; p; p = p->next)
		if (id_matches(&p->id, rid)) {
			/* A question of ours for it is withdrawn (and logged as unanswered). */
			if (p->ap && p->ap->asking) {
				struct ward_error e = {0};

				withdraw_question(m, p->ap, "the tool call was cancelled");
				no_answer(m, p, "the tool call was cancelled", &e);
			}
			/* No answer for a cancelled request; a session it started stays, as in Codex. */
			if (p->call)
				ward__sessions_cancel(m->sessions, p->call);
			pending_free(m, p);
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
		handle_response(m, msg); /* to a question of ours */
		return;
	}
	if (msg->params && !json_is_object(msg->params)) {
		send_error(m, &msg->id, WARD_RPC_INVALID_PARAMS, "params must be an object");
		return;
	}
	if (strcmp(msg->method, "initialize") == 0)
		handle_initialize(m, msg);
	else if (strcmp(msg->method, "ping") == 0)
		send_result(m, &msg->id, json_object());
	else if (!m->initialized)
		send_error(m, &msg->id, WARD_RPC_INVALID_REQUEST,
			   "the server is not initialized: send initialize first");
	else if (strcmp(msg->method, "tools/list") == 0)
		send_result(m, &msg->id, tools_list(m));
	else if (strcmp(msg->method, "tools/call") == 0)
		handle_tools_call(m, msg);
	else {
		char why[WARD_RPC_MAX_METHOD_LEN + 32];

		snprintf(why, sizeof(why), "Method not found: %s", msg->method);
		send_error(m, &msg->id, WARD_RPC_METHOD_NOT_FOUND, why);
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

static void begin_shutdown(struct mcp *m)
{
	if (m->shutting_down)
		return;
	m->shutting_down = true;
	ward__loop_quit(m->loop, 0);
}

static void on_drain_timeout(struct ward__loop *l, void *userdata)
{
	struct mcp *m = userdata;

	m->drain_timer = 0;
	begin_shutdown(m);
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

static void approvals_abandon(struct mcp *m);

static void begin_drain(struct mcp *m, uint64_t grace_ns)
{
	if (m->draining) {
		/* A signal while ending: no more grace; a second one: no more waiting. */
		if (grace_ns == 0 && m->killing) {
			begin_shutdown(m);
		} else if (grace_ns == 0) {
			ward__loop_del_timer(m->loop, m->drain_timer);
			m->drain_timer = 0;
			on_grace_over(m->loop, m);
		}
		return;
	}
	m->draining = true;
	/* Nobody will answer a question now: those commands are not run. */
	approvals_abandon(m);
	if (m->n_pending == 0) {
		begin_shutdown(m);
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
	begin_shutdown(userdata);
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
	struct ward__sessions_config sc = {
		.policy = cfg->policy,
		.env = cfg->env,
		.max_sessions = cfg->max_sessions,
		.shell = cfg->shell,
		.login = cfg->login,
	};
	struct mcp m = {.cfg = cfg};
	int r;

	r = ward__rpc_codec_init(&m.codec, WARD_RPC_JSONRPC2, &rl);
	if (r < 0)
		return ward__error(err, r, "mcp", "cannot set up the JSON-RPC codec: %m");
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
		pending_free(&m, m.pending);
	}
	ward__sessions_free(m.sessions);
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
