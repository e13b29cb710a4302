/* SPDX-License-Identifier: MIT */
/*
 * `ward run -a` and the network by domain (cli.h): a host no pattern or
 * rule decides is asked about on the terminal (ask.c) while its connection
 * waits. The question is answered before the hook returns: ward run's loop
 * waits meanwhile, as the person does. Other connections to the same host
 * that come in during the question find the answer in the session's
 * answers when it was "for this session" or "always".
 */
#include "approval/approval.h"
#include "cli/ask.h"
#include "cli/cli.h"

static enum ward_net_decision on_decide(void *userdata, const struct ward_net_target *t,
					const char **ret_by)
{
	struct cli_netask *c = userdata;

	return ward__approval_net_decide(c->approver, t, ret_by);
}

static int on_ask(void *userdata, struct ward_net_proxy *px, uint64_t id,
		  const struct ward_net_target *t)
{
	struct cli_netask *c = userdata;
	struct ward__net_question nq;
	struct cli_asker asker = {0};
	enum ward_review_decision d = WARD_REVIEW_DENIED;
	const char *notice = NULL;
	bool allow;

	if (!ward__approval_net_may_ask(c->approver))
		return -EOPNOTSUPP;
	ward__approval_net_question(c->approver, t, &nq);
	cli_ask_tty(&asker, &nq.q, &d);
	if (asker.why[0])
		d = WARD_REVIEW_DENIED;
	allow = ward__approval_net_answered(c->approver, t, d, &notice);
	if (notice)
		cli_errorf("run: %s", notice);
	ward__net_proxy_answer(px, id, allow, asker.why[0] ? "nobody" : "person");
	return 0;
}

static void on_event(void *userdata, const struct ward_net_event *ev)
{
	struct cli_netask *c = userdata;

	ward__approval_net_audit(c->approver, ev);
}

void cli_netask_hooks(struct cli_netask *c, struct ward_net_hooks *ret)
{
	*ret = (struct ward_net_hooks){
		.decide = on_decide, .ask = on_ask, .event = on_event, .userdata = c};
}
