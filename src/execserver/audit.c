/* SPDX-License-Identifier: MIT */
/*
 * Every process the exec server starts goes to the audit log (see xserver.h):
 * the command, where it runs, its sandbox, and who asked for it, down to the
 * client's thread and tool call when the request names them (Codex's
 * metadata), so that a person reading `ward audit` can tell which tool call
 * of which agent ran what. One line per start, written before the loop goes
 * on (one open, one write, one close: the log's own locking, audit.c).
 */
#include <stdio.h>
#include <string.h>

#include "approval/approval.h"
#include "execserver/xserver.h"
#include "net/proxy.h"
#include "policy/policy.h"

/*
 * A process's network by domain, host by host (the proxy's events: allowed
 * with the bytes each way when the connection ends, refused with why), with
 * the process and tool call that asked, as ward run -a and ward mcp -a log
 * theirs: a server has no approver, but its log still says where every
 * process went.
 */
static void on_net_event(void *userdata, const struct ward_net_event *ev)
{
	const struct xproc *p = userdata;
	struct ward__xserver *s = p->sess->srv;
	char target[WARD_NET_HOST_MAX + 32];
	const char *argv[2] = {"network-access", target};
	struct ward__audit_record rec = {
		.event = "network",
		.argv = argv,
		.argc = 2,
		.decision = ev->allowed ? "allow" : "deny",
		.source = ev->decided_by ? ev->decided_by : "policy",
		.client = p->sess->client[0] ? p->sess->client : NULL,
		.process = p->id,
		.thread = p->thread,
		.tool_call = p->tool_call,
		.sandboxed = true,
		.reason = ev->allowed ? ev->detail : ward__net_reason_name(ev->reason),
		.net = ev,
	};

	if (!s->cfg.audit_path)
		return;
	snprintf(target, sizeof(target), "%s:%u", ev->target->host, ev->target->port);
	if (ward__audit_append(s->cfg.audit_path, &rec) < 0 && !s->audit_failed) {
		s->audit_failed = true;
		fprintf(stderr, "ward: serve: cannot write the audit log '%s'\n",
			s->cfg.audit_path);
	}
}

void ward__xs_audit_net_hooks(struct xproc *p)
{
	p->net_hooks = (struct ward_net_hooks){.event = on_net_event, .userdata = p};
}

void ward__xs_audit_start(struct ward__xserver *s, const struct xproc *p, char *const *argv,
			  const char *cwd)
{
	struct ward__audit_record rec = {
		.event = "start",
		.argv = (const char *const *)argv,
		.cwd = cwd,
		.source = "client",
		.sandbox = ward_policy_mode_to_string(p->policy->mode),
		.client = p->sess->client[0] ? p->sess->client : NULL,
		.process = p->id,
		.thread = p->thread,
		.tool_call = p->tool_call,
		.sandboxed = p->sandboxed,
		.no_exit_code = true,
	};
	int r;

	if (!s->cfg.audit_path)
		return;
	while (argv && argv[rec.argc])
		rec.argc++;
	r = ward__audit_append(s->cfg.audit_path, &rec);
	/* Said once per server on stderr: a log that cannot be written must not go unnoticed. */
	if (r < 0 && !s->audit_failed) {
		s->audit_failed = true;
		fprintf(stderr, "ward: serve: cannot write the audit log '%s': %s\n",
			s->cfg.audit_path, strerror(-r));
	}
}
