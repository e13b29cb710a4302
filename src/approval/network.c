/* SPDX-License-Identifier: MIT */
/*
 * The approver and the network by domain (approval.h): the rules' and the
 * session's answers for the proxy's decide hook, the question a person is
 * asked while a connection waits, what the answer does, and the audit log.
 *
 * As Codex: an "always" answer writes network_rule(host=..., protocol=...,
 * decision="allow") to the user's rules file, for exactly the host asked
 * about (never a wildcard); approval mode never asks nobody, so what no
 * rule allows is refused. Unlike Codex, a project's rules (.ward/rules)
 * cannot allow a host: the project is whatever the last command wrote.
 */
#include <stdio.h>
#include <string.h>

#include "approval/approval.h"
#include "basic/error.h"

static int rules_protocol(enum ward_net_protocol p)
{
	switch (p) {
	case WARD_NET_PROTO_HTTP:
		return WARD__NET_HTTP;
	case WARD_NET_PROTO_HTTPS:
		return WARD__NET_HTTPS;
	case WARD_NET_PROTO_SOCKS5_TCP:
		return WARD__NET_SOCKS5_TCP;
	case WARD_NET_PROTO_SOCKS5_UDP:
		return WARD__NET_SOCKS5_UDP;
	case WARD_NET_PROTO_DNS:
		break;
	}
	return -1;
}

/* The session cache's key of a network answer: apart from every command's (a leading 0 byte). */
static size_t net_key(const struct ward_net_target *t, bool any, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%cnetwork %s %s %u", 0, t->host,
			 any ? "*" : ward__net_protocol_name(t->protocol), any ? 0 : t->port);

	return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

/*
 * A "no" is remembered for the session, for that host, protocol and port: a
 * command that opens connection after connection to a host the person
 * refused must not ask again each time (questions as a nuisance, or to have
 * one answered yes by a person tired of saying no). Another key space than
 * the allowed ones (a leading byte no host has).
 */
static size_t denied_key(const struct ward_net_target *t, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%cnetwork-no %s %s %u", 1, t->host,
			 ward__net_protocol_name(t->protocol), t->port);

	return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

enum ward_net_decision ward__approval_net_decide(struct ward_approver *a,
						 const struct ward_net_target *t,
						 const char **ret_by)
{
	enum ward__decision d;
	char key[WARD_NET_HOST_MAX + 64];
	size_t n;

	if (ward__rules_network_decide(&a->rules, t->host, rules_protocol(t->protocol), &d, NULL) ==
	    0) {
		*ret_by = "rules";
		if (d == WARD__DECISION_FORBIDDEN)
			return WARD_NET_DECIDE_DENY;
		if (d == WARD__DECISION_ALLOW)
			return WARD_NET_DECIDE_ALLOW;
		/* A prompt rule: asked below, or refused where nobody may be asked. */
		if (!ward__approval_net_may_ask(a) && t->protocol != WARD_NET_PROTO_DNS)
			return WARD_NET_DECIDE_DENY;
		if (t->protocol == WARD_NET_PROTO_DNS)
			return WARD_NET_DECIDE_ALLOW;
	}
	/* A host the person refused for this session: refused again without a question. */
	n = t->protocol == WARD_NET_PROTO_DNS ? 0 : denied_key(t, key, sizeof(key));
	if (n && ward__cache_lookup(a, key, n, false)) {
		*ret_by = "session";
		return WARD_NET_DECIDE_DENY;
	}
	/* A name the person allowed for the session, for some protocol: its address may be given. */
	n = net_key(t, t->protocol == WARD_NET_PROTO_DNS, key, sizeof(key));
	if (n && ward__cache_lookup(a, key, n, false)) {
		*ret_by = "session";
		return WARD_NET_DECIDE_ALLOW;
	}
	return WARD_NET_DECIDE_NONE;
}

bool ward__approval_net_may_ask(const struct ward_approver *a)
{
	if (a->mode == WARD_APPROVAL_NEVER)
		return false;
	/* Granular: a network question is one of the sandbox's own. */
	return a->mode != WARD_APPROVAL_GRANULAR || a->granular.sandbox_approval;
}

