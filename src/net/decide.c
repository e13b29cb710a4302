/* SPDX-License-Identifier: MIT */
/*
 * The decisions the proxy and the DNS stub share: the policy's patterns
 * (deny first), then the holder's hook (the rules' network_rule lines and
 * the answers of this session), then "ask" where a person may be asked,
 * else "not allowed". Also which addresses may be connected to (public, not
 * this machine's own, or named by --allow-address), and the
 * reports, each refusal once.
 */
#include <stdio.h>
#include <string.h>

#include "net/net-internal.h"

/* Distinct refusals remembered for de-duplication; past it one stands for the rest. */
#define MAX_REPORTED 1024 /* said in the summary's detail below */

const char *ward__net_protocol_name(enum ward_net_protocol p)
{
	switch (p) {
	case WARD_NET_PROTO_HTTP:
		return "http";
	case WARD_NET_PROTO_HTTPS:
		return "https";
	case WARD_NET_PROTO_SOCKS5_TCP:
		return "socks5_tcp";
	case WARD_NET_PROTO_SOCKS5_UDP:
		return "socks5_udp";
	case WARD_NET_PROTO_DNS:
		return "dns";
	}
	return "?";
}

const char *ward__net_reason_name(enum ward_net_reason r)
{
	switch (r) {
	case WARD_NET_REASON_NONE:
		return "none";
	case WARD_NET_REASON_NOT_ALLOWED:
		return "not-allowed";
	case WARD_NET_REASON_DENIED:
		return "denied";
	case WARD_NET_REASON_NON_PUBLIC:
		return "non-public-address";
	case WARD_NET_REASON_ASKED_DENIED:
		return "asked-denied";
	}
	return "?";
}

const char *ward__net_reason_proxy_error(enum ward_net_reason r)
{
	switch (r) {
	case WARD_NET_REASON_NOT_ALLOWED:
		return "blocked-by-allowlist";
	case WARD_NET_REASON_DENIED:
		return "blocked-by-denylist";
	case WARD_NET_REASON_NONE:
	case WARD_NET_REASON_NON_PUBLIC:
	case WARD_NET_REASON_ASKED_DENIED:
		break;
	}
	return "blocked-by-policy";
}

static int copy_array(void **dst, const void *src, size_t n, size_t size)
{
	*dst = NULL;
	if (n == 0)
		return 0;
	*dst = calloc(n, size);
	if (!*dst)
		return -ENOMEM;
	memcpy(*dst, src, n * size);
	return 0;
}

int ward__net_policy_init(struct ward__net_policy *np, const struct ward_net_settings *s,
			  const struct ward_net_hooks *hooks)
{
	int r;

	*np = (struct ward__net_policy){.ask = s->ask};
	if (hooks)
		np->hooks = *hooks;
	if (s->n_allow > WARD_NET_MAX_PATTERNS || s->n_deny > WARD_NET_MAX_PATTERNS ||
	    s->n_allow_addresses > WARD_NET_MAX_CIDRS)
		return -E2BIG;
	r = copy_array((void **)&np->allow, s->allow, s->n_allow, sizeof(*s->allow));
	if (r >= 0)
		r = copy_array((void **)&np->deny, s->deny, s->n_deny, sizeof(*s->deny));
	if (r >= 0)
		r = copy_array((void **)&np->allow_addresses, s->allow_addresses,
			       s->n_allow_addresses, sizeof(*s->allow_addresses));
	if (r < 0) {
		ward__net_policy_release(np);
		return r;
	}
	np->n_allow = s->n_allow;
	np->n_deny = s->n_deny;
	np->n_allow_addresses = s->n_allow_addresses;
	return 0;
}

void ward__net_policy_release(struct ward__net_policy *np)
{
	free(np->allow);
	free(np->deny);
	free(np->allow_addresses);
	for (size_t i = 0; i < np->n_reported; i++)
		free(np->reported[i]);
	free(np->reported);
	*np = (struct ward__net_policy){0};
}

enum ward__net_outcome ward__net_policy_decide(struct ward__net_policy *np,
					       const struct ward_net_target *t,
					       enum ward_net_reason *ret_reason,
					       const char **ret_by)
{
	enum ward__net_verdict v = ward__net_patterns_decide(np->allow, np->n_allow, np->deny,
							     np->n_deny, t->host, t->port);
	const char *by = "policy";

	*ret_reason = WARD_NET_REASON_NONE;
	if (v == WARD_NET_DENY) {
		*ret_reason = WARD_NET_REASON_DENIED;
		*ret_by = by;
		return WARD_NET_OUTCOME_DENY;
	}
	/* A host pattern allows streams; datagrams need a socks5_udp rule (udp.c). */
	if (v == WARD_NET_ALLOW && t->protocol != WARD_NET_PROTO_SOCKS5_UDP) {
		*ret_by = by;
		return WARD_NET_OUTCOME_ALLOW;
	}
	if (np->hooks.decide) {
		enum ward_net_decision d = np->hooks.decide(np->hooks.userdata, t, &by);

		if (d == WARD_NET_DECIDE_ALLOW) {
			*ret_by = by;
			return WARD_NET_OUTCOME_ALLOW;
		}
		if (d == WARD_NET_DECIDE_DENY) {
			*ret_reason = WARD_NET_REASON_DENIED;
			*ret_by = by;
			return WARD_NET_OUTCOME_DENY;
		}
	}
	*ret_by = "policy";
	/* A datagram cannot wait for a person; a DNS question is answered before any port is known. */
	if (np->ask && np->hooks.ask && t->protocol != WARD_NET_PROTO_DNS &&
	    t->protocol != WARD_NET_PROTO_SOCKS5_UDP)
		return WARD_NET_OUTCOME_ASK;
	*ret_reason = WARD_NET_REASON_NOT_ALLOWED;
	return WARD_NET_OUTCOME_DENY;
}

