/* SPDX-License-Identifier: MIT */
/*
 * Review and undo in `ward mcp` (see mcpserver.h, src/changes): the tools
 * changes_list, changes_show, changes_apply, changes_discard and
 * changes_undo, on the runs this server made (recorded, or held with
 * exec_command's hold).
 *
 * DESIGN: only this server's runs. The journal is the person's, shared by
 * every ward of theirs: a model must not apply a run the person held for
 * their own review (`ward run --hold`), nor read another workspace's
 * before-images. With approvals on (-a), applying held changes is put to
 * the person through elicitation, the run's summary in the question: held
 * changes are what the person had not let onto the host yet. Without a
 * client that can ask, the apply is refused and the model told to ask the
 * person to run `ward changes apply RUN`.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/cleanup.h"
#include "basic/loop.h"
#include "basic/util.h"
#include "changes/changes.h"
#include "mcp/mcpserver.h"
#include "rpc/args.h"
#include "rpc/jsonrpc.h"
#include "transport/lineconn.h"

#define CHQ_TIMEOUT_NS (600ULL * 1000000000)
#define CHQ_MAX 16
#define DIFF_MAX_DEFAULT ((int64_t)64 << 10)
#define DIFF_MAX ((int64_t)1 << 20)

/* An apply waiting for the person (elicitation). */
struct chq {
	struct chq *next;
	struct mcp *m;
	int64_t elicit_id;
	struct ward__rpc_id call; /* the tools/call to answer */
	uint64_t run;
	enum ward__side side;
	uint64_t timer;
};

void ward__mcp_changes_note_run(struct mcp *m, const json_t *changes)
{
	json_int_t id = json_integer_value(json_object_get(changes, "run"));

	if (id <= 0)
		return;
	for (size_t i = 0; i < m->n_runs; i++)
		if (m->runs[i] == (uint64_t)id)
			return;
	/* The oldest is forgotten first: the journal drops old runs too. */
	if (m->n_runs == WARD_MCP_MAX_RUNS) {
		memmove(m->runs, m->runs + 1, (WARD_MCP_MAX_RUNS - 1) * sizeof(*m->runs));
		m->n_runs--;
	}
	m->runs[m->n_runs++] = (uint64_t)id;
}

static bool ours(const struct mcp *m, uint64_t id)
{
	for (size_t i = 0; i < m->n_runs; i++)
		if (m->runs[i] == id)
			return true;
	return false;
}

/* A run of this server, by its number or the latest one (of a state, when want). */
static json_t *open_run(struct mcp *m, const json_t *args, unsigned want, bool lock,
			struct ward__changes_run **ret)
{
	struct ward_error e = {0};
	int64_t id = -1;
	char why[160], idbuf[24];

	if (!m->cfg->changes)
		return ward__mcp_tool_error(m,
					    "this server keeps no journal of changes (it was "
					    "started with --record off)");
	if (ward__arg_int(args, "run", 1, INT64_MAX, &id, why, sizeof(why)) < 0)
		return ward__mcp_tool_error(m, "invalid arguments: %s", why);
	if (id < 0) {
		for (size_t i = m->n_runs; i-- > 0 && id < 0;) {
			struct ward__changes_run *run = NULL;

			snprintf(idbuf, sizeof(idbuf), "%" PRIu64, m->runs[i]);
			if (ward__journal_open(m->cfg->changes, idbuf, false, &run, NULL) < 0)
				continue;
			if (!want || (want & (1u << run->state)))
				id = (int64_t)m->runs[i];
			ward__changes_run_free(run);
		}
		if (id < 0)
			return ward__mcp_tool_error(m,
						    "no run of this server fits (changes_list "
						    "lists them)");
	}
	if (!ours(m, (uint64_t)id))
		return ward__mcp_tool_error(m,
					    "run %" PRId64 " is not one of this server's runs "
					    "(changes_list lists them)",
					    id);
	snprintf(idbuf, sizeof(idbuf), "%" PRId64, id);
	if (ward__journal_open(m->cfg->changes, idbuf, lock, ret, &e) < 0)
		return ward__mcp_tool_error(m, "%s", e.message);
	return NULL;
}

static char *summary(const struct ward__changes_run *run, size_t lines)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	ward__changes_print(run, f, lines);
	fclose(f);
	return text;
}

static json_t *result_of(struct mcp *m, struct ward__changes_run *run, const char *line)
{
	_cleanup_free_ char *sum = summary(run, 200);
	char *text = NULL;

	if (asprintf(&text, "%s%s%s", line ? line : "", line ? "\n" : "", sum ? sum : "") < 0)
		text = NULL;
	return ward__mcp_tool_result(m, text, ward__changes_to_json(run, 500), false);
}

