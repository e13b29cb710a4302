/* SPDX-License-Identifier: MIT */
/*
 * The tool calls in flight (see mcpserver.h): each call's record from
 * tools/call to its result, its progress notifications, and the end of the
 * server once it is draining and the last call is answered.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/loop.h"
#include "approval/approval.h"
#include "mcp/mcpserver.h"
#include "rpc/jsonrpc.h"
#include "session/session.h"

/* ------------------------------------------------------------ the calls in flight */

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

void ward__mcp_pending_free(struct mcp *m, struct pending *p)
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
	free(p->thread);
	free(p->tool_call);
	free(p);
}

void ward__mcp_send_progress(struct pending *p, uint64_t elapsed_ms, uint64_t total_ms,
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
	ward__mcp_send_notification(p->m, "notifications/progress", params);
}

void ward__mcp_on_progress(uint64_t elapsed_ms, uint64_t total_ms, uint64_t bytes, void *userdata)
{
	char msg[96];

	snprintf(msg, sizeof(msg), "waiting for the command; %llu bytes of output so far",
		 (unsigned long long)bytes);
	ward__mcp_send_progress(userdata, elapsed_ms, total_ms, msg);
}

uint64_t ward__mcp_progress_interval_ms(const struct mcp *m)
{
	return m->cfg->progress_interval_ms > 0 ? (uint64_t)m->cfg->progress_interval_ms : 1000;
}

/*
 * Who asked for a call, as clients name it in _meta: Codex its threadId and
 * callId, Claude Code its claudecode/toolUseId. Kept for the audit log only,
 * so a string of a sane length or nothing.
 */
static const char *const thread_keys[] = {"threadId", "sessionId"};
static const char *const tool_call_keys[] = {"callId", "claudecode/toolUseId", "toolCallId"};

static char *meta_string(const json_t *meta, const char *const *keys, size_t n)
{
	for (size_t i = 0; meta && i < n; i++) {
		const char *s = json_string_value(json_object_get(meta, keys[i]));

		if (s && s[0])
			return strndup(s, 256);
	}
	return NULL;
}

void ward__mcp_audit_start(struct mcp *m, const struct pending *p, const char *cmd,
			   const char *workdir, bool sandboxed)
{
	const char *argv[] = {cmd};
	struct ward__audit_record rec = {
		.event = "start",
		.argv = argv,
		.argc = 1,
		.cwd = workdir,
		.source = "client",
		.sandbox = sandboxed ? ward_policy_mode_to_string(m->cfg->policy->mode)
				     : "danger-full-access",
		.client = m->client[0] ? m->client : NULL,
		.thread = p->thread,
		.tool_call = p->tool_call,
		.sandboxed = sandboxed,
		.no_exit_code = true,
	};
	int r;

	if (!m->cfg->audit_path)
		return;
	r = ward__audit_append(m->cfg->audit_path, &rec);
	/* Said once on stderr: a log that cannot be written must not go unnoticed. */
	if (r < 0 && !m->audit_failed) {
		m->audit_failed = true;
		fprintf(stderr, "ward mcp: cannot write the audit log '%s': %s\n",
			m->cfg->audit_path, strerror(-r));
	}
}

struct pending *ward__mcp_pending_new(struct mcp *m, const struct ward__rpc_msg *msg,
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
	p->thread = meta_string(meta, thread_keys, ELEMENTSOF(thread_keys));
	p->tool_call = meta_string(meta, tool_call_keys, ELEMENTSOF(tool_call_keys));
	p->next = m->pending;
	if (m->pending)
		m->pending->prev = p;
	m->pending = p;
	m->n_pending++;
	return p;
}

/* Sends a call's result and forgets the call. */
void ward__mcp_pending_finish(struct mcp *m, struct pending *p, json_t *res)
{
	ward__mcp_send_result(m, &p->id, res);
	ward__mcp_pending_free(m, p);
	if (m->draining && m->n_pending == 0)
		ward__mcp_begin_shutdown(m);
}

void ward__mcp_begin_shutdown(struct mcp *m)
{
	if (m->shutting_down)
		return;
	m->shutting_down = true;
	ward__loop_quit(m->loop, 0);
}