enum ward__net_outcome ward__net_policy_decide_name(struct ward__net_policy *np, const char *name,
						    enum ward_net_reason *ret_reason)
{
	struct ward_net_target t = {.host = name, .port = 0, .protocol = WARD_NET_PROTO_DNS};
	const char *by;

	*ret_reason = WARD_NET_REASON_NONE;
	for (size_t i = 0; i < np->n_deny; i++)
		if (!np->deny[i].port && ward__net_pattern_match(&np->deny[i], name, 0)) {
			*ret_reason = WARD_NET_REASON_DENIED;
			return WARD_NET_OUTCOME_DENY;
		}
	for (size_t i = 0; i < np->n_allow; i++) {
		struct ward__net_pattern p = np->allow[i];

		/* Any port: the connection to the address is checked with its port. */
		p.port = 0;
		if (ward__net_pattern_match(&p, name, 0))
			return WARD_NET_OUTCOME_ALLOW;
	}
	if (np->hooks.decide) {
		enum ward_net_decision d = np->hooks.decide(np->hooks.userdata, &t, &by);

		if (d == WARD_NET_DECIDE_ALLOW)
			return WARD_NET_OUTCOME_ALLOW;
		if (d == WARD_NET_DECIDE_DENY) {
			*ret_reason = WARD_NET_REASON_DENIED;
			return WARD_NET_OUTCOME_DENY;
		}
	}
	/* Asked about when the command connects, with the port known. */
	if (np->ask && np->hooks.ask)
		return WARD_NET_OUTCOME_ASK;
	*ret_reason = WARD_NET_REASON_NOT_ALLOWED;
	return WARD_NET_OUTCOME_DENY;
}

bool ward__net_policy_address_ok(const struct ward__net_policy *np, const struct ward__net_addr *a,
				 const char **why)
{
	int r;

	for (size_t i = 0; i < np->n_allow_addresses; i++)
		if (ward__net_cidr_contains(&np->allow_addresses[i], a))
			return true;
	if (!ward__net_addr_public(a, why))
		return false;
	/*
	 * A public address of this machine's own reaches the services bound to
	 * all its addresses from inside (local.c): refused as loopback is.
	 * When the kernel cannot be asked, the connection is refused too.
	 */
	r = ward__net_addr_is_local(a);
	if (r == 0)
		return true;
	if (why)
		*why = r > 0 ? "an address of this machine"
			     : "cannot tell whether it is an address of this machine";
	return false;
}

enum seen {
	SEEN_NEW = 0,
	SEEN_BEFORE,
	SEEN_PAST_CAP, /* a new one, but MAX_REPORTED are remembered already */
};

static enum seen remember(struct ward__net_policy *np, const struct ward_net_event *ev)
{
	char key[WARD_NET_HOST_MAX + 64];
	char **n;

	snprintf(key, sizeof(key), "%s:%u %s %s", ev->target->host, ev->target->port,
		 ward__net_protocol_name(ev->target->protocol), ward__net_reason_name(ev->reason));
	for (size_t i = 0; i < np->n_reported; i++)
		if (strcmp(np->reported[i], key) == 0)
			return SEEN_BEFORE;
	if (np->n_reported >= MAX_REPORTED)
		return SEEN_PAST_CAP;
	n = reallocarray(np->reported, np->n_reported + 1, sizeof(*n));
	if (!n)
		return SEEN_NEW;
	np->reported = n;
	n[np->n_reported] = strdup(key);
	if (n[np->n_reported])
		np->n_reported++;
	return SEEN_NEW;
}

void ward__net_policy_report(struct ward__net_policy *np, const struct ward_net_event *ev)
{
	if (!np->hooks.event)
		return;
	if (!ev->allowed) {
		switch (remember(np, ev)) {
		case SEEN_NEW:
			break;
		case SEEN_BEFORE:
			return;
		case SEEN_PAST_CAP: {
			/*
			 * Each report is a line of the host's audit log, written
			 * with nobody asked: a command asking the DNS stub for
			 * made-up names could write lines without end and rotate
			 * away the log's earlier records. Past the cap one
			 * refusal stands for the rest ("*"), and they go unsaid.
			 */
			struct ward_net_target all = {.host = "*",
						      .protocol = ev->target->protocol};
			struct ward_net_event more = {
				.target = &all,
				.reason = ev->reason,
				.decided_by = "policy",
				.detail = "more hosts refused than are reported one by one (1024): "
					  "the rest are not",
			};

			if (np->n_unreported++ == 0)
				np->hooks.event(np->hooks.userdata, &more);
			return;
		}
		}
	}
	np->hooks.event(np->hooks.userdata, ev);
}
