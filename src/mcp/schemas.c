/* SPDX-License-Identifier: MIT */
/*
 * tools/list (see mcpserver.h): the tools, their input and output schemas
 * and annotations, as the negotiated revision has them.
 */
#include "mcp/mcpserver.h"

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

/*
 * The result of exec_command, write_stdin and kill_session, as the model
 * reads it (session/reply.c says why it is laid out so).
 */
static json_t *reply_output_schema(void)
{
	return json_pack(
		"{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s},"
		" s:{s:[s,s]}, s:{s:[s,s], s:{s:s}}, s:{s:s}, s:{s:s}, s:{s:s}}, s:[s,s]}",
		"type", "object", "properties", "chunk_id", "type", "string", "wall_time_seconds",
		"type", "number", "exit_code", "type", "integer", "session_id", "type", "integer",
		"original_token_count", "type", "integer", "truncated", "type", "boolean", "note",
		"type", "string", "killed", "type", "boolean", "sandbox_denied", "type", "boolean",
		"string", "denials", "type", "array", "string", "items", "type", "string",
		"denials_dropped", "type", "integer", "changes", "type", "object", "output", "type",
		"string", "required", "wall_time_seconds", "output");
}

static json_t *annotations(const char *title, bool read_only, bool destructive, bool idempotent,
			   bool open_world)
{
	return json_pack("{s:s, s:b, s:b, s:b, s:b}", "title", title, "readOnlyHint", read_only,
			 "destructiveHint", destructive, "idempotentHint", idempotent,
			 "openWorldHint", open_world);
}

/* Review and undo (changes.c): a run of this server, by number; the latest fitting one without. */
static json_t *run_prop(const char *which)
{
	return prop("integer", which);
}

static void add_changes_tool(struct mcp *m, json_t *tools, const char *name, const char *title,
			     const char *description, json_t *props, bool read_only,
			     bool destructive)
{
	json_t *t = json_pack("{s:s, s:s, s:s, s:{s:s, s:o}, s:o}", "name", name, "title", title,
			      "description", description, "inputSchema", "type", "object",
			      "properties", props, "annotations",
			      annotations(title, read_only, destructive, false, false));

	if (m->structured)
		json_object_set_new(t, "outputSchema", json_pack("{s:s}", "type", "object"));
	json_array_append_new(tools, t);
}

static void add_changes_tools(struct mcp *m, json_t *tools)
{
	json_t *props;

	add_changes_tool(m, tools, "changes_list", "List changed runs",
			 "Lists the runs of this server that changed the workspace, newest first: "
			 "run number, state (held, applied, discarded, undone), counts of added, "
			 "modified and deleted files, and the command.",
			 json_object(), true, false);
	props = json_object();
	json_object_set_new(props, "run", run_prop("The run (default: this server's latest run)."));
	json_object_set_new(props, "diff",
			    prop("boolean", "Also return the unified diff (git diff)."));
	json_object_set_new(props, "max_diff_bytes",
			    prop("integer", "Most bytes of diff to return (default 65536)."));
	add_changes_tool(m, tools, "changes_show", "Show a run's changes",
			 "Shows what a run changed: every file added, modified, deleted, renamed "
			 "or given another mode, with sizes and whether it is text or binary, what "
			 "was refused (protected paths) and what cannot be undone; with diff, the "
			 "diff.",
			 props, true, false);
	props = json_object();
	json_object_set_new(props, "run",
			    run_prop("The held run (default: this server's latest held run)."));
	json_object_set_new(
		props, "side",
		json_pack("{s:s, s:[s,s], s:s}", "type", "string", "enum", "run", "host",
			  "description",
			  "When the host changed a file the run also changed: \"run\" (the run's "
			  "version wins) or \"host\" (the host's stays). Without it such a "
			  "conflict applies nothing."));
	add_changes_tool(
		m, tools, "changes_apply", "Apply held changes",
		m->cfg->approver
			? "Asks the person to apply the held changes of a run (exec_command "
			  "with hold) to the workspace; they see the summary and decide."
			: "Applies the held changes of a run (exec_command with hold) to the "
			  "workspace, each file atomically; changes_undo takes them back.",
		props, false, true);
	props = json_object();
	json_object_set_new(props, "run",
			    run_prop("The held run (default: this server's latest held run)."));
	add_changes_tool(m, tools, "changes_discard", "Discard held changes",
			 "Drops the held changes of a run: the workspace stays as it is.", props,
			 false, true);
	props = json_object();
	json_object_set_new(props, "run",
			    run_prop("The applied run (default: this server's latest)."));
	json_object_set_new(props, "partial",
			    prop("boolean",
				 "Undo what can be undone and leave the rest (files changed since, "
				 "files whose earlier content was not kept)."));
	if (!m->cfg->approver)
		json_object_set_new(props, "force",
				    prop("boolean",
					 "Bring the earlier content back even over files changed "
					 "since the run."));
	add_changes_tool(m, tools, "changes_undo", "Undo a run's changes",
			 "Takes back what a run changed in the workspace: every file back to its "
			 "bytes and mode before the run, files it created removed, files it "
			 "deleted restored. Nothing is undone when a file was changed again since "
			 "(unless partial), and the result says what could not be.",
			 props, false, true);
}