void ward__approval_net_question(const struct ward_approver *a, const struct ward_net_target *t,
				 struct ward__net_question *ret)
{
	bool v6 = strchr(t->host, ':') != NULL;
	const char *scheme = t->protocol == WARD_NET_PROTO_HTTP ? "http"
		: t->protocol == WARD_NET_PROTO_HTTPS		? "https"
								: "socks5";

	memset(ret, 0, sizeof(*ret));
	snprintf(ret->target, sizeof(ret->target), "%s://%s%s%s:%u", scheme, v6 ? "[" : "", t->host,
		 v6 ? "]" : "", t->port);
	snprintf(ret->reason, sizeof(ret->reason), "%s is not in the allowed domains", t->host);
	snprintf(ret->rule, sizeof(ret->rule),
		 "network_rule(host=\"%s\", protocol=\"%s\", decision=\"allow\")", t->host,
		 ward__net_protocol_name(t->protocol));
	ret->argv[0] = "network-access";
	ret->argv[1] = ret->target;
	ret->q.argv = ret->argv;
	ret->q.reason = ret->reason;
	ret->q.network_target = ret->target;
	ret->q.decisions = 1u << WARD_REVIEW_APPROVED | 1u << WARD_REVIEW_APPROVED_FOR_SESSION |
		1u << WARD_REVIEW_DENIED | 1u << WARD_REVIEW_ABORT;
	if (a->amend_path) {
		ret->q.proposed_network_rule = ret->rule;
		ret->q.decisions |= 1u << WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT;
	}
}

static void audit(struct ward_approver *a, const char *event, const char *decision,
		  const char *source, const char *reason, const struct ward_net_event *ev)
{
	char target[WARD_NET_HOST_MAX + 32];
	const char *argv[3] = {"network-access", target, NULL};
	struct ward__audit_record rec = {
		.event = event,
		.argv = argv,
		.argc = 2,
		.mode = ward_approval_mode_to_string(a->mode),
		.decision = decision,
		.source = source,
		.sandboxed = true,
		.reason = reason,
		.net = ev,
	};

	if (!a->audit_path)
		return;
	snprintf(target, sizeof(target), "%s:%u", ev->target->host, ev->target->port);
	if (ward__audit_append(a->audit_path, &rec) < 0 && !a->audit_error[0])
		snprintf(a->audit_error, sizeof(a->audit_error), "cannot write the audit log '%s'",
			 a->audit_path);
}

bool ward__approval_net_answered(struct ward_approver *a, const struct ward_net_target *t,
				 enum ward_review_decision d, const char **ret_notice)
{
	struct ward_net_event ev = {.target = t};
	struct ward_error err = {0};
	char key[WARD_NET_HOST_MAX + 64];
	bool allow = d == WARD_REVIEW_APPROVED || d == WARD_REVIEW_APPROVED_FOR_SESSION ||
		d == WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT;
	size_t n;

	if (ret_notice)
		*ret_notice = NULL;
	if (d == WARD_REVIEW_APPROVED_FOR_SESSION ||
	    d == WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT) {
		/* Remembered for this protocol and port, and the name for the DNS stub. */
		n = net_key(t, false, key, sizeof(key));
		if (n)
			ward__cache_store(a, key, n, false);
		n = net_key(t, true, key, sizeof(key));
		if (n)
			ward__cache_store(a, key, n, false);
	}
	if (d == WARD_REVIEW_DENIED) {
		n = denied_key(t, key, sizeof(key));
		if (n)
			ward__cache_store(a, key, n, false);
	}
	if (d == WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT && a->amend_path &&
	    ward__rules_append_network(a->amend_path, t->host, ward__net_protocol_name(t->protocol),
				       &err) < 0 &&
	    ret_notice)
		*ret_notice = "the network rule could not be saved (allowed for this session)";
	ev.allowed = allow;
	ev.reason = allow ? WARD_NET_REASON_NONE : WARD_NET_REASON_ASKED_DENIED;
	audit(a, "answer", ward_review_decision_to_string(d), "person", NULL, &ev);
	return allow;
}

void ward__approval_net_audit(struct ward_approver *a, const struct ward_net_event *ev)
{
	audit(a, "network", ev->allowed ? "allow" : "deny",
	      ev->decided_by ? ev->decided_by : "policy",
	      ev->allowed ? ev->detail : ward__net_reason_name(ev->reason), ev);
}
