/* SPDX-License-Identifier: MIT */
/*
 * Approvals of exec_command (see mcpserver.h and docs/approvals.md): the
 * approval step machine driven from the loop, its questions asked through
 * MCP elicitation, the answers read, the runs and the retry outside the
 * sandbox.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/loop.h"
#include "basic/util.h"
#include "approval/approval.h"
#include "mcp/mcpserver.h"
#include "rpc/args.h"
#include "rpc/jsonrpc.h"
#include "session/session.h"

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
 * one_line: newlines and tabs too (a path: a name the command chose must not
 * begin lines of its own, "Writable this once:" and all).
 */
static char *printable_as(const char *s, size_t max, bool one_line)
{
	struct ward__buf b;
	size_t n = strlen(s);

	ward__buf_init(&b, max * 6 + 16);
	for (size_t i = 0; i < n && b.len < max * 6; i++) {
		unsigned char c = (unsigned char)s[i];

		if (((c == '\n' || c == '\t') && !one_line) || (c >= 0x20 && c < 0x7f)) {
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

static char *printable(const char *s, size_t max)
{
	return printable_as(s, max, false);
}

static char *printable_path(const char *s, size_t max)
{
	return printable_as(s, max, true);
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
	_cleanup_free_ char *cwd = printable_path(q->cwd ? q->cwd : "", 1024);
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
	ward__buf_printf(
		&b, "%s\n\n$ %s\n(in %s)\n\nWhy ward asks: %s\n",
		q->unprotect	   ? "The sandbox kept this command from changing a protected "
				     "path. Run it again, in the sandbox, with that path "
				     "writable, this once?"
			: q->retry ? "The sandbox refused this command. Run it again OUTSIDE the "
				     "sandbox?"
			: q->unsandboxed ? "Allow this command to run OUTSIDE the sandbox "
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
		_cleanup_free_ char *sh = printable_path(ap->shell, PATH_MAX);

		incomplete |= !sh ||
			ward__buf_printf(&b, "Run by the agent's choice of program: %s\n", sh) < 0;
	}
	/*
	 * What a widened sandbox adds, path by path and uncut: the person
	 * approves these, not "more paths". A question that cannot show them
	 * all is not asked.
	 */
	for (size_t i = 0; ap->req && i < ap->req->n_writable; i++) {
		_cleanup_free_ char *w = printable_path(ap->req->writable[i], PATH_MAX);

		incomplete |= !w ||
			ward__buf_printf(&b, "%s  %s\n", i == 0 ? "Writable as well:\n" : "", w) <
				0;
	}
	if (ap->req && ap->req->network)
		incomplete |= ward__buf_printf(&b, "With network access.\n") < 0;
	/* The paths approving makes writable, each in full, as for a widening. */
	for (size_t i = 0; q->unprotect && q->unprotect[i]; i++) {
		_cleanup_free_ char *u = printable_path(q->unprotect[i], PATH_MAX);

		incomplete |= !u ||
			ward__buf_printf(&b, "%s  %s\n", i == 0 ? "Writable this once:\n" : "", u) <
				0;
	}
	if (just)
		ward__buf_printf(&b, "The agent says: %s\n", just);
	for (size_t i = 0; i < q->n_denials && i < 10; i++) {
		_cleanup_free_ char *t = printable_path(q->denials[i].target, 512);

		ward__buf_printf(&b, "%s%s %s%s%s%s%s%s\n",
				 i == 0 ? "\nThe sandbox refused:\n" : "", q->denials[i].access,
				 t ? t : "?",
				 q->denials[i].syscall && q->denials[i].syscall[0] ? " by " : "",
				 q->denials[i].syscall ? q->denials[i].syscall : "",
				 q->denials[i].reason ? " (" : "",
				 q->denials[i].reason ? q->denials[i].reason : "",
				 q->denials[i].reason ? ")" : "");
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
int ward__mcp_no_answer(struct mcp *m, struct pending *p, const char *why, struct ward_error *e)
{
	struct approval *ap = p->ap;

	stop_asking(m, ap);
	return ward__approval_no_answer(ap->step, why, &ap->act, e);
}

/* Tells the client a question of ours is moot (its call went, or it took too long). */
void ward__mcp_withdraw_question(struct mcp *m, struct approval *ap, const char *why)
{
	if (!ap->asking)
		return;
	ward__mcp_send_notification(
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
	res = ward__mcp_tool_result(m, ward__session_reply_text(r), ward__session_reply_json(r),
				    false);
	if (r->changes)
		ward__mcp_changes_note_run(m, r->changes);
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
		return ward__mcp_tool_error(
			m,
			"Not run: %s. The person stopped this: do not run anything "
			"else; wait for their instructions.",
			act->reason);
	case WARD_APPROVAL_DENIED:
		if (ap->asked_reason && strstr(act->reason, "nobody could be asked") == NULL &&
		    strncmp(act->reason, "not approved: ", 14) == 0)
			return ward__mcp_tool_error(
				m,
				"Not run: it needs the person's approval (%s) and %s. Ask the "
				"person in your reply whether to run `%s`%s; they can run it "
				"themselves, approve it in a client that can ask them, or allow it "
				"with a rule (see ward's docs/rules.md).",
				ap->asked_reason, act->reason + 14, cmd ? cmd : ap->cmd,
				ap->asked_unsandboxed ? " outside the sandbox" : "");
		return ward__mcp_tool_error(
			m,
			"Not run: %s. Do not try it again as it is; ask the person how "
			"to proceed.",
			act->reason);
	case WARD_APPROVAL_REJECTED:
	case WARD_APPROVAL_RAN_SANDBOXED:
	case WARD_APPROVAL_RAN_UNSANDBOXED:
		break;
	}
	return ward__mcp_tool_error(m, "Not run: %s", act->reason);
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
		/* Outside the sandbox nothing can be held: the run is only not recorded. */
		.hold = ap->act.sandboxed ? ap->hold : -1,
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
	if (r >= 0)
		ward__mcp_audit_start(m, p, a.cmd, a.workdir, ap->act.sandboxed);
	/*
	 * A run that starts after a question has no session call when the
	 * tools/call arrives: its progress is attached here, or the client
	 * that asked for progress gets none.
	 */
	if (r >= 0 && p->progress_token)
		ward__sessions_set_progress(m->sessions, p->call, ward__mcp_progress_interval_ms(m),
					    ward__mcp_on_progress, p);
	return r;
}

/* The questions of ours the client has not answered yet. */
static size_t questions_waiting(const struct mcp *m)
{
	size_t n = 0;

	for (const struct pending *p = m->pending; p; p = p->next)
		if (p->ap && p->ap->asking)
			n++;
	return n;
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
				r = ward__mcp_no_answer(m, p, "ward is shutting down", &e);
			else if (!m->elicitation)
				r = ward__mcp_no_answer(
					m, p,
					"this MCP client cannot ask the person (it does not "
					"support elicitation)",
					&e);
			else if (questions_waiting(m) >= WARD_MCP_MAX_QUESTIONS)
				r = ward__mcp_no_answer(
					m, p,
					"16 questions already wait for the person's "
					"answer; ask again once they are answered",
					&e);
			else if (elicit(m, p) < 0)
				r = ward__mcp_no_answer(
					m, p, "the question could not be sent to the client", &e);
			else
				return NULL;
			break;
		case WARD__APPROVAL_RUN:
			if (approval_run(m, p, &e) < 0) {
				if (ap->reply)
					return approval_reply_result(m, ap);
				return ward__mcp_tool_error(m, "%s", e.message);
			}
			return NULL;
		case WARD__APPROVAL_REJECT:
			return approval_rejected(m, p);
		case WARD__APPROVAL_DONE:
		default:
			if (!ap->reply)
				return ward__mcp_tool_error(m, "the command's result was lost");
			return approval_reply_result(m, ap);
		}
		if (r < 0) {
			if (ap->reply)
				return approval_reply_result(m, ap);
			return ward__mcp_tool_error(m, "%s", e.message);
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
			ward__mcp_pending_finish(m, p, approval_reply_result(m, ap));
			return;
		}
		res = r ? ward__mcp_tool_error(m, "%s", r->error)
			: ward__mcp_tool_error(m, "out of memory building the result");
		ward__session_reply_free(r);
		ward__mcp_pending_finish(m, p, res);
		return;
	}
	ward__session_reply_free(ap->reply);
	ap->reply = r;
	if (!r->exited) {
		/* Still running after its window: a session now; the approval is over. */
		ward__mcp_pending_finish(m, p, approval_reply_result(m, ap));
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
		ward__mcp_pending_finish(m, p, approval_reply_result(m, ap));
		return;
	}
	res = approval_drive(m, p);
	if (res)
		ward__mcp_pending_finish(m, p, res);
}

static void on_elicit_timeout(struct ward__loop *l, void *userdata)
{
	struct pending *p = userdata;
	struct mcp *m = p->m;
	struct ward_error e = {0};
	json_t *res;

	p->ap->elicit_timer = 0;
	ward__mcp_withdraw_question(m, p->ap, "no answer in time");
	if (ward__mcp_no_answer(m, p, "the person did not answer within 10 minutes", &e) < 0) {
		ward__mcp_pending_finish(m, p, ward__mcp_tool_error(m, "%s", e.message));
		return;
	}
	res = approval_drive(m, p);
	if (res)
		ward__mcp_pending_finish(m, p, res);
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
	uint64_t interval = ward__mcp_progress_interval_ms(p->m);

	ap->ask_progress_timer = 0;
	ward__mcp_send_progress(p, (ward__now_ns() - ap->asked_at_ns) / 1000000,
				WARD_MCP_ELICIT_TIMEOUT_NS / 1000000,
				"waiting for the person's answer");
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
		r = ward__loop_add_timer(
			m->loop, ap->asked_at_ns + ward__mcp_progress_interval_ms(m) * 1000000,
			on_ask_progress, p, &ap->ask_progress_timer);
		if (r < 0)
			return r;
	}
	return ward__loop_add_timer(m->loop, ap->asked_at_ns + WARD_MCP_ELICIT_TIMEOUT_NS,
				    on_elicit_timeout, p, &ap->elicit_timer);
}

/* The client's answer to one of our questions. */
void ward__mcp_handle_response(struct mcp *m, const struct ward__rpc_msg *msg)
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
	if (!ap) {
		/* A network question's answer, or one to a question withdrawn meanwhile, or to nothing. */
		ward__mcp_net_response(m, msg);
		return;
	}
	stop_asking(m, ap);
	if (msg->kind == WARD_RPC_ERROR) {
		_cleanup_free_ char *why = NULL;

		if (asprintf(&why, "the client could not ask the person (%.200s)",
			     msg->error_message ? msg->error_message : "an error") < 0)
			why = NULL;
		r = ward__mcp_no_answer(m, p, why ? why : "the client could not ask the person",
					&e);
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
			r = ward__mcp_no_answer(m, p, "the person dismissed the question", &e);
		else
			r = ward__mcp_no_answer(
				m, p, "the client's answer was not one of the decisions offered",
				&e);
	}
	res = r < 0 ? ward__mcp_tool_error(m, "%s", e.message) : approval_drive(m, p);
	if (res)
		ward__mcp_pending_finish(m, p, res);
}

/* additional_permissions: {network: {enabled}, file_system: {read: [abs], write: [abs]}}. */
static int parse_additional(const json_t *v, struct ward_approval_request *req, char *why,
			    size_t size)
{
	json_t *net = json_object_get(v, "network"), *fs = json_object_get(v, "file_system"), *x;
	size_t i;

	if (!json_is_object(v)) {
		snprintf(why, size, "'additional_permissions' must be an object");
		return -1;
	}
	if (net && !json_is_null(net)) {
		bool on = false;

		if (!json_is_object(net) || ward__arg_bool(net, "enabled", &on, why, size) < 0) {
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
	if (!json_is_object(fs)) {
		snprintf(why, size, "'additional_permissions.file_system' must be an object");
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

json_t *ward__mcp_approval_start(struct mcp *m, struct pending *p, const struct ward__exec_args *a,
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
		return ward__mcp_tool_error(m, "out of memory");
	p->ap = ap;
	ap->hold = a->hold;
	if (ward__arg_str(args, "sandbox_permissions", &sp, NULL, why, sizeof(why)) < 0 ||
	    ward__arg_str(args, "justification", &just, NULL, why, sizeof(why)) < 0)
		return ward__mcp_tool_error(m, "invalid arguments: %s", why);
	if (sp && ward_sandbox_permissions_from_string(sp, &perms) < 0)
		return ward__mcp_tool_error(
			m,
			"invalid arguments: 'sandbox_permissions' must be use_default, "
			"require_escalated or with_additional_permissions");
	if (ward_approval_request_new(&ap->req) < 0 ||
	    ward_approval_request_set_sandbox_permissions(ap->req, perms) < 0 ||
	    ward_approval_request_set_tty(ap->req, a->tty) < 0)
		return ward__mcp_tool_error(m, "out of memory");
	if (just && ward_approval_request_set_justification(ap->req, just) < 0)
		return ward__mcp_tool_error(m, "invalid arguments: 'justification' is too long");
	if (jprefix && !json_is_null(jprefix)) {
		const char *words[WARD_APPROVAL_MAX_PREFIX + 1] = {0};
		size_t i;
		json_t *w;

		if (!json_is_array(jprefix) || json_array_size(jprefix) > WARD_APPROVAL_MAX_PREFIX)
			return ward__mcp_tool_error(
				m,
				"invalid arguments: 'prefix_rule' must be an array of at "
				"most %d strings",
				WARD_APPROVAL_MAX_PREFIX);
		json_array_foreach(jprefix, i, w)
		{
			words[i] = json_string_value(w);
			if (!words[i] || !words[i][0])
				return ward__mcp_tool_error(
					m,
					"invalid arguments: 'prefix_rule[%zu]' must be a "
					"non-empty string",
					i);
		}
		if (ward_approval_request_set_prefix_rule(ap->req, words) < 0)
			return ward__mcp_tool_error(m,
						    "invalid arguments: 'prefix_rule' is too long");
	}
	if (jadd && !json_is_null(jadd) && parse_additional(jadd, ap->req, why, sizeof(why)) < 0)
		return ward__mcp_tool_error(m, "invalid arguments: %s", why);
	/* The command's directory: the question shows it and the cache is scoped to it. */
	if (a->workdir && a->workdir[0])
		workdir = a->workdir[0] == '/'
			? strdup(a->workdir)
			: ward__path_join(ward__sessions_cwd(m->sessions), a->workdir);
	else
		workdir = strdup(ward__sessions_cwd(m->sessions));
	if (!workdir || ward__approval_request_set_cwd(ap->req, workdir) < 0)
		return ward__mcp_tool_error(m, "out of memory");
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
		return ward__mcp_tool_error(m, "out of memory");
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
		return ward__mcp_tool_error(m, "%s", e.message);
	return approval_drive(m, p);
}

/* Ending: questions still open are withdrawn; their commands are not run. */
void ward__mcp_approvals_abandon(struct mcp *m)
{
	struct pending *p = m->pending, *next;

	for (; p; p = next) {
		struct ward_error e = {0};
		json_t *res;

		next = p->next;
		if (!p->ap || !p->ap->asking)
			continue;
		ward__mcp_withdraw_question(m, p->ap, "ward is shutting down");
		res = ward__mcp_no_answer(m, p, "ward is shutting down", &e) < 0
			? ward__mcp_tool_error(m, "%s", e.message)
			: approval_drive(m, p);
		if (res)
			ward__mcp_pending_finish(m, p, res);
	}
}
