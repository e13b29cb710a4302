/* SPDX-License-Identifier: MIT */
/*
 * Review and undo in `ward serve` (see xserver.h, src/changes): each
 * sandboxed process's changes go through a layer and are recorded (applied
 * when it ends, kept for undo) or, with process/start's "hold" (ward's
 * extension) or --hold, held; process/exited carries what it changed; the
 * ward/changes/list, show, apply, discard and undo methods act on the runs
 * this server made (docs/protocol.md).
 *
 * DESIGN: the same rules as ward mcp's tools (src/mcp/changes.c): only this
 * server's runs, never another ward's held changes, which a person may be
 * reviewing. ward serve asks nobody itself (its client, Codex, does): an
 * apply is the client's to decide.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "changes/changes.h"
#include "execserver/xserver.h"
#include "rpc/args.h"

#define DIFF_MAX_DEFAULT ((int64_t)64 << 10)
#define DIFF_MAX ((int64_t)1 << 20)
/* An error of a ward/changes method: the request was understood, the journal said no. */
#define CHANGES_ERROR (-32010)

static void note_run(struct ward__xserver *s, uint64_t id)
{
	for (size_t i = 0; i < s->n_runs; i++)
		if (s->runs[i] == id)
			return;
	if (s->n_runs == WARD_XS_MAX_RUNS) {
		memmove(s->runs, s->runs + 1, (WARD_XS_MAX_RUNS - 1) * sizeof(*s->runs));
		s->n_runs--;
	}
	s->runs[s->n_runs++] = id;
}

int ward__xs_changes_begin(struct ward__xserver *s, struct xproc *p, json_t *params,
			   char *const *argv, struct ward__proc_spec *spec, struct ward_error *e)
{
	const struct ward__features *f;
	bool hold = s->cfg.hold;
	char why[160];
	int q;

	q = ward__arg_bool(params, "hold", &hold, why, sizeof(why));
	if (q < 0)
		return ward__error(e, -EINVAL, "changes", "%s", why);
	if (!s->cfg.changes) {
		if (q > 0 && hold)
			return ward__error(
				e, -EINVAL, "changes",
				"this server keeps no journal of changes (--record off): "
				"nothing can be held");
		return 0;
	}
	if (!p->sandboxed || p->policy->mode == WARD_MODE_READ_ONLY) {
		if (hold && !p->sandboxed)
			return ward__error(e, -EINVAL, "changes",
					   "a process outside the sandbox cannot be held");
		return 0;
	}
	f = ward__features_get();
	if (!f->userns && !f->rootns) {
		if (hold)
			return ward__error(e, -EOPNOTSUPP, "changes",
					   "holding changes needs a mount namespace, which this "
					   "host refuses");
		return 0; /* process/exited says "changes": null: not recorded */
	}
	if (ward__changes_begin(s->cfg.changes, p->policy, hold ? WARD_RUN_HOLD : WARD_RUN_RECORD,
				argv, &p->crun, e) < 0) {
		if (hold)
			return -EIO;
		*e = (struct ward_error){0};
		return 0;
	}
	spec->layers = p->crun->layers;
	spec->n_layers = p->crun->n_layers;
	return 0;
}

void ward__xs_changes_end(struct ward__xserver *s, struct xproc *p)
{
	struct ward_error e = {0};
	int r;

	if (!p->crun || !p->proc)
		return;
	r = ward__proc_wait_gone(p->proc);
	if (r >= 0)
		r = ward__changes_end(p->crun, p->policy, ward__proc_exit_code(p->proc), &e);
	if (r >= 0 && p->crun->id != 0) {
		note_run(s, p->crun->id);
		p->changes =
			ward__changes_to_json(p->crun, p->crun->mode == WARD_RUN_HOLD ? 200 : 20);
	} else if (r < 0) {
		p->changes = json_pack("{s:s}", "error", e.message);
	}
	ward__changes_run_free(p->crun);
	p->crun = NULL;
}

/* ------------------------------------------------------------ the ward/changes methods */

static bool ours(const struct ward__xserver *s, uint64_t id)
{
	for (size_t i = 0; i < s->n_runs; i++)
		if (s->runs[i] == id)
			return true;
	return false;
}

/* The run params.run names (this server's), or its latest in a wanted state; else answers. */
static struct ward__changes_run *param_run(struct xconn *x, const struct ward__rpc_msg *m,
					   unsigned want, bool lock)
{
	struct ward__xserver *s = x->srv;
	struct ward__changes_run *run = NULL;
	struct ward_error e = {0};
	int64_t id = -1;
	char why[160], idbuf[24];

	if (ward__arg_int(m->params, "run", 1, INT64_MAX, &id, why, sizeof(why)) < 0) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "%s", why);
		return NULL;
	}
	for (size_t i = s->n_runs; id < 0 && i-- > 0;) {
		snprintf(idbuf, sizeof(idbuf), "%" PRIu64, s->runs[i]);
		if (ward__journal_open(s->cfg.changes, idbuf, false, &run, NULL) < 0)
			continue;
		if (!want || (want & (1u << run->state)))
			id = (int64_t)s->runs[i];
		ward__changes_run_free(run);
		run = NULL;
	}
	if (id < 0) {
		ward__xs_reply_error(x, &m->id, CHANGES_ERROR, "no run of this server fits");
		return NULL;
	}
	if (!ours(s, (uint64_t)id)) {
		ward__xs_reply_error(x, &m->id, CHANGES_ERROR,
				     "run %" PRId64 " is not one of this server's runs", id);
		return NULL;
	}
	snprintf(idbuf, sizeof(idbuf), "%" PRId64, id);
	if (ward__journal_open(s->cfg.changes, idbuf, lock, &run, &e) < 0) {
		ward__xs_reply_error(x, &m->id, CHANGES_ERROR, "%s", e.message);
		return NULL;
	}
	return run;
}

