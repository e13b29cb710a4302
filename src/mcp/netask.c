/* SPDX-License-Identifier: MIT */
/*
 * `ward mcp -a` and the network by domain (mcpserver.h): a host no pattern
 * or rule decides is asked about through MCP elicitation while its
 * connection waits, as Codex asks through its client. The proxies of every
 * session share these hooks; each question remembers which proxy waits for
 * it, and a proxy that goes (its session ended) withdraws its questions.
 * Every host goes to the audit log.
 *
 * A client without elicitation cannot ask anybody: such a host is refused
 * (asked-denied), as every question a person cannot answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "approval/approval.h"
#include "basic/buf.h"
#include "basic/loop.h"
#include "basic/util.h"
#include "mcp/mcpserver.h"
#include "rpc/jsonrpc.h"
#include "transport/lineconn.h"

/* How long a network question waits for the person before the host is refused. */
#define NETQ_TIMEOUT_NS (600ULL * 1000000000)
/* Questions in flight across the server; past it a host is refused without one. */
#define NETQ_MAX 64

struct netq {
	struct netq *next;
	struct mcp *m;
	int64_t elicit_id;
	struct ward_net_proxy *px;
	uint64_t id;
	char host[WARD_NET_HOST_MAX + 1];
	struct ward_net_target t;
	unsigned decisions;
	uint64_t timer;
};

static void netq_free(struct netq *q)
{
	for (struct netq **p = &q->m->netqs; *p; p = &(*p)->next)
		if (*p == q) {
			*p = q->next;
			q->m->n_netqs--;
			break;
		}
	ward__loop_del_timer(q->m->loop, q->timer);
	free(q);
}

static void withdraw(struct netq *q, const char *why)
{
	ward__mcp_send_notification(
		q->m, "notifications/cancelled",
		json_pack("{s:I, s:s}", "requestId", (json_int_t)q->elicit_id, "reason", why));
}

static void answer(struct netq *q, enum ward_review_decision d, const char *by)
{
	struct ward_approver *a = q->m->cfg->approver;
	bool allow = ward__approval_net_answered(a, &q->t, d, NULL);

	ward__net_proxy_answer(q->px, q->id, allow, by);
	netq_free(q);
}

static void on_timeout(struct ward__loop *l, void *userdata)
{
	struct netq *q = userdata;

	q->timer = 0;
	withdraw(q, "no answer in time");
	answer(q, WARD_REVIEW_DENIED, "nobody");
}

static json_t *question(struct mcp *m, const struct ward__net_question *nq)
{
	bool titled = strcmp(m->version, "2025-11-25") >= 0;
	json_t *values = json_array(), *names = json_array(), *field, *res;
	static const char *const titles[] = {
		[WARD_REVIEW_APPROVED] = "Yes, this once",
		[WARD_REVIEW_APPROVED_FOR_SESSION] = "Yes, for this session",
		[WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT] = "Yes, always",
		[WARD_REVIEW_DENIED] = "No (the connection is refused)",
		[WARD_REVIEW_ABORT] = "No",
	};
	char msg[1024];

	/* The host is a normalised name: letters, digits, '-', '_', '.', ':' only. */
	snprintf(msg, sizeof(msg),
		 "A command wants to reach %s (its connection waits).\n\nWhy ward asks: %s\n%s%s",
		 nq->target, nq->reason, nq->q.proposed_network_rule ? "\"Always\" adds: " : "",
		 nq->q.proposed_network_rule ? nq->q.proposed_network_rule : "");
	for (int d = WARD_REVIEW_APPROVED; d <= WARD_REVIEW_DENIED; d++) {
		if (!(nq->q.decisions & (1u << d)))
			continue;
		if (titled)
			json_array_append_new(values,
					      json_pack("{s:s, s:s}", "const",
							ward_review_decision_to_string(d), "title",
							titles[d]));
		else
			json_array_append_new(values,
					      json_string(ward_review_decision_to_string(d)));
		json_array_append_new(names, json_string(titles[d]));
	}
	if (titled) {
		field = json_pack("{s:s, s:s, s:o}", "type", "string", "title", "Your decision",
				  "oneOf", values);
		json_decref(names);
	} else {
		field = json_pack("{s:s, s:s, s:o, s:o}", "type", "string", "title",
				  "Your decision", "enum", values, "enumNames", names);
	}
	res = json_pack("{s:s, s:{s:s, s:{s:o}, s:[s]}}", "message", msg, "requestedSchema", "type",
			"object", "properties", "decision", field, "required", "decision");
	if (res && titled)
		json_object_set_new(res, "mode", json_string("form"));
	return res;
}

