/* SPDX-License-Identifier: MIT */
/*
 * The network_rule lines as the proxy asks about them (rules.h): which
 * decision the rules give a host and protocol. Pure.
 */
#include <string.h>

#include "rules/rules.h"

int ward__rules_network_decide(const struct ward__rules *r, const char *host, int protocol,
			       enum ward__decision *ret_decision, const char **ret_justification)
{
	const struct ward__network_rule *best = NULL;

	for (size_t i = 0; i < r->n_network; i++) {
		const struct ward__network_rule *n = &r->network[i];

		if (strcmp(n->host, host) != 0 || (protocol >= 0 && (int)n->protocol != protocol))
			continue;
		if (n->decision == WARD__DECISION_ALLOW && n->source < r->n_sources &&
		    r->sources[n->source].project)
			continue;
		/* FORBIDDEN > PROMPT > ALLOW: the strictest rule decides. */
		if (!best || n->decision > best->decision)
			best = n;
	}
	if (!best)
		return -ENOENT;
	*ret_decision = best->decision;
	if (ret_justification)
		*ret_justification = best->justification;
	return 0;
}