static json_t *call_list(struct mcp *m, const json_t *args)
{
	json_t *arr = json_array(), *res;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (!m->cfg->changes)
		return ward__mcp_tool_error(m,
					    "this server keeps no journal of changes (it was "
					    "started with --record off)");
	f = open_memstream(&text, &len);
	if (!f || !arr) {
		json_decref(arr);
		return ward__mcp_tool_error(m, "out of memory");
	}
	for (size_t i = m->n_runs; i-- > 0;) {
		struct ward__changes_run *run = NULL;
		char id[24];

		snprintf(id, sizeof(id), "%" PRIu64, m->runs[i]);
		if (ward__journal_open(m->cfg->changes, id, false, &run, NULL) < 0)
			continue; /* dropped from the journal since */
		json_array_append_new(arr, ward__changes_to_json(run, 0));
		ward__changes_print_line(run, f);
		ward__changes_run_free(run);
	}
	if (json_array_size(arr) == 0)
		fputs("no runs of this server in the journal\n", f);
	fclose(f);
	res = json_pack("{s:o}", "runs", arr);
	(void)args;
	return ward__mcp_tool_result(m, text, res, false);
}

static json_t *call_show(struct mcp *m, const json_t *args)
{
	struct ward__changes_run *run = NULL;
	struct ward_error e = {0};
	_cleanup_free_ char *sum = NULL, *diff = NULL;
	bool want_diff = false;
	int64_t max = DIFF_MAX_DEFAULT;
	char why[160], *text = NULL;
	json_t *res, *err;

	if (ward__arg_bool(args, "diff", &want_diff, why, sizeof(why)) < 0 ||
	    ward__arg_int(args, "max_diff_bytes", 1024, DIFF_MAX, &max, why, sizeof(why)) < 0)
		return ward__mcp_tool_error(m, "invalid arguments: %s", why);
	err = open_run(m, args, 0, false, &run);
	if (err)
		return err;
	sum = summary(run, SIZE_MAX);
	res = ward__changes_to_json(run, SIZE_MAX);
	if (want_diff) {
		if (ward__changes_diff_text(run, (size_t)max, &diff, &e) < 0)
			json_object_set_new(res, "diff_error", json_string(e.message));
		else
			json_object_set_new(res, "diff", json_string(diff));
	}
	if (asprintf(&text, "%s%s%s", sum ? sum : "", diff ? "\n" : "", diff ? diff : "") < 0)
		text = NULL;
	ward__changes_run_free(run);
	return ward__mcp_tool_result(m, text, res, false);
}

static json_t *do_apply(struct mcp *m, uint64_t id, enum ward__side side)
{
	struct ward__changes_run *run = NULL;
	struct ward__apply_report rep;
	struct ward_error e = {0};
	json_t *args = json_pack("{s:I}", "run", (json_int_t)id), *err, *res;
	char line[256];

	err = open_run(m, args, 0, true, &run);
	json_decref(args);
	if (err)
		return err;
	if (ward__changes_apply(run, side, &rep, &e) < 0) {
		err = ward__mcp_tool_error(m, "%s%s", e.message,
					   rep.conflicts ? " (side: \"run\" or \"host\" says which "
							   "version wins)"
							 : "");
		ward__changes_run_free(run);
		return err;
	}
	snprintf(line, sizeof(line),
		 "Applied %zu change%s of run %" PRIu64 " (changes_undo takes them back).",
		 rep.applied, rep.applied == 1 ? "" : "s", id);
	res = result_of(m, run, line);
	ward__changes_run_free(run);
	return res;
}

static void chq_free(struct chq *q)
{
	for (struct chq **p = &q->m->chqs; *p; p = &(*p)->next)
		if (*p == q) {
			*p = q->next;
			q->m->n_chqs--;
			break;
		}
	ward__loop_del_timer(q->m->loop, q->timer);
	ward__rpc_id_release(&q->call);
	free(q);
}

static void on_chq_timeout(struct ward__loop *l, void *userdata)
{
	struct chq *q = userdata;

	q->timer = 0;
	ward__mcp_send_notification(q->m, "notifications/cancelled",
				    json_pack("{s:I, s:s}", "requestId", (json_int_t)q->elicit_id,
					      "reason", "no answer in time"));
	ward__mcp_send_result(q->m, &q->call,
			      ward__mcp_tool_error(q->m,
						   "the person did not answer in time: the "
						   "changes stay held"));
	chq_free(q);
}

/* Puts the apply to the person: the question's message is the run's summary. */
static json_t *ask_apply(struct mcp *m, const struct ward__rpc_msg *msg, uint64_t id,
			 enum ward__side side)
{
	struct ward__changes_run *run = NULL;
	json_t *args = json_pack("{s:I}", "run", (json_int_t)id), *err, *params;
	_cleanup_free_ char *sum = NULL, *text = NULL;
	bool titled = strcmp(m->version, "2025-11-25") >= 0;
	struct ward__rpc_id rid = {.type = WARD_RPC_ID_INT};
	struct ward__buf b;
	struct chq *q;
	int r;