static void changes_list(struct xconn *x, const struct ward__rpc_msg *m)
{
	struct ward__xserver *s = x->srv;
	json_t *a = json_array();

	for (size_t i = s->n_runs; a && i-- > 0;) {
		struct ward__changes_run *run = NULL;
		char id[24];

		snprintf(id, sizeof(id), "%" PRIu64, s->runs[i]);
		if (ward__journal_open(s->cfg.changes, id, false, &run, NULL) < 0)
			continue;
		json_array_append_new(a, ward__changes_to_json(run, 0));
		ward__changes_run_free(run);
	}
	ward__xs_reply(x, &m->id, json_pack("{s:o}", "runs", a ? a : json_array()));
}

static void changes_show(struct xconn *x, const struct ward__rpc_msg *m)
{
	struct ward__changes_run *run;
	struct ward_error e = {0};
	_cleanup_free_ char *diff = NULL;
	bool want = false;
	int64_t max = DIFF_MAX_DEFAULT;
	char why[160];
	json_t *res;

	if (ward__arg_bool(m->params, "diff", &want, why, sizeof(why)) < 0 ||
	    ward__arg_int(m->params, "maxDiffBytes", 1024, DIFF_MAX, &max, why, sizeof(why)) < 0) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "%s", why);
		return;
	}
	run = param_run(x, m, 0, false);
	if (!run)
		return;
	res = ward__changes_to_json(run, SIZE_MAX);
	if (want && ward__changes_diff_text(run, (size_t)max, &diff, &e) < 0)
		json_object_set_new(res, "diffError", json_string(e.message));
	else if (want)
		json_object_set_new(res, "diff", json_string(diff));
	ward__changes_run_free(run);
	ward__xs_reply(x, &m->id, res);
}

static void changes_apply(struct xconn *x, const struct ward__rpc_msg *m)
{
	struct ward__changes_run *run;
	struct ward__apply_report rep;
	struct ward_error e = {0};
	const char *side = NULL;
	enum ward__side sd = WARD_SIDE_NONE;
	char why[160];

	if (ward__arg_str(m->params, "side", &side, NULL, why, sizeof(why)) < 0 ||
	    (side && strcmp(side, "run") != 0 && strcmp(side, "host") != 0)) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "%s",
				     side ? "side is \"run\" or \"host\"" : why);
		return;
	}
	if (side)
		sd = side[0] == 'r' ? WARD_SIDE_RUN : WARD_SIDE_HOST;
	run = param_run(x, m, 1u << WARD_RS_HELD | 1u << WARD_RS_APPLYING, true);
	if (!run)
		return;
	if (ward__changes_apply(run, sd, &rep, &e) < 0)
		ward__xs_reply_error(x, &m->id, CHANGES_ERROR, "%s", e.message);
	else
		ward__xs_reply(x, &m->id, ward__changes_to_json(run, SIZE_MAX));
	ward__changes_run_free(run);
}

static void changes_discard(struct xconn *x, const struct ward__rpc_msg *m)
{
	struct ward__changes_run *run;
	struct ward_error e = {0};

	run = param_run(x, m, 1u << WARD_RS_HELD | 1u << WARD_RS_APPLYING, true);
	if (!run)
		return;
	if (ward__changes_discard(run, &e) < 0)
		ward__xs_reply_error(x, &m->id, CHANGES_ERROR, "%s", e.message);
	else
		ward__xs_reply(x, &m->id, ward__changes_to_json(run, SIZE_MAX));
	ward__changes_run_free(run);
}

static void changes_undo(struct xconn *x, const struct ward__rpc_msg *m)
{
	struct ward__changes_run *run;
	struct ward__undo_report rep;
	struct ward_error e = {0};
	bool force = false, partial = false;
	char why[160];

	if (ward__arg_bool(m->params, "force", &force, why, sizeof(why)) < 0 ||
	    ward__arg_bool(m->params, "partial", &partial, why, sizeof(why)) < 0 ||
	    (force && partial)) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "%s",
				     force && partial ? "force and partial cannot go together"
						      : why);
		return;
	}
	run = param_run(x, m, 1u << WARD_RS_APPLIED | 1u << WARD_RS_UNDOING, true);
	if (!run)
		return;
	if (ward__changes_undo(run, force, partial, &rep, &e) < 0)
		ward__xs_reply_error(x, &m->id, CHANGES_ERROR, "%s", e.message);
	else
		ward__xs_reply(x, &m->id, ward__changes_to_json(run, SIZE_MAX));
	ward__changes_run_free(run);
}

void ward__xs_handle_changes(struct xconn *x, const struct ward__rpc_msg *m)
{
	const char *verb = m->method + strlen("ward/changes/");

	if (!x->srv->cfg.changes) {
		ward__xs_reply_error(x, &m->id, CHANGES_ERROR,
				     "this server keeps no journal of changes (--record off)");
		return;
	}
	if (strcmp(verb, "list") == 0)
		changes_list(x, m);
	else if (strcmp(verb, "show") == 0)
		changes_show(x, m);
	else if (strcmp(verb, "apply") == 0)
		changes_apply(x, m);
	else if (strcmp(verb, "discard") == 0)
		changes_discard(x, m);
	else if (strcmp(verb, "undo") == 0)
		changes_undo(x, m);
	else
		ward__xs_reply_error(x, &m->id, WARD_RPC_METHOD_NOT_FOUND,
				     "exec-server does not implement `%s`", m->method);
}
