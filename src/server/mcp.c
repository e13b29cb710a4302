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
#include "exec/exec.h"
#include "rpc/jsonrpc.h"
#include "server/args.h"
#include "server/lineconn.h"
#include "server/mcp.h"
#include "session/session.h"
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

/* A tools/call waiting for its session call. */
struct pending {
	struct pending *prev, *next;
	struct mcp *m;
	struct ward__rpc_id id; /* str owned */
	uint64_t call;
	enum tool tool;
	json_t *progress_token;
	uint64_t last_progress;
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

static void pending_free(struct mcp *m, struct pending *p)
{
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

static void on_progress(uint64_t elapsed_ms, uint64_t total_ms, uint64_t bytes, void *userdata)
{
	struct pending *p = userdata;
	json_t *params;

	char msg[96];

	/* progress must increase from one notification to the next. */
	if (elapsed_ms <= p->last_progress)
		elapsed_ms = p->last_progress + 1;
	p->last_progress = elapsed_ms;
	snprintf(msg, sizeof(msg), "waiting for the command; %llu bytes of output so far",
		 (unsigned long long)bytes);
	params = json_pack("{s:O, s:I, s:I, s:s}", "progressToken", p->progress_token, "progress",
			   (json_int_t)elapsed_ms, "total", (json_int_t)total_ms, "message", msg);
	if (!params)
		return;
	send_notification(p->m, "notifications/progress", params);
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

static json_t *call_exec(struct mcp *m, struct pending *p, const json_t *args)
{
	static const char *const keys[] = {
		"cmd",	 "workdir", "tty",   "yield_time_ms",	 "max_output_tokens",
		"shell", "login",   "until", "until_any_output", NULL};
	struct ward__exec_args a = {.yield_ms = -1, .max_output_tokens = -1, .login = -1};
	struct ward_error e = {0};
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
	    (q = ward__arg_bool(args, "login", &login, why, sizeof(why))) < 0)
		return tool_error(m, "invalid arguments: %s", why);
	if (!a.cmd)
		return tool_error(m, "invalid arguments: 'cmd' is required");
	if (q > 0)
		a.login = login;
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
		ward__sessions_set_progress(m->sessions, p->call,
					    (uint64_t)(m->cfg->progress_interval_ms > 0
							       ? m->cfg->progress_interval_ms
							       : 1000),
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
			/* No answer for a cancelled request; a session it started stays, as in Codex. */
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
	if (msg->kind != WARD_RPC_REQUEST)
		return; /* A response: ward sends no requests of its own here. */
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