	err = open_run(m, args, 0, false, &run);
	json_decref(args);
	if (err)
		return err;
	if (run->state != WARD_RS_HELD) {
		err = ward__mcp_tool_error(m, "run %" PRIu64 " is %s, not held", id,
					   ward__run_state_name(run->state));
		ward__changes_run_free(run);
		return err;
	}
	if (!m->elicitation || m->draining || m->n_chqs >= CHQ_MAX) {
		ward__changes_run_free(run);
		return ward__mcp_tool_error(
			m,
			"the person decides what reaches the host, and this client cannot ask "
			"them: ask the person to run 'ward changes apply %" PRIu64
			"' (or 'ward changes discard %" PRIu64 "')",
			id, id);
	}
	/* The summary escapes nothing: paths are the command's, shown as data in a form. */
	sum = summary(run, 60);
	ward__changes_run_free(run);
	if (asprintf(&text, "The agent asks to apply the changes it made, held until now.\n\n%s%s",
		     sum ? sum : "",
		     side == WARD_SIDE_RUN ? "\nWhere the host changed a file too, the agent's "
					     "version wins."
					   : "") < 0)
		return ward__mcp_tool_error(m, "out of memory");
	params = titled
		? json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s, s:s, s:[{s:s, s:s}, {s:s, s:s},"
			    " {s:s, s:s}]}}, s:[s]}}",
			    "mode", "form", "message", text, "requestedSchema", "type", "object",
			    "properties", "decision", "type", "string", "title", "Your decision",
			    "oneOf", "const", "apply", "title", "Apply them to the host", "const",
			    "keep", "title", "Keep them held", "const", "discard", "title",
			    "Discard them", "required", "decision")
		: json_pack("{s:s, s:{s:s, s:{s:{s:s, s:s, s:[s,s,s]}}, s:[s]}}", "message", text,
			    "requestedSchema", "type", "object", "properties", "decision", "type",
			    "string", "title", "Your decision", "enum", "apply", "keep", "discard",
			    "required", "decision");
	q = calloc(1, sizeof(*q));
	if (!params || !q || ward__rpc_id_dup(&q->call, &msg->id) < 0) {
		json_decref(params);
		free(q);
		return ward__mcp_tool_error(m, "out of memory");
	}
	q->m = m;
	q->run = id;
	q->side = side;
	rid.num = q->elicit_id = ++m->next_request_id;
	ward__buf_init(&b, 1 << 20);
	r = ward__rpc_encode_request(&m->codec, &b, &rid, "elicitation/create", params);
	if (r >= 0)
		r = ward__lineconn_send(m->conn, b.data, b.len);
	ward__buf_release(&b);
	json_decref(params);
	if (r >= 0)
		r = ward__loop_add_timer(m->loop, ward__now_ns() + CHQ_TIMEOUT_NS, on_chq_timeout,
					 q, &q->timer);
	if (r < 0) {
		ward__rpc_id_release(&q->call);
		free(q);
		return ward__mcp_tool_error(m, "cannot ask the person: %s", strerror(-r));
	}
	q->next = m->chqs;
	m->chqs = q;
	m->n_chqs++;
	return NULL;
}

bool ward__mcp_changes_response(struct mcp *m, const struct ward__rpc_msg *msg)
{
	const char *action, *dec;
	struct chq *q;
	json_t *res;

	for (q = m->chqs; q; q = q->next)
		if (msg->id.type == WARD_RPC_ID_INT && q->elicit_id == msg->id.num)
			break;
	if (!q)
		return false;
	action = json_string_value(json_object_get(msg->result, "action"));
	dec = json_string_value(
		json_object_get(json_object_get(msg->result, "content"), "decision"));
	if (msg->kind == WARD_RPC_ERROR || !action || strcmp(action, "accept") != 0 || !dec ||
	    strcmp(dec, "keep") == 0) {
		res = ward__mcp_tool_error(m,
					   "the person did not let the changes of run %" PRIu64
					   " onto the host: they stay held",
					   q->run);
	} else if (strcmp(dec, "discard") == 0) {
		struct ward__changes_run *run = NULL;
		struct ward_error e = {0};
		json_t *args = json_pack("{s:I}", "run", (json_int_t)q->run);

		res = open_run(m, args, 0, true, &run);
		json_decref(args);
		if (!res && ward__changes_discard(run, &e) < 0)
			res = ward__mcp_tool_error(m, "%s", e.message);
		else if (!res)
			res = ward__mcp_tool_error(
				m, "the person discarded the changes of run %" PRIu64, q->run);
		ward__changes_run_free(run);
	} else if (strcmp(dec, "apply") == 0) {
		res = do_apply(m, q->run, q->side);
	} else {
		res = ward__mcp_tool_error(m,
					   "an answer ward does not know: the changes stay held");
	}
	ward__mcp_send_result(m, &q->call, res);
	chq_free(q);
	return true;
}