static enum ward_net_decision on_decide(void *userdata, const struct ward_net_target *t,
					const char **ret_by)
{
	struct mcp *m = userdata;

	return ward__approval_net_decide(m->cfg->approver, t, ret_by);
}

static int on_ask(void *userdata, struct ward_net_proxy *px, uint64_t id,
		  const struct ward_net_target *t)
{
	struct mcp *m = userdata;
	struct ward__net_question nq;
	struct ward__rpc_id rid = {.type = WARD_RPC_ID_INT};
	struct ward__buf b;
	struct netq *q;
	json_t *params;
	int r;

	if (!m->elicitation || m->draining || m->n_netqs >= NETQ_MAX ||
	    !ward__approval_net_may_ask(m->cfg->approver))
		return -EOPNOTSUPP;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->m = m;
	q->px = px;
	q->id = id;
	snprintf(q->host, sizeof(q->host), "%s", t->host);
	q->t = *t;
	q->t.host = q->host;
	ward__approval_net_question(m->cfg->approver, &q->t, &nq);
	q->decisions = nq.q.decisions;
	params = question(m, &nq);
	if (!params) {
		free(q);
		return -ENOMEM;
	}
	rid.num = q->elicit_id = ++m->next_request_id;
	ward__buf_init(&b, 1 << 16);
	r = ward__rpc_encode_request(&m->codec, &b, &rid, "elicitation/create", params);
	if (r >= 0)
		r = ward__lineconn_send(m->conn, b.data, b.len);
	ward__buf_release(&b);
	json_decref(params);
	if (r >= 0)
		r = ward__loop_add_timer(m->loop, ward__now_ns() + NETQ_TIMEOUT_NS, on_timeout, q,
					 &q->timer);
	if (r < 0) {
		free(q);
		return r;
	}
	q->next = m->netqs;
	m->netqs = q;
	m->n_netqs++;
	return 0;
}

static void on_cancelled(void *userdata, struct ward_net_proxy *px, uint64_t id)
{
	struct mcp *m = userdata;

	for (struct netq *q = m->netqs; q; q = q->next)
		if (q->px == px && q->id == id) {
			withdraw(q, "the command ended");
			netq_free(q);
			return;
		}
}

static void on_event(void *userdata, const struct ward_net_event *ev)
{
	struct mcp *m = userdata;

	ward__approval_net_audit(m->cfg->approver, ev);
}

void ward__mcp_net_hooks(struct mcp *m, struct ward_net_hooks *ret)
{
	*ret = (struct ward_net_hooks){.decide = on_decide,
				       .ask = on_ask,
				       .cancelled = on_cancelled,
				       .event = on_event,
				       .userdata = m};
}

bool ward__mcp_net_response(struct mcp *m, const struct ward__rpc_msg *msg)
{
	enum ward_review_decision d;
	const char *action, *dec;
	struct netq *q;

	for (q = m->netqs; q; q = q->next)
		if (msg->id.type == WARD_RPC_ID_INT && q->elicit_id == msg->id.num)
			break;
	if (!q)
		return false;
	if (msg->kind == WARD_RPC_ERROR) {
		answer(q, WARD_REVIEW_DENIED, "nobody");
		return true;
	}
	action = json_string_value(json_object_get(msg->result, "action"));
	dec = json_string_value(
		json_object_get(json_object_get(msg->result, "content"), "decision"));
	if (action && strcmp(action, "accept") == 0 && dec &&
	    ward_review_decision_from_string(dec, &d) >= 0 && (q->decisions & (1u << d)))
		answer(q, d, "person");
	else
		answer(q, WARD_REVIEW_DENIED,
		       action && strcmp(action, "decline") == 0 ? "person" : "nobody");
	return true;
}

void ward__mcp_net_drop(struct mcp *m)
{
	while (m->netqs)
		netq_free(m->netqs);
}