json_t *ward__mcp_tools_list(struct mcp *m)
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
	if (m->cfg->changes)
		json_object_set_new(
			props, "hold",
			prop("boolean",
			     "Hold the command's changes to the workspace for review: the command "
			     "sees its own writes, the host gets none of them until changes_apply "
			     "(or changes_discard drops them). Default: the server's (changes are "
			     "recorded and applied at the end, for changes_undo)."));
	if (m->cfg->approver)
		add_approval_props(props);
	t = json_pack(
		"{s:s, s:s, s:s, s:{s:s, s:o, s:[s]}, s:o}", "name", "exec_command", "title",
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
		"annotations", annotations("Run a command in a sandbox", false, true, false, net));
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
		"{s:s, s:s, s:s, s:{s:s, s:o, s:[s]}, s:o}", "name", "write_stdin", "title",
		"Write to a session", "description",
		"Writes characters to a session that exec_command left running and returns the "
		"output produced since the previous call on it. With empty chars it polls: it "
		"waits up to yield_time_ms for new output and returns early when the process "
		"exits. Typing text needs a session started with tty=true; \"\\u0003\" "
		"interrupts any session. When the result says the process exited, the session "
		"is gone.",
		"inputSchema", "type", "object", "properties", props, "required", "session_id",
		"annotations", annotations("Write to a session", false, true, false, net));
	if (m->structured)
		json_object_set_new(t, "outputSchema", reply_output_schema());
	json_array_append_new(tools, t);

	/* list_sessions */
	t = json_pack("{s:s, s:s, s:s, s:{s:s, s:{}}, s:o}", "name", "list_sessions", "title",
		      "List sessions", "description",
		      "Lists the sessions still open: session_id, command, working directory, "
		      "whether it is running or has exited (with its exit code), and how many "
		      "bytes of output wait to be read with write_stdin.",
		      "inputSchema", "type", "object", "properties", "annotations",
		      annotations("List sessions", true, false, true, false));
	if (m->structured)
		json_object_set_new(t, "outputSchema",
				    json_pack("{s:s, s:{s:{s:s, s:{s:s}}}, s:[s]}", "type",
					      "object", "properties", "sessions", "type", "array",
					      "items", "type", "object", "required", "sessions"));
	json_array_append_new(tools, t);

	/* kill_session */
	props = json_object();
	json_object_set_new(props, "session_id", prop("integer", "The session to end."));
	t = json_pack("{s:s, s:s, s:s, s:{s:s, s:o, s:[s]}, s:o}", "name", "kill_session", "title",
		      "End a session", "description",
		      "Ends a session: every process in its sandbox is killed. Returns the output "
		      "it printed since the last call and its exit status.",
		      "inputSchema", "type", "object", "properties", props, "required",
		      "session_id", "annotations",
		      annotations("End a session", false, true, true, false));
	if (m->structured)
		json_object_set_new(t, "outputSchema", reply_output_schema());
	json_array_append_new(tools, t);
	if (m->cfg->changes)
		add_changes_tools(m, tools);
	return json_pack("{s:o}", "tools", tools);
}