void ward__mcp_changes_drop(struct mcp *m)
{
	while (m->chqs) {
		ward__mcp_send_result(m, &m->chqs->call,
				      ward__mcp_tool_error(m,
							   "ward is shutting down: the changes "
							   "stay held"));
		chq_free(m->chqs);
	}
}

static json_t *call_apply(struct mcp *m, const struct ward__rpc_msg *msg, const json_t *args)
{
	struct ward__changes_run *run = NULL;
	const char *side = NULL;
	enum ward__side s = WARD_SIDE_NONE;
	uint64_t id;
	char why[160];
	json_t *err;

	if (ward__arg_str(args, "side", &side, NULL, why, sizeof(why)) < 0)
		return ward__mcp_tool_error(m, "invalid arguments: %s", why);
	if (side && strcmp(side, "run") == 0)
		s = WARD_SIDE_RUN;
	else if (side && strcmp(side, "host") == 0)
		s = WARD_SIDE_HOST;
	else if (side)
		return ward__mcp_tool_error(m, "invalid arguments: 'side' is \"run\" or \"host\"");
	err = open_run(m, args, 1u << WARD_RS_HELD | 1u << WARD_RS_APPLYING, false, &run);
	if (err)
		return err;
	id = run->id;
	ward__changes_run_free(run);
	if (m->cfg->approver)
		return ask_apply(m, msg, id, s);
	return do_apply(m, id, s);
}

static json_t *call_discard(struct mcp *m, const json_t *args)
{
	struct ward__changes_run *run = NULL;
	struct ward_error e = {0};
	json_t *err;
	char line[96];

	err = open_run(m, args, 1u << WARD_RS_HELD | 1u << WARD_RS_APPLYING, true, &run);
	if (err)
		return err;
	if (ward__changes_discard(run, &e) < 0) {
		ward__changes_run_free(run);
		return ward__mcp_tool_error(m, "%s", e.message);
	}
	snprintf(line, sizeof(line), "Discarded the changes of run %" PRIu64 ".", run->id);
	err = result_of(m, run, line);
	ward__changes_run_free(run);
	return err;
}

static json_t *call_undo(struct mcp *m, const json_t *args)
{
	struct ward__changes_run *run = NULL;
	struct ward__undo_report rep;
	struct ward_error e = {0};
	bool force = false, partial = false;
	char why[160], line[256];
	json_t *err;

	if (ward__arg_bool(args, "force", &force, why, sizeof(why)) < 0 ||
	    ward__arg_bool(args, "partial", &partial, why, sizeof(why)) < 0)
		return ward__mcp_tool_error(m, "invalid arguments: %s", why);
	if (force && partial)
		return ward__mcp_tool_error(m,
					    "invalid arguments: force and partial cannot go "
					    "together");
	/* Overwriting what the person changed since is theirs to allow. */
	if (force && m->cfg->approver)
		return ward__mcp_tool_error(m,
					    "force overwrites what was changed since the run: "
					    "ask the person to run 'ward undo --force'");
	err = open_run(m, args, 1u << WARD_RS_APPLIED | 1u << WARD_RS_UNDOING, true, &run);
	if (err)
		return err;
	if (ward__changes_undo(run, force, partial, &rep, &e) < 0) {
		err = ward__mcp_tool_error(m, "%s", e.message);
		ward__changes_run_free(run);
		return err;
	}
	snprintf(line, sizeof(line), "Undid %zu change%s of run %" PRIu64 "%s.", rep.undone,
		 rep.undone == 1 ? "" : "s", run->id,
		 rep.conflicts || rep.unkept ? " (some were left as they are)" : "");
	err = result_of(m, run, line);
	ward__changes_run_free(run);
	return err;
}

json_t *ward__mcp_changes_call(struct mcp *m, const struct ward__rpc_msg *msg, enum tool tool,
			       const json_t *args)
{
	switch (tool) {
	case TOOL_CHANGES_LIST:
		return call_list(m, args);
	case TOOL_CHANGES_SHOW:
		return call_show(m, args);
	case TOOL_CHANGES_APPLY:
		return call_apply(m, msg, args);
	case TOOL_CHANGES_DISCARD:
		return call_discard(m, args);
	case TOOL_CHANGES_UNDO:
		return call_undo(m, args);
	case TOOL_EXEC:
	case TOOL_WRITE:
	case TOOL_LIST:
	case TOOL_KILL:
		break;
	}
	return ward__mcp_tool_error(m, "not a changes tool");
}
